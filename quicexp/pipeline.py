"""One logical day of the whole pipeline in one Spark session (what `make demo` and tests run).

Airflow runs the same steps as separate tasks (dags/quicexp_daily.py); this module is the
in-process composition of the same job functions, in the same order.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import jobs.experiment_results
import jobs.ingest
import jobs.registry
import jobs.report
from quicexp.config import Settings
from quicexp.dbt import run_dbt
from quicexp.registry import Registry, load_registry

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("quicexp.pipeline")


@dataclass
class DayOutcome:
    day: date
    ingest: jobs.ingest.IngestSummary | None = None
    comparisons: int = 0
    reports: list[Path] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def run_day(spark: SparkSession, settings: Settings, day: date, registry: Registry | None = None) -> DayOutcome:
    registry = registry or load_registry(settings.registry_file)
    outcome = DayOutcome(day=day)

    def stage(name: str, fn):
        started = time.monotonic()
        value = fn()
        outcome.seconds[name] = time.monotonic() - started
        log.info("%s %s done in %.1fs", day, name, outcome.seconds[name])
        return value

    stage("registry", lambda: jobs.registry.run(spark, settings, day, registry))
    outcome.ingest = stage("ingest", lambda: jobs.ingest.run(spark, settings, day))
    stage("dbt", lambda: run_dbt("build", settings, day))
    outcome.comparisons = stage("results", lambda: jobs.experiment_results.run(spark, settings, day, registry))
    for experiment in registry.running_on(day):
        paths = stage(f"report {experiment.id}", lambda e=experiment: jobs.report.run(spark, settings, day, e.id, registry))
        outcome.reports.append(paths.html)
    return outcome
