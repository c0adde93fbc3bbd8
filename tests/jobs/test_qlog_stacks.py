"""A second real QUIC stack and the newer qlog shapes parse to the traces' own numbers (no Spark).

ngtcp2 0.12 (Debian's gtlsclient/gtlsserver) and aioquic each run one real HTTP/3 transfer
through the lab's relay (2 % loss, 20 ms RTT) during the test. ngtcp2 writes JSON-SEQ with
``group_id`` (the ODCID), relative times and ``reference_time: 0``; aioquic writes JSON with
``ODCID`` and absolute times. The qlog 0.4 shapes (JSON-SEQ, group id, times relative to a
reference time or as deltas) are made from the real aioquic trace and must parse to the same row.
"""

from __future__ import annotations

import copy
import gzip
import json
import shutil
import statistics
from datetime import datetime

import pytest

from jobs.qlog.parse import RECORD_SEPARATOR, parse_file, parse_path
from lab.config import parse_config
from lab.runner import run

pytestmark = pytest.mark.skipif(shutil.which("gtlsclient") is None, reason="ngtcp2-client not installed "
                                "(scripts/test-deps.d/ngtcp2.sh)")

CONFIG = {  # seed 1 puts one client in each arm (the project's hashing)
    "experiment_id": "lab_stacks_test", "seed": 1,
    "arms": [{"name": "ngtcp2_bbr", "stack": "ngtcp2", "cc": "bbr"},
             {"name": "aioquic_cubic", "stack": "aioquic", "cc": "cubic"}],
    "grid": {"rtt_ms": [20], "loss": [0.02]}, "clients_per_condition": 2, "transfer_bytes": 150_000,
}


def _records(data: bytes) -> list[dict]:
    """The event records of a JSON-SEQ trace."""
    return [json.loads(r) for r in gzip.decompress(data).decode().split(RECORD_SEPARATOR) if r.strip()][1:]


def plain(data: bytes) -> dict:
    """The trace's own numbers, read the plain way (JSON or JSON-SEQ)."""
    text = gzip.decompress(data).decode()
    if text.startswith(RECORD_SEPARATOR):
        records = [json.loads(r) for r in text.split(RECORD_SEPARATOR) if r.strip()]
        trace, events = records[0]["trace"], records[1:]
    else:
        trace = json.loads(text)["traces"][0]
        events = trace["events"]
    common = trace["common_fields"]
    metrics = [e["data"] for e in events if e["name"] == "recovery:metrics_updated"]
    rtts = [m for m in metrics if "latest_rtt" in m]
    return {
        "odcid": (common.get("ODCID") or common["group_id"]).lower(),
        "vantage_point": trace["vantage_point"]["type"],
        "srtt_ms": rtts[-1]["smoothed_rtt"], "min_rtt_ms": min(m["min_rtt"] for m in rtts if "min_rtt" in m),
        "packets_sent": sum(e["name"] == "transport:packet_sent" for e in events),
        "packets_received": sum(e["name"] == "transport:packet_received" for e in events),
        "packets_lost": sum(e["name"] == "recovery:packet_lost" for e in events),
        "bytes_received": sum(e["data"]["raw"]["length"] for e in events if e["name"] == "transport:packet_received"),
        "max_cwnd_bytes": max(m.get("congestion_window", m.get("cwnd", 0)) for m in metrics),
        "duration_ms": events[-1]["time"] - events[0]["time"],
        "handshake_ms": next(e["time"] for e in events if e["name"] == "transport:packet_received"
                             and e["data"]["header"]["packet_type"] in ("1RTT", "1rtt")) - events[0]["time"],
    }


@pytest.fixture(scope="module")
def landing(lake):
    settings = lake("qlog_stacks")
    summary = run(settings, parse_config(CONFIG), progress=None)
    assert summary.failed == 0 and {c.arm for c in summary.connections} == {"ngtcp2_bbr", "aioquic_cubic"}
    root = settings.landing_root / f"upload_date={summary.day}" / "qlog" / "lab" / summary.run_id
    return summary, sorted(root.glob("*/*.gz"))


