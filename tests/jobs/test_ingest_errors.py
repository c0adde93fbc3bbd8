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


# --- issue 40: every entry of a day's folder is accounted for; symbolic links are never read ----
# (no JVM: the command refuses the day while listing it, before Spark; QUICEXP_NO_JVM proves it)


@pytest.fixture
def landing_cli(monkeypatch, capsys, tmp_path):
    """(settings, run): ``quicexp ARGV`` through the console entry point in this process, with
    a home of its own and no JVM allowed; ``run`` returns (exit code, stderr lines)."""
    import logging

    from quicexp.app.cli import main
    from quicexp.catalog import NO_JVM_VARIABLE
    from quicexp.config import load_settings

    for key in ("QUICEXP_LAKE_ROOT", "QUICEXP_LANDING_ROOT", "QUICEXP_METASTORE_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("QUICEXP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(NO_JVM_VARIABLE, "1")
    settings = load_settings()
    root = logging.getLogger()
    before = list(root.handlers)

    def run(*argv: str) -> tuple[int, list[str]]:
        code = main(list(argv))
        return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]

    yield settings, run
    for handler in root.handlers[:]:
        if handler not in before:
            root.removeHandler(handler)
            handler.close()


def _host_file(tmp_path):
    secret = tmp_path / "host" / "secret.jsonl"
    secret.parent.mkdir()
    secret.write_text('{"host": "file"}\n')
    return secret


def _misspelt_kind(day, tmp_path):
    write_jsonl_gz(day / "http_transaction" / "a.jsonl.gz", json_day("http_transactions", D, 5)[0])
    return day / "http_transaction", "a folder that is no event kind"


def _nested(day, tmp_path):
    write_jsonl_gz(day / "http_transactions" / "late" / "a.jsonl.gz", json_day("http_transactions", D, 5)[0])
    return day / "http_transactions" / "late", "a subfolder of a kind folder"


def _at_root(day, tmp_path):
    write_jsonl_gz(day / "a.jsonl.gz", json_day("http_transactions", D, 5)[0])
    return day / "a.jsonl.gz", "a file at the day's root"


def _linked_file(day, tmp_path):
    (day / "http_transactions").mkdir(parents=True)
    (day / "http_transactions" / "b.jsonl").symlink_to(_host_file(tmp_path))
    return day / "http_transactions" / "b.jsonl", "a symbolic link"


def _linked_kind(day, tmp_path):
    (day / "http_transactions").symlink_to(_host_file(tmp_path).parent, target_is_directory=True)
    return day / "http_transactions", "a symbolic link"


def _fifo(day, tmp_path):
    import os

    (day / "http_transactions").mkdir(parents=True)
    os.mkfifo(day / "http_transactions" / "pipe.jsonl")  # opening it would block the ingest
    return day / "http_transactions" / "pipe.jsonl", "not a regular file"


def _linked_qlog(day, tmp_path):
    (day / "qlog" / "client").mkdir(parents=True)
    (day / "qlog" / "client" / "a.qlog").symlink_to(_host_file(tmp_path))
    return day / "qlog" / "client" / "a.qlog", "a symbolic link"


def _linked_qlog_folder(day, tmp_path):
    (day / "qlog").mkdir(parents=True)
    (day / "qlog" / "server").symlink_to(_host_file(tmp_path).parent, target_is_directory=True)
    return day / "qlog" / "server", "a symbolic link"


@pytest.mark.parametrize(
    ("command", "make"),
    [("ingest", _misspelt_kind), ("ingest", _nested), ("ingest", _at_root), ("ingest", _linked_file),
     ("ingest", _linked_kind), ("ingest", _fifo), ("ingest-qlog", _linked_qlog),
     ("ingest-qlog", _linked_qlog_folder)],
    ids=["misspelt kind folder", "nested subfolder", "file at the day's root", "linked file", "linked kind folder",
         "fifo", "linked qlog trace", "linked qlog folder"],
)  # fmt: skip
def test_an_entry_no_job_accounts_for_refuses_the_day_before_anything_is_read(landing_cli, tmp_path, command, make):
    settings, run = landing_cli
    day = settings.landing_root / f"upload_date={D}"
    write_jsonl_gz(day / "connections" / "good.jsonl.gz", json_day("connections", D, 5)[0])
    entry, why = make(day, tmp_path)

    code, err = run(command, "--date", D.isoformat())

    assert code == InputDataError.exit_code and len(err) == 1, err
    assert err[0].startswith(f"quicexp: error: landing day {D} refused, nothing was read or written: {entry} ({why}")
    assert not settings.lake_root.exists() and not settings.metastore_dir.exists()  # nothing reached the lake


def test_batches_markers_and_the_other_jobs_folders_are_accounted_for(tmp_path):
    """A day as the simulator, the lab and uploaders leave it: nothing refused."""
    from jobs.ingest.landing import find_batches, unaccounted
    from quicexp import telemetry

    day = tmp_path / f"upload_date={D}"
    write_jsonl_gz(day / "http_transactions" / "a.jsonl.gz", json_day("http_transactions", D, 5)[0])
    for marker in ("http_transactions/_SUCCESS", "http_transactions/.a.jsonl.gz.part", "_manifest.json",
                   "qlog/lab/r1/client/x.qlog.gz", "qlog/lab/r1/_connections.jsonl", "lab/r1/relay.jsonl",
                   "lab/r1/manifest.json", "http_transactions/_tmp/b.jsonl"):
        (day / marker).parent.mkdir(parents=True, exist_ok=True)
        (day / marker).write_text("{}\n")
    assert unaccounted(day, telemetry.EVENT_KINDS) == []
    assert unaccounted(day, (), qlog=True) == []
    (http,) = [b for b in find_batches(tmp_path, D, telemetry.EVENT_KINDS) if not b.empty]
    assert [p.rsplit("/", 1)[1] for p in http.json_files] == ["a.jsonl.gz"]


def test_a_link_slipped_in_after_the_listing_is_still_never_read(tmp_path):
    """The readers open with O_NOFOLLOW: a link is an unreadable file, its target's bytes are read
    by no one (the audit's link to a host file ended in bronze.quarantine.raw_text)."""
    from jobs.ingest import jsonlines
    from jobs.qlog.job import read_sidecars
    from jobs.qlog.parse import parse_path

    secret = _host_file(tmp_path)
    link = tmp_path / "b.jsonl"
    link.symlink_to(secret)
    (row,) = list(jsonlines.rows_of_file(str(link), "http_transactions"))
    assert row[-1] == jsonlines.UNREADABLE and "host" not in row[0], row[0]
    (parsed,) = parse_path(str(link))
    assert parsed["reason"] == "unreadable_file"
    sidecar = tmp_path / "_connections.jsonl"
    sidecar.symlink_to(secret)
    assert [q["reason"] for q in read_sidecars([sidecar], D).quarantine] == ["unreadable_file"]
