"""qlog from a real aioquic HTTP/3 exchange on 127.0.0.1 ingests, and its numbers are the qlog's own."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import date

import pytest

import jobs.qlog.job
from jobs.ingest.tables import AUDIT, QUARANTINE
from tests.conftest import free_port
from tests.jobs.quic_exchange import run_exchange

D = date.today()


def _own_numbers(path) -> dict:
    """What the qlog itself says, read the plain way: last srtt, counts of lost and sent packets."""
    trace = json.loads(path.read_text())["traces"][0]
    events = trace["events"]
    srtts = [e["data"]["smoothed_rtt"] for e in events if e["name"].endswith("metrics_updated")
             and "smoothed_rtt" in e["data"]]
    return {
        "vantage_point": trace["vantage_point"]["type"],
        "srtt_ms": srtts[-1],
        "packets_lost": sum(e["name"].endswith("packet_lost") for e in events),
        "packets_sent": sum(e["name"].endswith("packet_sent") for e in events),
        "bytes_sent": sum(e["data"]["raw"]["length"] for e in events if e["name"].endswith("packet_sent")),
    }


@pytest.fixture(scope="module")
def exchange(tmp_path_factory):
    return run_exchange(tmp_path_factory.mktemp("quic"), free_port(), sizes=[150_000, 60_000], drop_every=9)


def test_qlog_from_aioquic_matches_its_own_numbers(ingest_spark, lake, exchange):
    spark, settings = ingest_spark, lake("qlog_a")
    folder = settings.landing_root / f"upload_date={D}" / "qlog"
    folder.mkdir(parents=True)
    shutil.copy(exchange.client_qlog, folder / f"{exchange.odcid}.client.qlog")
    (folder / f"{exchange.odcid}.server.qlog.gz").write_bytes(gzip.compress(exchange.server_qlog.read_bytes()))
    (folder / "unmapped.qlog").write_text(exchange.client_qlog.read_text().replace(exchange.odcid, "00ff00ff"))
    (folder / "broken.qlog").write_text('{"qlog_version": "0.3", "traces": [')
    (folder / "_connections.jsonl").write_text(json.dumps({
        "odcid": exchange.odcid, "client_id": "client-42", "session_id": "s-1", "platform": "linux",
        "network_type": "loopback", "experiments": {"fhol_2026_06": "fhol"}}) + "\n")

    summary = jobs.qlog.job.run(spark, settings, D)
    assert summary.counts["rows_read"] == 4
    assert (summary.counts["rows_loaded"], summary.counts["rows_quarantined"]) == (2, 2)

    rows = {r.vantage_point: r for r in spark.table(f"{settings.bronze_schema}.qlog_connections").collect()}
    for path in (exchange.client_qlog, exchange.server_qlog):
        own = _own_numbers(path)
        row = rows[own["vantage_point"]]
        assert row.srtt_ms == pytest.approx(own["srtt_ms"], abs=1e-9)
        assert (row.packets_lost, row.packets_sent, row.bytes_sent) == (
            own["packets_lost"], own["packets_sent"], own["bytes_sent"])
        assert (row.client_id, row.experiments, row.odcid) == ("client-42", {"fhol_2026_06": "fhol"}, exchange.odcid)
        assert row.event_date == D and row.upload_date == D
    # independent checks: aioquic's own state, the relay's drops, both ends' packet counts
    assert rows["client"].srtt_ms == pytest.approx(exchange.client_srtt_ms, rel=1e-9)
    assert 0 < rows["server"].packets_lost <= exchange.dropped
    assert 0 < rows["client"].packets_received <= rows["server"].packets_sent - exchange.dropped
    assert rows["client"].bytes_received >= exchange.bytes_received

    reasons = dict(spark.sql(f"SELECT reason, count(*) FROM {settings.bronze_schema}.{QUARANTINE} "
                             f"WHERE kind = 'qlog' GROUP BY 1").collect())
    assert reasons == {"unmapped_connection": 1, "malformed_qlog": 1}
    audit = spark.sql(f"SELECT * FROM {settings.bronze_schema}.{AUDIT} WHERE kind = 'qlog'").collect()
    assert all(a.rows_read == a.rows_loaded + a.rows_quarantined + a.rows_duplicate for a in audit)

    again = jobs.qlog.job.run(spark, settings, D)  # idempotent
    assert again.counts == summary.counts
    assert spark.table(f"{settings.bronze_schema}.qlog_connections").count() == 2
