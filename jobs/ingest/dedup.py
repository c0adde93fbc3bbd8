"""Deduplication by ``event_id``, the same whatever order upload days are ingested in.

The rule (docs/ingestion.md): of all valid copies of an event, the one from the earliest
upload day is loaded; within one upload day, the one with the earliest ``upload_time`` (ties:
source file, then a hash of the typed fields). Every other valid copy is a duplicate; a
quarantined copy takes no part in the ranking.

Two copies of one valid event are at most ``lookback_days + 1`` upload days apart (a valid
event's date is within the look-back window of its upload day, and at most the tolerance
after its upload time), so the job for day D only needs the valid ids of the upload days
``[D − lookback − 1, D − 1]``. Those come from the id ledger (``bronze.ingest_event_ids``):
every valid id of every upload day, loaded or not. A day's ledger slice depends on that
day's landing files alone, so a day's bronze rows depend only on landing data, never on run
order. When (re)ingesting D changes D's valid ids, later upload days that share a changed id
are re-ingested (``affected_later_days``): that is what makes a back-fill of an old day after
newer days come out exactly as an in-order run.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from jobs.delta_io import qualified
from jobs.ingest.tables import LEDGER
from quicexp import telemetry
from quicexp.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

LOADED, QUARANTINED, DUPLICATE = "loaded", "quarantined", "duplicate"
#: classified rows' mark of each valid event id's first copy: exactly one row per valid id (the
#: ledger's rows, without a distinct over the day's ids)
FIRST_COPY = "first_copy"


def first_copy(rank: Column) -> Column:
    """``FIRST_COPY`` from a valid row's rank among the valid copies of its id (null for invalid rows)."""
    from pyspark.sql import functions as F

    return F.coalesce(rank == 1, F.lit(False))


def window_days(settings: Settings) -> int:
    """How many upload days apart two copies of one valid event can be."""
    return settings.ingest.lookback_days + 1


def earlier_ids(spark: SparkSession, settings: Settings, day: date) -> DataFrame:
    """``(kind, event_id)`` of valid events uploaded in the window before ``day``."""
    from pyspark.sql import functions as F

    first = day - timedelta(days=window_days(settings))
    return (
        spark.table(qualified(settings.bronze_schema, LEDGER))
        .where(F.col("upload_date").between(F.lit(first), F.lit(day - timedelta(days=1))))
        .select("kind", "event_id")
        .distinct()
    )


def classify(checked: DataFrame, earlier: DataFrame, kind: str, day: date) -> DataFrame:
    """Add ``status`` (loaded / quarantined / duplicate) to rows that carry their final ``reason``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    valid = F.col("reason").isNull()
    # Valid copies are ranked among themselves: a quarantined copy must not outrank the valid one.
    # The last tie-break hashes the typed fields, which is all of a row that reaches bronze (copies
    # that tie on it load the same row), so the raw text is needed, and built from Parquet, only
    # for quarantined rows and the window's shuffle does not carry it.
    fields = [  # maps cannot be hashed; their sorted entries can
        F.array_sort(F.map_entries(f.name)) if f.type.startswith("map<") else F.col(f.name)
        for f in telemetry.fields(kind)
    ]
    order = Window.partitionBy("event_id", "_valid").orderBy("upload_time", "source_file", "_tiebreak")
    seen = earlier.where(F.col("kind") == kind).select("event_id", F.lit(True).alias("_seen"))
    ranked = (
        checked.withColumn("_valid", valid)
        .withColumn("_tiebreak", F.when(valid, F.xxhash64(*fields)))
        .withColumn("raw_text", F.when(~valid, F.col("raw_text")))
        .withColumn("_rank", F.when(valid, F.row_number().over(order)))
        .join(seen, on="event_id", how="left")
    )
    status = (
        F.when(~valid, F.lit(QUARANTINED))
        .when((F.col("_rank") > 1) | F.col("_seen").isNotNull(), F.lit(DUPLICATE))
        .otherwise(F.lit(LOADED))
    )
    return (
        ranked.withColumn("status", status)
        .withColumn(FIRST_COPY, first_copy(F.col("_rank")))
        .withColumn("event_date", F.to_date("event_time"))
        .withColumn("upload_date", F.lit(day))
        .drop("_valid", "_tiebreak", "_rank", "_seen")
    )


def ledger_rows(classified: DataFrame, kind: str) -> DataFrame:
    """The day's valid ids of ``kind`` (loaded or duplicate), one row per id: each id's first copy."""
    from pyspark.sql import functions as F

    return classified.where(F.col(FIRST_COPY)).select(F.lit(kind).alias("kind"), "event_id", "upload_date")


def later_ingested_days(spark: SparkSession, settings: Settings, day: date, audit_table: str) -> list[date]:
    """Upload days after ``day`` within the window that have been ingested (have audit rows)."""
    from pyspark.sql import functions as F

    last = day + timedelta(days=window_days(settings))
    rows = (
        spark.table(audit_table)
        .where(F.col("upload_date").between(F.lit(day + timedelta(days=1)), F.lit(last)))
        .select("upload_date")
        .distinct()
        .collect()
    )
    return sorted(r.upload_date for r in rows)


def affected_later_days(
    spark: SparkSession, settings: Settings, day: date, old_ids: DataFrame, new_ids: DataFrame, later: list[date]
) -> list[date]:
    """Later upload days holding a valid id that ``day`` gained or lost: their dedup outcome changed."""
    from pyspark.sql import functions as F

    if not later:
        return []
    changed = old_ids.select("kind", "event_id").exceptAll(new_ids.select("kind", "event_id")).unionByName(
        new_ids.select("kind", "event_id").exceptAll(old_ids.select("kind", "event_id"))
    )
    ledger = spark.table(qualified(settings.bronze_schema, LEDGER)).where(
        F.col("upload_date").isin([F.lit(d) for d in later])
    )
    rows = ledger.join(changed, on=["kind", "event_id"], how="left_semi").select("upload_date").distinct().collect()
    return sorted(r.upload_date for r in rows)
