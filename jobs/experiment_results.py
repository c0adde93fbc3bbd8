"""gold.experiment_sufficient_stats → stats engine → gold.experiment_results, for one day, then
the health checks (gold.experiment_health, with the A/A placebo's tally in
gold.experiment_placebo_tally) and the verdicts they gate (gold.experiment_decisions).

Spark reads the (small) sufficient-statistics and health-count slices; the inference runs in
``stats.engine.analyze`` and ``stats.health`` on those sums and counts only, so its cost does not
grow with events.
"""

from __future__ import annotations

import logging
import time
from datetime import date, timedelta
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_schema, qualified, replace_where
from quicexp.config import Settings
from quicexp.registry import Registry, load_registry

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

log = logging.getLogger("quicexp.results")


def analysis_settings(registry: Registry):
    from stats.settings import AnalysisSettings

    return AnalysisSettings(expected_split=registry.expected_split(), plans=registry.plans())


def compute(stats_rows: pd.DataFrame, registry: Registry) -> pd.DataFrame:
    """Pure step: sufficient statistics in, results out (the stats engine)."""
    from stats.engine import analyze

    return analyze(stats_rows, analysis_settings(registry))


def _add_new_columns(spark: SparkSession, target: str, frame) -> None:
    """Add to an existing results table the columns the engine writes and it lacks (as
    nullable; older days read them as null), so the overwrite below keeps its schema check."""
    have = {f.name for f in spark.table(target).schema.fields}
    new = [f for f in frame.schema.fields if f.name not in have]
    if new:
        cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in new)
        spark.sql(f"ALTER TABLE {target} ADD COLUMNS ({cols})")


def decision_settings(registry: Registry, settings: Settings):
    """The declared metrics of every experiment, as the decision layer takes them."""
    from quicexp.metrics import load_metrics
    from stats.settings import DecisionSettings

    return DecisionSettings(experiments=registry.decision_plans(load_metrics(settings.metrics_file)))


def _write(spark: SparkSession, frame: pd.DataFrame, target: str, types: dict[str, str],
           window) -> None:  # fmt: skip
    """Replace the window of ``target`` (created from ``types`` if missing) with ``frame``."""
    from pyspark.sql.types import StructType

    struct = StructType.fromDDL(", ".join(f"`{c}` {t}" for c, t in types.items()))
    if not spark.catalog.tableExists(target):
        spark.createDataFrame([], struct).write.format("delta").partitionBy(
            "as_of_date"
        ).saveAsTable(target)
    replace_where(spark.createDataFrame(_records(frame, list(types)), struct), target, window)


