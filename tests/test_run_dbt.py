"""``run_dbt``: the project parsed on its own while the Spark work it needs runs alongside, then the
command with its own selection (``dbt ls``: no Spark, no warehouse connection)."""

from __future__ import annotations

import threading
from datetime import date

import pytest

from quicexp.app.dbt import run_dbt
from quicexp.config import load_settings
from quicexp.errors import ServiceUnavailable

DAY = date(2026, 6, 15)


def test_the_work_alongside_runs_on_another_thread_and_the_selection_is_the_commands(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    threads: list[str] = []
    # parse takes no --select: given to it, dbt would stop ("No such option") before the command
    run_dbt("ls", settings, DAY, ["--select", "stg_registry__experiment_arms"],
            alongside=lambda: threads.append(threading.current_thread().name))
    assert len(threads) == 1 and threads[0] != threading.current_thread().name
    assert (settings.home / "dbt" / "target" / "manifest.json").is_file()


def test_an_error_alongside_is_the_commands_error(tmp_path):
    settings = load_settings(home=tmp_path / "home")

    def publish() -> None:
        raise RuntimeError("registry publish failed")

    with pytest.raises(RuntimeError, match="registry publish failed"):
        run_dbt("ls", settings, DAY, alongside=publish)


def test_a_command_dbt_refuses_is_one_error(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    with pytest.raises(ServiceUnavailable, match="dbt ls failed"):
        run_dbt("ls", settings, DAY, ["--no-such-flag"])


def test_dbts_events_become_one_plain_line_each():
    """What the console of ``quicexp dbt`` and the Airflow task log get from dbt's real events."""
    import logging

    from dbt.adapters.events.types import FinishedRunningStats
    from dbt.events.types import (
        LogModelResult,
        LogStartLine,
        LogTestResult,
        RunResultError,
        SkippingDetails,
        StatsLine,
    )
    from dbt_common.events.base_types import msg_from_base_event

    from quicexp.app.dbt import progress_line

    model = {"node_name": "stg_x", "resource_type": "model", "unique_id": "model.quicexp.stg_x"}
    test = {**model, "resource_type": "test"}
    sql_error = "Runtime Error in model stg_x (models/stg_x.sql)\n  Runtime Error\n  \n  [PARSE_SYNTAX_ERROR] at 'join'\n  == SQL ==\n  select 1\n  join"
    events = {
        LogStartLine(description="sql table model silver.stg_x", index=1, total=3, node_info=model):
            (logging.INFO, "1/3 START sql table model silver.stg_x"),
        LogStartLine(description="test not_null_x", index=2, total=3, node_info=test): None,
        LogModelResult(description="sql table model silver.stg_x", status="OK", index=1, total=3,
                       execution_time=2.345, node_info=model):
            (logging.INFO, "1/3 OK sql table model silver.stg_x in 2.3s"),
        LogModelResult(description="sql table model silver.stg_x", status="error", index=1, total=3,
                       execution_time=0.5, node_info=model):
            (logging.ERROR, "1/3 ERROR sql table model silver.stg_x in 0.5s"),
        LogTestResult(name="not_null_x", status="pass", index=2, num_models=3, execution_time=0.4, node_info=test):
            (logging.INFO, "2/3 PASS test not_null_x in 0.4s"),
        LogTestResult(name="not_null_x", status="fail", index=2, num_models=3, execution_time=0.4,
                      num_failures=7, node_info=test):
            (logging.ERROR, "2/3 FAIL 7 test not_null_x in 0.4s"),
        SkippingDetails(resource_type="model", schema="gold", node_name="m", index=3, total=3):
            (logging.WARNING, "3/3 SKIP model gold.m"),
        FinishedRunningStats(stat_line="1 table model, 1 data test", execution=" in 0 hours 0 minutes and 3.00 seconds",
                             execution_time=3.0):
            (logging.INFO, "Finished running 1 table model, 1 data test in 0 hours 0 minutes and 3.00 seconds (3.00s)."),
        StatsLine(stats={"pass": 1, "warn": 0, "error": 1, "skip": 1, "noop": 0, "total": 3}):
            (logging.INFO, "Done. PASS=1 WARN=0 ERROR=1 SKIP=1 NO-OP=0 TOTAL=3"),
        RunResultError(msg=sql_error):
            (logging.ERROR, "Runtime Error in model stg_x (models/stg_x.sql) Runtime Error [PARSE_SYNTAX_ERROR] at 'join'"),
    }  # fmt: skip
    for event, line in events.items():
        assert progress_line(msg_from_base_event(event)) == line, event
