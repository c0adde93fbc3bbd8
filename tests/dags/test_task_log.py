"""What an Airflow task's log holds (no Airflow needed): the bridge (dags/quicexp_airflow/pipeline.py,
standard library only) runs the real quicexp CLI and logs each of its lines at its level, with one
timestamp (Airflow's), no padding and no colour codes; ``make airflow-day``'s console rendering of
task log files (dags/quicexp_airflow/day.py)."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, date, datetime, timedelta

import pytest

from quicexp.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "dags"))
from quicexp_airflow.day import render, run_id_of
from quicexp_airflow.pipeline import PipelineCommandError, run_quicexp, task_log_line

TIMESTAMP = re.compile(r"\d\d:\d\d:\d\d")  # a clock time anywhere in the line


def test_a_cli_log_line_keeps_its_level_and_loses_its_time():
    assert task_log_line("2026-06-16 00:12:03,418 WARNING quicexp.dbt: 3/21 SKIP model gold.x") == (
        logging.WARNING, "quicexp.dbt: 3/21 SKIP model gold.x",
    )  # fmt: skip
    assert task_log_line("quicexp: error: landing zone has no data") == (
        logging.ERROR, "quicexp: error: landing zone has no data",
    )  # fmt: skip
    assert task_log_line("ingest 2026-06-15: read 7,180 rows") == (logging.INFO, "ingest 2026-06-15: read 7,180 rows")


def test_the_cli_under_the_bridge_logs_plain_lines_at_their_level(tmp_path, monkeypatch, caplog):
    """The real CLI, as an Airflow task runs it (stderr a pipe): a forced future day warns, then the
    landing check fails the command (no JVM starts)."""
    monkeypatch.setenv("QUICEXP_HOME", str(tmp_path / "home"))
    day = (datetime.now(UTC).date() + timedelta(days=1)).isoformat()
    caplog.set_level(logging.INFO, logger="quicexp_airflow.pipeline")

    with pytest.raises(PipelineCommandError, match=r"quicexp ingest failed: landing zone"):
        run_quicexp(["ingest", "--date", day, "--force"])

    records = [r for r in caplog.records if r.name == "quicexp_airflow.pipeline"]
    warning = [r for r in records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warning] == [
        f"quicexp: day {day} is in the future (today is {datetime.now(UTC).date()}, UTC): "
        "processed because of --force"
    ]
    assert any(r.levelno == logging.ERROR and r.getMessage().startswith("quicexp: error: landing zone") for r in records)
    for record in records[1:]:  # the first one is the bridge's own "running …" line
        text = record.getMessage()
        assert not TIMESTAMP.search(text), text
        assert "\x1b" not in text and text == text.strip(), repr(text)


def test_a_task_log_file_line_is_rendered_on_one_line():
    raw = json.dumps({
        "timestamp": "2026-06-16T00:12:03.418Z", "level": "warning", "logger": "quicexp_airflow.pipeline",
        "event": "quicexp.dbt: 3/21 SKIP model gold.x",
    })  # fmt: skip
    assert render("dbt_build", raw) == "00:12:03 dbt_build WARNING quicexp.dbt: 3/21 SKIP model gold.x"
    assert render("plan", "   ") is None
    assert render("plan", "plain text line\n") == "plan plain text line"


def test_a_day_run_is_named_after_its_day():
    assert run_id_of(date(2026, 6, 15)) == "manual__2026-06-15T00:00:00+00:00"
