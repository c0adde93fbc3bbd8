"""The lab end to end: a small grid of real ngtcp2 transfers through the relay → landing → qlog ingest.

Checks the traces against the impairment: the relay's drops are binomial at the configured
rate, the loss the traces show (packets the server sent that the client never received, and
the losses the server detected) agrees with the relay's drop counter within binomial noise,
and the RTTs the stacks measured agree with the configured delay.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
from collections import defaultdict
from datetime import UTC, datetime

import pytest

import jobs.ingest
import jobs.qlog.job
from jobs.ingest.tables import QUARANTINE
from lab.config import parse_config
from lab.runner import run

pytestmark = pytest.mark.skipif(shutil.which("gtlsclient") is None, reason="ngtcp2-client not installed "
                                "(scripts/test-deps.d/ngtcp2.sh)")

CONFIG = {
    "experiment_id": "lab_cc_test",
    "arms": [{"name": "cubic", "stack": "ngtcp2", "cc": "cubic"}, {"name": "reno", "stack": "ngtcp2", "cc": "reno"}],
    "grid": {"rtt_ms": [30, 60], "loss": [0.05], "bandwidth_mbps": [None]},
    "clients_per_condition": 4,
    "transfer_bytes": 250_000,
    "timeout_s": 20,
}


def band(n: int, p: float, sigmas: float = 4.0) -> float:
    """Half-width of a ``sigmas`` binomial band on a count of ``n`` trials at rate ``p`` (+1 for discreteness)."""
    return sigmas * math.sqrt(n * p * (1 - p)) + 1


@pytest.fixture(scope="module")
def lab_run(lake):
    settings = lake("lab_grid")
    messages: list[str] = []
    summary = run(settings, parse_config(CONFIG), progress=messages.append)
    return settings, summary, messages


def test_lab_writes_the_landing_day(lab_run):
    settings, summary, messages = lab_run
    assert summary.failed == 0 and len(summary.connections) == 8
    assert {c.condition for c in summary.connections} == {"rtt30ms_loss5pct_burst1_unlimited",
                                                          "rtt60ms_loss5pct_burst1_unlimited"}
    assert any("client 1/" in m for m in messages) and messages[-1].startswith("done: 8 connections")
    root = settings.landing_root / f"upload_date={summary.day}"
    manifest = json.loads((root / "lab" / summary.run_id / "manifest.json").read_text())
    # arms come from the project's hashing: the manifest's assignment is the connections' arm
    arm_of = {(a["condition"], a["client_id"]): a["arm"] for a in manifest["assignments"]}
    assert all(arm_of[(c.condition, c.client_id)] == c.arm for c in summary.connections)
    sidecar = [json.loads(x) for x in (root / "qlog/lab" / summary.run_id / "_connections.jsonl").read_text().splitlines()]
    assert sorted(s["odcid"] for s in sidecar) == sorted(c.odcid for c in summary.connections)
    events = [json.loads(x) for x in gzip.decompress((root / "connections" / f"lab-{summary.run_id}.jsonl.gz")
                                                      .read_bytes()).decode().splitlines()]
    assert {e["connection_id"]: e["experiments"]["lab_cc_test"] for e in events} == {
        c.odcid: c.arm for c in summary.connections}
    relay = [json.loads(x) for x in (root / "lab" / summary.run_id / "relay.jsonl").read_text().splitlines()]
    assert {(r["condition"], r["arm"], r["direction"]) for r in relay} >= {
        (c.condition, c.arm, "server_to_client") for c in summary.connections}


def test_traces_load_and_agree_with_the_relay(ingest_spark, lab_run):
    spark, (settings, summary, _) = ingest_spark, lab_run
    qlog = jobs.qlog.job.run(spark, settings, summary.day)
    assert (qlog.counts["rows_quarantined"], qlog.counts["rows_duplicate"]) == (0, 0)
    assert qlog.counts["rows_loaded"] == 2 * 8 + 8  # both ends of each connection + the sidecar lines
    events = jobs.ingest.run(spark, settings, summary.day, ("connections", "http_transactions"))
    assert events.total("rows_quarantined") == 0 and events.per_kind["connections"]["rows_loaded"] == 8
    assert events.per_kind["http_transactions"]["rows_loaded"] == 8
    assert spark.table(f"{settings.bronze_schema}.{QUARANTINE}").count() == 0

    rows = spark.table(f"{settings.bronze_schema}.qlog_connections").collect()
    arm_of = {c.odcid: (c.condition, c.arm) for c in summary.connections}
    ends: dict = defaultdict(dict)
    for r in rows:
        ends[arm_of[r.odcid]].setdefault(r.odcid, {})[r.vantage_point] = r
        assert r.experiments == {"lab_cc_test": arm_of[r.odcid][1]}
        assert r.network_condition == arm_of[r.odcid][0]
        assert r.started_at_source == "sidecar"  # ngtcp2 0.12 writes no wall clock: the sidecar's opened_at
        assert abs((r.started_at.replace(tzinfo=UTC) if r.started_at.tzinfo is None else r.started_at)
                   - datetime.now(UTC)).total_seconds() < 3600
    relay = {(r["condition"], r["arm"]): r for r in summary.relay if r["direction"] == "server_to_client"}
    for key, connections in ends.items():
        condition = next(c for c in parse_config(CONFIG).conditions if c.name == key[0])
        counter = relay[key]
        # 1. the relay drops at the configured rate
        assert abs(counter["dropped"] - counter["received"] * condition.loss) <= band(counter["received"], condition.loss)
        # 2. the traces see the relay's drops: sent by the server, never received by the client
        sent = sum(c["server"].packets_sent for c in connections.values())
        received = sum(c["client"].packets_received for c in connections.values())
        detected = sum(c["server"].packets_lost for c in connections.values())
        p = counter["dropped"] / counter["received"]
        assert abs((sent - received) - sent * p) <= band(sent, p), (key, sent, received, counter)
        assert abs(detected - sent * p) <= band(sent, p), (key, detected, sent, counter)
        # 3. RTT: never below the configured delay; the minimum close to it (no rate limit, no queue).
        # The server sends the body and takes an RTT sample per ACK: its median smoothed RTT stays near
        # the delay. The client's few samples (its requests and ACK-eliciting probes, answered with the
        # server's delayed ACKs, under loss) can sit far above it, so only the floor is checked there.
        for c in connections.values():
            for end in ("client", "server"):
                assert condition.rtt_ms - 1 <= c[end].min_rtt_ms <= condition.rtt_ms + 25, (key, end, c[end].min_rtt_ms)
                assert c[end].srtt_median_ms >= condition.rtt_ms - 1 and c[end].rtt_samples > 0
            assert c["server"].srtt_median_ms <= condition.rtt_ms + 60, (key, c["server"].srtt_median_ms)
            assert c["server"].rtt_samples >= 10
            assert c["client"].handshake_ms >= condition.rtt_ms - 1  # at least one round trip
