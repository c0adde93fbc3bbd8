"""The command line: help works, user errors are one line and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from quicexp.cli import main

QUICEXP = [sys.executable, "-m", "quicexp.cli"]


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