def test_both_stacks_parse_to_their_own_numbers(landing):
    summary, files = landing
    assert len(files) == 4  # client and server of each connection
    by_odcid: dict[str, dict] = {}
    for path in files:
        (row,) = parse_path(str(path))
        own = plain(path.read_bytes())
        assert row["reason"] is None, (path.name, row["reason"])
        for key, value in own.items():
            assert row[key] == pytest.approx(value, abs=1e-9), (path.name, key)
        stack = "ngtcp2" if path.name.endswith(".sqlog.gz") else "aioquic"
        assert (row["started_at"] is None) == (stack == "ngtcp2")  # ngtcp2 0.12 logs no wall clock
        assert (row["datagrams_received"] is None) == (stack == "ngtcp2")
        assert row["rtt_samples"] > 0 and row["srtt_median_ms"] >= row["min_rtt_ms"] >= 19
        if stack == "ngtcp2":
            # ngtcp2 reports its initial state (smoothed RTT 333 ms, latest 0, no min RTT) before
            # its first sample: not a sample. The samples are the reports with a min RTT, each
            # different from the one before.
            metrics = [r for r in _records(path.read_bytes()) if r.get("name") == "recovery:metrics_updated"]
            assert metrics[0]["data"]["smoothed_rtt"] == 333 and "min_rtt" not in metrics[0]["data"]
            reports = [tuple(m["data"].get(k) for k in ("latest_rtt", "smoothed_rtt", "rtt_variance", "min_rtt"))
                       for m in metrics if "min_rtt" in m["data"]]
            samples = [r for i, r in enumerate(reports) if i == 0 or r != reports[i - 1]]
            assert row["rtt_samples"] == len(samples)
            assert row["srtt_median_ms"] == pytest.approx(statistics.median(s[1] for s in samples))
        by_odcid.setdefault(row["odcid"], {})[row["vantage_point"]] = row
    # both ends of each connection share the key, and it is the connection the lab opened
    assert {o: set(v) for o, v in by_odcid.items()} == {c.odcid: {"client", "server"} for c in summary.connections}
    for ends in by_odcid.values():
        assert ends["client"]["packets_received"] <= ends["server"]["packets_sent"]
        assert ends["client"]["bytes_received"] >= CONFIG["transfer_bytes"]


def _as_qlog_04(trace: dict, time_format: str) -> bytes:
    """A real aioquic trace rewritten in the qlog 0.4 JSON-SEQ shape (group id, relative or delta times)."""
    events = copy.deepcopy(trace["events"])
    reference = events[0]["time"] - 5.0
    header = {"qlog_version": "0.4", "qlog_format": "JSON-SEQ", "trace": {
        "vantage_point": trace["vantage_point"],
        "common_fields": {"group_id": trace["common_fields"]["ODCID"], "time_format": time_format,
                          "reference_time": reference, "protocol_type": ["QUIC"]}}}
    previous = reference
    for e in events:
        absolute = e["time"]
        e["time"] = absolute - (reference if time_format == "relative" else previous)
        previous = absolute
        e["name"] = {"recovery:metrics_updated": "quic:recovery_metrics_updated",
                     "transport:packet_sent": "quic:packet_sent", "transport:packet_received": "quic:packet_received",
                     "recovery:packet_lost": "quic:packet_lost"}.get(e["name"], e["name"])
        if "cwnd" in e["data"]:
            e["data"]["congestion_window"] = e["data"].pop("cwnd")
    return "".join(RECORD_SEPARATOR + json.dumps(r) + "\n" for r in [header, *events]).encode()


@pytest.mark.parametrize("time_format", ["relative", "delta"])
def test_qlog_04_json_seq_shapes_give_the_same_row(landing, time_format):
    _, files = landing
    source = next(p for p in files if p.name.endswith(".qlog.gz") and "/client/" in str(p))
    (original,) = parse_path(str(source))
    trace = json.loads(gzip.decompress(source.read_bytes()))["traces"][0]
    (row,) = parse_file("x.sqlog", _as_qlog_04(trace, time_format))
    assert row["qlog_version"] == "0.4" and row["reason"] is None
    skip = {"qlog_version", "source_file", "file_mtime"}
    for key, value in original.items():
        if key in skip:
            continue
        if isinstance(value, datetime):
            assert abs((row[key] - value).total_seconds()) < 1e-3, key
        else:
            assert row[key] == (pytest.approx(value, abs=1e-6) if isinstance(value, float) else value), key
    # a JSON-SEQ file cut in the middle of its last record still parses (RFC 7464 §2.4)
    (cut,) = parse_file("y.sqlog", _as_qlog_04(trace, time_format)[:-40])
    assert cut["reason"] is None and cut["packets_sent"] >= original["packets_sent"] - 1
