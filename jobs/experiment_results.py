"""gold.experiment_sufficient_stats → stats engine → gold.experiment_results, for one day.

Spark reads the (small) sufficient-statistics slice; the inference runs in
``stats.engine.analyze`` on those sums only, so its cost does not grow with events.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_schema, qualified, replace_where
from quicexp.config import Settings
from quicexp.registry import Registry, load_registry

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession


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


def write_decisions(spark: SparkSession, settings: Settings, day: date, registry: Registry) -> int:
    """Verdicts of the window's looks (gold.experiment_decisions, with the tests behind them in
    gold.experiment_decision_tests), from every look of each experiment since it started: a
    sequential test that passed at an earlier look stays passed. Returns the verdict count."""
    from pyspark.sql import functions as F

    from stats.decision import DECISION_TYPES, TEST_TYPES

    ds = decision_settings(registry, settings)
    source = qualified(settings.gold_schema, "experiment_results")
    if not ds.experiments or not spark.catalog.tableExists(source):
        return 0
    first = day - timedelta(days=settings.ingest.lookback_days)
    window = F.col("as_of_date").between(F.lit(first), F.lit(day))
    history = (
        spark.table(source)
        .where(F.col("experiment_id").isin(list(ds.experiments)))
        .where((F.col("segment_type") == "overall") & (F.col("as_of_date") <= F.lit(day)))
        .toPandas()
    )
    from stats.decision import decide as decide_looks

    out = decide_looks(history, ds)
    verdicts = out.verdicts[out.verdicts["as_of_date"] >= first]
    tests = out.tests[out.tests["as_of_date"] >= first] if len(out.tests) else out.tests
    _write(spark, verdicts, qualified(settings.gold_schema, "experiment_decisions"),
           DECISION_TYPES, window)  # fmt: skip
    _write(spark, tests, qualified(settings.gold_schema, "experiment_decision_tests"),
           TEST_TYPES, window)  # fmt: skip
    return len(verdicts)


def run(
    spark: SparkSession, settings: Settings, day: date, registry: Registry | None = None
) -> int:
    """Recompute results for every as-of date the run may have changed, and the verdicts of
    the experiments that declare their metrics; returns the results' row count."""
    from pyspark.sql import functions as F

    registry = registry or load_registry(settings.registry_file)
    first = day - timedelta(days=settings.ingest.lookback_days)
    window = F.col("as_of_date").between(F.lit(first), F.lit(day))
    source = spark.table(qualified(settings.gold_schema, "experiment_sufficient_stats")).where(
        window
    )
    results = compute(source.toPandas(), registry)
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
    write_decisions(spark, settings, day, registry)
    return len(results)
