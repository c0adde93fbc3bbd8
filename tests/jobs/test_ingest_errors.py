"""Bad days, missing or unreadable landing data: one line, non-zero exit, nothing written."""

from __future__ import annotations

import gzip
import subprocess
from datetime import date

import pytest

import jobs.ingest
from jobs.ingest.landing import LandingError
from quicexp.config import REPO_ROOT
from tests.jobs.conftest import checksum, cli_env
from tests.jobs.landing_factory import json_day, write_jsonl_gz

D = date(2026, 6, 18)
KINDS = ("http_transactions",)
QUICEXP = str(REPO_ROOT / ".venvs/pipeline/bin/quicexp")


def _cli(settings, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([QUICEXP, *args], env=cli_env(settings), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=900)


def _one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and " WARN " not in line]
    assert lines[-1].startswith("quicexp: error:") and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[-1]


def test_landing_problems_are_one_line_errors(ingest_spark, lake):
    settings = lake("ingest_err")
    with pytest.raises(LandingError, match=r"landing zone .* does not exist"):
        jobs.ingest.run(ingest_spark, settings, D, KINDS)
    folder = settings.landing_root / f"upload_date={D}" / "http_transactions"
    folder.mkdir(parents=True)
    with pytest.raises(LandingError, match=f"no landing data for {D - date.resolution}"):
        jobs.ingest.run(ingest_spark, settings, D - date.resolution, KINDS)
    (folder / "x.jsonl.gz").write_text('{"not": "gzip"}\n')
    with pytest.raises(LandingError, match=r"x\.jsonl\.gz: not gzip data"):
        jobs.ingest.run(ingest_spark, settings, D, KINDS)
    (folder / "x.jsonl.gz").unlink()
    (folder / "notes.txt").write_text("hi")
    with pytest.raises(LandingError, match="unrecognised file"):
        jobs.ingest.run(ingest_spark, settings, D, KINDS)
    (folder / "notes.txt").unlink()

    lines, _ = json_day("http_transactions", D, 200)
    write_jsonl_gz(folder / "good.jsonl.gz", lines)
    jobs.ingest.run(ingest_spark, settings, D, KINDS)
    table = f"{settings.bronze_schema}.http_transactions"
    before = checksum(ingest_spark, table)
    truncated = gzip.compress("\n".join(lines * 3).encode())
    (folder / "torn.jsonl.gz").write_bytes(truncated[: len(truncated) // 2])  # a torn upload: gzip header, no end
    with pytest.raises(LandingError, match="failed while reading the landing files, nothing was written"):
        jobs.ingest.run(ingest_spark, settings, D, KINDS)
    assert checksum(ingest_spark, table) == before


def test_cli_bad_day_and_missing_landing(lake):
    settings = lake("ingest_cli")
    _one_line_error(_cli(settings, "ingest", "--date", "2026-02-30"), "bad day")
    _one_line_error(_cli(settings, "ingest-qlog", "--date", "2026-06-18"), "does not exist")
    _one_line_error(_cli(settings, "ingest", "--date", "2026-06-18"), "landing", "does not exist")
