"""qlog files of one upload day → ``bronze.qlog_connections`` (one row per connection and vantage point).

Landing layout (docs/ingestion.md): ``<landing>/upload_date=D/qlog/<odcid>.qlog[.gz]`` (or
``.sqlog``, JSON-SEQ) as written by a QUIC stack's qlog logger (aioquic's
``QuicFileLogger`` names files by the original destination connection id), plus the sidecar
``_connections.jsonl``: one JSON object per connection the client opened, ``{"odcid": hex,
"client_id": ..., "session_id": ..., "platform": ..., "network_type": ..., "experiments":
{experiment_id: arm}}``. The client writes the sidecar when it opens the connection (it
knows the ODCID and its experiment assignments, the same map every telemetry event carries),
and the ODCID is the join key.

Like the event ingest: a day replaces its own rows (``upload_date = D``) in one commit per
table; a trace that cannot be parsed or has no mapping goes to ``bronze.quarantine`` (kind
``qlog``) with its reason; a second trace of the same ODCID and vantage point in the day is
a duplicate; ``bronze.ingest_audit`` counts read = loaded + quarantined + duplicate per file.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_schema, ensure_table, qualified, replace_where
from jobs.ingest import tables
from jobs.ingest.landing import LandingError, day_dir
from quicexp.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("quicexp.qlog")

KIND = "qlog"
TABLE = "qlog_connections"
FOLDER = "qlog"
MAPPING_FILE = "_connections.jsonl"
QLOG_SUFFIXES = (".qlog", ".qlog.gz", ".sqlog", ".sqlog.gz")

PARSED_DDL = (
    "source_file string, trace_index int, reason string, qlog_version string, odcid string, vantage_point string, "
    "started_at timestamp, duration_ms double, srtt_ms double, min_rtt_ms double, latest_rtt_ms double, "
    "rtt_variance_ms double, cwnd_bytes bigint, max_cwnd_bytes bigint, packets_sent bigint, "
    "packets_received bigint, packets_lost bigint, bytes_sent bigint, bytes_received bigint"
)
MAPPING_DDL = (
    "odcid string, client_id string, session_id string, platform string, network_type string, "
    "experiments map<string,string>"
)
STATS = (
    "started_at", "duration_ms", "srtt_ms", "min_rtt_ms", "latest_rtt_ms", "rtt_variance_ms", "cwnd_bytes",
    "max_cwnd_bytes", "packets_sent", "packets_received", "packets_lost", "bytes_sent", "bytes_received",
)
TABLE_COLUMNS = (
    "odcid", "vantage_point", "client_id", "session_id", "platform", "network_type", "experiments", *STATS,
    "qlog_version", "event_date", "upload_date", "source_file",
)


@dataclass
class QlogSummary:
    day: date
    files: int
    counts: dict[str, int]


def qlog_files(settings: Settings, day: date) -> tuple[list[Path], Path | None]:
    """The day's qlog files and its mapping sidecar (``None`` when absent); errors as one line."""
    folder = day_dir(settings.landing_root, day)
    if not folder.is_dir():
        raise LandingError(f"no landing data for {day.isoformat()}: {folder} does not exist")
    qdir = folder / FOLDER
    files = sorted(p for p in qdir.glob("*") if p.is_file() and not p.name.startswith(("_", ".")))
    unknown = [p for p in files if not p.name.endswith(QLOG_SUFFIXES)]
    if unknown:
        raise LandingError(f"unrecognised file in landing zone: {unknown[0]}")
    for path in files:
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise LandingError(f"cannot read landing file {path}: {exc.strerror}") from None
    mapping = qdir / MAPPING_FILE
    return files, mapping if mapping.is_file() else None


def _parsed(spark: SparkSession, files: list[Path]) -> DataFrame:
    from pyspark.sql.types import _parse_datatype_string

    schema = _parse_datatype_string(PARSED_DDL)
    if not files:
        return spark.createDataFrame([], schema)
    names = schema.fieldNames()

    def rows(record):
        from jobs.qlog.parse import parse_file

        for row in parse_file(record.path, bytes(record.content)):
            yield tuple(row.get(n) for n in names)

    binary = spark.read.format("binaryFile").load([str(p) for p in files])
    return spark.createDataFrame(binary.rdd.flatMap(rows), schema)


