"""Landing zone → bronze Delta for one upload day: validate, quarantine, deduplicate, audit.

The unit of work is the *upload day* ``day``: every batch under
``landing/upload_date=<day>/<kind>/`` is read once. Events land in bronze partitioned by
their own ``event_date`` (late events go to earlier dates); the job replaces exactly the
rows it owns (``upload_date = day``) in one Delta commit per table, so reruns, back-fills
in any order and emptied days are all idempotent. Every input row ends in exactly one of
bronze, quarantine (with its reason and raw text) or the duplicate count:
``rows_read = rows_loaded + rows_quarantined + rows_duplicate`` per file, in ``ingest_audit``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_schema, ensure_table, qualified, replace_where
from jobs.ingest import tables
from jobs.ingest.landing import find_batches
from jobs.ingest.validate import parse_json_lines, parse_parquet, semantic_reason
from quicexp import telemetry
from quicexp.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("quicexp.ingest")

LOADED, QUARANTINED, DUPLICATE = "loaded", "quarantined", "duplicate"


@dataclass
class IngestSummary:
    day: date
    per_kind: dict[str, dict[str, int]] = field(default_factory=dict)

    def total(self, key: str) -> int:
        return sum(counts.get(key, 0) for counts in self.per_kind.values())


def _read(spark: SparkSession, kind: str, json_files: tuple[str, ...], parquet_files: tuple[str, ...]) -> DataFrame:
    from pyspark.sql import functions as F

    parts = []
    if json_files:
        raw = spark.read.text(list(json_files)).withColumn("source_file", F.input_file_name())
        parts.append(parse_json_lines(raw, kind))
    if parquet_files:
        raw = spark.read.parquet(*parquet_files).withColumn("source_file", F.input_file_name())
        parts.append(parse_parquet(raw, kind))
    if not parts:
        empty = spark.createDataFrame([], "value string, source_file string")
        return parse_json_lines(empty, kind)
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def classify(parsed: DataFrame, previous_ids: DataFrame, kind: str, day: date, settings: Settings) -> DataFrame:
    """Add ``status`` (loaded / quarantined / duplicate) and the final ``reason``.

    Duplicates are valid rows whose ``event_id`` was already seen: earlier in the same
    day (first upload wins, ties broken by file name and content) or in bronze from an
    earlier upload day within the look-back window (``previous_ids``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rules = settings.ingest
    checked = parsed.withColumn(
        "reason",
        F.coalesce(
            "reason", semantic_reason(kind, day, rules.lookback_days, rules.future_tolerance_minutes)
        ),
    )
    order = Window.partitionBy("event_id").orderBy("upload_time", "source_file", F.xxhash64("raw_text"))
    ranked = checked.withColumn(
        "_rank", F.when(F.col("reason").isNull(), F.row_number().over(order))
    ).join(previous_ids.withColumn("_seen", F.lit(True)), on="event_id", how="left")
    status = (
        F.when(F.col("reason").isNotNull(), F.lit(QUARANTINED))
        .when((F.col("_rank") > 1) | F.col("_seen").isNotNull(), F.lit(DUPLICATE))
        .otherwise(F.lit(LOADED))
    )
    return (
        ranked.withColumn("status", status)
        .withColumn("raw_text", F.when(F.col("status") == QUARANTINED, F.col("raw_text")))
        .withColumn("event_date", F.to_date("event_time"))
        .withColumn("upload_date", F.lit(day))
        .drop("_rank", "_seen")
    )


def _previous_ids(spark: SparkSession, table: str, day: date, lookback_days: int) -> DataFrame:
    """Event ids loaded from earlier upload days that could collide with today's events."""
    from pyspark.sql import functions as F

    oldest = F.date_sub(F.lit(day), lookback_days)
    return (
        spark.table(table)
        .where((F.col("event_date") >= oldest) & (F.col("upload_date") < F.lit(day)))
        .select("event_id")
        .distinct()
    )


def ingest_kind(spark: SparkSession, settings: Settings, day: date, batches) -> dict[str, int]:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    kind = batches.kind
    bronze = qualified(settings.bronze_schema, kind)
    ensure_table(spark, bronze, tables.bronze_struct(kind), ["event_date"])
    parsed = _read(spark, kind, batches.json_files, batches.parquet_files)
    previous = _previous_ids(spark, bronze, day, settings.ingest.lookback_days)
    classified = classify(parsed, previous, kind, day, settings).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        this_day = F.col("upload_date") == F.lit(day)
        loaded = classified.where(F.col("status") == LOADED).select(*tables.bronze_columns(kind))
        replace_where(loaded, bronze, this_day)
        quarantine = classified.where(F.col("status") == QUARANTINED).select(
            F.lit(kind).alias("kind"), "upload_date", "source_file", "event_id", "reason", "raw_text"
        )
        replace_where(quarantine, qualified(settings.bronze_schema, "quarantine"), this_day & (F.col("kind") == kind))
        audit = tables.audit_rows(classified, kind, day)
        replace_where(audit, qualified(settings.bronze_schema, "ingest_audit"), this_day & (F.col("kind") == kind))
        totals = audit.agg(*[F.sum(c).alias(c) for c in tables.AUDIT_COUNTS]).first()
        return {c: int(totals[c] or 0) for c in tables.AUDIT_COUNTS}
    finally:
        classified.unpersist()


def run(spark: SparkSession, settings: Settings, day: date, kinds: tuple[str, ...] | None = None) -> IngestSummary:
    """Ingest the upload day ``day`` for every event kind (or ``kinds``)."""
    kinds = kinds or telemetry.EVENT_KINDS
    batches = find_batches(settings.landing_root, day, kinds)
    ensure_schema(spark, settings.bronze_schema)
    tables.ensure_side_tables(spark, settings.bronze_schema)
    summary = IngestSummary(day=day)
    for batch in batches:
        started = time.monotonic()
        counts = ingest_kind(spark, settings, day, batch)
        summary.per_kind[batch.kind] = counts
        seconds = time.monotonic() - started
        log.info(
            "ingest %s %s: read %d, loaded %d, quarantined %d, duplicate %d, late %d in %.1fs (%.0f rows/s)",
            day, batch.kind, counts["rows_read"], counts["rows_loaded"], counts["rows_quarantined"],
            counts["rows_duplicate"], counts["rows_late"], seconds, counts["rows_read"] / max(seconds, 1e-9),
        )
    return summary
