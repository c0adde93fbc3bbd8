"""Bad days and odd landing files: a missing day is a one-line error; an unreadable file is quarantined."""

from __future__ import annotations

import gzip
import json
import subprocess
from datetime import date
from urllib.parse import unquote, urlparse

import pytest

import jobs.ingest
from jobs.ingest.landing import LandingError
from quicexp.config import REPO_ROOT
from quicexp.errors import ConfigError, InputDataError
from tests.jobs.conftest import checksum, cli_env
from tests.jobs.landing_factory import json_day, write_jsonl_gz

D = date(2026, 6, 18)
KINDS = ("http_transactions",)
QUICEXP = str(REPO_ROOT / ".venvs/pipeline/bin/quicexp")


def _cli(settings, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([QUICEXP, *args], env=cli_env(settings), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=900)


def _one_line_error(proc: subprocess.CompletedProcess, *words: str, code: int = ConfigError.exit_code) -> None:
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and " WARN " not in line]
    assert lines[-1].startswith("quicexp: error:") and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[-1]


def test_landing_problems(ingest_spark, lake):
    """A missing day is an error; an unreadable file is quarantined by name (strict mode: an error);
    glob and URI characters in names are literal (each such file read once, as itself)."""
    settings = lake("ingest_err")
    with pytest.raises(LandingError, match=r"landing zone .* does not exist"):
        jobs.ingest.run(ingest_spark, settings, D, KINDS)
    folder = settings.landing_root / f"upload_date={D}" / "http_transactions"
    folder.mkdir(parents=True)
    with pytest.raises(LandingError, match=f"no landing data for {D - date.resolution}"):
        jobs.ingest.run(ingest_spark, settings, D - date.resolution, KINDS)

    lines, exp = json_day("http_transactions", D, 200)
    write_jsonl_gz(folder / "good.jsonl.gz", lines)
    jobs.ingest.run(ingest_spark, settings, D, KINDS)
    table = f"{settings.bronze_schema}.http_transactions"
    before = checksum(ingest_spark, table)
    truncated = gzip.compress("\n".join(lines * 3).encode())
    (folder / "torn.jsonl.gz").write_bytes(truncated[: len(truncated) // 2])  # a torn upload: gzip header, no end
    (folder / "x.jsonl.gz").write_text('{"not": "gzip"}\n')
    (folder / "notes.txt").write_text("hi")
    (folder / "p.parquet").write_bytes(b"PAR1 not really PAR1")
    sizes = _odd_names(folder)

    with pytest.raises(LandingError, match=r"\(strict\): cannot read landing file .*nothing was written"):
        jobs.ingest.run(ingest_spark, settings, D, KINDS, strict=True)
    assert checksum(ingest_spark, table) == before

    summary = jobs.ingest.run(ingest_spark, settings, D, KINDS)  # the rest of the day loads
    counts = summary.per_kind["http_transactions"]
    assert counts["rows_read"] == exp.read["http_transactions"] + 4 + sum(sizes.values())
    assert counts["rows_loaded"] == exp.loaded["http_transactions"] + sum(sizes.values())
    assert counts["rows_quarantined"] == sum(exp.reasons["http_transactions"].values()) + 4
    audit = ingest_spark.table(f"{settings.bronze_schema}.ingest_audit").collect()
    read = {unquote(urlparse(r.source_file).path).rsplit("/", 1)[1]: r.rows_read for r in audit}
    assert {name: read[name] for name in sizes} == sizes  # each odd name read once, as itself
    bad = ingest_spark.sql(
        f"SELECT source_file, raw_text FROM {settings.bronze_schema}.quarantine WHERE reason = 'unreadable_file'"
    ).collect()
    assert sorted(r.source_file.rsplit("/", 1)[1] for r in bad) == ["notes.txt", "p.parquet", "torn.jsonl.gz", "x.jsonl.gz"]
    assert all(r.raw_text for r in bad)


def _odd_names(folder) -> dict[str, int]:
    """Files whose names hold glob and URI characters; returns lines per file name."""
    from tests.jobs.landing_factory import event, write_parquet

    sizes = {"c*.jsonl": 3, "c1.jsonl": 5, "c2.jsonl": 7, "a[1].jsonl": 2, "b{x,y}.jsonl": 4, "d\\e?.jsonl": 1,
             "f:g.jsonl": 6}
    n = 0
    for name, count in sizes.items():
        (folder / name).write_text("".join(json.dumps(event("http_transactions", D, 1000 + n + i)) + "\n"
                                           for i in range(count)))
        n += count
    write_parquet(folder / "p[1]*:x.parquet", "http_transactions",
                  [event("http_transactions", D, 1000 + n + i) for i in range(8)])
    return {**sizes, "p[1]*:x.parquet": 8}


def test_cli_bad_day_and_missing_landing(lake):
    settings = lake("ingest_cli")
    _one_line_error(_cli(settings, "ingest", "--date", "2026-02-30"), "bad day")
    missing = InputDataError.exit_code  # the landing data has not arrived
    _one_line_error(_cli(settings, "ingest-qlog", "--date", "2026-06-18"), "does not exist", code=missing)
    _one_line_error(_cli(settings, "ingest", "--date", "2026-06-18"), "landing", "does not exist", code=missing)
