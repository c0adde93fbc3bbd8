"""qlog from a real aioquic HTTP/3 exchange on 127.0.0.1 ingests, and its numbers are the qlog's own.

Also the landing defects: nested client/server folders with the same file name, empty and
unrecognised files, bad sidecar lines, a trace repeated on a later upload day, and days
without qlog.
"""

from __future__ import annotations

import gzip
import json
import shutil
import statistics
from datetime import date, timedelta

import pytest
from pyspark.sql.types import _parse_datatype_string

import jobs.qlog.job
from jobs import day_runs
from jobs.ingest.tables import AUDIT, LEDGER, QUARANTINE
from tests.conftest import free_port
from tests.jobs.quic_exchange import run_exchange


def _upload_day() -> date:
    """Traces are uploaded after they were written: the upload day is taken once the module's
    exchanges have run (a session that crosses midnight between collection and the exchanges
    would otherwise upload a trace the day before it started)."""
    return date.today()


def _own_numbers(path) -> dict:
    """What the qlog itself says, read the plain way."""
    trace = json.loads(path.read_text())["traces"][0]
    events = trace["events"]
    rtt = [e["data"] for e in events if e["name"].endswith("metrics_updated") and "latest_rtt" in e["data"]]
    return {
        "vantage_point": trace["vantage_point"]["type"],
        "srtt_ms": rtt[-1]["smoothed_rtt"],
        "srtt_median_ms": statistics.median(d["smoothed_rtt"] for d in rtt),
        "rtt_samples": len(rtt),
        "packets_lost": sum(e["name"].endswith("packet_lost") for e in events),
        "packets_sent": sum(e["name"].endswith("packet_sent") for e in events),
        "packets_dropped": sum(e["name"].endswith("packet_dropped") for e in events),
        "datagrams_sent": sum(e["name"].endswith("datagrams_sent") for e in events),
        "datagrams_received": sum(e["name"].endswith("datagrams_received") for e in events),
        "bytes_sent": sum(e["data"]["raw"]["length"] for e in events if e["name"].endswith("packet_sent")),
        "handshake_ms": next(e["time"] for e in events if e["name"].endswith("packet_received")
                             and e["data"]["header"]["packet_type"] == "1RTT") - events[0]["time"],
    }


def _sidecar(odcid: str, client: str = "client-42") -> str:
    return json.dumps({"odcid": odcid, "client_id": client, "session_id": "s-1", "platform": "linux",
                       "network_type": "loopback", "experiments": {"fhol_2026_06": "fhol"}})


@pytest.fixture(scope="module")
def exchange(tmp_path_factory):
    return run_exchange(tmp_path_factory.mktemp("quic"), free_port(), sizes=[150_000, 60_000], drop_every=9)


@pytest.fixture(scope="module")
def second(tmp_path_factory):
    return run_exchange(tmp_path_factory.mktemp("quic2"), free_port(), sizes=[20_000], drop_every=1000)


@pytest.fixture(scope="module")
def D(exchange, second) -> date:  # the upload day, named as the tests read it
    return _upload_day()


def _audit(spark, settings, day) -> dict[str, tuple[int, int, int, int]]:
    rows = spark.sql(f"SELECT * FROM {settings.bronze_schema}.{AUDIT} WHERE kind = 'qlog' "
                     f"AND upload_date = DATE'{day}'").collect()
    return {r.source_file.rsplit("/qlog/", 1)[1]: (r.rows_read, r.rows_loaded, r.rows_quarantined, r.rows_duplicate)
            for r in rows}


