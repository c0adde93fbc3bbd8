"""A job killed after writing data files but before its Delta commit leaves no partial rows; the retry equals a clean run."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import date
from pathlib import Path

import jobs.ingest
from jobs.ingest.tables import AUDIT, LEDGER, QUARANTINE
from quicexp.config import REPO_ROOT
from tests.jobs.conftest import checksums, cli_env
from tests.jobs.landing_factory import json_day, write_jsonl_gz

D = date(2026, 6, 20)
KINDS = ("http_transactions", "search_queries")
TABLES = [*KINDS, QUARANTINE, AUDIT, LEDGER]


def _landing(root: Path, n: int, tag: str) -> None:
    for kind in KINDS:
        lines, _ = json_day(kind, D, n)
        folder = root / f"upload_date={D}" / kind
        for old in folder.glob("*"):
            old.unlink()
        write_jsonl_gz(folder / f"{tag}.jsonl.gz", lines)


def _state(table_dir: Path) -> tuple[int, set[str]]:
    """(latest Delta version, data files) of a table directory."""
    versions = [int(p.name.split(".")[0]) for p in (table_dir / "_delta_log").glob("*.json")]
    files = {str(p) for p in table_dir.rglob("*.parquet") if "_delta_log" not in p.parts}
    return max(versions, default=-1), files


def _kill_between_write_and_commit(proc: subprocess.Popen, table_dirs: list[Path], timeout: float) -> Path | None:
    """SIGKILL the process group once a table has new data files but no new commit; the table caught."""
    before = {d: _state(d) for d in table_dirs}
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        for d in table_dirs:
            version, files = _state(d)
            if files - before[d][1] and version == before[d][0]:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return d
        time.sleep(0.005)
    return None


def test_killed_ingest_leaves_no_partial_rows_and_retry_equals_clean_run(ingest_spark, lake):
    spark = ingest_spark
    settings = lake("ingest_kill")
    _landing(settings.landing_root, 300, "v1")
    jobs.ingest.run(spark, settings, D, KINDS)
    v1 = checksums(spark, settings.bronze_schema, TABLES)

    _landing(settings.landing_root, 900, "v2")  # new uploads for the day arrive; the rerun is killed mid-write
    warehouse = settings.warehouse_dir / f"{settings.bronze_schema}.db"
    proc = subprocess.Popen(
        [str(REPO_ROOT / ".venvs/pipeline/bin/quicexp"), "ingest", "--date", str(D)],
        env=cli_env(settings), cwd=REPO_ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        caught = _kill_between_write_and_commit(proc, [warehouse / t for t in TABLES], timeout=1800)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert caught is not None, "the ingest finished before it could be caught between write and commit"
    after_kill = checksums(spark, settings.bronze_schema, TABLES)
    assert after_kill[caught.name] == v1[caught.name]  # orphan files, but no rows from the killed write

    jobs.ingest.run(spark, settings, D, KINDS)  # the retry
    clean = lake("ingest_kill_ref").model_copy(update={"landing_root": settings.landing_root})
    jobs.ingest.run(spark, clean, D, KINDS)
    assert checksums(spark, settings.bronze_schema, TABLES) == checksums(spark, clean.bronze_schema, TABLES)
