"""Landing zone → bronze Delta for one upload day: validate, quarantine, deduplicate, audit.

The unit of work is the *upload day* ``day``: every batch under
``landing/upload_date=<day>/<kind>/`` is read once. Events land in bronze partitioned by
their own ``event_date`` (late events go to earlier dates) and by ``upload_date``; the job
replaces exactly the rows it owns (``upload_date = day``), so reruns, back-fills in any
order and emptied days are all idempotent. Every input row ends in exactly one of bronze,
quarantine (with its reason and raw text) or the duplicate count:
``rows_read = rows_loaded + rows_quarantined + rows_duplicate`` per file, in ``ingest_audit``.

Order of work, so that a failure never leaves a half-written day:

1. list and check every landing file (unreadable → set aside by name, quarantined in step 2;
   in strict mode, a one-line error before anything is written);
2. parse, validate and classify every kind, cached, and count the audit — this reads all
   input, so a corrupt upload fails here, before any write;
3. commit the run's ``started`` row in ``bronze.ingest_runs`` (jobs/day_runs.py), with the kinds
   it will write;
4. one Delta commit per event table that has files for the day or had some at the day's
   last ingest or in an unfinished run of the day (written concurrently), then one commit each
   for the quarantine, the id ledger and the audit;
5. re-ingest the later upload days whose cross-day duplicates this day changed (back-fill);
6. commit the run's ``finished`` row: only now is the day finished (docs/ingestion.md).

The whole run holds the upload day's lock, and refuses to start when the previous upload day
has an unfinished run. A rerun of an unfinished day repairs it: it also empties the kinds the
unfinished run had started to write, and re-ingests every later ingested day in the window.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

from jobs import day_runs
from jobs.delta_io import ensure_schema, qualified
from jobs.ingest import dedup, jsonlines, tables
from jobs.ingest.landing import Batches, LandingError, find_batches, parquet_uri
from jobs.ingest.validate import parse_json_files, parse_parquet, parsed_struct, semantic_reason
from quicexp import telemetry
from quicexp.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger("quicexp.ingest")

#: the job's name in the run table (bronze.ingest_runs)
JOB = "events"
WRITE_THREADS = 3
# Catalyst's constraint propagation grows combinatorially on the wide CASE/COALESCE projections
# of validation, worst over a union (several Parquet schema groups of one kind): the heap fills
# and the driver thrashes in GC. Filter inference gains nothing here, so the job turns it off
# while it runs (SPARK-19846 and friends).
#
# The classified rows are cached (read four times: audit, bronze, quarantine, ledger) on local
# disk only, as compressed column batches: a copy held in the heap grows with the day, and a
# 50 M-event day ran out of the default 4 GB heap while caching it (docs/decisions.md).
SCOPED_CONF = {
    "spark.sql.constraintPropagation.enabled": "false",
}


@dataclass
class IngestSummary:
    day: date
    per_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    cascaded: list[date] = field(default_factory=list)
    seconds: float = 0.0

    def total(self, key: str) -> int:
        return sum(counts.get(key, 0) for counts in self.per_kind.values())


def _parquet_source(spark: SparkSession, files: tuple[str, ...], links: Path) -> DataFrame:
    """Parquet files read by their literal names, with ``source_file`` = the file's own URI.

    Hadoop expands glob characters (escaped here) and cannot take a ``:`` in a file name at all
    (it reads ``a:b`` as scheme ``a``): such a file is read through a symbolic link with a plain
    name in ``links``, and its ``source_file`` is mapped back to the real name.
    """
    from pyspark.sql import functions as F

    paths, renamed = [], {}
    for f in files:
        if ":" in Path(f).name:
            links.mkdir(parents=True, exist_ok=True)
            link = links / f"f{len(renamed):05d}.parquet"
            link.symlink_to(Path(f).absolute())
            renamed[link.name] = jsonlines.file_uri(f)
            paths.append(parquet_uri(str(link)))
        else:
            paths.append(parquet_uri(f))
    source = F.input_file_name()
    if renamed:
        names = F.create_map(*[F.lit(x) for pair in renamed.items() for x in pair])
        source = F.coalesce(F.element_at(names, F.regexp_extract(source, r"[^/]*$", 0)), source)
    return spark.read.parquet(*paths).withColumn("source_file", source)


def _read(spark: SparkSession, batches: Batches, links: Path, semantic: Column) -> DataFrame:
    """Every batch of one kind, parsed into typed columns + ``raw_text`` + its final ``reason``
    (the parse's own, else ``semantic``'s: the checks of the typed row)."""
    from pyspark.sql import functions as F

    parts = []
    if batches.json_files:
        parsed = parse_json_files(spark, batches.json_files, batches.kind)
        parts.append(parsed.withColumn("reason", F.coalesce("reason", semantic)))
    for i, (schema, files) in enumerate(batches.parquet_groups):
        raw = _parquet_source(spark, files, links / f"{batches.kind}-{i}")
        parts.append(parse_parquet(raw, batches.kind, schema, semantic))
    if batches.unreadable:  # one quarantined record per file that could not be opened as its kind
        struct = jsonlines.arrow_schema(batches.kind)
        rows = [(why, jsonlines.file_uri(path), *([None] * (len(struct) - 3)), jsonlines.UNREADABLE)
                for path, why in batches.unreadable]
        parts.append(spark.createDataFrame(rows, parsed_struct(batches.kind)))
    return reduce(lambda a, b: a.unionByName(b), parts)


def _classified(spark: SparkSession, settings: Settings, day: date, batches: Batches, earlier: DataFrame,
                links: Path) -> DataFrame:
    rules = settings.ingest
    semantic = semantic_reason(batches.kind, day, rules.lookback_days, rules.future_tolerance_minutes)
    return dedup.classify(_read(spark, batches, links, semantic), earlier, batches.kind, day)


def _kinds_loaded_before(spark: SparkSession, audit_table: str, day: date, kinds: tuple[str, ...]) -> set[str]:
    """Kinds among ``kinds`` that had files on ``day`` at its last ingest (their rows must now go)."""
    from pyspark.sql import functions as F

    if not kinds:
        return set()
    rows = (
        spark.table(audit_table)
        .where((F.col("upload_date") == F.lit(day)) & F.col("kind").isin(list(kinds)))
        .select("kind")
        .distinct()
        .collect()
    )
    return {r.kind for r in rows}


def _union(frames: list[DataFrame], empty_schema: str, spark: SparkSession) -> DataFrame:
    if not frames:
        return spark.createDataFrame([], empty_schema)
    return reduce(lambda a, b: a.unionByName(b), frames)


def _root_cause(exc: Exception) -> str:
    """The innermost Java cause of a Py4J error (its own first line says only which call failed)."""
    java = getattr(exc, "java_exception", None)
    try:
        while java is not None and java.getCause() is not None:
            java = java.getCause()
        if java is not None:
            return str(java.toString())
    except Exception:  # the gateway may be gone: fall back to Python's text
        pass
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _read_error(exc: Exception, day: date) -> LandingError:
    lines = [line.strip() for line in _root_cause(exc).splitlines() if line.strip()]
    # a Python worker's exception: its last line names the error, the first only says it happened
    cause = lines[-1] if lines and "PythonException" in lines[0] else (lines or ["unknown error"])[0]
    # (a JVM that ran out of memory meanwhile is reported as that, by the command line)
    return LandingError(f"ingest {day} failed while reading the landing files, nothing was written: {cause[:300]}")


def _refuse_unreadable(classified: dict[str, DataFrame], day: date) -> None:
    """Strict mode: a one-line error naming the first unreadable landing file, if there is one."""
    from pyspark.sql import functions as F

    for df in classified.values():
        bad = df.where(F.col("reason") == jsonlines.UNREADABLE).select("source_file", "raw_text").first()
        if bad is not None:
            raise LandingError(f"ingest {day} (strict): cannot read landing file {bad.source_file}: "
                               f"{bad.raw_text}; nothing was written")


@contextmanager
def _scoped_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    saved = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def run(
    spark: SparkSession,
    settings: Settings,
    day: date,
    kinds: tuple[str, ...] | None = None,
    *,
    cascade: bool = True,
    strict: bool = False,
    check_previous: bool = True,
) -> IngestSummary:
    """Ingest the upload day ``day`` for every event kind (or ``kinds``); see the module docstring.

    ``strict``: a landing file that cannot be read fails the day (naming the file, nothing
    written) instead of being quarantined as one ``unreadable_file`` record.
    ``check_previous``: refuse when the previous upload day has an unfinished run (the cascade
    of a day's run into later days turns it off: the day that cascades is itself not finished yet).
    """
    conf = dict(SCOPED_CONF)
    partitions = shuffle_partitions(settings.landing_root, day, int(spark.conf.get("spark.sql.shuffle.partitions")))
    conf["spark.sql.shuffle.partitions"] = str(partitions)
    with day_runs.day_lock(settings, day, f"{JOB} ingest"), _scoped_conf(spark, conf):
        return _run(spark, settings, day, kinds, cascade=cascade, strict=strict, check_previous=check_previous)


# Shuffle sizing from the landing files (settings that follow the data): the dedup window's
# shuffle carries the typed rows, about half the size of the uncompressed JSON text; gzip
# JSON lines inflate about 10x, Parquet about 4x. Aim at ~128 MiB per shuffle partition and
# never below the configured number; adaptive execution coalesces partitions that come out small.
_INFLATE = {".gz": 10.0, ".parquet": 4.0}
_SHUFFLE_FRACTION = 0.5
_PARTITION_BYTES = 128 * 2**20


def shuffle_partitions(landing_root, day: date, configured: int) -> int:
    """Shuffle partitions for ingesting ``day``: the configured number, or more for a large day."""
    import os

    from jobs.ingest.landing import day_dir

    folder = day_dir(landing_root, day)
    estimate = 0.0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            try:
                size = os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
            estimate += size * next((f for suffix, f in _INFLATE.items() if name.endswith(suffix)), 1.0)
    return max(configured, int(estimate * _SHUFFLE_FRACTION // _PARTITION_BYTES) + 1)


def _run(spark: SparkSession, settings: Settings, day: date, kinds: tuple[str, ...] | None, *, cascade: bool,
         strict: bool, check_previous: bool) -> IngestSummary:
    from py4j.protocol import Py4JJavaError
    from pyspark import StorageLevel
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    started = time.monotonic()
    kinds = tuple(kinds or telemetry.EVENT_KINDS)
    find_batches(settings.landing_root, day, ())  # a missing landing day fails before any catalog work
    ensure_schema(spark, settings.bronze_schema)
    day_runs.ensure_runs_table(spark, settings)
    if check_previous:
        day_runs.refuse_after_unfinished(spark, settings, day, JOB)
    previous = day_runs.latest(spark, settings, day, JOB)
    repairing = previous is not None and previous.unfinished
    unfinished_kinds = tuple(k for k in (previous.kinds if repairing else ()) if k in telemetry.EVENT_KINDS)
    if repairing:
        log.warning("ingest %s: the day's last run %s did not finish; this run repairs it (kinds %s too)",
                    day, previous.run_id, ", ".join(unfinished_kinds) or "none")
        kinds += tuple(k for k in unfinished_kinds if k not in kinds)
    batches = [b for b in find_batches(settings.landing_root, day, kinds) if not b.empty]
    tables.ensure_tables(spark, settings, kinds)
    schema = settings.bronze_schema
    audit_table = qualified(schema, tables.AUDIT)
    ledger_table = qualified(schema, tables.LEDGER)
    this_day = F.col("upload_date") == F.lit(day)
    mine: Column = this_day & F.col("kind").isin(list(kinds))

    later = dedup.later_ingested_days(spark, settings, day, audit_table) if cascade else []
    # an unfinished run may have replaced the ledger slice already: its old ids are lost, so every
    # later ingested day in the window is re-ingested (idempotent where nothing changed)
    old_ids = spark.table(ledger_table).where(mine).localCheckpoint(eager=True) if later and not repairing else None

    day_run = day_runs.DayRun(spark, settings, day, JOB)
    # plain-named links to Parquet files whose names Hadoop cannot take (removed at the end)
    links = Path(settings.lake_root) / "_ingest_links" / f"{day}-{uuid.uuid4().hex}"
    earlier = dedup.earlier_ids(spark, settings, day).persist(StorageLevel.MEMORY_AND_DISK)
    classified = {
        b.kind: _classified(spark, settings, day, b, earlier, links).persist(StorageLevel.DISK_ONLY)
        for b in batches
    }
    try:
        try:
            audit = [r.asDict() for r in _union(
                [tables.audit_rows(df, kind, day) for kind, df in classified.items()], tables.AUDIT_DDL, spark
            ).collect()]
        except (PySparkException, Py4JJavaError) as exc:  # a corrupt upload's I/O error, or the job's own failure
            raise _read_error(exc, day) from None
        if strict:
            _refuse_unreadable(classified, day)
        log.info("ingest %s: %d files of %d kinds read and classified in %.1fs",
                 day, sum(b.files for b in batches), len(batches), time.monotonic() - started)

        absent = tuple(k for k in kinds if k not in classified)
        stale = _kinds_loaded_before(spark, audit_table, day, absent) | {k for k in unfinished_kinds if k in absent}
        writes = [(kind, df.where(F.col("status") == dedup.LOADED).select(*tables.bronze_columns(kind)))
                  for kind, df in classified.items()]
        writes += [(kind, spark.createDataFrame([], tables.bronze_struct(kind))) for kind in sorted(stale)]
        day_run.start([kind for kind, _ in writes],
                      [kind for kind, _ in writes] + [tables.QUARANTINE, tables.LEDGER, tables.AUDIT])
        with ThreadPoolExecutor(max_workers=WRITE_THREADS) as pool:
            list(pool.map(lambda kw: day_runs.commit(kw[1], qualified(schema, kw[0]), this_day), writes))

        quarantine = _union([
            df.where(F.col("status") == dedup.QUARANTINED).select(
                F.lit(kind).alias("kind"), "upload_date", "source_file", "event_id", "reason", "raw_text")
            for kind, df in classified.items()
        ], tables.QUARANTINE_DDL, spark)
        day_runs.commit(quarantine, qualified(schema, tables.QUARANTINE), mine)
        # a ledger row is a tenth of a typed row's size or less: a file per eight of the day's partitions
        ledger_files = max(1, int(spark.conf.get("spark.sql.shuffle.partitions")) // 8)
        new_ids = _union([dedup.ledger_rows(df, kind) for kind, df in classified.items()], tables.LEDGER_DDL,
                         spark).coalesce(ledger_files)
        day_runs.commit(new_ids, ledger_table, mine)
        day_runs.commit(spark.createDataFrame(audit, tables.side_struct(tables.AUDIT_DDL)), audit_table, mine)

        if repairing:
            affected = later
        else:
            affected = dedup.affected_later_days(spark, settings, day, old_ids, new_ids, later) if later else []
    finally:
        for df in classified.values():
            df.unpersist()
        earlier.unpersist()
        shutil.rmtree(links, ignore_errors=True)

    summary = IngestSummary(day=day, per_kind=_per_kind(audit), seconds=time.monotonic() - started)
    _log_summary(summary)
    for later_day in affected:
        log.info("ingest %s changed cross-day duplicates of upload day %s: re-ingesting it", day, later_day)
        run(spark, settings, later_day, kinds, cascade=False, check_previous=False)
        summary.cascaded.append(later_day)
    day_run.finish()
    return summary


def _per_kind(audit: list[dict]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for row in audit:
        counts = out.setdefault(row["kind"], dict.fromkeys(tables.AUDIT_COUNTS, 0))
        for key in tables.AUDIT_COUNTS:
            counts[key] += int(row[key])
    return out


def _log_summary(summary: IngestSummary) -> None:
    for kind, c in sorted(summary.per_kind.items()):
        log.info("ingest %s %s: read %d, loaded %d, quarantined %d, duplicate %d, late %d",
                 summary.day, kind, c["rows_read"], c["rows_loaded"], c["rows_quarantined"],
                 c["rows_duplicate"], c["rows_late"])
    read = summary.total("rows_read")
    log.info("ingest %s: %d rows in %.1fs (%.0f rows/s)", summary.day, read, summary.seconds,
             read / max(summary.seconds, 1e-9))
