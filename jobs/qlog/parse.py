"""qlog (draft 0.3, JSON or JSON-SEQ, optionally gzip) → one connection-level stats row per trace.

Pure Python, no Spark: the Spark job maps it over files. Written by hand because no kept
library parses qlog into summaries (aioquic only writes it; qvis is a JavaScript viewer).

Event names are accepted in both generations of the qlog drafts: ``recovery:metrics_updated``
(aioquic, qlog 0.3) and ``quic:recovery_metrics_updated`` (newer drafts); ``transport:`` or
``quic:`` for ``packet_sent`` / ``packet_received``; ``recovery:`` or ``quic:`` for
``packet_lost``. The congestion window is ``cwnd`` or ``congestion_window``.

What a row holds, per trace (one QUIC connection seen from one vantage point):

* ``srtt_ms``, ``latest_rtt_ms``, ``rtt_variance_ms``: the last values reported by
  ``metrics_updated``; ``min_rtt_ms``: the smallest ``min_rtt`` reported;
* ``cwnd_bytes``: the last congestion window; ``max_cwnd_bytes``: the largest;
* ``packets_sent`` / ``packets_received`` / ``packets_lost``: counts of those events;
  ``bytes_sent`` / ``bytes_received``: sums of their ``raw.length``;
* ``srtt_median_ms``: the median smoothed RTT over the trace's RTT samples; ``rtt_samples``:
  how many ``metrics_updated`` reports carry RTT values that differ from the previous report
  (aioquic reports RTT fields only when it takes a sample; ngtcp2 reports them on every update,
  so an unchanged report is not a new sample — a repeated identical sample is undercounted).
  A report from before the first sample (``latest_rtt`` 0, no ``min_rtt``: ngtcp2's initial
  333 ms guess) is not a sample and sets none of the RTT columns;
* ``datagrams_sent`` / ``datagrams_received``: sums of ``count`` (default 1) of the
  ``datagrams_sent`` / ``datagrams_received`` events, NULL when the stack logs none (ngtcp2
  0.12 does not); ``packets_dropped``: count of ``packet_dropped`` events;
* ``handshake_ms``: from the first event to the first 1-RTT packet received (NULL without one);
* ``started_at`` and ``duration_ms`` from the first and last event times. Times are
  milliseconds: absolute (aioquic), relative to ``common_fields.reference_time``, or deltas from
  the previous event (``time_format: delta``). A trace with no wall clock (ngtcp2 0.12 writes
  ``reference_time: 0`` with relative times) gets ``started_at = None``; the job then takes the
  time from the sidecar or the file.

The connection key is ``common_fields.ODCID`` (aioquic) or ``group_id`` (qlog 0.4, ngtcp2: the
original destination connection id); ``ODCID``, when both are present.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
from datetime import UTC, datetime
from typing import Any

SUPPORTED_VERSIONS = ("0.3", "0.4")
RECORD_SEPARATOR = "\x1e"

_METRICS = {"recovery:metrics_updated", "quic:recovery_metrics_updated", "recovery:recovery_metrics_updated"}
_SENT = {"transport:packet_sent", "quic:packet_sent"}
_RECEIVED = {"transport:packet_received", "quic:packet_received"}
_LOST = {"recovery:packet_lost", "quic:packet_lost"}
_DGRAM_SENT = {"transport:datagrams_sent", "quic:datagrams_sent"}
_DGRAM_RECEIVED = {"transport:datagrams_received", "quic:datagrams_received"}
_DROPPED = {"transport:packet_dropped", "quic:packet_dropped"}
_RTT_KEYS = ("latest_rtt", "smoothed_rtt", "rtt_variance", "min_rtt")
# Any wall-clock time after 2001-09-09 is above this many ms since the epoch; a start below it
# is a relative clock with no reference (ngtcp2 0.12's ``reference_time: 0``).
_WALL_CLOCK_MS = 1e12


class QlogError(ValueError):
    """A file that is not usable qlog; ``reason`` is the quarantine reason."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def decode(data: bytes) -> str:
    """Bytes of a ``.qlog`` / ``.sqlog`` file, gunzipped when gzip (by magic, not by name)."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise QlogError("unreadable_qlog", str(exc)) from None


def load_traces(text: str) -> tuple[str, list[dict[str, Any]]]:
    """``(qlog_version, traces)`` from qlog JSON (``traces`` list) or JSON-SEQ (header + event records)."""
    try:
        if text.lstrip(" \t\r\n").startswith(RECORD_SEPARATOR):  # (\x1e counts as whitespace to str.strip)
            parts = [r for r in text.split(RECORD_SEPARATOR) if r.strip()]
            records = []
            for i, part in enumerate(parts):
                try:
                    records.append(json.loads(part))
                except json.JSONDecodeError:
                    if i == len(parts) - 1 and i > 0:  # RFC 7464 §2.4: a truncated last record is dropped
                        break
                    raise
            header, events = records[0], records[1:]
            trace = dict(header.get("trace") or {})
            trace["events"] = events
            doc = {**header, "traces": [trace]}
        else:
            doc = json.loads(text)
    except (json.JSONDecodeError, IndexError) as exc:
        raise QlogError("malformed_qlog", str(exc).splitlines()[0]) from None
    if not isinstance(doc, dict):
        raise QlogError("malformed_qlog", "top level is not an object")
    version = str(doc.get("qlog_version", ""))
    if version not in SUPPORTED_VERSIONS:
        raise QlogError("unsupported_qlog_version", version or "missing")
    traces = doc.get("traces")
    if not isinstance(traces, list) or not traces:
        raise QlogError("no_trace")
    return version, traces


def _ms(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _pre_sample(data: dict[str, Any]) -> bool:
    """A report made before the first RTT sample: ``latest_rtt`` 0 and no ``min_rtt``.

    Before its first sample a sender has no min RTT and its smoothed RTT is the initial guess
    (RFC 9002 §5.3, kInitialRtt = 333 ms; §6.2.2). ngtcp2 reports that state (``smoothed_rtt``
    333, ``rtt_variance`` 166, ``latest_rtt`` 0, no ``min_rtt``) with its first packets; it is
    not a measurement. aioquic reports RTT fields only with a sample.
    """
    return _ms(data.get("latest_rtt")) == 0 and _ms(data.get("min_rtt")) is None


def _apply_metrics(row: dict[str, Any], data: dict[str, Any], state: dict[str, Any]) -> None:
    """Fold one ``metrics_updated`` event into the running stats (fields it lacks are unchanged;
    the RTT fields of a pre-sample report are not RTTs, :func:`_pre_sample`)."""
    if _ms(data.get("latest_rtt")) is not None and not _pre_sample(data):
        rtt = tuple(_ms(data.get(k)) for k in _RTT_KEYS)
        if rtt != state.get("last_rtt"):
            state["last_rtt"] = rtt
            if rtt[1] is not None:
                state["srtts"].append(rtt[1])
    rtt_fields = () if _pre_sample(data) else (
        ("smoothed_rtt", "srtt_ms"), ("latest_rtt", "latest_rtt_ms"), ("rtt_variance", "rtt_variance_ms"))
    for key, column in rtt_fields:
        if _ms(data.get(key)) is not None:
            row[column] = _ms(data[key])
    min_rtt = _ms(data.get("min_rtt"))
    if min_rtt is not None and (row["min_rtt_ms"] is None or min_rtt < row["min_rtt_ms"]):
        row["min_rtt_ms"] = min_rtt
    cwnd = data.get("congestion_window", data.get("cwnd"))
    if isinstance(cwnd, int):
        row["cwnd_bytes"] = cwnd
        row["max_cwnd_bytes"] = max(cwnd, row["max_cwnd_bytes"] or 0)


def _apply_event(row: dict[str, Any], name: Any, data: dict[str, Any], since_first: float | None) -> None:
    """Fold one packet, datagram or loss event into the running counts."""
    if name in _SENT or name in _RECEIVED:
        way = "sent" if name in _SENT else "received"
        if way == "received" and row["handshake_ms"] is None and since_first is not None and (
                (data.get("header") or {}).get("packet_type") in ("1RTT", "1rtt")):
            row["handshake_ms"] = since_first
        row[f"packets_{way}"] += 1
        length = (data.get("raw") or {}).get("length")
        row[f"bytes_{way}"] += length if isinstance(length, int) else 0
    elif name in _LOST:
        row["packets_lost"] += 1
    elif name in _DGRAM_SENT or name in _DGRAM_RECEIVED:
        column = "datagrams_sent" if name in _DGRAM_SENT else "datagrams_received"
        count = data.get("count")
        row[column] = (row[column] or 0) + (count if isinstance(count, int) else 1)
    elif name in _DROPPED:
        row["packets_dropped"] += 1


def summarize(trace: dict[str, Any]) -> dict[str, Any]:
    """Connection-level stats of one trace (see the module docstring)."""
    common = trace.get("common_fields") or {}
    odcid = common.get("ODCID") or common.get("group_id") or trace.get("group_id")
    if not isinstance(odcid, str) or not odcid:
        raise QlogError("missing_odcid")
    reference = _ms(common.get("reference_time")) or 0.0
    delta = common.get("time_format") == "delta"
    row: dict[str, Any] = {
        "odcid": odcid.lower(),
        "vantage_point": (trace.get("vantage_point") or {}).get("type"),
        "srtt_ms": None, "min_rtt_ms": None, "latest_rtt_ms": None, "rtt_variance_ms": None,
        "cwnd_bytes": None, "max_cwnd_bytes": None,
        "packets_sent": 0, "packets_received": 0, "packets_lost": 0, "bytes_sent": 0, "bytes_received": 0,
        "datagrams_sent": None, "datagrams_received": None, "packets_dropped": 0, "handshake_ms": None,
    }
    state: dict[str, Any] = {"srtts": []}
    first = last = None
    clock = 0.0
    for event in trace.get("events") or []:
        if not isinstance(event, dict):
            raise QlogError("malformed_qlog", "event is not an object (qlog before 0.3?)")
        name, data, at = event.get("name"), event.get("data") or {}, _ms(event.get("time"))
        if at is not None and delta:
            clock += at
            at = clock
        if at is not None:
            first = at if first is None else min(first, at)
            last = at if last is None else max(last, at)
        if name in _METRICS:
            _apply_metrics(row, data, state)
        else:
            _apply_event(row, name, data, None if at is None or first is None else at - first)
    if first is None:
        raise QlogError("no_events")
    start_ms = reference + first
    row["started_at"] = datetime.fromtimestamp(start_ms / 1000.0, tz=UTC) if start_ms >= _WALL_CLOCK_MS else None
    row["duration_ms"] = last - first
    row["rtt_samples"] = len(state["srtts"])
    row["srtt_median_ms"] = statistics.median(state["srtts"]) if state["srtts"] else None
    return row


def parse_path(path: str, uri: str | None = None) -> list[dict[str, Any]]:
    """:func:`parse_file` on a file read from disk: an empty or unreadable file is one quarantined row.

    Rows carry ``file_mtime`` (the file's modification time): a trace without a wall clock is
    dated by it when the sidecar gives no opening time.
    """
    uri = uri or path
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as fh:  # a link: refused
            mtime = datetime.fromtimestamp(os.fstat(fh.fileno()).st_mtime, tz=UTC)
            data = fh.read()
    except OSError as exc:
        return [{"source_file": uri, "trace_index": 0, "reason": "unreadable_file", "detail": exc.strerror}]
    if not data:
        return [{"source_file": uri, "trace_index": 0, "reason": "empty_file", "file_mtime": mtime}]
    return [{**row, "file_mtime": mtime} for row in parse_file(uri, data)]


def parse_file(path: str, data: bytes) -> list[dict[str, Any]]:
    """One dict per trace of the file: stats and ``reason=None``, or only a ``reason`` for bad input."""
    if not data:
        return [{"source_file": path, "trace_index": 0, "reason": "empty_file"}]
    try:
        version, traces = load_traces(decode(data))
    except QlogError as exc:
        return [{"source_file": path, "trace_index": 0, "reason": exc.reason}]
    rows = []
    for index, trace in enumerate(traces):
        try:
            if not isinstance(trace, dict):
                raise QlogError("malformed_qlog", "trace is not an object")
            row = summarize(trace)
            rows.append({**row, "qlog_version": version, "source_file": path, "trace_index": index, "reason": None})
        except QlogError as exc:
            rows.append({"source_file": path, "trace_index": index, "reason": exc.reason})
    return rows