def test_qlog_from_aioquic_matches_its_own_numbers(ingest_spark, lake, exchange, D):
    spark, settings = ingest_spark, lake("qlog_a")
    folder = settings.landing_root / f"upload_date={D}" / "qlog"
    (folder / "client").mkdir(parents=True)
    (folder / "server" / "deep").mkdir(parents=True)
    # the natural layout: both ends are named <ODCID>.qlog by aioquic
    shutil.copy(exchange.client_qlog, folder / "client" / f"{exchange.odcid}.qlog")
    (folder / "server" / f"{exchange.odcid}.qlog.gz").write_bytes(gzip.compress(exchange.server_qlog.read_bytes()))
    (folder / "server" / "deep" / "unmapped.qlog").write_text(
        exchange.client_qlog.read_text().replace(exchange.odcid, "00ff00ff"))
    (folder / "broken[1].qlog").write_text('{"qlog_version": "0.3", "traces": [')  # glob characters in the name
    (folder / "client" / "empty.qlog.gz").write_bytes(b"")
    (folder / "notes.txt").write_text("not a trace")
    (folder / "_connections.jsonl").write_text("\n".join([
        _sidecar(exchange.odcid), "{not json", json.dumps({"odcid": 7}), _sidecar(exchange.odcid),
        _sidecar("abcdef01", "client-1"), _sidecar("abcdef01", "client-2"), ""]) + "\n")

    summary = jobs.qlog.job.run(spark, settings, D)
    assert summary.files == 7
    audit = _audit(spark, settings, D)
    assert audit == {
        f"client/{exchange.odcid}.qlog": (1, 1, 0, 0),
        f"server/{exchange.odcid}.qlog.gz": (1, 1, 0, 0),
        "server/deep/unmapped.qlog": (1, 0, 1, 0),
        "broken%5B1%5D.qlog": (1, 0, 1, 0),
        "client/empty.qlog.gz": (1, 0, 1, 0),
        "notes.txt": (1, 0, 1, 0),
        "_connections.jsonl": (6, 1, 4, 1),
    }
    assert (summary.counts["rows_read"], summary.counts["rows_loaded"], summary.counts["rows_quarantined"],
            summary.counts["rows_duplicate"]) == (12, 3, 8, 1)

    rows = {r.vantage_point: r for r in spark.table(f"{settings.bronze_schema}.qlog_connections").collect()}
    for path in (exchange.client_qlog, exchange.server_qlog):
        own = _own_numbers(path)
        row = rows[own["vantage_point"]]
        assert row.srtt_ms == pytest.approx(own["srtt_ms"], abs=1e-9)
        assert row.srtt_median_ms == pytest.approx(own["srtt_median_ms"], abs=1e-9)
        assert row.handshake_ms == pytest.approx(own["handshake_ms"], abs=1e-9)
        for key in ("packets_lost", "packets_sent", "bytes_sent", "rtt_samples", "packets_dropped",
                    "datagrams_sent", "datagrams_received"):
            assert getattr(row, key) == own[key], key
        assert (row.client_id, row.experiments, row.odcid) == ("client-42", {"fhol_2026_06": "fhol"}, exchange.odcid)
        # the event date is the trace's own start date (the exchange may start before midnight
        # and be uploaded the next day)
        assert row.started_at_source == "trace" and row.event_date == row.started_at.date()
        assert row.upload_date == D
    # independent checks: aioquic's own state, the relay's drops, both ends' packet counts
    assert rows["client"].srtt_ms == pytest.approx(exchange.client_srtt_ms, rel=1e-9)
    # Loss detection also declares a packet lost that is only late (RFC 9002's time and packet
    # thresholds): the stack's count may exceed the relay's drops (seen: 26 against 25), not double it
    assert 0 < rows["server"].packets_lost <= 2 * exchange.dropped
    assert 0 < rows["client"].packets_received <= rows["server"].packets_sent - exchange.dropped
    assert rows["client"].datagrams_received <= rows["server"].datagrams_sent - exchange.dropped
    assert rows["client"].bytes_received >= exchange.bytes_received

    reasons = dict(spark.sql(f"SELECT reason, count(*) FROM {settings.bronze_schema}.{QUARANTINE} "
                             f"WHERE kind = 'qlog' GROUP BY 1").collect())
    assert reasons == {"unmapped_connection": 1, "malformed_qlog": 1, "empty_file": 1, "unrecognised_file": 1,
                       "malformed_sidecar_line": 1, "invalid_sidecar_line": 1, "ambiguous_odcid": 2}
    bad_line = spark.sql(f"SELECT raw_text FROM {settings.bronze_schema}.{QUARANTINE} "
                         f"WHERE reason = 'malformed_sidecar_line'").first()
    assert bad_line.raw_text == "{not json"

    again = jobs.qlog.job.run(spark, settings, D)  # idempotent
    assert again.counts == summary.counts
    assert spark.table(f"{settings.bronze_schema}.qlog_connections").count() == 2


def test_cross_day_repeats_and_days_without_qlog(ingest_spark, lake, exchange, second, D):
    spark, settings = ingest_spark, lake("qlog_days")
    d1, d2, d3 = D, D + timedelta(days=1), D + timedelta(days=2)
    day1 = settings.landing_root / f"upload_date={d1}" / "qlog"
    day2 = settings.landing_root / f"upload_date={d2}" / "qlog"
    (day1 / "client").mkdir(parents=True)
    (day2 / "client").mkdir(parents=True)
    (settings.landing_root / f"upload_date={d3}").mkdir(parents=True)  # a day with events only
    shutil.copy(exchange.client_qlog, day1 / "client" / "a.qlog")
    (day1 / "_connections.jsonl").write_text(_sidecar(exchange.odcid) + "\n")
    shutil.copy(exchange.client_qlog, day2 / "client" / "a-again.qlog")  # re-uploaded the next day
    shutil.copy(second.client_qlog, day2 / "client" / "b.qlog")
    (day2 / "_connections.jsonl").write_text(_sidecar(exchange.odcid) + "\n" + _sidecar(second.odcid, "c-2") + "\n")
    table = f"{settings.bronze_schema}.qlog_connections"

    def loaded():
        return sorted((r.odcid, str(r.upload_date)) for r in spark.table(table).collect())

    jobs.qlog.job.run(spark, settings, d1)
    s2 = jobs.qlog.job.run(spark, settings, d2)
    assert (s2.counts["rows_loaded"], s2.counts["rows_duplicate"]) == (3, 1)  # 1 trace + 2 sidecar lines
    assert loaded() == sorted([(exchange.odcid, str(d1)), (second.odcid, str(d2))])

    empty = jobs.qlog.job.run(spark, settings, d3)  # no qlog folder, never ingested: nothing written
    assert empty.files == 0 and empty.counts["rows_read"] == 0
    assert loaded() == sorted([(exchange.odcid, str(d1)), (second.odcid, str(d2))])

    # the first day's upload is withdrawn: its rows go, and the next day's copy now loads (cascade)
    shutil.rmtree(day1)
    withdrawn = jobs.qlog.job.run(spark, settings, d1)
    assert withdrawn.cascaded == [d2]
    for day in (d1, d2):  # the cascaded day has its own run, finished inside d1's
        assert day_runs.latest(spark, settings, day, jobs.qlog.job.KIND).state == day_runs.FINISHED
    assert day_runs.latest(spark, settings, d3, jobs.qlog.job.KIND) is None  # nothing to do, nothing recorded
    assert loaded() == sorted([(exchange.odcid, str(d2)), (second.odcid, str(d2))])
    assert _audit(spark, settings, d1) == {}
    ids = spark.sql(f"SELECT count(*) AS n FROM {settings.bronze_schema}.{LEDGER} "
                    f"WHERE kind = 'qlog' AND upload_date = DATE'{d1}'").first().n
    assert ids == 0


