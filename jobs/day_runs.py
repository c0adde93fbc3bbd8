"""A day is finished or unfinished as a whole: the run table, the per-day lock and the commit hook.

The ingest jobs (``jobs/ingest``, ``jobs/qlog``) write one upload day as several Delta
commits (bronze tables, quarantine, id ledger, audit). Each commit is atomic; the day is made
atomic by ``bronze.ingest_runs``, one row per upload day and job holding its latest run:

* ``started`` is committed before the run's first data commit, with the kinds (and so the
  table slices) the run will write or empty;
* ``finished`` is committed after its last (cascaded re-ingests of later days included).

A day is **finished** when its latest run of that job is finished; a day with a ``started`` row
is unfinished: readers skip it (the dbt staging models), the next day's ingest refuses to run,
and its rerun repairs it completely (the kinds to empty are read from the started row as well as
from the audit, so a kind whose landing files were removed since is emptied too). A day with no
row was never ingested by this job (or before the run table existed) and blocks nothing.

Concurrent runs of one upload day (any job) are excluded by an ``fcntl`` lock file under
``Settings.state_dir``; a second run fails at once with a one-line error naming the holder.

Tests kill a run after its k-th Delta commit with the environment variable
``QUICEXP_TEST_KILL_AFTER_COMMIT=k`` (read here only, in :func:`_after_commit`; not a setting, so
no settings file can reach it): the process SIGKILLs its own process group (itself and its JVM)
when it leads one, else itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_table, qualified, replace_where
from quicexp.config import Settings
from quicexp.errors import InputDataError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger("quicexp.ingest")

RUNS = "ingest_runs"
RUNS_DDL = (
    "upload_date date, job string, run_id string, state string, started_at timestamp, "
    "finished_at timestamp, kinds array<string>, tables array<string>"
)
STARTED, FINISHED = "started", "finished"

KILL_AFTER_COMMIT_VARIABLE = "QUICEXP_TEST_KILL_AFTER_COMMIT"
_commit_lock = threading.Lock()
_commits = 0


class UnfinishedDay(InputDataError):
    """An upload day's latest ingest started and did not finish."""


class DayLocked(InputDataError):
    """Another run holds the upload day's lock."""


# ---------------------------------------------------------------------------------------------
# the commit hook (tests only)


def _after_commit() -> None:
    """Count this process's Delta commits; SIGKILL at the one ``QUICEXP_TEST_KILL_AFTER_COMMIT`` names."""
    global _commits
    wanted = os.environ.get(KILL_AFTER_COMMIT_VARIABLE)
    with _commit_lock:
        _commits += 1
        if wanted and _commits == int(wanted):
            log.warning("%s=%s: killing the process after commit %d", KILL_AFTER_COMMIT_VARIABLE, wanted, _commits)
            if os.getpgid(0) == os.getpid():  # a group of our own (the JVM is in it): kill the group
                os.killpg(0, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)


def commit(df: DataFrame, name: str, condition: Column) -> None:
    """:func:`jobs.delta_io.replace_where`, counted for the kill hook: every commit of a day run goes here."""
    replace_where(df, name, condition)
    _after_commit()


# ---------------------------------------------------------------------------------------------
# the per-day lock


def lock_path(settings: Settings, day: date) -> Path:
    """One lock file per lake (its root, hashed) and upload day, shared by both ingest jobs."""
    lake = hashlib.sha256(str(settings.lake_root).encode()).hexdigest()[:12]
    return Path(settings.state_dir) / "locks" / f"ingest-{lake}-{settings.bronze_schema}-{day.isoformat()}.lock"


@contextmanager
def day_lock(settings: Settings, day: date, job: str) -> Iterator[None]:
    """Hold the upload day's lock (non-blocking): a second holder gets :class:`DayLocked` naming the first."""
    path = lock_path(settings, day)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = Path(path).read_text(errors="replace").strip() or "unknown holder"
            raise DayLocked(f"upload day {day} is being ingested by another run ({holder}); lock {path}") from None
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{job} pid {os.getpid()} on {socket.gethostname()} since {since}".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# the run table


def runs_table(settings: Settings) -> str:
    return qualified(settings.bronze_schema, RUNS)


def ensure_runs_table(spark: SparkSession, settings: Settings) -> None:
    from pyspark.sql.types import _parse_datatype_string

    ensure_table(spark, runs_table(settings), _parse_datatype_string(RUNS_DDL), ["upload_date"])


@dataclass(frozen=True)
class RunState:
    run_id: str
    state: str
    kinds: tuple[str, ...]

    @property
    def unfinished(self) -> bool:
        return self.state != FINISHED


def latest(spark: SparkSession, settings: Settings, day: date, job: str) -> RunState | None:
    """The latest run of ``job`` on upload day ``day`` (None: never ingested by this job)."""
    from pyspark.sql import functions as F

    rows = (
        spark.table(runs_table(settings))
        .where((F.col("upload_date") == F.lit(day)) & (F.col("job") == job))
        .orderBy(F.col("started_at").desc())
        .limit(1)
        .collect()
    )
    if not rows:
        return None
    return RunState(rows[0].run_id, rows[0].state, tuple(rows[0].kinds or ()))


def refuse_after_unfinished(spark: SparkSession, settings: Settings, day: date, job: str) -> None:
    """:class:`UnfinishedDay` when the previous upload day's latest run of ``job`` did not finish."""
    before = day - timedelta(days=1)
    previous = latest(spark, settings, before, job)
    if previous is not None and previous.unfinished:
        raise UnfinishedDay(
            f"{job} ingest of {day} refused: the previous upload day {before} has an unfinished run "
            f"{previous.run_id} (killed or failed); rerun {before} first"
        )


class DayRun:
    """One run of ``job`` over upload day ``day``: :meth:`start`, the data commits, :meth:`finish`."""

    def __init__(self, spark: SparkSession, settings: Settings, day: date, job: str) -> None:
        self.spark, self.settings, self.day, self.job = spark, settings, day, job
        self.run_id = uuid.uuid4().hex
        self.started_at: datetime | None = None
        self.kinds: tuple[str, ...] = ()
        self.tables: tuple[str, ...] = ()

    def _write(self, state: str) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.types import _parse_datatype_string

        now = datetime.now(UTC).replace(tzinfo=None)
        row = (self.day, self.job, self.run_id, state, self.started_at or now, now if state == FINISHED else None,
               list(self.kinds), list(self.tables))
        df = self.spark.createDataFrame([row], _parse_datatype_string(RUNS_DDL))
        commit(df, runs_table(self.settings), (F.col("upload_date") == F.lit(self.day)) & (F.col("job") == self.job))

    def start(self, kinds: tuple[str, ...] | list[str], tables: tuple[str, ...] | list[str]) -> None:
        """Commit ``started``: the day is unfinished until :meth:`finish`; ``kinds`` are the slices to write."""
        self.kinds, self.tables = tuple(sorted(set(kinds))), tuple(sorted(set(tables)))
        self.started_at = datetime.now(UTC).replace(tzinfo=None)
        self._write(STARTED)
        log.info("%s ingest %s: run %s started (kinds %s)", self.job, self.day, self.run_id, ", ".join(self.kinds))

    def finish(self) -> None:
        self._write(FINISHED)
        log.info("%s ingest %s: run %s finished", self.job, self.day, self.run_id)
