"""qlog → connection stats, on hand-written traces in both naming generations (no Spark)."""

from __future__ import annotations

import gzip
import json

from jobs.qlog.parse import parse_file


def _trace(metrics_name: str, cwnd_key: str, sent: str, lost: str) -> dict:
    events = [
        {"time": 10.0, "name": sent, "data": {"raw": {"length": 1200}}},
        {"time": 11.0, "name": sent, "data": {"raw": {"length": 1000}}},
        {"time": 30.0, "name": metrics_name, "data": {"smoothed_rtt": 20.0, "min_rtt": 18.0, "latest_rtt": 20.0,
                                                      cwnd_key: 14000}},
        {"time": 60.0, "name": lost, "data": {"packet_number": 1}},
        {"time": 61.0, "name": metrics_name, "data": {cwnd_key: 7000}},
        {"time": 70.0, "name": metrics_name, "data": {"smoothed_rtt": 25.0, "min_rtt": 19.0, "latest_rtt": 40.0}},
    ]
    return {"common_fields": {"ODCID": "ABCD01", "reference_time": 1_750_000_000_000.0},
            "vantage_point": {"type": "server"}, "events": events}


def test_old_and_new_event_names_give_the_same_stats():
    old = {"qlog_version": "0.3", "traces": [_trace("recovery:metrics_updated", "cwnd", "transport:packet_sent",
                                                    "recovery:packet_lost")]}
    new = {"qlog_version": "0.3", "traces": [_trace("quic:recovery_metrics_updated", "congestion_window",
                                                    "quic:packet_sent", "quic:packet_lost")]}
    (a,), (b,) = parse_file("old.qlog", json.dumps(old).encode()), parse_file("new.qlog", json.dumps(new).encode())
    for row in (a, b):
        assert row["reason"] is None
        assert row["odcid"] == "abcd01" and row["vantage_point"] == "server"
        assert (row["srtt_ms"], row["min_rtt_ms"], row["latest_rtt_ms"]) == (25.0, 18.0, 40.0)
        assert (row["cwnd_bytes"], row["max_cwnd_bytes"]) == (7000, 14000)
        assert (row["packets_sent"], row["bytes_sent"], row["packets_lost"]) == (2, 2200, 1)
        assert row["duration_ms"] == 60.0
        assert row["started_at"].isoformat().startswith("2025-06-15T15:06:40.010")


def test_gzip_and_json_seq_are_read():
    doc = {"qlog_version": "0.3", "traces": [_trace("recovery:metrics_updated", "cwnd", "transport:packet_sent",
                                                    "recovery:packet_lost")]}
    (row,) = parse_file("x.qlog.gz", gzip.compress(json.dumps(doc).encode()))
    assert row["srtt_ms"] == 25.0
    trace = _trace("quic:recovery_metrics_updated", "congestion_window", "quic:packet_sent", "quic:packet_lost")
    header = {"qlog_version": "0.4", "qlog_format": "JSON-SEQ",
              "trace": {k: v for k, v in trace.items() if k != "events"}}
    seq = "".join("\x1e" + json.dumps(r) + "\n" for r in [header, *trace["events"]])
    (row,) = parse_file("x.sqlog", seq.encode())
    assert (row["reason"], row["packets_lost"], row["cwnd_bytes"]) == (None, 1, 7000)


def test_bad_files_get_a_reason_not_an_exception():
    assert parse_file("a.qlog", b"{not json")[0]["reason"] == "malformed_qlog"
    assert parse_file("b.qlog", b"\x1f\x8b\x08 truncated")[0]["reason"] == "unreadable_qlog"
    assert parse_file("c.qlog", json.dumps({"qlog_version": "0.1", "traces": []}).encode())[0]["reason"] == (
        "unsupported_qlog_version")
    no_odcid = {"qlog_version": "0.3", "traces": [{"events": [{"time": 1, "name": "x", "data": {}}]}]}
    assert parse_file("d.qlog", json.dumps(no_odcid).encode())[0]["reason"] == "missing_odcid"


def test_a_report_before_the_first_rtt_sample_is_not_a_sample():
    """ngtcp2 reports its state before any RTT sample (RFC 9002 §5.3: smoothed RTT = the initial
    333 ms, latest 0, no min RTT): not a measurement. A real 0 ms sample (loopback, ngtcp2's whole
    milliseconds) carries a min RTT and counts."""
    events = [
        {"time": 0, "name": "recovery:metrics_updated", "data": {"smoothed_rtt": 333, "latest_rtt": 0,
                                                                 "rtt_variance": 166, "congestion_window": 14520}},
        {"time": 1, "name": "transport:packet_sent", "data": {"raw": {"length": 1200}}},
        {"time": 15, "name": "recovery:metrics_updated", "data": {"smoothed_rtt": 333, "latest_rtt": 0,
                                                                  "rtt_variance": 166, "bytes_in_flight": 819}},
        {"time": 40, "name": "recovery:metrics_updated", "data": {"min_rtt": 38, "smoothed_rtt": 38, "latest_rtt": 38,
                                                                  "rtt_variance": 19, "congestion_window": 15720}},
        {"time": 80, "name": "recovery:metrics_updated", "data": {"min_rtt": 38, "smoothed_rtt": 39, "latest_rtt": 44,
                                                                  "rtt_variance": 16}},
    ]
    header = {"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "trace": {
        "vantage_point": {"type": "client"}, "common_fields": {"group_id": "ab", "reference_time": 0}}}
    seq = "".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events])
    (row,) = parse_file("n.sqlog", seq.encode())
    assert (row["rtt_samples"], row["srtt_median_ms"], row["srtt_ms"], row["min_rtt_ms"]) == (2, 38.5, 39.0, 38.0)
    assert (row["latest_rtt_ms"], row["rtt_variance_ms"], row["max_cwnd_bytes"]) == (44.0, 16.0, 15720)
    # a trace that ends before its first sample has no RTT at all (not the 333 ms guess)
    (early,) = parse_file("e.sqlog", "".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events[:3]]).encode())
    assert (early["rtt_samples"], early["srtt_ms"], early["srtt_median_ms"], early["cwnd_bytes"]) == (0, None, None, 14520)
    # a loopback sample of 0 ms is a sample (it carries a min RTT)
    zero = {"time": 90, "name": "recovery:metrics_updated", "data": {"min_rtt": 0, "smoothed_rtt": 34,
                                                                      "latest_rtt": 0, "rtt_variance": 14}}
    (row,) = parse_file("z.sqlog", "".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events, zero]).encode())
    assert (row["rtt_samples"], row["min_rtt_ms"], row["srtt_ms"]) == (3, 0.0, 34.0)
