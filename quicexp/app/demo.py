"""`make demo`: simulate the FHOL experiment, run the pipeline day by day, show the decision.

The console leads with what the report's first screen shows: the verdict of each treatment arm
with its reasons, the health checks, then the success and guardrail metrics (units on every
number, both arms' values with the same decimals) and the mechanism check; then any as-of date
revised since its report was published. The simulator is seeded and every write replaces its
slice, so a second demo gives the same rows and the same numbers up to floating-point summation
order.
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
    #: the last day's decision: verdicts, tests, health and what the reports published
    decision: DemoDecision | None = None


@dataclass
class DemoDecision:
    """What the console summary reads from the lake (reports.decision, reports.health and
    reports.revision turn it into lines). Frames are None where the table does not exist yet."""

    day: date
    verdicts: pd.DataFrame | None
    tests: pd.DataFrame | None
    results: pd.DataFrame
    health: pd.DataFrame | None = None
    published: pd.DataFrame | None = None


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
    return DemoOutcome(first, last, reports, headline(spark, settings, last), skipped,
                       decision(spark, settings, last))  # fmt: skip


def decision(spark: SparkSession, settings: Settings, day: date) -> DemoDecision:
    """The experiment's decision as of ``day`` and what the console needs around it: every
    as-of date up to ``day`` (revisions are measured on all of them), overall rows only."""
    from pyspark.sql import functions as F

    from jobs.delta_io import qualified
    from jobs.report.load import PUBLISHED_TABLE

    this = (F.col("experiment_id") == EXPERIMENT) & (F.col("as_of_date") <= F.lit(day))

    def read(table: str, where=this):
        name = qualified(settings.gold_schema, table)
        if not spark.catalog.tableExists(name):
            return None
        return spark.table(name).where(where).toPandas()

    results = spark.table(qualified(settings.gold_schema, "experiment_results")).where(
        this & (F.col("segment_type") == "overall")
    ).toPandas()
    return DemoDecision(
        day, read("experiment_decisions"), read("experiment_decision_tests"), results,
        read("experiment_health", (F.col("experiment_id") == EXPERIMENT) & (F.col("as_of_date") == F.lit(day))),
        read(PUBLISHED_TABLE),
    )  # fmt: skip


def print_outcome(outcome: DemoOutcome, settings: Settings) -> None:
    from rich.console import Console
    from rich.table import Table

    # Not a terminal (CI logs, `| tee`): rich would assume 80 columns and cut the intervals.
    console = Console() if sys.stdout.isatty() else Console(width=160)
    d = outcome.decision
    if d is not None and d.verdicts is not None and len(d.verdicts):
        print_decision(console, d, _minimum_effects(settings))
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
_STATE = {"ok": ("✓", "green"), "failed": ("✗", "red"), "warning": ("!", "yellow"), "unknown": ("?", "yellow")}


def print_decision(console, d: DemoDecision, minimum_effects: dict[str, float] | None = None) -> None:
    """Verdict first, then health, then the success and guardrail rows, the mechanism check and
    the revisions: the report's first screen, in the terminal."""
    from rich.table import Table

    from reports.data import as_dates
    from reports.decision import metric_cards, views
    from reports.health import health
    from reports.revision import declared_roles, publication, revisions

    on_day = lambda f: None if f is None else f[as_dates(f["as_of_date"]) == d.day]  # noqa: E731
    decisions = views(on_day(d.verdicts), on_day(d.tests), minimum_effects)
    for v in decisions:
        console.print(f"[bold]{EXPERIMENT}[/bold] as of {d.day}, {v.treatment_arm} vs {v.control_arm}"
                      f"{', ' + v.day_text if v.day_text else ''}: [bold {_TONE[v.tone]}]{v.headline.upper()}"
                      f"[/bold {_TONE[v.tone]}] — {v.summary}")  # fmt: skip
    hb = health(on_day(d.results), d.health)
    checks = "; ".join(f"[{_STATE[g.state][1]}]{_STATE[g.state][0]} {g.label}[/{_STATE[g.state][1]}]"
                       + (f" ({g.detail})" if g.detail else "") for g in hb.groups)  # fmt: skip
    tone = {"ok": "green", "failed": "bold red", "warning": "yellow"}[hb.state]
    console.print(f"health: [{tone}]{hb.summary}[/{tone}] — {checks}")
    for c in [*hb.failed_gates, *hb.warnings]:
        console.print(f"  [{_STATE[c.state][1]}]✗ {c.full_label}[/{_STATE[c.state][1]}]: {c.detail}")
    cards = metric_cards(decisions)
    table = Table(show_edge=False, pad_edge=False)
    for column in ("role", "metric", "arm", "control", "treatment", "Δ", "Δ %", "always-valid bounds",
                   "margin / min. effect", "reading"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("role", "metric", "arm", "reading") else "right",
                         no_wrap=True)  # fmt: skip
    for mc in cards:
        if mc.role == "mechanism":
            continue
        for c in mc.arms:
            limit = c.threshold_text if c.role == "guardrail" else c.minimum_text or "–"
            table.add_row(c.role, c.label, c.arm, c.control, c.treatment, c.delta, c.relative, c.interval_text,
                          limit, f"[{_TONE[c.tone]}]{c.status_text}[/{_TONE[c.tone]}]")  # fmt: skip
    console.print(table)
    for mc in cards:
        if mc.role == "mechanism":
            for c in mc.arms:
                console.print(f"mechanism (treatment active?): {c.label}, {c.arm}: {c.control} → {c.treatment} "
                              f"(Δ {c.delta}, bound {c.interval_text}) — [{_TONE[c.tone]}]{c.status_text}[/{_TONE[c.tone]}]")  # fmt: skip
    current = publication(d.results, d.verdicts, declared_roles(d.tests))
    for r in revisions(d.published, current):
        shown = "; ".join(c.line for c in r.changes[:3])
        more = f"; … {len(r.changes) - 3} more in the report" if len(r.changes) > 3 else ""
        console.print(f"[yellow]revised since published[/yellow] ({r.published_text}): as of {r.as_of_date}, "
                      f"published → now: {shown}{more}")  # fmt: skip


def _minimum_effects(settings: Settings) -> dict[str, float]:
    """The success metrics' minimum effects the registry declares (the tests do not carry them)."""
    from quicexp.registry import load_registry
    from reports.decision import minimum_effects

    return minimum_effects(load_registry(settings.registry_file).get(EXPERIMENT))


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
