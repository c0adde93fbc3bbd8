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


def run(
    spark: SparkSession, settings: Settings, day: date, registry: Registry | None = None
) -> int:
    """Recompute results for every as-of date the run may have changed; returns the row count."""
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
    return len(results)
