"""The command line: help works, errors are one line with the exit code of their kind, never a
traceback (quicexp.errors)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from quicexp.app.cli import main
from quicexp.config import REPO_ROOT
from quicexp.errors import EXIT_CODES
from tests.helpers import quicexp

QUICEXP = [sys.executable, "-m", "quicexp.app.cli"]


def test_help_lists_the_subcommands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("simulate", "ingest", "dbt", "results", "report", "run-day", "demo", "stats", "catalog"):
        assert command in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ingest", "--date", "2026-13-01"], "bad day"),
        (["no-such-command"], "No such command"),
        (["report", "--date", "2026-06-15"], "Missing option"),
        (["demo", "--days", "0"], "--days"),
    ],
)
def test_user_errors_are_one_line(argv, message):
    proc = subprocess.run([*QUICEXP, *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr


def test_bad_environment_config_is_one_line(monkeypatch):
    env = {"QUICEXP_SPARK__SHUFFLE_PARTITIONS": "many", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([*QUICEXP, "catalog", "status"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("quicexp: error: bad configuration at spark.shuffle_partitions")
    assert "Traceback" not in proc.stderr


BAD_ENV = {"QUICEXP_SPARK__SHUFFLE_PARTITIONS": "many"}


@pytest.mark.parametrize(
    ("argv", "env", "code", "message"),
    [
        (["setup-jars"], BAD_ENV, 2, "bad configuration"),
        (["catalog", "status"], BAD_ENV, 2, "bad configuration"),
        (["ingest", "--date", "tomorrow"], {}, 2, "bad day"),
        (["dbt", "build", "--date", "2026-02-30"], {}, 2, "bad day"),
        (["results", "--date", "x"], {}, 2, "bad day"),
        (["report", "--date", "2026-06-15", "-e", "no_such_experiment"], BAD_ENV, 2, "bad configuration"),
        (["run-day", "--date", "15/06/2026"], {}, 2, "bad day"),
        (["run-day", "--date", "2026-06-15", "--skip", "report"], {}, 2, "unknown step 'report'"),
        (["plan", "--date", "2026-13-01", "--json"], {}, 2, "bad day"),
        (["settings"], BAD_ENV, 2, "bad configuration"),
        (["demo", "--clients", "5"], {}, 2, "--clients"),
        (["simulate", "aa", "--format", "bogus"], {}, 2, "--format"),
        (["stats", "/missing.csv", "out.csv"], {}, 3, "input file not found"),
        (["ingest-qlog", "--date", "soon"], {}, 2, "bad day"),
        (["lab", "--config", "/no/such/lab.yaml"], {}, 2, "lab.yaml"),
        (["catalog", "start"], BAD_ENV, 2, "bad configuration"),
        (["catalog", "stop"], BAD_ENV, 2, "bad configuration"),
        (["serve", "start"], BAD_ENV, 2, "bad configuration"),
        (["serve", "stop"], BAD_ENV, 2, "bad configuration"),
        (["serve", "status"], BAD_ENV, 2, "bad configuration"),
        (["superset", "setup"], BAD_ENV, 2, "bad configuration"),
        (["superset", "start"], BAD_ENV, 2, "bad configuration"),
        (["superset", "stop"], BAD_ENV, 2, "bad configuration"),
        (["superset", "status"], BAD_ENV, 2, "bad configuration"),
        (["superset", "import", "--bundle", "/no/such/bundle"], BAD_ENV, 2, "bad configuration"),
        (["superset", "export", "--bundle", "/no/such/bundle"], BAD_ENV, 2, "bad configuration"),
    ],
)
def test_every_subcommand_error_exits_non_zero_through_the_console_script(argv, env, code, message):
    """The installed ``quicexp`` script (not a test app): the exit code of the error's kind."""
    proc = quicexp(*argv, env={**os.environ, **env}, timeout=120)
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("quicexp: error:"), proc.stderr
    assert message in lines[0]


def test_the_exit_code_table_is_the_documented_one():
    readme = (REPO_ROOT / "README.md").read_text()
    for kind, code in EXIT_CODES.items():
        assert f"| {code} | `{kind}`" in readme, kind
