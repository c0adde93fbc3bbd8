"""Failure and retry callbacks: one JSON line per event in a file outside the repo.

The file is ``$QUICEXP_FAILURE_LOG`` or ``$AIRFLOW_HOME/quicexp-task-failures.jsonl`` (with
``make airflow`` that is under ``Settings.state_dir``). A line names the DAG, run, logical date,
task (and map index), try, event (``retry`` or ``failure``) and the one-line error when Airflow
passes it. Writing the record must never hide the task's own error: problems are only logged.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def failure_log_path() -> Path:
    configured = os.environ.get("QUICEXP_FAILURE_LOG")
    if configured:
        return Path(configured)
    home = os.environ.get("AIRFLOW_HOME") or str(Path.home() / "airflow")
    return Path(home) / "quicexp-task-failures.jsonl"


def failure_record(context: Any, event: str) -> dict:
    """The JSON-able record of one failed try (pure: context in, dict out)."""
    ti = context["ti"]
    error = context.get("exception")
    message = (
        str(error).strip().splitlines()[0] if error is not None and str(error).strip() else None
    )
    logical_date = context.get("logical_date")
    return {
        "event": event,
        "dag_id": ti.dag_id,
        "run_id": ti.run_id,
        "logical_date": logical_date.isoformat() if logical_date is not None else None,
        "task_id": ti.task_id,
        "map_index": ti.map_index,
        "try_number": ti.try_number,
        "error_type": type(error).__name__ if error is not None else None,
        "error": message,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _append(record: dict) -> None:
    path = failure_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        log.error("could not record the task failure in %s: %s", path, exc)
        return
    log.error(
        "recorded %s of %s.%s (try %s) in %s: %s",
        record["event"], record["dag_id"], record["task_id"], record["try_number"], path, record["error"],
    )  # fmt: skip


def record_failure(context: Any) -> None:
    """``on_failure_callback``: the task failed for good."""
    _append(failure_record(context, "failure"))


def record_retry(context: Any) -> None:
    """``on_retry_callback``: the task failed and will be retried."""
    _append(failure_record(context, "retry"))
