"""The daily run: its one list of steps, the plan of a day, and the in-process run of a day.

``STEPS`` is the single definition. ``quicexp plan --date D --json`` gives the DAG
(dags/quicexp_daily.py, one task per step, in another Python environment) each step's command;
``run_day`` runs the same steps in one Spark session (``quicexp run-day``, ``make demo``, tests).
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
from quicexp.app.dbt import run_dbt
from quicexp.config import Settings
from quicexp.errors import PartialFailure
from quicexp.registry import Registry, load_registry

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("quicexp.app.daily")


#: Models and their data tests; dbt unit tests check SQL logic, not the day's data: CI runs them.
DBT_SELECT = "resource_type:model resource_type:test"


@dataclass(frozen=True)
class Step:
    """One step of the daily run: a DAG task of the same name, and a ``quicexp`` command."""

    name: str
    argv: tuple[str, ...]
    doc: str

    def command(self, day: date, experiments: list[str]) -> list[str] | None:
        """The ``quicexp`` arguments of this step for ``day`` (None: nothing to do that day)."""
        argv = [*self.argv, "--date", day.isoformat()]
        if self.name == "reports":
            if not experiments:
                return None
            argv += [arg for experiment in experiments for arg in ("--experiment", experiment)]
        return argv


#: The one list of the daily run's steps, in order. The DAG (dags/quicexp_daily.py) has a task
#: per step and takes each task's command from ``quicexp plan``; ``run_day`` runs the same steps
#: in-process. Reports are isolated: one failing report does not stop the others.
STEPS: tuple[Step, ...] = (
    Step("ingest", ("ingest",), "landing -> bronze for upload day D"),
    Step("dbt_build", ("dbt", "build", "--select", DBT_SELECT),
         "publish the registry, then dbt models and their data tests for day D"),
    Step("results", ("results",), "sufficient statistics -> stats engine -> gold.experiment_results"),
    Step("reports", ("report",), "the HTML and Markdown report of every experiment running on D"),
)  # fmt: skip


def plan(settings: Settings, day: date, registry: Registry | None = None) -> dict:
    """What a run of ``day`` needs: folders, running experiments and each step's command."""
    registry = registry or load_registry(settings.registry_file)
    experiments = [e.id for e in registry.running_on(day)]
    return {
        "day": day.isoformat(),
        "landing_dir": str(settings.landing_root / f"upload_date={day.isoformat()}"),
        "reports_dir": str(settings.reports_dir),
        "experiments": experiments,
        "steps": [
            {"name": step.name, "doc": step.doc, "argv": step.command(day, experiments)}
            for step in STEPS
        ],
    }


@dataclass
class DayOutcome:
    day: date
    ingest: jobs.ingest.IngestSummary | None = None
    comparisons: int = 0
    reports: list[Path] = field(default_factory=list)
    failed_reports: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def run_day(spark: SparkSession, settings: Settings, day: date, registry: Registry | None = None) -> DayOutcome:
    """The steps of :data:`STEPS` for one day, in one Spark session.

    Raises :class:`PartialFailure` after the last report when some reports failed (the others
    are written), as ``quicexp report`` and the DAG's ``reports`` task do.
    """
    registry = registry or load_registry(settings.registry_file)
    outcome = DayOutcome(day=day)

    def timed(name: str, fn):
        started = time.monotonic()
        value = fn()
        outcome.seconds[name] = time.monotonic() - started
        log.info("%s %s done in %.1fs", day, name, outcome.seconds[name])
        return value

    def dbt_build() -> None:
        jobs.registry.run(spark, settings, day, registry)
        run_dbt("build", settings, day, ["--select", DBT_SELECT])

    def reports() -> None:
        for experiment in registry.running_on(day):
            try:
                outcome.reports.append(jobs.report.run(spark, settings, day, experiment.id, registry).html)
            except Exception as exc:  # one report failing must not stop the others
                log.exception("report %s %s failed", experiment.id, day)
                outcome.failed_reports.append(f"{experiment.id} ({type(exc).__name__}: {exc})".splitlines()[0])

    actions = {
        "ingest": lambda: setattr(outcome, "ingest", jobs.ingest.run(spark, settings, day)),
        "dbt_build": dbt_build,
        "results": lambda: setattr(
            outcome, "comparisons", jobs.experiment_results.run(spark, settings, day, registry)
        ),
        "reports": reports,
    }
    for step in STEPS:
        timed(step.name, actions[step.name])
    if outcome.failed_reports:
        raise PartialFailure(
            f"{day}: {len(outcome.failed_reports)} report(s) failed: {'; '.join(outcome.failed_reports)}"
        )
    return outcome