def _records(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """Plain Python rows (numpy scalars and NaN made Python values and None) for Spark."""
    import numpy as np

    def plain(v):
        if isinstance(v, list | tuple | np.ndarray):
            return [plain(x) for x in v]
        if isinstance(v, np.generic):
            v = v.item()
        return None if isinstance(v, float) and v != v else v

    return [tuple(plain(v) for v in row) for row in frame[columns].itertuples(index=False)]


def write_decisions(spark: SparkSession, settings: Settings, day: date, registry: Registry,
                    health: pd.DataFrame | None = None) -> pd.DataFrame | None:  # fmt: skip
    """Verdicts of the window's looks (gold.experiment_decisions, with the tests behind them in
    gold.experiment_decision_tests), from every look of each experiment since it started: a
    sequential test that passed at an earlier look stays passed; a failed gate of ``health``
    (the window's health checks) makes its look ``invalid``. Returns the window's tests (None
    when no experiment declares its metrics)."""
    from pyspark.sql import functions as F

    from stats.decision import DECISION_TYPES, TEST_TYPES

    ds = decision_settings(registry, settings)
    source = qualified(settings.gold_schema, "experiment_results")
    if not ds.experiments or not spark.catalog.tableExists(source):
        return None
    first = day - timedelta(days=settings.ingest.lookback_days)
    window = F.col("as_of_date").between(F.lit(first), F.lit(day))
    history = (
        spark.table(source)
        .where(F.col("experiment_id").isin(list(ds.experiments)))
        .where((F.col("segment_type") == "overall") & (F.col("as_of_date") <= F.lit(day)))
        .toPandas()
    )
    from stats.decision import decide as decide_looks

    out = decide_looks(history, ds, health)
    verdicts = out.verdicts[out.verdicts["as_of_date"] >= first]
    tests = out.tests[out.tests["as_of_date"] >= first] if len(out.tests) else out.tests
    _write(spark, verdicts, qualified(settings.gold_schema, "experiment_decisions"),
           DECISION_TYPES, window)  # fmt: skip
    _write(spark, tests, qualified(settings.gold_schema, "experiment_decision_tests"),
           TEST_TYPES, window)  # fmt: skip
    return tests


def _read(spark: SparkSession, name: str, where) -> pd.DataFrame | None:
    """The rows of table ``name`` where ``where`` holds; None when the table does not exist."""
    if not spark.catalog.tableExists(name):
        return None
    return spark.table(name).where(where).toPandas()


def health_checks(spark: SparkSession, settings: Settings, day: date, registry: Registry,
                  stats_rows: pd.DataFrame) -> pd.DataFrame:  # fmt: skip
    """The window's health checks but ``treatment_active`` (which reads the verdicts' tests):
    the gates from gold.experiment_health_counts and the sufficient statistics, and the A/A
    placebo's and canary's running tallies, from the window's placebo looks and the tallies of
    the days before it (gold.experiment_placebo_tally, whose window this replaces)."""
    import pandas as pd
    from pyspark.sql import functions as F

    from stats import health as h

    gold = settings.gold_schema
    first = day - timedelta(days=settings.ingest.lookback_days)
    window = F.col("as_of_date").between(F.lit(first), F.lit(day))
    gated = h.gated_metrics(decision_settings(registry, settings).experiments)
    hs = h.HealthSettings()
    counts = _read(spark, qualified(gold, "experiment_health_counts"), window)
    parts = []
    if counts is not None and len(counts):
        parts.append(h.gate_checks(counts, stats_rows, registry.expected_split(), gated, hs))
    placebo = _read(spark, qualified(gold, "experiment_placebo_sufficient_stats"), window)
    tally_table = qualified(gold, "experiment_placebo_tally")
    if placebo is not None:
        from stats.engine import analyze_table

        tally = pd.DataFrame(columns=h.TALLY_COLUMNS)
        if len(placebo):
            factor = float(placebo["canary_factor"].max())
            res = analyze_table(h.placebo_input(placebo), analysis_settings(registry)).results
            tally = h.placebo_tally(res, factor, hs.placebo_alpha)
            tally["as_of_date"] = tally["as_of_date"].dt.date
        _write(spark, tally, tally_table, h.TALLY_TYPES, window)
    if spark.catalog.tableExists(tally_table):
        history = _read(spark, tally_table, F.col("as_of_date") <= F.lit(day))
        dates = sorted(set(pd.to_datetime(history["as_of_date"])) & set(pd.date_range(first, day)))
        parts.append(h.placebo_checks(history, dates, hs))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else h.empty()


def write_health(spark: SparkSession, settings: Settings, day: date,
                 health: pd.DataFrame) -> None:  # fmt: skip
    """Replace the window of gold.experiment_health with ``health``."""
    from pyspark.sql import functions as F

    from stats.health import HEALTH_TYPES

    first = day - timedelta(days=settings.ingest.lookback_days)
    window = F.col("as_of_date").between(F.lit(first), F.lit(day))
    frame = health.assign(as_of_date=health["as_of_date"].map(lambda d: d.date() if hasattr(d, "date") else d))
    _write(spark, frame, qualified(settings.gold_schema, "experiment_health"), HEALTH_TYPES, window)


def run(
    spark: SparkSession, settings: Settings, day: date, registry: Registry | None = None,
    *, checks: bool = True,
) -> int:  # fmt: skip
    """Recompute results for every as-of date the run may have changed, the health checks of
    those dates and the verdicts of the experiments that declare their metrics; returns the
    results' row count. ``checks=False``: verdicts without the health checks, which are neither
    computed nor written (only for measuring what they cost, bench/bench_checks.py)."""
    import pandas as pd
    from pyspark.sql import functions as F

    from stats.health import treatment_active_checks

    registry = registry or load_registry(settings.registry_file)
    first = day - timedelta(days=settings.ingest.lookback_days)
    window = F.col("as_of_date").between(F.lit(first), F.lit(day))
    source = spark.table(qualified(settings.gold_schema, "experiment_sufficient_stats")).where(
        window
    )
    stats_rows = source.toPandas()
    results = compute(stats_rows, registry)
    ensure_schema(spark, settings.gold_schema)
    target = qualified(settings.gold_schema, "experiment_results")
    frame = spark.createDataFrame(results) if len(results) else None
    if frame is None:
        if not spark.catalog.tableExists(target):
            return 0
        frame = spark.table(target).limit(0)
    if not spark.catalog.tableExists(target):
        frame.limit(0).write.format("delta").partitionBy("as_of_date").saveAsTable(target)
    else:
        _add_new_columns(spark, target, frame)
    replace_where(frame, target, window)
    if not checks:
        write_decisions(spark, settings, day, registry, None)
        return len(results)
    started = time.monotonic()
    health = health_checks(spark, settings, day, registry, stats_rows)
    seconds = time.monotonic() - started
    tests = write_decisions(spark, settings, day, registry, health)
    started = time.monotonic()
    active = treatment_active_checks(tests)
    if len(active):
        health = pd.concat([health, active], ignore_index=True) if len(health) else active
    write_health(spark, settings, day, health)
    seconds += time.monotonic() - started
    failed = int(((health["passed"] == False) & health["is_gate"].astype(bool)).sum())  # noqa: E712
    log.info("%s health: %d checks, %d failed gates, %.1f s", day, len(health), failed, seconds)
    return len(results)
