"""The daily run: its one list of steps, the plan of a day, and the in-process run of a day.

``STEPS`` is the single definition. ``quicexp plan --date D --json`` gives the DAG
(dags/quicexp_daily.py, one task per step, in another Python environment) each step's command;
``run_day`` runs the same steps in one Spark session (``quicexp run-day``, ``make demo``, tests).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from quicexp.app.dbt import run_dbt
from quicexp.config import ConfigError, Settings
from quicexp.errors import InputDataError, PartialFailure
from quicexp.registry import Registry, load_registry

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.ingest import IngestSummary
    from jobs.qlog.job import QlogSummary

log = logging.getLogger("quicexp.app.daily")


#: Models and their data tests; dbt unit tests check SQL logic, not the day's data: CI runs them.
#: dbt counts unit tests as ``resource_type:test`` and builds a selected model's unit tests with
#: it, so they are excluded by their own resource type.
DBT_SELECTION = ("--select", "resource_type:model resource_type:test", "--exclude", "resource_type:unit_test")
#: the health checks' models (docs/stats.md, "Health checks") with their data tests, left out of a
#: day run without the checks (``run_day(checks=False)``: what bench/bench_checks.py measures
#: the checks against)
CHECK_MODELS = ("experiment_health_counts+", "experiment_placebo_sufficient_stats+")


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
    Step("ingest_qlog", ("ingest-qlog",),
         "the day's qlog traces -> bronze.qlog_connections (a listing and one catalog look-up without qlog)"),
    Step("dbt_build", ("dbt", "build", *DBT_SELECTION),
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
    ingest: IngestSummary | None = None
    qlog: QlogSummary | None = None
    comparisons: int = 0
    reports: list[Path] = field(default_factory=list)
    failed_reports: list[str] = field(default_factory=list)
    #: input rows of the statistics the engine skipped (one reason each in <home>/logs/quicexp.log)
    skipped: int = 0
    #: running experiments without results on the day (no report): why, one line each
    without_data: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


class ExperimentsWithoutData(InputDataError):
    """Running experiments had no results on the day: the pipeline ran, their data are missing
    (exit 3, input: retrying the run cannot help, the data or the registry must change). The
    other experiments' reports are written; ``outcome`` is the day's."""

    def __init__(self, message: str, outcome: DayOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


def dbt_selection(checks: bool = True) -> list[str]:
    """The day's dbt build selection: :data:`DBT_SELECTION`, less :data:`CHECK_MODELS` without
    the checks."""
    if checks:
        return list(DBT_SELECTION)
    return [*DBT_SELECTION[:-1], " ".join([DBT_SELECTION[-1], *CHECK_MODELS])]


def check_steps(names: Collection[str]) -> None:
    """Refuse a step name that :data:`STEPS` does not have (one line, before any work)."""
    known = [step.name for step in STEPS]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"unknown step {unknown[0]!r}: the steps are {', '.join(known)}")


def run_day(
    spark: SparkSession,
    settings: Settings,
    day: date,
    registry: Registry | None = None,
    *,
    skip: Collection[str] = (),
    checks: bool = True,
) -> DayOutcome:
    """The steps of :data:`STEPS` for one day, in one Spark session; ``skip``: steps not to run
    (each step replaces its own slice of the day, so the others may run without it).
    ``checks=False`` leaves the health checks out (their models, their data tests and the results
    step's checks): a day with no trust gate, only for measuring what the gate costs
    (bench/bench_checks.py).

    Raises :class:`PartialFailure` after the last report when some reports failed (the others
    are written), as ``quicexp report`` and the DAG's ``reports`` task do; otherwise
    :class:`ExperimentsWithoutData` when a running experiment has no results on the day (no
    unit reached its metrics; its report is not attempted, and the message says what the data
    carried instead, jobs.experiment_coverage).
    """
    import jobs.experiment_results
    import jobs.ingest
    import jobs.qlog.job
    import jobs.registry
    import jobs.report

    registry = registry or load_registry(settings.registry_file)
    outcome = DayOutcome(day=day)

    def timed(name: str, fn) -> None:
        started = time.monotonic()
        count, what = fn()
        seconds = outcome.seconds[name] = time.monotonic() - started
        rate = f"{count / seconds:>9,.0f} {what}/s" if seconds > 0 and what == "rows" else ""
        log.info("%s %-9s %9s %-11s %7.1f s %s", day, name, f"{count:,}", what, seconds, rate)

    def ingest() -> tuple[int, str]:
        outcome.ingest = jobs.ingest.run(spark, settings, day)
        return outcome.ingest.total("rows_read"), "rows"

    def ingest_qlog() -> tuple[int, str]:
        outcome.qlog = jobs.qlog.job.run(spark, settings, day)
        return outcome.qlog.counts["rows_read"], "rows"

    def dbt_build() -> tuple[int, str]:
        publish = partial(jobs.registry.run, spark, settings, day, registry)
        return run_dbt("build", settings, day, dbt_selection(checks), alongside=publish), "dbt nodes"

    def results() -> tuple[int, str]:
        with _counting("stats.engine") as skipped:
            outcome.comparisons = jobs.experiment_results.run(spark, settings, day, registry, checks=checks)
        outcome.skipped = skipped.count
        return outcome.comparisons, "comparisons"

    def reports() -> tuple[int, str]:
        import jobs.experiment_coverage as coverage

        running = registry.running_on(day)
        with_results = coverage.experiments_with_results(spark, settings, day) if running else set()
        for experiment in running:
            if experiment.id not in with_results:
                outcome.without_data.append(coverage.why_no_results(spark, settings, experiment, day))
                log.warning("%s: %s", day, outcome.without_data[-1])
                continue
            try:
                outcome.reports.append(jobs.report.run(spark, settings, day, experiment.id, registry).html)
            except Exception as exc:  # one report failing must not stop the others
                log.exception("report %s %s failed", experiment.id, day)
                outcome.failed_reports.append(f"{experiment.id} ({type(exc).__name__}: {exc})".splitlines()[0])
        return len(outcome.reports), "reports"

    actions = {"ingest": ingest, "ingest_qlog": ingest_qlog, "dbt_build": dbt_build, "results": results,
               "reports": reports}  # fmt: skip
    check_steps(skip)
    for step in STEPS:
        if step.name not in skip:
            timed(step.name, actions[step.name])
    _raise_failures(outcome)
    return outcome


def _raise_failures(outcome: DayOutcome) -> None:
    """Failed reports: :class:`PartialFailure` (6); else experiments without results:
    :class:`ExperimentsWithoutData` (3)."""
    day = outcome.day
    if outcome.failed_reports:
        raise PartialFailure(
            f"{day}: {len(outcome.failed_reports)} report(s) failed: {'; '.join(outcome.failed_reports)}"
            + "".join(f"; {why}" for why in outcome.without_data)
        )
    if outcome.without_data:
        raise ExperimentsWithoutData(f"{day}: {' | '.join(outcome.without_data)}", outcome)


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


@contextmanager
def _counting(logger_name: str) -> Iterator[_Counter]:
    """Count the warnings of a logger while the block runs (the skipped rows of a step)."""
    counter, logger = _Counter(), logging.getLogger(logger_name)
    logger.addHandler(counter)
    try:
        yield counter
    finally:
        logger.removeHandler(counter)
