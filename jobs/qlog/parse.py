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
* ``started_at`` and ``duration_ms`` from the first and last event times (qlog 0.3 times
  are milliseconds, relative to ``common_fields.reference_time`` when there is one).
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

SUPPORTED_VERSIONS = ("0.3", "0.4")
RECORD_SEPARATOR = "\x1e"

_METRICS = {"recovery:metrics_updated", "quic:recovery_metrics_updated", "recovery:recovery_metrics_updated"}
_SENT = {"transport:packet_sent", "quic:packet_sent"}
_RECEIVED = {"transport:packet_received", "quic:packet_received"}
_LOST = {"recovery:packet_lost", "quic:packet_lost"}


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
            records = [json.loads(r) for r in text.split(RECORD_SEPARATOR) if r.strip()]
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


def _apply_metrics(row: dict[str, Any], data: dict[str, Any]) -> None:
    """Fold one ``metrics_updated`` event into the running stats (fields it lacks are unchanged)."""
    for key, column in (("smoothed_rtt", "srtt_ms"), ("latest_rtt", "latest_rtt_ms"), ("rtt_variance", "rtt_variance_ms")):
        if _ms(data.get(key)) is not None:
            row[column] = _ms(data[key])
    min_rtt = _ms(data.get("min_rtt"))
    if min_rtt is not None and (row["min_rtt_ms"] is None or min_rtt < row["min_rtt_ms"]):
        row["min_rtt_ms"] = min_rtt
    cwnd = data.get("congestion_window", data.get("cwnd"))
    if isinstance(cwnd, int):
        row["cwnd_bytes"] = cwnd
        row["max_cwnd_bytes"] = max(cwnd, row["max_cwnd_bytes"] or 0)


def summarize(trace: dict[str, Any]) -> dict[str, Any]:
    """Connection-level stats of one trace (see the module docstring)."""
    common = trace.get("common_fields") or {}
    odcid = common.get("ODCID") or common.get("group_id")
    if not isinstance(odcid, str) or not odcid:
        raise QlogError("missing_odcid")
    reference = _ms(common.get("reference_time")) or 0.0
    row: dict[str, Any] = {
        "odcid": odcid.lower(),
        "vantage_point": (trace.get("vantage_point") or {}).get("type"),
        "srtt_ms": None, "min_rtt_ms": None, "latest_rtt_ms": None, "rtt_variance_ms": None,
        "cwnd_bytes": None, "max_cwnd_bytes": None,
        "packets_sent": 0, "packets_received": 0, "packets_lost": 0, "bytes_sent": 0, "bytes_received": 0,
    }
    first = last = None
    for event in trace.get("events") or []:
        if not isinstance(event, dict):
            raise QlogError("malformed_qlog", "event is not an object (qlog before 0.3?)")
        name, data, at = event.get("name"), event.get("data") or {}, _ms(event.get("time"))
        if at is not None:
            first = at if first is None else min(first, at)
            last = at if last is None else max(last, at)
        if name in _METRICS:
            _apply_metrics(row, data)
        elif name in _SENT or name in _RECEIVED:
            way = "sent" if name in _SENT else "received"
            row[f"packets_{way}"] += 1
            length = (data.get("raw") or {}).get("length")
            row[f"bytes_{way}"] += length if isinstance(length, int) else 0
        elif name in _LOST:
            row["packets_lost"] += 1
    if first is None:
        raise QlogError("no_events")
    row["started_at"] = datetime.fromtimestamp((reference + first) / 1000.0, tz=UTC)
    row["duration_ms"] = last - first
    return row


def parse_file(path: str, data: bytes) -> list[dict[str, Any]]:
    """One dict per trace of the file: stats and ``reason=None``, or only a ``reason`` for bad input."""
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
