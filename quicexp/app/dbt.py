"""Running dbt inside the pipeline's Spark session (dbt-spark ``method: session``).

The session is built first with Delta and the shared catalog; dbt-spark's session
connection then picks it up with ``getOrCreate``. So ``quicexp dbt`` costs one JVM, and
the test suite shares its single Spark session with dbt.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date

from quicexp.config import REPO_ROOT, Settings
from quicexp.errors import DataQualityError, QuicexpError, ServiceUnavailable
from quicexp.metrics import registry_document

log = logging.getLogger("quicexp.dbt")


def dbt_args(command: str, settings: Settings, day: date, extra: list[str] | None = None) -> list[str]:
    """dbt's arguments for ``command``; the vars carry the day, the schemas and the metric
    registry (the file Settings.metrics_file names, validated, as data; macros/metric_registry.sql)."""
    variables = {
        "day": day.isoformat(),
        "lookback_days": settings.ingest.lookback_days,
        "bronze_schema": settings.bronze_schema,
        "silver_schema": settings.silver_schema,
        "gold_schema": settings.gold_schema,
        "metric_registry": registry_document(settings.metrics_file),
    }
    return [
        command,
        "--project-dir", str(REPO_ROOT),
        "--profiles-dir", str(REPO_ROOT),
        "--target-path", str(settings.home / "dbt" / "target"),
        "--log-path", str(settings.home / "logs"),
        # dbt's own log (every node, info level) goes to <home>/logs/dbt.log without colour codes;
        # it prints nothing on the console: run_dbt logs its progress and problems (progress_line)
        "--log-level", "none", "--log-level-file", "info",
        "--no-use-colors", "--no-use-colors-file",
        "--vars", json.dumps(variables),
        *(extra or []),
    ]  # fmt: skip


#: colour codes a message may still carry (dbt colours some text whatever the flags say)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: dbt's result status of a test -> the level of its line
_TEST_LEVELS = {
    "pass": logging.INFO, "warn": logging.WARNING, "fail": logging.ERROR, "error": logging.ERROR,
}
_EVENT_LEVELS = {"warn": logging.WARNING, "error": logging.ERROR}
#: where an error message starts quoting the compiled SQL (Spark's errors): that stays in dbt.log
_SQL_QUOTE = "== SQL =="


def _one_line(message: str, limit: int = 500) -> str:
    """A dbt message on one line: its lines before any quoted SQL, stripped and joined."""
    lines = []
    for line in _ANSI.sub("", message).splitlines():
        if line.strip().startswith(_SQL_QUOTE):
            break
        if line.strip():
            lines.append(line.strip())
    text = " ".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def progress_line(event) -> tuple[int, str] | None:
    """The ``quicexp.dbt`` line of one dbt event as (level, text), or None for events that stay in
    dbt.log: a model starting (``3/21 START sql table model silver.x``) and its result
    (``3/21 OK sql table model silver.x in 4.2s``), a test's result, a skipped node, the run's
    two summary lines (``Finished running …``, ``Done. PASS=…``), and every warning or error on
    one line (without the SQL an error may quote: dbt.log has it). Plain text: no colour codes,
    no padding."""
    name, data = event.info.name, event.data
    if name == "LogStartLine":
        if data.node_info.resource_type in ("test", "unit_test"):
            return None  # a test's one line is its result
        return logging.INFO, f"{data.index}/{data.total} START {data.description}"
    if name in ("LogModelResult", "LogNodeNoOpResult"):
        failed = data.status == "error" if name == "LogModelResult" else False
        status = "ERROR" if failed else ("NO-OP" if name == "LogNodeNoOpResult" else "OK")
        return (
            logging.ERROR if failed else logging.INFO,
            f"{data.index}/{data.total} {status} {data.description} in {data.execution_time:.1f}s",
        )
    if name == "LogTestResult":
        failures = f" {data.num_failures}" if data.status in ("fail", "warn") else ""
        status = data.status.upper() + failures
        kind = data.node_info.resource_type.replace("_", " ") or "test"
        text = f"{data.index}/{data.num_models} {status} {kind} {data.name}"
        return _TEST_LEVELS.get(data.status, logging.ERROR), f"{text} in {data.execution_time:.1f}s"
    if name == "SkippingDetails":
        return logging.WARNING, (
            f"{data.index}/{data.total} SKIP {data.resource_type} {data.schema}.{data.node_name}"
        )
    text = _one_line(event.info.msg)
    if name in ("FinishedRunningStats", "StatsLine"):
        return logging.INFO, text
    level = _EVENT_LEVELS.get(event.info.level)
    return (level, text) if level is not None and text else None


def _log_event(event) -> None:
    """dbt's event callback: its progress and problems on the ``quicexp.dbt`` logger."""
    line = progress_line(event)
    if line is not None:
        log.log(line[0], "%s", line[1])


def run_dbt(
    command: str,
    settings: Settings,
    day: date,
    extra: list[str] | None = None,
    *,
    alongside: Callable[[], object] | None = None,
) -> int:
    """Run ``dbt <command>`` in-process; return how many nodes it ran.

    ``alongside``: Spark work the run needs first (the registry's publish), done on another
    thread while dbt is imported and parses the project, which touch neither Spark nor the lake.

    A failed data test raises :class:`DataQualityError`, a failed model :class:`QuicexpError`
    (both naming the nodes), dbt itself failing to start :class:`ServiceUnavailable`.
    """
    os.environ.setdefault("QUICEXP_DBT_TARGET", "local")
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    parse_args = dbt_args("parse", settings, day)  # a bad metric registry stops here, first
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dbt-alongside") as pool:
        pending = pool.submit(alongside) if alongside is not None else None
        from dbt.cli.main import dbtRunner

        # the project parsed on its own (the selection and flags are the command's, not parse's)
        parsed = dbtRunner(callbacks=[_log_event]).invoke(parse_args)
        if pending is not None:
            pending.result()  # its error first: the command needs what it publishes
    if not parsed.success:
        raise ServiceUnavailable(f"dbt {command} failed: {parsed.exception}".splitlines()[0])
    command_runner = dbtRunner(manifest=parsed.result, callbacks=[_log_event])
    result = command_runner.invoke(dbt_args(command, settings, day, extra))
    if result.success:
        return len(getattr(result.result, "results", None) or [])
    if result.exception is not None:
        raise ServiceUnavailable(f"dbt {command} failed: {result.exception}".splitlines()[0])
    failed = [
        r.node
        for r in (result.result or [])
        if getattr(r, "status", None) in ("error", "fail", "runtime error")
    ]
    models = [n.name for n in failed if getattr(n, "resource_type", None) != "test"]
    tests = [n.name for n in failed if getattr(n, "resource_type", None) == "test"]
    log_file = settings.home / "logs" / "dbt.log"
    if models or not tests:
        raise QuicexpError(
            f"dbt {command} failed for: {', '.join(models) or 'unknown nodes'} (see {log_file})"
        )
    raise DataQualityError(f"dbt {command}: data tests failed: {', '.join(tests)} (see {log_file})")
