"""qlog files of one upload day → ``bronze.qlog_connections`` (one row per connection and vantage point).

Landing layout (docs/qlog.md): every file under ``<landing>/upload_date=D/qlog/``, at any depth,
is a trace file — ``.qlog`` / ``.sqlog`` (JSON or JSON-SEQ), optionally gzip — except the sidecars
``_connections.jsonl[.gz]`` (any depth), one JSON object per connection the client opened:
``{"odcid": hex, "client_id": ..., "session_id": ..., "platform": ..., "network_type": ...,
"experiments": {experiment_id: arm}, "opened_at": ISO-8601 or epoch ms (optional),
"condition": a network condition (optional), "condition_values": {"rtt"|"loss"|"burst"|
"bandwidth": label} (optional), "invalid": why the connection cannot be used (optional)}``. The
natural layout is ``qlog/client/*.qlog.gz`` + ``qlog/server/*.qlog.gz``: aioquic names both
ends of a connection ``<ODCID>.qlog``, so they cannot share a folder. The ODCID (qlog
``common_fields.ODCID``, or ``group_id``) is the join key.

The sidecar window: a trace is mapped by its own day's line, else by the nearest line of the
upload days within ``lookback_days`` before or after (a server fleet uploads on its own
schedule; a client's sidecar can come late). When a day's lines map traces of another day of
the window differently than that day's ingest did (a trace quarantined ``unmapped_connection``
that a line now maps; a loaded trace whose mapping line changed or went), that day is
re-ingested after this one (``QlogSummary.remapped``). A trace a line marks ``invalid`` is
loaded with ``invalid_reason``; the models leave it out.

The job lists the files itself (Spark's binary-file reader skips zero-length files and
``spark.read`` expands glob characters in names) and opens them on the executors. Every file
ends as rows read = loaded + quarantined + duplicate in ``bronze.ingest_audit`` (kind ``qlog``):

* a trace is quarantined with its reason: ``empty_file``, ``unreadable_file``,
  ``unrecognised_file``, ``unreadable_qlog``, ``malformed_qlog``, ``unsupported_qlog_version``,
  ``no_trace``, ``no_events``, ``missing_odcid``, ``unmapped_connection``, ``ambiguous_odcid``
  (the window's lines map its ODCID to two clients), ``too_late``, ``clock_skew_future``;
* a sidecar line is loaded (used as a mapping), quarantined (``malformed_sidecar_line``,
  ``invalid_sidecar_line``, ``ambiguous_odcid``) or a duplicate (the same mapping again);
* a second copy of a trace (same ODCID and vantage point) is a duplicate, by the events' rule
  (jobs/ingest/dedup.py): the copy from the earliest upload day wins, then the first file; the
  id ledger ``bronze.ingest_event_ids`` (kind ``qlog``, id ``<odcid>/<vantage point>``) carries
  the earlier days, and re-ingesting a day re-ingests the later days whose duplicates it changed.

A day replaces its own rows (``upload_date = D``). A day with no qlog file and no sidecar costs
a few catalog look-ups when it had none before (an existing table from before a column gets
it); when it had some, its rows are removed. A run is
recorded in ``bronze.ingest_runs`` (job ``qlog``) as started before its first commit and finished
after its last, under the upload day's lock, like the events' ingest (jobs/day_runs.py).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from jobs import day_runs
from jobs.delta_io import ensure_schema, ensure_table, qualified
from jobs.ingest import dedup, tables
from jobs.ingest.landing import LandingError, day_dir, open_no_follow, refuse_unaccounted
from quicexp.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("quicexp.qlog")

KIND = "qlog"
TABLE = "qlog_connections"
FOLDER = "qlog"
MAPPING_FILE = "_connections.jsonl"
MAPPING_FILES = (MAPPING_FILE, MAPPING_FILE + ".gz")
QLOG_SUFFIXES = (".qlog", ".qlog.gz", ".sqlog", ".sqlog.gz")
VANTAGE_FOLDERS = ("client", "server")
RAW_TEXT_LIMIT = 4096

PARSED_DDL = (
    "source_file string, trace_index int, reason string, qlog_version string, odcid string, vantage_point string, "
    "started_at timestamp, duration_ms double, srtt_ms double, srtt_median_ms double, min_rtt_ms double, "
    "latest_rtt_ms double, rtt_variance_ms double, rtt_samples bigint, cwnd_bytes bigint, max_cwnd_bytes bigint, "
    "packets_sent bigint, packets_received bigint, packets_lost bigint, packets_dropped bigint, "
    "bytes_sent bigint, bytes_received bigint, datagrams_sent bigint, datagrams_received bigint, "
    "handshake_ms double, file_mtime timestamp, vantage_hint string"
)
MAPPING_DDL = (
    "odcid string, client_id string, session_id string, platform string, network_type string, "
    "experiments map<string,string>, opened_at timestamp, network_condition string, "
    "condition_values map<string,string>, invalid_reason string, sidecar_upload_date date, ambiguous boolean"
)
MAPPING_COLUMNS = tuple(part.split()[0] for part in MAPPING_DDL.split(", "))
STATS = (
    "started_at", "duration_ms", "srtt_ms", "min_rtt_ms", "latest_rtt_ms", "rtt_variance_ms", "cwnd_bytes",
    "max_cwnd_bytes", "packets_sent", "packets_received", "packets_lost", "bytes_sent", "bytes_received",
    # added with the second stack (older tables get them by ALTER TABLE ADD COLUMNS)
    "srtt_median_ms", "rtt_samples", "datagrams_sent", "datagrams_received", "packets_dropped", "handshake_ms",
)
TABLE_COLUMNS = (
    "odcid", "vantage_point", "client_id", "session_id", "platform", "network_type", "experiments", *STATS,
    "qlog_version", "event_date", "upload_date", "source_file", "started_at_source", "network_condition",
    # added with the cross-day sidecar (older tables get them by ALTER TABLE ADD COLUMNS)
    "condition_values", "invalid_reason", "sidecar_upload_date",
)


@dataclass
class QlogSummary:
    day: date
    files: int
    counts: dict[str, int]
    cascaded: list[date] = field(default_factory=list)
    #: other days of the sidecar window re-ingested because this day's sidecar lines map their traces
    remapped: list[date] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class QlogLanding:
    """What the day's ``qlog/`` folder holds: trace files (with a vantage hint), sidecars, others."""

    traces: tuple[tuple[Path, str | None], ...] = ()
    sidecars: tuple[Path, ...] = ()
    unrecognised: tuple[Path, ...] = ()

    @property
    def files(self) -> int:
        return len(self.traces) + len(self.sidecars) + len(self.unrecognised)