def read_mapping(path: Path | None) -> list[dict]:
    """The sidecar's usable lines (objects with a string ``odcid`` and ``client_id``), ODCIDs lower-cased.

    Read on the driver: Spark's file sources skip names starting with ``_``, and the sidecar is
    one short line per connection. A line that is not usable maps nothing, so its connections
    are quarantined as ``unmapped_connection`` rather than lost.
    """
    if path is None:
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("odcid"), str) and isinstance(obj.get("client_id"), str):
            experiments = obj.get("experiments") if isinstance(obj.get("experiments"), dict) else None
            rows.append({
                "odcid": obj["odcid"].lower(), "client_id": obj["client_id"],
                **{k: obj.get(k) if isinstance(obj.get(k), str) else None
                   for k in ("session_id", "platform", "network_type")},
                "experiments": {str(k): str(v) for k, v in experiments.items()} if experiments else None,
            })
    return rows


def _mapping(spark: SparkSession, path: Path | None) -> DataFrame:
    """ODCID → client; an ODCID mapped to two different clients is left unmapped (ambiguous)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    raw = spark.createDataFrame(read_mapping(path), _parse_datatype_string(MAPPING_DDL))
    return (
        raw.groupBy("odcid")
        .agg(F.count_distinct("client_id").alias("_clients"), *[F.first(c, ignorenulls=True).alias(c)
             for c in ("client_id", "session_id", "platform", "network_type", "experiments")])
        .where(F.col("_clients") == 1)
        .drop("_clients")
    )


def classify(parsed: DataFrame, mapping: DataFrame, day: date) -> DataFrame:
    """Add ``status`` and the final ``reason``: parse errors, then unmapped, then duplicates."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    joined = parsed.join(mapping, on="odcid", how="left").withColumn(
        "reason", F.coalesce("reason", F.when(F.col("client_id").isNull(), F.lit("unmapped_connection")))
    )
    order = Window.partitionBy("odcid", "vantage_point").orderBy("source_file", "trace_index")
    rank = F.when(F.col("reason").isNull(), F.row_number().over(order))
    status = (
        F.when(F.col("reason").isNotNull(), F.lit("quarantined"))
        .when(rank > 1, F.lit("duplicate"))
        .otherwise(F.lit("loaded"))
    )
    return (
        joined.withColumn("status", status)
        .withColumn("event_date", F.to_date("started_at"))
        .withColumn("upload_date", F.lit(day))
    )


def run(spark: SparkSession, settings: Settings, day: date) -> QlogSummary:
    """Ingest the qlog files of upload day ``day`` (replacing that day's rows)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    files, mapping_path = qlog_files(settings, day)
    schema = settings.bronze_schema
    ensure_schema(spark, schema)
    tables.ensure_tables(spark, settings, ())
    target = qualified(schema, TABLE)
    classified = classify(_parsed(spark, files), _mapping(spark, mapping_path), day).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        ensure_table(spark, target, classified.select(*TABLE_COLUMNS).schema, tables.BRONZE_PARTITIONS)
        audit = tables.audit_rows(classified, KIND, day).collect()
        mine = (F.col("upload_date") == F.lit(day)) & (F.col("kind") == KIND)
        replace_where(classified.where(F.col("status") == "loaded").select(*TABLE_COLUMNS), target,
                      F.col("upload_date") == F.lit(day))
        replace_where(
            classified.where(F.col("status") == "quarantined").select(
                F.lit(KIND).alias("kind"), "upload_date", "source_file", F.col("odcid").alias("event_id"), "reason",
                F.lit(None).cast("string").alias("raw_text")),
            qualified(schema, tables.QUARANTINE), mine)
        replace_where(spark.createDataFrame(audit, tables.side_struct(tables.AUDIT_DDL)),
                      qualified(schema, tables.AUDIT), mine)
    finally:
        classified.unpersist()
    counts = {key: sum(int(r[key]) for r in audit) for key in tables.AUDIT_COUNTS}
    seconds = time.monotonic() - started
    log.info("qlog %s: %d files, %d traces read, loaded %d, quarantined %d, duplicate %d in %.1fs",
             day, len(files), counts["rows_read"], counts["rows_loaded"], counts["rows_quarantined"],
             counts["rows_duplicate"], seconds)
    return QlogSummary(day=day, files=len(files), counts=counts)
