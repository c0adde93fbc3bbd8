"""A day is atomic: a real ``quicexp ingest`` SIGKILLed between two of its Delta commits leaves an
unfinished day that the next day refuses to follow, and the rerun repairs it to exactly a clean run.

The kill is the job's own: ``QUICEXP_TEST_KILL_AFTER_COMMIT=k`` (jobs/day_runs.py) makes the CLI
process SIGKILL its process group (itself and its JVM) right after its k-th Delta commit. One run of
a day with three kinds commits: 1 the ``started`` row, 2-4 the three bronze tables (concurrently),
5 quarantine, 6 id ledger, 7 audit, 8 ``finished``. Every subprocess starts a JVM and classifies the
day cold (about 2 min each on the 2-core machine at load 10), so the test chains two kills rather
than one subprocess per kill point:

* the first ingest of the day, killed after commit 4: every bronze table ahead of the quarantine,
  ledger and audit (nothing of the day in the audit yet); then the uploader removes one kind's
  files;
* its rerun, killed after commit 6: quarantine and ledger ahead of the audit, and its started row
  must carry the removed kind over (no audit row names it);
* an in-process rerun, compared with a clean run of the final landing files: row checksums of
  every bronze table, quarantine, audit, ledger, and the run table's state.

Kill points 1 (only ``started``), 2-3 (some bronze tables) and 7 (all but ``finished``) leave
states between or beside these two; ``KILL_POINTS`` lists the chain, to cover more in a longer run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

import pytest

import jobs.ingest
from jobs import day_runs
from jobs.ingest.tables import AUDIT, LEDGER, QUARANTINE
from quicexp.config import REPO_ROOT
from tests.jobs.conftest import checksum, checksums, cli_env
from tests.jobs.landing_factory import json_day, write_jsonl_gz

D = date(2026, 6, 20)
KINDS = ("http_transactions", "search_queries", "page_loads")
REMOVED = "page_loads"  # its files are withdrawn after the first kill
TABLES = [*KINDS, QUARANTINE, AUDIT, LEDGER]
KILL_POINTS = (4, 6)  # commit after which each run of the chain is killed


def _landing(root: Path, n: int) -> None:
    for kind in KINDS:
        lines, _ = json_day(kind, D, n)
        write_jsonl_gz(root / f"upload_date={D}" / kind / "v1.jsonl.gz", lines)


def _killed_ingest(settings, k: int) -> None:
    env = cli_env(settings) | {day_runs.KILL_AFTER_COMMIT_VARIABLE: str(k)}
    proc = subprocess.Popen(
        [str(REPO_ROOT / ".venvs/pipeline/bin/quicexp"), "ingest", "--date", str(D)],
        env=env, cwd=REPO_ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        _, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]


def _runs(spark, settings) -> list[tuple]:
    """The run table's state: day, job and state (ids and times differ; the repair also lists the removed kind)."""
    return sorted((r.upload_date, r.job, r.state) for r in spark.table(day_runs.runs_table(settings)).collect())


def _latest(spark, settings) -> day_runs.RunState:
    state = day_runs.latest(spark, settings, D, jobs.ingest.JOB)
    assert state is not None
    return state


@contextmanager
def _lock_held_elsewhere(settings, day: date) -> Iterator[int]:
    """A separate process holding the ingest lock of ``day`` while the block runs; yields its pid."""
    code = (
        "import sys\nfrom datetime import date\nfrom jobs.day_runs import day_lock\nfrom quicexp.config import load_settings\n"
        f"with day_lock(load_settings(), date.fromisoformat({str(day)!r}), 'test holder'):\n"
        "    print('held', flush=True)\n    sys.stdin.read()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=cli_env(settings), cwd=REPO_ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_killed_between_commits_then_rerun_equals_clean_run(ingest_spark, lake):
    spark = ingest_spark
    settings = lake("ingest_kill")
    _landing(settings.landing_root, 150)

    # 1. the first ingest of the day dies with its bronze tables committed, nothing else
    _killed_ingest(settings, KILL_POINTS[0])
    first = _latest(spark, settings)
    assert first.state == day_runs.STARTED and set(first.kinds) == set(KINDS)
    assert checksum(spark, f"{settings.bronze_schema}.{REMOVED}")[0] > 0  # bronze ahead ...
    assert checksum(spark, f"{settings.bronze_schema}.{AUDIT}") == (0, 0)  # ... of the audit

    # the next day refuses to run after the unfinished one, and a concurrent run of the day is locked out
    (settings.landing_root / f"upload_date={D + timedelta(days=1)}").mkdir()
    with pytest.raises(day_runs.UnfinishedDay, match=f"previous upload day {D} has an unfinished run") as err:
        jobs.ingest.run(spark, settings, D + timedelta(days=1), KINDS)
    assert "\n" not in str(err.value)
    with _lock_held_elsewhere(settings, D) as holder, pytest.raises(
        day_runs.DayLocked, match=f"test holder pid {holder} "
    ) as err:
        jobs.ingest.run(spark, settings, D, KINDS)
    assert "\n" not in str(err.value)

    # 2. the uploader withdraws one kind; the repairing rerun dies with quarantine and ledger ahead of the audit
    for path in (settings.landing_root / f"upload_date={D}" / REMOVED).iterdir():
        path.unlink()
    time.sleep(0.01)  # distinct started_at
    _killed_ingest(settings, KILL_POINTS[1])
    second = _latest(spark, settings)
    assert second.state == day_runs.STARTED and second.run_id != first.run_id
    assert REMOVED in second.kinds  # carried over from the unfinished run, though no file and no audit row names it

    # 3. the rerun repairs the day: equal to a clean run of the final landing files
    jobs.ingest.run(spark, settings, D, KINDS)
    clean = lake("ingest_kill_ref").model_copy(update={"landing_root": settings.landing_root})
    jobs.ingest.run(spark, clean, D, KINDS)
    assert checksums(spark, settings.bronze_schema, TABLES) == checksums(spark, clean.bronze_schema, TABLES)
    assert checksum(spark, f"{settings.bronze_schema}.{REMOVED}") == (0, 0)
    assert _runs(spark, settings) == _runs(spark, clean)
    assert _latest(spark, settings).state == day_runs.FINISHED
