"""Running dbt inside the pipeline's Spark session (dbt-spark ``method: session``).

The session is built first with Delta and the shared catalog; dbt-spark's session
connection then picks it up with ``getOrCreate``. So ``quicexp dbt`` costs one JVM, and
the test suite shares its single Spark session with dbt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date

from quicexp.config import REPO_ROOT, Settings
from quicexp.errors import DataQualityError, QuicexpError, ServiceUnavailable
from quicexp.metrics import registry_document


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
        # every node's line goes to <home>/logs/dbt.log; the console gets warnings and errors
        "--log-level", "warn", "--log-level-file", "info",
        "--vars", json.dumps(variables),
        *(extra or []),
    ]  # fmt: skip


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
        parsed = dbtRunner().invoke(parse_args)
        if pending is not None:
            pending.result()  # its error first: the command needs what it publishes
    if not parsed.success:
        raise ServiceUnavailable(f"dbt {command} failed: {parsed.exception}".splitlines()[0])
    result = dbtRunner(manifest=parsed.result).invoke(dbt_args(command, settings, day, extra))
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
