"""Publish the experiment registry to the lake (``bronze.experiment_arms``) for dbt and Superset."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_schema, qualified
from quicexp.config import Settings
from quicexp.registry import Registry, load_registry

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ARMS_DDL = (
    "experiment_id string, arm string, title string, share double, is_control boolean, "
    "start_date date, end_date date"
)


def arm_rows(registry: Registry) -> list[tuple]:
    return [
        (e.id, a.name, e.title, a.share, a.is_control, e.start_date, e.end_date)
        for e in registry.experiments
        for a in e.arms
    ]


def run(spark: SparkSession, settings: Settings, day: date, registry: Registry | None = None) -> int:
    """Replace the registry table with the registry file's content; returns the arm count."""
    registry = registry or load_registry(settings.registry_file)
    ensure_schema(spark, settings.bronze_schema)
    rows = arm_rows(registry)
    df = spark.createDataFrame(rows, ARMS_DDL).orderBy("experiment_id", "arm")
    df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(
        qualified(settings.bronze_schema, "experiment_arms")
    )
    return len(rows)
