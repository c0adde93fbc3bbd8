"""`make demo`: simulate the FHOL experiment, run the pipeline day by day, show the results.

Deterministic: the simulator is seeded and every write replaces its slice, so a second demo
gives the same numbers and the same row counts.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from quicexp.config import REPO_ROOT, Settings

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

log = logging.getLogger("quicexp.app.demo")

SCENARIO = REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml"
EXPERIMENT = "fhol_2026_06"
HEADLINE_METRICS = ("request_latency_per_client", "rebuffers_per_playback")


@dataclass
class DemoOutcome:
    first_day: date
    last_day: date
    reports: list[Path]
    headline: pd.DataFrame
    #: statistics input rows the engine skipped over all days (reasons in the log file)
    skipped: int = 0
    #: the last day's verdict of each treatment arm and the tests behind it
    verdicts: pd.DataFrame | None = None
    tests: pd.DataFrame | None = None


def simulate(settings: Settings, days: int, clients: int) -> date:
    """Write the scenario's landing zone; returns its first day."""
    from simulation.runner import run_scenario

    manifest = run_scenario(SCENARIO, settings.landing_root, days=days, clients=clients, progress=True)
    log.info(
        "simulated %s events for %d clients over %d days into %s",
        f"{manifest['events_total']:,}", clients, days, settings.landing_root,
    )  # fmt: skip
    return date.fromisoformat(manifest["start_date"])


def headline(spark: SparkSession, settings: Settings, day: date) -> pd.DataFrame:
    """The two headline metrics per platform on ``day``, control vs treatment."""
    from pyspark.sql import functions as F

    from jobs.delta_io import qualified

    table = spark.table(qualified(settings.gold_schema, "experiment_results"))
    return (
        table.where(
            (F.col("experiment_id") == EXPERIMENT)
            & (F.col("as_of_date") == F.lit(day))
            & F.col("metric").isin(*HEADLINE_METRICS)
            & F.col("segment_type").isin("overall", "platform")
        )
        .select(
            "metric", "segment_value", "n_control", "n_treatment", "value_control", "value_treatment",
            "delta_abs", "ci_abs_lower", "ci_abs_upper", "delta_rel", "p_value_adjusted", "method",
        )
        .orderBy("metric", F.col("segment_type") != "overall", "segment_value")  # overall first
        .toPandas()
    )  # fmt: skip


def run_demo(spark: SparkSession, settings: Settings, first: date, days: int) -> DemoOutcome:
    """Run the pipeline over ``days`` simulated days starting at ``first``."""
    from quicexp.app.daily import run_day

    reports: list[Path] = []
    skipped = 0
    for offset in range(days):
        day = first + timedelta(days=offset)
        outcome = run_day(spark, settings, day)
        reports = outcome.reports or reports
        skipped += outcome.skipped
    last = first + timedelta(days=days - 1)
    verdicts, tests = decision(spark, settings, last)
    return DemoOutcome(first, last, reports, headline(spark, settings, last), skipped, verdicts, tests)


def decision(spark: SparkSession, settings: Settings, day: date):
    """The experiment's verdicts on ``day`` and their tests (gold.experiment_decisions)."""
    from pyspark.sql import functions as F

    from jobs.delta_io import qualified

    def read(table: str):
        name = qualified(settings.gold_schema, table)
        if not spark.catalog.tableExists(name):
            return None
        where = (F.col("experiment_id") == EXPERIMENT) & (F.col("as_of_date") == F.lit(day))
        return spark.table(name).where(where).toPandas()

    return read("experiment_decisions"), read("experiment_decision_tests")


def print_outcome(outcome: DemoOutcome, settings: Settings) -> None:
    from rich.console import Console
    from rich.table import Table

    # Not a terminal (CI logs, `| tee`): rich would assume 80 columns and cut the intervals.
    console = Console() if sys.stdout.isatty() else Console(width=160)
    if outcome.verdicts is not None and len(outcome.verdicts):
        print_decisions(console, outcome)
        _footer(console, outcome, settings)
        return
    for metric in HEADLINE_METRICS:
        rows = outcome.headline[outcome.headline["metric"] == metric]
        table = Table(title=f"{metric} — {EXPERIMENT}, experiment to date on {outcome.last_day}")
        for column in ("segment", "units C/T", "control", "fhol", "delta", "95% CI", "rel.", "method"):
            table.add_column(column, justify="left" if column in ("segment", "method") else "right", no_wrap=True)
        for r in rows.itertuples(index=False):
            table.add_row(
                r.segment_value, f"{r.n_control:,}/{r.n_treatment:,}", f"{r.value_control:.4g}",
                f"{r.value_treatment:.4g}", f"{r.delta_abs:+.4g}", f"[{r.ci_abs_lower:+.4g}, {r.ci_abs_upper:+.4g}]",
                f"{r.delta_rel * 100:+.2f}%", r.method,
            )  # fmt: skip
        console.print(table)
    _footer(console, outcome, settings)


_TONE = {"good": "green", "bad": "red", "neutral": "yellow"}


def print_decisions(console, outcome: DemoOutcome) -> None:
    """Verdict first, then health, then the success, guardrail and mechanism rows."""
    from rich.table import Table

    from reports.decision import views

    for v in views(outcome.verdicts, outcome.tests):
        day = f"day {v.day_of_experiment}" + (f" of {v.planned_days}" if v.planned_days else "")
        console.print(f"[bold]{EXPERIMENT}[/bold], {v.treatment_arm} vs {v.control_arm}, "
                      f"{outcome.last_day} ({day}): [bold {_TONE[v.tone]}]{v.headline.upper()}"
                      f"[/bold {_TONE[v.tone]}] — {v.summary}")  # fmt: skip
        srm = "failed" if "gate_failed:srm" in v.reasons else "passed"
        console.print(f"health: sample ratio check {srm}")
        table = Table(show_edge=False)
        for column in ("role", "metric", v.control_arm, v.treatment_arm, "delta", "relative",
                       "bounds", "threshold", "reading"):  # fmt: skip
            table.add_column(column, justify="left" if column in ("role", "metric", "reading")
                             else "right", no_wrap=True)  # fmt: skip
        for c in v.cards:
            table.add_row(c.role, c.label, c.control, c.treatment, c.delta, c.relative,
                          c.interval_text, c.threshold_text,
                          f"[{_TONE[c.tone]}]{c.status_text}[/{_TONE[c.tone]}]")  # fmt: skip
        console.print(table)


def _footer(console, outcome: DemoOutcome, settings: Settings) -> None:
    if outcome.skipped:
        console.print(
            f"{outcome.skipped} comparisons skipped (e.g. a segment with too few units in an arm); "
            f"each reason is in {settings.home / 'logs' / 'quicexp.log'}"
        )
    for path in outcome.reports:
        console.print(f"report: [bold]{path}[/bold]")
    console.print(f"tables: {settings.bronze_schema}.*, {settings.silver_schema}.*, {settings.gold_schema}.experiment_results "
                  f"in the lake at {settings.lake_root} (metastore: `quicexp catalog status`)")
