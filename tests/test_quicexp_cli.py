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


# --- issue 40: inputs that cannot be right stop before any JVM, with the exit code of their kind


@pytest.fixture
def cli(monkeypatch, capsys, tmp_path):
    """``quicexp ARGV`` through the console entry point in this process, with its own home and
    QUICEXP_NO_JVM set (a command that got as far as starting Spark would exit 5 saying so);
    returns (exit code, stderr lines). Log handlers the command adds are removed after."""
    import logging

    from quicexp.catalog import NO_JVM_VARIABLE

    monkeypatch.setenv("QUICEXP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(NO_JVM_VARIABLE, "1")
    root = logging.getLogger()
    before = list(root.handlers)

    def run(*argv: str, **env: str) -> tuple[int, list[str]]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        code = main(list(argv))
        return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]

    yield run
    for handler in root.handlers[:]:
        if handler not in before:
            root.removeHandler(handler)
            handler.close()


@pytest.mark.parametrize("day", ["20260615", "2026-W25-1", "2026-166"])
def test_a_date_is_yyyy_mm_dd_only(cli, day):
    code, err = cli("ingest", "--date", day)
    assert (code, err) == (2, [f"quicexp: error: bad day {day!r}: expected YYYY-MM-DD"])


def _tomorrow() -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC).date() + timedelta(days=1)).isoformat()


@pytest.mark.parametrize("command", [["ingest"], ["ingest-qlog"], ["dbt", "build"], ["results"], ["run-day"]])
def test_a_day_in_the_future_is_refused_unless_forced(cli, tmp_path, command):
    day = _tomorrow()
    code, err = cli(*command, "--date", day)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"quicexp: error: day {day} is in the future (today is ")
    assert err[0].endswith("pass --force to process it anyway")
    assert not (tmp_path / "home" / "lake").exists()  # nothing reached the lake


def test_a_forced_future_day_warns_and_goes_on(cli, caplog):
    day = _tomorrow()
    code, err = cli("ingest", "--date", day, "--force")
    assert f"day {day} is in the future" in caplog.text and "processed because of --force" in caplog.text
    # past the check: the next one is the landing folder (no data uploaded for that day)
    assert code == 3 and err[-1].startswith("quicexp: error: landing zone"), err


def test_report_of_an_unknown_experiment_is_a_usage_error_before_spark(cli):
    code, err = cli("report", "--date", "2026-06-15", "-e", "no_such_experiment")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("quicexp: error: unknown experiment 'no_such_experiment'; the registry has:")


def test_an_unreachable_master_is_unavailable_before_any_jvm(cli):
    from tests.conftest import free_port

    master = f"spark://127.0.0.1:{free_port()}"
    code, err = cli("results", "--date", "2026-06-15", QUICEXP_SPARK__MASTER=master)
    assert code == 5 and len(err) == 1, err
    assert err[0].startswith(f"quicexp: error: spark.master {master} is not reachable (127.0.0.1:")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("QUICEXP_SPARK__EXTRA_CONF", '{"spark.sql.extensions": "com.example.Ext"}',
         "bad configuration at spark.extra_conf: spark.sql.extensions is the project's"),
        ("QUICEXP_SPARK__DRIVER_MEMORY", "lots",
         "bad configuration at spark.driver_memory: 'lots' is not a memory size such as 4g or 512m"),
        ("QUICEXP_SPARK__MASTER", "spark:/nohost", "bad configuration at spark.master: 'spark:/nohost'"),
    ],
)  # fmt: skip
def test_spark_settings_that_cannot_start_a_session_are_usage_errors(cli, variable, value, message):
    code, err = cli("results", "--date", "2026-06-15", **{variable: value})
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"quicexp: error: {message}")
