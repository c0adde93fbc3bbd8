"""The bronze tables' shapes: one typed table per event kind, the quarantine, the audit and the id ledger.

Event tables are partitioned by ``(event_date, upload_date)``: readers prune on the event
date, and replacing one upload day is a metadata-only Delta commit (no file is scanned or
rewritten), however large the table grows.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from jobs.delta_io import add_missing_columns, ensure_table, qualified
from jobs.ingest.validate import spark_schema
from quicexp import telemetry
from quicexp.config import Settings, validate_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

AUDIT_COUNTS = ("rows_read", "rows_loaded", "rows_quarantined", "rows_duplicate", "rows_late")

QUARANTINE = "quarantine"
AUDIT = "ingest_audit"
LEDGER = "ingest_event_ids"

QUARANTINE_DDL = (
    "kind string, upload_date date, source_file string, event_id string, reason string, raw_text string"
)
AUDIT_DDL = (
    "kind string, upload_date date, source_file string, rows_read bigint, rows_loaded bigint, "
    "rows_quarantined bigint, rows_duplicate bigint, rows_late bigint"
)
# Every valid event id of every upload day (loaded or not): the input of cross-day dedup.
LEDGER_DDL = "kind string, event_id string, upload_date date"
BRONZE_PARTITIONS = ["event_date", "upload_date"]


def bronze_columns(kind: str) -> list[str]:
    return [f.name for f in telemetry.fields(kind)] + ["event_date", "upload_date", "source_file"]


def bronze_struct(kind: str) -> StructType:
    from pyspark.sql.types import DateType, StringType, StructField

    struct = spark_schema(kind)
    for name, dtype in (("event_date", DateType()), ("upload_date", DateType()), ("source_file", StringType())):
        struct = struct.add(StructField(name, dtype, True))
    return struct


def side_struct(ddl: str) -> StructType:
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl)


def ensure_tables(spark: SparkSession, settings: Settings, kinds: tuple[str, ...]) -> None:
    """Create whichever of the bronze tables are missing (one catalog listing, not one call per table)."""
    schema = settings.bronze_schema
    listing = spark.sql(f"SHOW TABLES IN {validate_identifier(schema, 'schema name')}").collect()
    existing = {row.tableName.lower() for row in listing}
    wanted = [(kind, bronze_struct(kind), BRONZE_PARTITIONS) for kind in kinds] + [
        (QUARANTINE, side_struct(QUARANTINE_DDL), ["upload_date"]),
        (AUDIT, side_struct(AUDIT_DDL), ["upload_date"]),
        (LEDGER, side_struct(LEDGER_DDL), ["upload_date"]),
    ]
    for name, struct, partitions in wanted:
        if name.lower() not in existing:
            ensure_table(spark, qualified(schema, name), struct, partitions)
        else:  # a table made before a telemetry field existed gets it, nullable
            add_missing_columns(spark, qualified(schema, name), struct)


def audit_rows(classified: DataFrame, kind: str, day: date) -> DataFrame:
    """One audit row per source file: read = loaded + quarantined + duplicate, by construction."""
    from pyspark.sql import functions as F

    def count_if(cond):
        return F.sum(F.when(cond, 1).otherwise(0)).cast("bigint")

    status = F.col("status")
    return classified.groupBy("source_file").agg(
        F.count(F.lit(1)).cast("bigint").alias("rows_read"),
        count_if(status == "loaded").alias("rows_loaded"),
        count_if(status == "quarantined").alias("rows_quarantined"),
        count_if(status == "duplicate").alias("rows_duplicate"),
        count_if((status == "loaded") & (F.col("event_date") < F.lit(day))).alias("rows_late"),
    ).select(F.lit(kind).alias("kind"), F.lit(day).alias("upload_date"), "source_file", *AUDIT_COUNTS)
