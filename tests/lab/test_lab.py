"""The lab end to end: real ngtcp2 and aioquic transfers through the relay → landing → the daily
run (``run_day``: ingest, qlog ingest, dbt build, results), with the example config's three arms
(ngtcp2 Cubic, ngtcp2 BBR, aioquic Reno) on a CI-sized grid of RTT × loss.

Every drop is accounted for: the relay's drops are binomial at the configured rate; for every
run the host's own UDP drops are counted, and a run with any is invalid — marked in the summary,
manifest and sidecar, left out of the results — so the loss each arm's server declared over its
valid runs agrees with the relay's drops within a 4σ binomial band, and gold's sums are exactly
those of the valid runs. A second lab with one-datagram socket buffers makes the host drop
datagrams, so the invalid path runs whatever the machine's load. Then gold: the qlog metrics per
arm, per network condition (the sidecar's condition and its grid values are segments), and the
RTT buckets of a client seen only in qlog traces; a registered experiment without data stops
the run with a message that names what the data carried.
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
from lab.config import load_config, parse_config
from lab.runner import HOST_DROPS, run
from quicexp.app.daily import ExperimentsWithoutData, run_day
from quicexp.config import REPO_ROOT
from quicexp.metrics import load_metrics
from quicexp.registry import Arm, Experiment, Registry

pytestmark = pytest.mark.skipif(shutil.which("gtlsclient") is None, reason="ngtcp2-client not installed "
                                "(scripts/test-deps.d/ngtcp2.sh)")

EXAMPLE = REPO_ROOT / "lab" / "examples" / "congestion_control.yaml"
#: the example's arms on a smaller grid: two delays × two loss rates, 4 clients each (seed 2 puts
#: Cubic and BBR in every condition)
CONFIG = {**yaml.safe_load(EXAMPLE.read_text()), "experiment_id": "lab_cc_test", "seed": 2,
          "grid": {"rtt_ms": [30, 60], "loss": [0.02, 0.05]}, "clients_per_condition": 4,
          "transfer_bytes": 200_000, "timeout_s": 20}
#: one-datagram socket buffers: the kernel drops the bursts, the relay never sees them
HOST_DROPS_CONFIG = {"experiment_id": "lab_host_drops_test", "arms": [{"name": "cubic", "stack": "ngtcp2"}],
                     "grid": {"rtt_ms": [20]}, "clients_per_condition": 2, "transfer_bytes": 100_000,
                     "timeout_s": 10, "attempts": 2, "socket_buffer_bytes": 1}
#: a registered experiment that no client carries (its id differs by a letter)
MISSING = "lab_cc_tset"


def band(n: int, p: float, sigmas: float = 4.0) -> float:
    """Half-width of a ``sigmas`` binomial band on a count of ``n`` trials at rate ``p`` (+1 for discreteness)."""
    return sigmas * math.sqrt(n * p * (1 - p)) + 1


def landing(settings, summary):
    return settings.landing_root / f"upload_date={summary.day}"


def jsonl(path) -> list[dict]:
    data = path.read_bytes()
    return [json.loads(x) for x in (gzip.decompress(data) if path.suffix == ".gz" else data).decode().splitlines()]


@pytest.fixture(scope="module")
def lab_run(lake):
    settings = lake("lab_grid")
    messages: list[str] = []
    summary = run(settings, parse_config(CONFIG), progress=messages.append)
    dropped = run(settings, parse_config(HOST_DROPS_CONFIG), progress=None)
    return settings, summary, messages, dropped


def test_the_example_config_is_what_the_test_runs():
    example = load_config(EXAMPLE)
    assert [(a.name, a.congestion_control, a.weight) for a in example.arms] == [
        ("cubic", "cubic", 1.0), ("bbr", "bbr", 1.0), ("aioquic_reno", "reno", 0.5)]
    assert parse_config(CONFIG).arms == example.arms


def test_lab_writes_the_landing_day(lab_run):
    settings, summary, messages, _ = lab_run
    assert summary.failed == 0 and summary.clients == 16 and not summary.clients_without_clean_run
    assert {c.condition for c in summary.connections} == {f"rtt{r}ms_loss{p}pct_burst1_unlimited"
                                                          for r in (30, 60) for p in (2, 5)}
    assert any("client 1/" in m for m in messages) and messages[-1].startswith("done: 16 clients")
    root = landing(settings, summary)
    manifest = json.loads((root / "lab" / summary.run_id / "manifest.json").read_text())
    # arms come from the project's hashing: the manifest's assignment is the connections' arm
    arm_of = {(a["condition"], a["client_id"]): a["arm"] for a in manifest["assignments"]}
    assert all(arm_of[(c.condition, c.client_id)] == c.arm for c in summary.connections)
    assert manifest["socket_buffers"]["relay_receive_buffer"] >= 2 * CONFIG.get("socket_buffer_bytes", 4 << 20)
    sidecar = jsonl(root / "qlog/lab" / summary.run_id / "_connections.jsonl")
    assert sorted(s["odcid"] for s in sidecar) == sorted(c.odcid for c in summary.connections)
    # two grid values vary: each is a segment of its own besides the condition
    assert {(s["condition"], s["condition_values"]["rtt"], s["condition_values"]["loss"]) for s in sidecar} == {
        (f"rtt{r}ms_loss{p}pct_burst1_unlimited", f"{r}ms", f"{p}%") for r in (30, 60) for p in (2, 5)}
    events = jsonl(root / "connections" / f"lab-{summary.run_id}.jsonl.gz")
    assert {e["connection_id"]: e["experiments"]["lab_cc_test"] for e in events} == {
        c.odcid: c.arm for c in summary.connections if c.valid}
    relay = jsonl(root / "lab" / summary.run_id / "relay.jsonl")
    assert {(r["condition"], r["arm"], r["direction"]) for r in relay} >= {
        (c.condition, c.arm, "server_to_client") for c in summary.connections}


def test_a_run_the_host_dropped_datagrams_in_is_invalid(lab_run):
    """Every run is billed: the host's UDP drops over the run are 0 and the run is valid, or they
    are not and the run is invalid — in the summary, the manifest and the sidecar, with no
    telemetry event — and its client runs again. One-datagram buffers make the host drop."""
    settings, clean, _, dropped = lab_run
    for summary in (clean, dropped):
        for c in summary.connections:
            assert (c.invalid == HOST_DROPS) == (c.host_drops["total"] > 0), c
    assert dropped.invalid_runs >= 1
    root = landing(settings, dropped)
    manifest = json.loads((root / "lab" / dropped.run_id / "manifest.json").read_text())
    sidecar = {s["odcid"]: s for s in jsonl(root / "qlog/lab" / dropped.run_id / "_connections.jsonl")}
    assert [c["invalid"] for c in manifest["connections"]] == [c.invalid for c in dropped.connections]
    for c in dropped.connections:
        assert sidecar[c.odcid].get("invalid") == c.invalid
        if c.invalid:
            assert sidecar[c.odcid]["host_drops"] == c.host_drops["total"] > 0
            assert c.relay["server_to_client"]["dropped"] == 0  # no loss configured: all the host's
    gaps = [m["unaccounted_server_to_client"] for c, m in zip(dropped.connections, manifest["connections"], strict=True)
            if c.invalid and m["unaccounted_server_to_client"] is not None]
    assert sum(gaps) > 0  # the body's datagrams the host dropped: sent, never relayed nor received
    retried = [c for c in dropped.connections if c.attempt == 2]
    assert {(c.condition, c.client_id) for c in retried} == {
        (c.condition, c.client_id) for c in dropped.connections if c.attempt == 1 and c.invalid}
    events = root / "connections" / f"lab-{dropped.run_id}.jsonl.gz"
    written = {e["connection_id"] for e in jsonl(events)} if events.exists() else set()
    assert written == {c.odcid for c in dropped.connections if c.valid}


def qlog_only_client(summary) -> str:
    """The client whose telemetry events the test withholds: it uploads only its qlog traces."""
    return next(c.client_id for c in summary.connections if c.arm == "bbr" and c.valid
                and c.condition.startswith("rtt60"))


@pytest.fixture(scope="module")
def lab_day(ingest_spark, lab_run):
    """The lab's landing day through the daily run (reports: test_reports), with the lab
    experiment in the registry (cubic the control, shares as the config's weights). One
    client's telemetry events are withheld (its qlog stays): a client seen only in qlog traces."""
    settings, summary, _, _ = lab_run
    root = landing(settings, summary)
    for kind in ("connections", "http_transactions"):
        path = root / kind / f"lab-{summary.run_id}.jsonl.gz"
        lines = gzip.decompress(path.read_bytes()).decode().splitlines()
        kept = [x for x in lines if json.loads(x)["client_id"] != qlog_only_client(summary)]
        assert len(kept) == len(lines) - 1
        path.write_bytes(gzip.compress("".join(x + "\n" for x in kept).encode()))
    registry = Registry(experiments=[Experiment(
        id=CONFIG["experiment_id"], title="lab: cubic vs bbr vs aioquic reno", start_date=summary.day,
        arms=[Arm(name="cubic", share=0.4, is_control=True), Arm(name="bbr", share=0.4),
              Arm(name="aioquic_reno", share=0.2)])])
    registry_file = settings.home / "experiments.yml"
    registry_file.write_text(yaml.safe_dump(registry.model_dump(mode="json"), sort_keys=False))
    settings = settings.model_copy(update={"registry_file": registry_file})
    return settings, summary, run_day(ingest_spark, settings, summary.day, registry, skip=("reports",)), registry


def test_traces_load_and_agree_with_the_relay(ingest_spark, lab_run, lab_day):
    spark, (settings, summary, outcome, _) = ingest_spark, lab_day
    dropped = lab_run[3]
    runs = summary.connections + dropped.connections
    qlog = outcome.qlog
    assert (qlog.counts["rows_quarantined"], qlog.counts["rows_duplicate"]) == (0, 0)
    assert qlog.counts["rows_loaded"] == 3 * len(runs)  # both ends of each run + its sidecar line
    events = outcome.ingest
    valid = sum(c.valid for c in runs)
    # one client's events are withheld (lab_day); invalid runs have none
    assert events.total("rows_quarantined") == 0 and events.per_kind["connections"]["rows_loaded"] == valid - 1
    assert spark.table(f"{settings.bronze_schema}.{QUARANTINE}").count() == 0

    rows = spark.table(f"{settings.bronze_schema}.qlog_connections").collect()
    run_of = {c.odcid: c for c in runs}
    ends: dict = defaultdict(dict)
    for r in rows:
        c = run_of[r.odcid]
        assert r.invalid_reason == c.invalid  # invalid runs are in bronze, marked
        # ngtcp2 0.12 writes no wall clock: the sidecar's opened_at dates its traces; aioquic's do
        stack = "aioquic" if c.arm == "aioquic_reno" else "ngtcp2"
        assert r.network_condition == c.condition and r.started_at_source == {"ngtcp2": "sidecar",
                                                                              "aioquic": "trace"}[stack]
        assert abs((r.started_at.replace(tzinfo=UTC) if r.started_at.tzinfo is None else r.started_at)
                   - datetime.now(UTC)).total_seconds() < 3600
        if c.valid and r.experiments.get("lab_cc_test"):
            assert r.experiments == {"lab_cc_test": c.arm}
            ends[(c.condition, c.arm)].setdefault(r.odcid, {})[r.vantage_point] = r
    # the models never see an invalid run
    staged = {r.odcid for r in spark.table(f"{settings.silver_schema}.stg_telemetry__qlog_connections").collect()}
    assert staged == {c.odcid for c in runs if c.valid}
    conditions = {c.name: c for c in parse_config(CONFIG).conditions}
    for (name, arm), connections in ends.items():
        condition = conditions[name]
        mine = [c for c in summary.connections if (c.condition, c.arm) == (name, arm) and c.valid]
        received = sum(c.relay["server_to_client"]["received"] for c in mine)
        relay_dropped = sum(c.relay["server_to_client"]["dropped"] for c in mine)
        # 1. the relay drops at the configured rate
        assert abs(relay_dropped - received * condition.loss) <= band(received, condition.loss)
        # 2. every loss of a valid run is the relay's: packets the server sent that the client never
        # received, and the losses the server declared, agree with the relay's drop rate
        sent = sum(c["server"].packets_sent for c in connections.values())
        got = sum(c["client"].packets_received for c in connections.values())
        declared = sum(c["server"].packets_lost for c in connections.values())
        p = relay_dropped / received
        assert abs((sent - got) - sent * p) <= band(sent, p), (name, arm, sent, got, relay_dropped, received)
        assert abs(declared - sent * p) <= band(sent, p), (name, arm, declared, sent, relay_dropped, received)
        # 3. RTT: never below the configured delay; the minimum close to it. The server sends the
        # body, an RTT sample per ACK: its median smoothed RTT stays near the delay.
        for c in connections.values():
            for end in ("client", "server"):
                assert condition.rtt_ms - 1 <= c[end].min_rtt_ms <= condition.rtt_ms + 25, (name, end, c[end].min_rtt_ms)
                assert c[end].srtt_median_ms >= condition.rtt_ms - 1 and c[end].rtt_samples > 0
            assert c["server"].srtt_median_ms <= condition.rtt_ms + 60, (name, c["server"].srtt_median_ms)
            assert c["server"].rtt_samples >= 10
            assert c["client"].handshake_ms >= condition.rtt_ms - 1  # at least one round trip


#: the RTT bucket (dbt var segment_buckets) of each configured delay
RTT_BUCKET = {30: "<50ms", 60: "50-100ms"}
QLOG_METRICS = [m.name for m in load_metrics().metrics if m.source == "qlog_connections"]
ARMS = ("cubic", "bbr", "aioquic_reno")


def test_qlog_metrics_reach_gold_per_arm_and_network_condition(ingest_spark, lab_day):
    """Gold's sufficient statistics of the qlog metrics are exactly the valid runs' (every arm's
    server loss within the relay's band); the network condition and its grid values are
    segments; a qlog-only client is a unit of its arm in the RTT bucket its traces show; the
    three arms have results with confidence intervals per network condition."""
    spark, (settings, summary, _, _) = ingest_spark, lab_day
    assert len(QLOG_METRICS) == 16
    stats = spark.table(f"{settings.gold_schema}.experiment_sufficient_stats").where(
        "metric like 'qlog_%' or metric = 'request_latency'").toPandas()
    assert set(stats["metric"]) == {*QLOG_METRICS, "request_latency"}
    assert not ((stats["segment_type"].isin(["rtt_bucket", "loss_bucket", "bandwidth_bucket"]))
                & (stats["segment_value"] == "unknown")).any()  # a qlog-only client's network: its traces
    cell = stats.set_index(["metric", "segment_type", "segment_value", "arm"])
    servers = [r for r in spark.table(f"{settings.bronze_schema}.qlog_connections").collect()
               if r.vantage_point == "server" and r.invalid_reason is None and r.experiments.get("lab_cc_test")]
    only = qlog_only_client(summary)
    valid = [c for c in summary.connections if c.valid]
    for arm in ARMS:
        clients = {c.client_id for c in valid if c.arm == arm}
        assert cell.loc[("qlog_loss_rate_server", "overall", "all", arm), "n_units"] == len(clients)
        assert cell.loc[("request_latency", "overall", "all", arm), "n_units"] == len(clients) - (arm == "bbr")
        # exactly the valid runs' packets: no invalid run's losses reach the arm
        lost, sent = cell.loc[("qlog_loss_rate_server", "overall", "all", arm), ["sum_y", "sum_x"]]
        mine = [r for r in servers if r.experiments["lab_cc_test"] == arm]
        assert (lost, sent) == (sum(r.packets_lost for r in mine), sum(r.packets_sent for r in mine))
        p = (sum(c.relay["server_to_client"]["dropped"] for c in valid if c.arm == arm)
             / sum(c.relay["server_to_client"]["received"] for c in valid if c.arm == arm))
        assert abs(lost - sent * p) <= band(int(sent), p), (arm, lost, sent, p)
    conditions = {c.name: c for c in parse_config(CONFIG).conditions}
    for name, condition in conditions.items():
        for arm in ARMS:
            clients = {c.client_id for c in valid if (c.condition, c.arm) == (name, arm)}
            if not clients:
                assert ("qlog_srtt_server", "network_condition", name, arm) not in cell.index
                continue
            # the condition is a segment: its units are the condition's clients of the arm
            assert cell.loc[("qlog_srtt_server", "network_condition", name, arm), "n_units"] == len(clients)
            # min RTT (mean over the condition's connections): at the configured delay, on both ends
            for end in ("client", "server"):
                total, n = cell.loc[(f"qlog_min_rtt_{end}", "network_condition", name, arm), ["sum_y", "sum_x"]]
                assert condition.rtt_ms - 1 <= total / n <= condition.rtt_ms + 25, (name, end, total / n)
    # the grid values that vary are segments; each unit is in its condition's
    for segment, values in (("condition_rtt", {"30ms": 30, "60ms": 60}), ("condition_loss", {"2%": 0.02, "5%": 0.05})):
        for value, setting in values.items():
            for arm in ARMS:
                units = {c.client_id for c in valid if c.arm == arm and getattr(
                    conditions[c.condition], "rtt_ms" if segment == "condition_rtt" else "loss") == setting}
                key = ("qlog_srtt_server", segment, value, arm)
                assert (cell.loc[key, "n_units"] if key in cell.index else 0) == len(units)
    assert not stats["segment_type"].isin(["condition_burst", "condition_bandwidth"]).any()  # one value each
    # the qlog-only client is in the RTT bucket of its condition: its traces' min RTT
    bucket = RTT_BUCKET[conditions[next(c for c in valid if c.client_id == only).condition].rtt_ms]
    with_events = {c.client_id for c in valid if c.arm == "bbr" and c.client_id != only
                   and RTT_BUCKET[conditions[c.condition].rtt_ms] == bucket}
    assert cell.loc[("qlog_srtt_server", "rtt_bucket", bucket, "bbr"), "n_units"] == len(with_events) + 1

    results = spark.table(f"{settings.gold_schema}.experiment_results").where(
        f"metric like 'qlog_%' and as_of_date = date'{summary.day}'").toPandas()
    assert set(results["treatment_arm"]) == {"bbr", "aioquic_reno"} and set(results["control_arm"]) == {"cubic"}
    cells = results[results["segment_type"].isin(["overall", "network_condition"])]
    assert set(cells["metric"]) == set(QLOG_METRICS)
    assert set(cells[cells["segment_type"] == "network_condition"]["segment_value"]) <= set(conditions)
    # A CI is missing only where neither arm varies (standard error 0): within one condition,
    # ngtcp2's whole milliseconds can give every connection of an arm the same value. The overall
    # cells mix the conditions, so every metric varies there and has a confidence interval.
    finite = cells["ci_abs_lower"].notna() & cells["ci_abs_upper"].notna()
    flat = cells[~finite]
    assert (flat["se_abs"].fillna(0) == 0).all(), flat[["metric", "segment_value", "value_control", "value_treatment"]]
    overall = cells[(cells["segment_type"] == "overall") & (cells["treatment_arm"] == "bbr")]
    assert finite[overall.index].all()
    assert (cells.loc[finite, "ci_abs_lower"] <= cells.loc[finite, "ci_abs_upper"]).all()


def test_a_registered_experiment_without_data_names_the_real_cause(ingest_spark, lab_run, lab_day):
    """run-day with a running experiment that no client carries: the message says so and names
    the experiment ids the data carry; exit 3 (input: the data or the registry must change,
    rerunning cannot help). An experiment whose every trace is invalid: the message says that."""
    import jobs.experiment_coverage as coverage

    spark, (settings, summary, _, _) = ingest_spark, lab_day
    missing = Experiment(id=MISSING, title="a typo", start_date=summary.day,
                         arms=[Arm(name="cubic", share=0.5, is_control=True), Arm(name="bbr", share=0.5)])
    with pytest.raises(ExperimentsWithoutData) as info:
        run_day(spark, settings, summary.day, Registry(experiments=[missing]),
                skip=("ingest", "ingest_qlog", "dbt_build", "results"))
    message = str(info.value)
    assert info.value.exit_code == 3 and "\n" not in message
    assert f"experiment {MISSING} runs on {summary.day}" in message and "no event and no valid qlog trace" in message
    assert "lab_cc_test (16 clients)" in message and "run the pipeline" not in message
    assert info.value.outcome.without_data and not info.value.outcome.reports

    dropped = lab_run[3]
    clients = {c.client_id for c in dropped.connections if c.valid}
    lab_drops = Experiment(id="lab_host_drops_test", title="t", start_date=summary.day,
                           arms=[Arm(name="cubic", share=1.0, is_control=True)])
    why = coverage.why_no_results(spark, settings, lab_drops, summary.day)
    if clients:
        assert f"{len(clients)} clients carry it" in why
    else:
        invalid_traces = 2 * dropped.invalid_runs
        assert f"its qlog traces marked invalid: {invalid_traces} {HOST_DROPS}" in why
    assert "lab_cc_test" in coverage.experiments_with_results(spark, settings, summary.day)
