"""The lab end to end: a small grid of real ngtcp2 transfers through the relay → landing → the
daily run (``run_day``: ingest, qlog ingest, dbt build, results, report).

Checks the traces against the impairment: the relay's drops are binomial at the configured
rate, the loss the traces show (packets the server sent that the client never received, and
the losses the server detected) agrees with the relay's drop counter within binomial noise,
and the RTTs the stacks measured agree with the configured delay. Then the same in gold: the
qlog metrics' sufficient statistics per arm and network condition (the RTT bucket the lab's
connection events put each client in) agree with the relay and the configured delay, and the
results and the report carry those metrics with confidence intervals.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
from collections import defaultdict
from datetime import UTC, datetime

import pytest
import yaml

from jobs.ingest.tables import QUARANTINE
from lab.config import parse_config
from lab.runner import run
from quicexp.app.daily import run_day
from quicexp.metrics import load_metrics
from quicexp.registry import Arm, Experiment, Registry

pytestmark = pytest.mark.skipif(shutil.which("gtlsclient") is None, reason="ngtcp2-client not installed "
                                "(scripts/test-deps.d/ngtcp2.sh)")

CONFIG = {
    "experiment_id": "lab_cc_test",
    "arms": [{"name": "cubic", "stack": "ngtcp2", "cc": "cubic"}, {"name": "reno", "stack": "ngtcp2", "cc": "reno"}],
    "grid": {"rtt_ms": [30, 60], "loss": [0.05], "bandwidth_mbps": [None]},
    "clients_per_condition": 6,
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
    assert summary.failed == 0 and len(summary.connections) == 12
    assert {c.condition for c in summary.connections} == {"rtt30ms_loss5pct_burst1_unlimited",
                                                          "rtt60ms_loss5pct_burst1_unlimited"}
    assert any("client 1/" in m for m in messages) and messages[-1].startswith("done: 12 connections")
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


def qlog_only_client(summary) -> str:
    """The client whose telemetry events the test withholds: it uploads only its qlog traces."""
    return next(c.client_id for c in summary.connections if c.arm == "reno" and c.condition.startswith("rtt60"))


@pytest.fixture(scope="module")
def lab_day(ingest_spark, lab_run):
    """The lab's landing day through the daily run, with the lab experiment in the registry
    (cubic the control). One client's telemetry events are withheld (its qlog stays): a
    client seen only in qlog traces."""
    settings, summary, _ = lab_run
    root = settings.landing_root / f"upload_date={summary.day}"
    for kind in ("connections", "http_transactions"):
        path = root / kind / f"lab-{summary.run_id}.jsonl.gz"
        lines = gzip.decompress(path.read_bytes()).decode().splitlines()
        kept = [x for x in lines if json.loads(x)["client_id"] != qlog_only_client(summary)]
        assert len(kept) == len(lines) - 1
        path.write_bytes(gzip.compress("".join(x + "\n" for x in kept).encode()))
    registry = Registry(experiments=[Experiment(
        id=CONFIG["experiment_id"], title="lab: cubic vs reno", start_date=summary.day,
        arms=[Arm(name="cubic", share=0.5, is_control=True), Arm(name="reno", share=0.5)])])
    registry_file = settings.home / "experiments.yml"
    registry_file.write_text(yaml.safe_dump(registry.model_dump(mode="json"), sort_keys=False))
    settings = settings.model_copy(update={"registry_file": registry_file})
    return settings, summary, run_day(ingest_spark, settings, summary.day, registry)


def test_traces_load_and_agree_with_the_relay(ingest_spark, lab_run, lab_day):
    spark, (settings, summary, outcome) = ingest_spark, lab_day
    qlog = outcome.qlog
    assert (qlog.counts["rows_quarantined"], qlog.counts["rows_duplicate"]) == (0, 0)
    assert qlog.counts["rows_loaded"] == 2 * 12 + 12  # both ends of each connection + the sidecar lines
    events = outcome.ingest
    # one client's events are withheld (lab_day): 11 of the 12 connections have telemetry
    assert events.total("rows_quarantined") == 0 and events.per_kind["connections"]["rows_loaded"] == 11
    assert events.per_kind["http_transactions"]["rows_loaded"] == 11
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


#: the RTT bucket (dbt var segment_buckets) of each configured delay: the lab's network condition
RTT_BUCKET = {30: "<50ms", 60: "50-100ms"}
QLOG_METRICS = [m.name for m in load_metrics().metrics if m.source == "qlog_connections"]


def test_qlog_metrics_reach_gold_per_arm_and_network_condition(ingest_spark, lab_day):
    """Sufficient statistics of the qlog metrics per arm (and RTT bucket) agree with the relay and
    the configured delay; a qlog-only client is a unit of its arm; results and the report have the
    qlog metrics per arm and network condition with confidence intervals."""
    spark, (settings, summary, outcome) = ingest_spark, lab_day
    assert len(QLOG_METRICS) == 16 and not outcome.failed_reports
    stats = spark.table(f"{settings.gold_schema}.experiment_sufficient_stats").where(
        "metric like 'qlog_%' or metric = 'request_latency'").toPandas()
    assert set(stats["metric"]) == {*QLOG_METRICS, "request_latency"}
    cell = stats.set_index(["metric", "segment_type", "segment_value", "arm"])
    relay = [r for r in summary.relay if r["direction"] == "server_to_client"]
    conditions = {c.name: c for c in parse_config(CONFIG).conditions}
    only = qlog_only_client(summary)
    for arm in ("cubic", "reno"):
        clients = sum(1 for c in summary.connections if c.arm == arm)
        # every client is a unit of its arm; the qlog-only one through its sidecar line alone
        assert cell.loc[("qlog_loss_rate_server", "overall", "all", arm), "n_units"] == clients
        assert cell.loc[("request_latency", "overall", "all", arm), "n_units"] == clients - (arm == "reno")
        # loss rate: the server's detected losses over its packets sent ~ the relay's drop rate
        lost, sent = cell.loc[("qlog_loss_rate_server", "overall", "all", arm), ["sum_y", "sum_x"]]
        p = sum(r["dropped"] for r in relay if r["arm"] == arm) / sum(r["received"] for r in relay if r["arm"] == arm)
        assert abs(lost - sent * p) <= band(int(sent), p), (arm, lost, sent, p)
    # without telemetry events the qlog-only client has no network buckets
    assert cell.loc[("qlog_loss_rate_server", "rtt_bucket", "unknown", "reno"), "n_units"] == 1
    for condition_name, condition in conditions.items():
        for arm in ("cubic", "reno"):
            key = RTT_BUCKET[condition.rtt_ms], arm
            clients = sum(1 for c in summary.connections if (c.condition, c.arm) == (condition_name, arm)
                          and c.client_id != only)
            # each client with telemetry is in the RTT bucket of its condition
            assert cell.loc[("qlog_loss_rate_server", "rtt_bucket", *key), "n_units"] == clients >= 2
            # min RTT (mean over the bucket's connections): at the configured delay, on both ends
            for end in ("client", "server"):
                total, n = cell.loc[(f"qlog_min_rtt_{end}", "rtt_bucket", *key), ["sum_y", "sum_x"]]
                assert condition.rtt_ms - 1 <= total / n <= condition.rtt_ms + 25, (key, end, total / n)
    results = spark.table(f"{settings.gold_schema}.experiment_results").where(
        f"metric like 'qlog_%' and as_of_date = date'{summary.day}'").toPandas()
    cells = results[results["segment_type"].isin(["overall", "rtt_bucket"])]
    assert set(cells["metric"]) == set(QLOG_METRICS)
    assert set(cells[cells["segment_type"] == "rtt_bucket"]["segment_value"]) == set(RTT_BUCKET.values())
    # A CI is missing only where neither arm varies (standard error 0): within one delay
    # condition, ngtcp2's whole milliseconds can give every connection of an arm the same value
    # (min RTT 30 or 31 ms). The overall cells mix both conditions, so every metric varies there
    # and has a confidence interval.
    finite = cells["ci_abs_lower"].notna() & cells["ci_abs_upper"].notna()
    flat = cells[~finite]
    assert (flat["se_abs"] == 0).all(), flat[["metric", "segment_value", "value_control", "value_treatment"]]
    assert (flat["segment_type"] == "rtt_bucket").all(), flat[["metric", "segment_type", "segment_value"]]
    assert (cells.loc[finite, "ci_abs_lower"] <= cells.loc[finite, "ci_abs_upper"]).all()
    html = outcome.reports[0].read_text()
    assert 'id="qlog"' in html and "qlog server loss rate" in html and "50-100ms" in html