def test_sidecar_lines_map_traces_of_other_upload_days(ingest_spark, lake, exchange, second, D):
    """A server's trace uploaded the day after its client's sidecar line loads (the sidecar
    window); a trace uploaded before its client's sidecar line is quarantined until that line
    arrives, then its day is re-ingested and it loads; a known trace re-uploaded without a sidecar
    line is a duplicate. A rerun whose lines map nothing differently would redo no other day."""
    spark, settings = ingest_spark, lake("qlog_window")
    d1, d2 = D, D + timedelta(days=1)
    day1 = settings.landing_root / f"upload_date={d1}" / "qlog"
    for sub in ("client", "server"):
        (day1 / sub).mkdir(parents=True)
    shutil.copy(exchange.client_qlog, day1 / "client" / "a.qlog")
    (day1 / "_connections.jsonl").write_text(_sidecar(exchange.odcid) + "\n")
    shutil.copy(second.server_qlog, day1 / "server" / "b.qlog")  # its client's line comes a day later
    table = f"{settings.bronze_schema}.qlog_connections"

    def loaded():
        return sorted((r.odcid, r.vantage_point, str(r.upload_date), str(r.sidecar_upload_date))
                      for r in spark.table(table).collect())

    first = jobs.qlog.job.run(spark, settings, d1)
    assert (first.counts["rows_loaded"], first.counts["rows_quarantined"]) == (2, 1)  # client trace + line; b unmapped
    assert loaded() == [(exchange.odcid, "client", str(d1), str(d1))]

    day2 = settings.landing_root / f"upload_date={d2}" / "qlog"
    for sub in ("client", "server"):
        (day2 / sub).mkdir(parents=True)
    shutil.copy(exchange.server_qlog, day2 / "server" / "a.qlog")  # mapped by the day before's line
    shutil.copy(exchange.client_qlog, day2 / "client" / "a-again.qlog")  # re-uploaded, no line that day
    (day2 / "_connections.jsonl").write_text(_sidecar(second.odcid, "c-2") + "\n")
    s2 = jobs.qlog.job.run(spark, settings, d2)
    assert s2.remapped == [d1]  # d2's line maps d1's quarantined trace: d1 again
    assert _audit(spark, settings, d2) == {"server/a.qlog": (1, 1, 0, 0), "client/a-again.qlog": (1, 0, 0, 1),
                                           "_connections.jsonl": (1, 1, 0, 0)}
    assert _audit(spark, settings, d1)["server/b.qlog"] == (1, 1, 0, 0)
    assert loaded() == sorted([(exchange.odcid, "client", str(d1), str(d1)), (exchange.odcid, "server", str(d2), str(d1)),
                               (second.odcid, "server", str(d1), str(d2))])
    assert spark.sql(f"SELECT count(*) AS n FROM {settings.bronze_schema}.{QUARANTINE} "
                     f"WHERE kind = 'qlog'").first().n == 0
    client_of = {r.odcid: r.client_id for r in spark.table(table).collect()}
    assert client_of == {exchange.odcid: "client-42", second.odcid: "c-2"}

    # rerunning d2 would redo no other day: its lines map d1's trace as they did; a changed line
    # (another client) would redo d1
    mappings = jobs.qlog.job.window_mappings(jobs.qlog.job.read_sidecars([day2 / "_connections.jsonl"], d2), [], d2)
    schema = _parse_datatype_string(jobs.qlog.job.MAPPING_DDL)
    assert jobs.qlog.job.days_to_remap(spark, settings, d2, spark.createDataFrame(mappings, schema)) == []
    changed = [{**m, "client_id": "c-3"} for m in mappings]
    assert jobs.qlog.job.days_to_remap(spark, settings, d2, spark.createDataFrame(changed, schema)) == [d1]