def _uri(path: Path) -> str:
    return path.absolute().as_uri()


def list_landing(settings: Settings, day: date) -> QlogLanding:
    """Every file under the day's ``qlog/`` folder, at any depth (no glob, no skipped names).

    A missing day folder is an error (the data has not arrived); a day folder without ``qlog/``
    is a day without qlog. A symbolic link (or FIFO, device) anywhere under ``qlog/`` refuses
    the day before anything is read (jobs.ingest.landing.refuse_unaccounted): links are never
    followed.
    """
    folder = day_dir(settings.landing_root, day)
    if not folder.is_dir():
        raise LandingError(f"no landing data for {day.isoformat()}: {folder} does not exist")
    refuse_unaccounted(folder, day, (), qlog=True)
    root = folder / FOLDER
    traces, sidecars, other = [], [], []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        here = Path(dirpath)
        hint = next((part for part in reversed(here.relative_to(root).parts) if part in VANTAGE_FOLDERS), None)
        for name in sorted(filenames):
            path = here / name
            if name in MAPPING_FILES:
                sidecars.append(path)
            elif name.endswith(QLOG_SUFFIXES):
                traces.append((path, hint))
            else:
                other.append(path)
    return QlogLanding(tuple(traces), tuple(sidecars), tuple(other))


def qlog_files(settings: Settings, day: date) -> tuple[list[Path], list[Path]]:
    """The day's trace files and sidecars (kept for the CLI's check before a JVM starts)."""
    landing = list_landing(settings, day)
    return [p for p, _ in landing.traces], list(landing.sidecars)


# ---------------------------------------------------------------------------------------------
# sidecar (driver side: a short line per connection)


def _timestamp(value) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e12:
        return datetime.fromtimestamp(value / 1000.0, tz=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _string_map(value) -> dict[str, str] | None:
    """A JSON object's entries with string or number values, as strings (others dropped)."""
    if not isinstance(value, dict):
        return None
    out = {str(k): str(v) for k, v in value.items()
           if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    return out or None


def _sidecar_line(line: str, day: date | None = None) -> tuple[dict | None, str | None]:
    """``(mapping, None)`` for a usable sidecar line, ``(None, reason)`` otherwise; ``day``: the
    upload day the line came from (``sidecar_upload_date``)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None, "malformed_sidecar_line"
    if not (isinstance(obj, dict) and isinstance(obj.get("odcid"), str) and obj["odcid"]
            and isinstance(obj.get("client_id"), str) and obj["client_id"]):
        return None, "invalid_sidecar_line"

    def text(key: str) -> str | None:
        return obj.get(key) if isinstance(obj.get(key), str) and obj.get(key) else None

    return {
        "odcid": obj["odcid"].lower(), "client_id": obj["client_id"],
        **{k: text(k) for k in ("session_id", "platform", "network_type")},
        "experiments": _string_map(obj.get("experiments")),
        "opened_at": _timestamp(obj.get("opened_at")),
        "network_condition": text("condition"),
        "condition_values": _string_map(obj.get("condition_values")),
        "invalid_reason": text("invalid"),
        "sidecar_upload_date": day,
        "ambiguous": False,
    }, None


@dataclass
class SidecarResult:
    mappings: list[dict] = field(default_factory=list)
    quarantine: list[dict] = field(default_factory=list)
    audit: list[dict] = field(default_factory=list)
    #: ODCIDs that the day's lines map to different clients
    ambiguous: set[str] = field(default_factory=set)


def _sidecar_text(path: Path) -> str:
    """A sidecar file's text (gunzipped by magic); OSError, EOFError or UnicodeDecodeError when unreadable."""
    with open_no_follow(path) as fh:
        data = fh.read()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")


def read_sidecars(paths: list[Path] | tuple[Path, ...], day: date) -> SidecarResult:
    """Mappings from the sidecar lines; every non-blank line loaded, quarantined or a duplicate.

    An ODCID that two lines map to different clients is ambiguous: all its lines are
    quarantined (``ambiguous_odcid``) and its traces stay unmapped.
    """
    result = SidecarResult()
    parsed: list[tuple[str, int, str, dict | None, str | None]] = []  # (file, line no, text, mapping, reason)
    for path in paths:
        uri = _uri(path)
        try:
            text = _sidecar_text(path)
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            parsed.append((uri, 0, "", None, "unreadable_file"))
            log.warning("qlog sidecar %s unreadable: %s", path, exc)
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                parsed.append((uri, number, line, *_sidecar_line(line, day)))
    clients: dict[str, set[str]] = {}
    for _, _, _, mapping, _ in parsed:
        if mapping:
            clients.setdefault(mapping["odcid"], set()).add(mapping["client_id"])
    result.ambiguous = {odcid for odcid, ids in clients.items() if len(ids) > 1}
    seen: set[str] = set()
    counts: dict[str, dict[str, int]] = {}
    for uri, number, line, mapping, reason in parsed:
        c = counts.setdefault(uri, dict.fromkeys(tables.AUDIT_COUNTS, 0))
        c["rows_read"] += 1
        if mapping and mapping["odcid"] in result.ambiguous:
            reason = "ambiguous_odcid"
        if reason:
            c["rows_quarantined"] += 1
            result.quarantine.append({
                "kind": KIND, "upload_date": day, "source_file": uri,
                "event_id": mapping["odcid"] if mapping else f"line {number}", "reason": reason,
                "raw_text": line[:RAW_TEXT_LIMIT] or None})
        elif mapping["odcid"] in seen:
            c["rows_duplicate"] += 1
        else:
            seen.add(mapping["odcid"])
            c["rows_loaded"] += 1
            result.mappings.append(mapping)
    for path in paths:  # an empty sidecar is read, with nothing in it
        counts.setdefault(_uri(path), dict.fromkeys(tables.AUDIT_COUNTS, 0))
    result.audit = [{"kind": KIND, "upload_date": day, "source_file": uri, **c} for uri, c in counts.items()]
    return result


def window_sidecars(settings: Settings, day: date) -> list[tuple[date, Path]]:
    """The sidecar files of the other upload days within ``lookback_days`` of ``day``, either
    way, that the landing zone holds: a server's traces can arrive on another day than the
    client's sidecar lines (links are not followed, as in :func:`list_landing`)."""
    out = []
    lookback = settings.ingest.lookback_days
    for offset in [*range(-lookback, 0), *range(1, lookback + 1)]:
        other = day + timedelta(days=offset)
        root = day_dir(settings.landing_root, other) / FOLDER
        if not root.is_dir() or root.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            out += [(other, Path(dirpath) / name) for name in sorted(filenames) if name in MAPPING_FILES]
    return out


def window_mappings(own: SidecarResult, others: list[tuple[date, Path]], day: date) -> list[dict]:
    """One mapping per ODCID over the sidecar window: the day's own line, else the nearest other
    day's (the earlier on a tie). An ODCID that the window's lines map to different clients is
    ambiguous: one row with ``ambiguous`` and no client (its traces: ``ambiguous_odcid``).

    The other days' lines are only read here; each is accounted for by its own day's ingest (an
    unreadable file or line there is skipped here).
    """
    candidates: dict[str, list[tuple[tuple[int, int], dict]]] = {}
    for mapping in own.mappings:
        candidates.setdefault(mapping["odcid"], []).append(((0, 0), mapping))
    for other, path in others:
        try:
            text = _sidecar_text(path)
        except (OSError, EOFError, UnicodeDecodeError):
            continue
        distance = (abs((other - day).days), 0 if other < day else 1)
        for line in text.splitlines():
            mapping, _ = _sidecar_line(line, other) if line.strip() else (None, None)
            if mapping:
                candidates.setdefault(mapping["odcid"], []).append((distance, mapping))
    def ambiguous(odcid: str) -> dict:
        return {**dict.fromkeys(MAPPING_COLUMNS), "odcid": odcid, "ambiguous": True}

    out = []
    for odcid, found in candidates.items():
        if odcid in own.ambiguous or len({m["client_id"] for _, m in found}) > 1:
            out.append(ambiguous(odcid))
        else:
            out.append(min(found, key=lambda item: item[0])[1])
    return out + [ambiguous(odcid) for odcid in sorted(own.ambiguous - set(candidates))]


# ---------------------------------------------------------------------------------------------
# traces (executor side)


def _parsed(spark: SparkSession, landing: QlogLanding) -> DataFrame:
    from pyspark.sql.types import _parse_datatype_string

    schema = _parse_datatype_string(PARSED_DDL)
    names = schema.fieldNames()
    work = [(str(p), _uri(p), hint, None) for p, hint in landing.traces]
    work += [(str(p), _uri(p), None, "unrecognised_file") for p in landing.unrecognised]
    if not work:
        return spark.createDataFrame([], schema)

    def rows(item):
        from jobs.qlog.parse import parse_path

        path, uri, hint, reason = item
        found = [{"source_file": uri, "trace_index": 0, "reason": reason}] if reason else parse_path(path, uri)
        for row in found:
            row["vantage_hint"] = hint
            yield tuple(row.get(n) for n in names)

    slices = max(1, min(len(work), spark.sparkContext.defaultParallelism * 4))
    return spark.createDataFrame(spark.sparkContext.parallelize(work, slices).flatMap(rows), schema)


def classify(parsed: DataFrame, mapping: DataFrame, day: date, settings: Settings | None = None,
             earlier: DataFrame | None = None) -> DataFrame:
    """Add ``status`` and the final ``reason``: parse errors, unmapped, clock, then duplicates."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    lookback = settings.ingest.lookback_days if settings else 3
    tolerance = settings.ingest.future_tolerance_minutes if settings else 10
    vantage = F.coalesce("vantage_point", "vantage_hint")
    opened = F.col("opened_at")
    from_file = F.timestamp_millis(F.unix_millis("file_mtime") - F.col("duration_ms").cast("bigint"))
    joined = (
        parsed.join(mapping, on="odcid", how="left")
        .withColumn("vantage_point", vantage)
        .withColumn("started_at_source", F.when(F.col("reason").isNull(), F.when(F.col("started_at").isNotNull(), "trace")
                    .when(opened.isNotNull(), "sidecar").when(F.col("file_mtime").isNotNull(), "file_time")))
        .withColumn("started_at", F.coalesce("started_at", opened, from_file))
    )
    end_of_day = F.lit(datetime.combine(day, datetime.min.time())) + F.expr(f"INTERVAL 1 DAY {tolerance} MINUTES")
    reason = F.coalesce(
        "reason",
        F.when(F.col("ambiguous"), F.lit("ambiguous_odcid")),
        F.when(F.col("client_id").isNull(), F.lit("unmapped_connection")),
        F.when(F.col("started_at") >= end_of_day, F.lit("clock_skew_future")),
        F.when(F.to_date("started_at") < F.date_sub(F.lit(day), lookback), F.lit("too_late")),
    )
    joined = joined.withColumn("reason", reason).withColumn(
        "event_id", F.when(F.col("reason").isNull(), F.concat_ws("/", "odcid", F.coalesce("vantage_point", F.lit("")))))
    valid = F.col("reason").isNull()
    order = Window.partitionBy("event_id").orderBy("source_file", "trace_index")
    ranked = joined.withColumn("_rank", F.when(valid, F.row_number().over(order)))
    if earlier is not None:
        seen = earlier.where(F.col("kind") == KIND).select("event_id", F.lit(True).alias("_seen"))
        ranked = ranked.join(seen, on="event_id", how="left")
    else:
        ranked = ranked.withColumn("_seen", F.lit(None).cast("boolean"))
    status = (
        F.when(~valid, F.lit(dedup.QUARANTINED))
        .when((F.col("_rank") > 1) | F.col("_seen").isNotNull(), F.lit(dedup.DUPLICATE))
        .otherwise(F.lit(dedup.LOADED))
    )
    return (
        ranked.withColumn("status", status)
        .withColumn(dedup.FIRST_COPY, dedup.first_copy(F.col("_rank")))
        .withColumn("event_date", F.to_date("started_at"))
        .withColumn("upload_date", F.lit(day))
        .drop("_rank", "_seen")
    )


def _table_struct():
    """The table's columns and types (what a classified day's ``TABLE_COLUMNS`` are)."""
    from pyspark.sql.types import (
        DateType,
        StringType,
        StructField,
        StructType,
        _parse_datatype_string,
    )

    types = {f.name: f.dataType for ddl in (PARSED_DDL, MAPPING_DDL) for f in _parse_datatype_string(ddl).fields}
    types |= {"event_date": DateType(), "upload_date": DateType(), "started_at_source": StringType()}
    return StructType([StructField(name, types[name]) for name in TABLE_COLUMNS])


def _evolve(spark: SparkSession, target: str, struct) -> None:
    """Add the columns ``struct`` has and the table lacks (tables created before they existed)."""
    have = {f.name.lower() for f in spark.table(target).schema.fields}
    missing = [f for f in struct.fields if f.name.lower() not in have]
    if missing:
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in missing)
        spark.sql(f"ALTER TABLE {target} ADD COLUMNS ({columns})")


def _had_rows(spark: SparkSession, settings: Settings, day: date) -> bool:
    """Whether a past ingest of ``day`` left qlog audit rows or an unfinished run (and so rows to remove)."""
    from pyspark.sql import functions as F

    audit = qualified(settings.bronze_schema, tables.AUDIT)
    if not spark.catalog.tableExists(audit):
        return False
    if spark.catalog.tableExists(day_runs.runs_table(settings)):
        last = day_runs.latest(spark, settings, day, KIND)
        if last is not None and last.unfinished:
            return True
    return bool(spark.table(audit).where((F.col("upload_date") == F.lit(day)) & (F.col("kind") == KIND))
                .limit(1).collect())


def run(spark: SparkSession, settings: Settings, day: date, *, cascade: bool = True,
        check_previous: bool = True, remap: bool = True) -> QlogSummary:
    """Ingest the qlog files of upload day ``day`` (replacing that day's rows); see the module docstring.

    ``check_previous``: refuse when the previous upload day's qlog run did not finish (off for the
    cascade into later days, which runs inside the unfinished run of ``day``). ``remap``: then
    re-ingest the other days of the sidecar window whose traces the day's sidecar lines map
    differently now (:func:`days_to_remap`), after the day's own run has finished.
    """
    with day_runs.day_lock(settings, day, f"{KIND} ingest"):
        summary, mappings = _run(spark, settings, day, cascade=cascade, check_previous=check_previous)
    if remap and mappings is not None:
        for other in days_to_remap(spark, settings, day, mappings):
            log.info("qlog %s: its sidecar lines map traces of upload day %s: re-ingesting it", day, other)
            again = run(spark, settings, other, cascade=True, check_previous=False, remap=False)
            summary.remapped.append(other)
            summary.cascaded += [d for d in again.cascaded if d not in summary.cascaded]
    return summary


def days_to_remap(spark: SparkSession, settings: Settings, day: date, mappings: DataFrame) -> list[date]:
    """Other upload days within ``lookback_days`` of ``day`` whose traces ``day``'s own sidecar
    lines (``mappings``) map differently than when they were ingested: a trace quarantined as
    ``unmapped_connection`` that a line now maps (a client's sidecar uploaded after its
    server's traces), or a loaded trace that an earlier version of the day's lines mapped to
    another client, experiments map, condition or validity (or no longer maps)."""
    from pyspark.sql import functions as F

    lookback = settings.ingest.lookback_days
    window = F.col("upload_date").between(F.lit(day - timedelta(days=lookback)), F.lit(day + timedelta(days=lookback))) & (
        F.col("upload_date") != F.lit(day))
    own = mappings.where(F.col("sidecar_upload_date") == F.lit(day))
    days: set[date] = set()
    quarantine = qualified(settings.bronze_schema, tables.QUARANTINE)
    if spark.catalog.tableExists(quarantine):
        unmapped = spark.table(quarantine).where(window & (F.col("kind") == KIND) & (F.col("reason") == "unmapped_connection"))
        days |= {r.upload_date for r in unmapped.join(own.select(F.col("odcid").alias("event_id")), "event_id", "left_semi")
                 .select("upload_date").distinct().collect()}
    target = qualified(settings.bronze_schema, TABLE)
    if spark.catalog.tableExists(target) and "sidecar_upload_date" in spark.table(target).columns:
        def key(frame: DataFrame):
            return F.to_json(F.struct(*[F.col(c) for c in ("client_id", "network_condition", "invalid_reason")],
                                      F.array_sort(F.map_entries("experiments")).alias("e"),
                                      F.array_sort(F.map_entries("condition_values")).alias("v")))

        mapped = spark.table(target).where(window & (F.col("sidecar_upload_date") == F.lit(day)))
        now = own.select("odcid", key(own).alias("_now"))
        changed = mapped.select("upload_date", "odcid", key(mapped).alias("_then")).join(now, "odcid", "left").where(
            F.col("_now").isNull() | (F.col("_now") != F.col("_then")))
        days |= {r.upload_date for r in changed.select("upload_date").distinct().collect()}
    return sorted(days)


def _run(spark: SparkSession, settings: Settings, day: date, *, cascade: bool,
         check_previous: bool) -> tuple[QlogSummary, DataFrame | None]:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    started = time.monotonic()
    landing = list_landing(settings, day)
    zero = dict.fromkeys(tables.AUDIT_COUNTS, 0)
    if landing.files == 0 and not _had_rows(spark, settings, day):
        target = qualified(settings.bronze_schema, TABLE)
        if spark.catalog.tableExists(target):  # the models read every column: a table from before one gets it
            _evolve(spark, target, _table_struct())
        log.info("qlog %s: no qlog files, nothing to do (%.1fs)", day, time.monotonic() - started)
        return QlogSummary(day=day, files=0, counts=zero, seconds=time.monotonic() - started), None

    schema = settings.bronze_schema
    ensure_schema(spark, schema)
    tables.ensure_tables(spark, settings, ())
    day_runs.ensure_runs_table(spark, settings)
    if check_previous:
        day_runs.refuse_after_unfinished(spark, settings, day, KIND)
    previous = day_runs.latest(spark, settings, day, KIND)
    repairing = previous is not None and previous.unfinished
    day_run = day_runs.DayRun(spark, settings, day, KIND)
    target = qualified(schema, TABLE)
    audit_table = qualified(schema, tables.AUDIT)
    ledger_table = qualified(schema, tables.LEDGER)
    mine = (F.col("upload_date") == F.lit(day)) & (F.col("kind") == KIND)

    side = read_sidecars(landing.sidecars, day)
    mappings = window_mappings(side, window_sidecars(settings, day), day)
    mapping = spark.createDataFrame(mappings, _parse_datatype_string(MAPPING_DDL)).localCheckpoint(eager=True)
    later = dedup.later_ingested_days(spark, settings, day, audit_table) if cascade else []
    # an unfinished run may have replaced the ledger slice: the old ids are lost, every later day is redone
    old_ids = spark.table(ledger_table).where(mine).localCheckpoint(eager=True) if later and not repairing else None
    earlier = dedup.earlier_ids(spark, settings, day).where(F.col("kind") == KIND).persist(StorageLevel.MEMORY_AND_DISK)
    classified = classify(_parsed(spark, landing), mapping, day, settings, earlier).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        rows = classified.select(*TABLE_COLUMNS)
        ensure_table(spark, target, rows.schema, tables.BRONZE_PARTITIONS)
        _evolve(spark, target, rows.schema)
        audit = [r.asDict() for r in tables.audit_rows(classified, KIND, day).collect()] + side.audit
        day_run.start([KIND], [TABLE, tables.QUARANTINE, tables.LEDGER, tables.AUDIT])
        day_runs.commit(classified.where(F.col("status") == dedup.LOADED).select(*TABLE_COLUMNS), target,
                        F.col("upload_date") == F.lit(day))
        quarantine = classified.where(F.col("status") == dedup.QUARANTINED).select(
            F.lit(KIND).alias("kind"), "upload_date", "source_file",
            F.coalesce("odcid", F.concat(F.lit("trace "), F.col("trace_index").cast("string"))).alias("event_id"),
            "reason", F.lit(None).cast("string").alias("raw_text"))
        if side.quarantine:
            quarantine = quarantine.unionByName(spark.createDataFrame(side.quarantine, tables.side_struct(tables.QUARANTINE_DDL)))
        day_runs.commit(quarantine, qualified(schema, tables.QUARANTINE), mine)
        new_ids = dedup.ledger_rows(classified, KIND)
        day_runs.commit(new_ids, ledger_table, mine)
        day_runs.commit(spark.createDataFrame(audit, tables.side_struct(tables.AUDIT_DDL)), audit_table, mine)
        if repairing:
            affected = later
        else:
            affected = dedup.affected_later_days(spark, settings, day, old_ids, new_ids, later) if later else []
    finally:
        classified.unpersist()
        earlier.unpersist()
    counts = {key: sum(int(r[key]) for r in audit) for key in tables.AUDIT_COUNTS}
    summary = QlogSummary(day=day, files=landing.files, counts=counts, seconds=time.monotonic() - started)
    log.info("qlog %s: %d files, %d traces and sidecar lines read, loaded %d, quarantined %d, duplicate %d in %.1fs",
             day, landing.files, counts["rows_read"], counts["rows_loaded"], counts["rows_quarantined"],
             counts["rows_duplicate"], summary.seconds)
    for later_day in affected:
        log.info("qlog %s changed cross-day duplicates of upload day %s: re-ingesting it", day, later_day)
        run(spark, settings, later_day, cascade=False, check_previous=False, remap=False)
        summary.cascaded.append(later_day)
    day_run.finish()
    return summary, mapping
