"""``connections`` events: one per QUIC connection, aggregated from the transfers that ran on it.

Counters (packets sent/lost/retransmitted, bytes) are sums over the connection's transfers; the
SRTT is the one of the last transfer, min RTT the minimum sample, the window the last one;
``close_delay_ms`` is the completion time of the connection's last request (for multipath chunk
downloads, the chunk's request completion time, as in seed 004).
"""

from __future__ import annotations

import numpy as np

from simulation.apps.common import EventBatch
from simulation.transport import TransportArrays


def aggregate_connections(
    conn_u64: np.ndarray,
    session: np.ndarray,
    end_ms: np.ndarray,
    tr: dict[str, np.ndarray],
    latency_ms: np.ndarray,
    size_bytes: np.ndarray,
    request_bytes: np.ndarray,
    handshake_ms: np.ndarray,
    zero_rtt: np.ndarray,
    tp: TransportArrays,
    scheduler: np.ndarray | None = None,
) -> EventBatch:
    """Aggregate per-transfer arrays (all the same length) into one event per distinct ``conn_u64``."""
    # one sort: by connection, then end time; each connection is then a run of ``order``
    order = np.lexsort((end_ms, conn_u64))
    ids = conn_u64[order]
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1]))) if len(ids) else np.zeros(0, dtype=np.int64)
    uniq = ids[starts]
    k = len(uniq)
    first = np.minimum.reduceat(order, starts) if k else starts  # its first transfer (handshake)
    last = order[np.append(starts[1:], len(order)) - 1] if k else starts  # its latest-ending one

    def total(x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(np.asarray(x, dtype=float)[order], starts) if k else np.zeros(0)

    min_rtt = np.minimum.reduceat(tr["min_rtt_ms"][order], starts) if k else np.zeros(0)
    tpc = tp.take(first)
    sched = np.zeros(k, dtype=np.int8) if scheduler is None else scheduler[first].astype(np.int8)
    cols = {
        "connection_id": uniq,
        "srtt_ms": tr["srtt_ms"][last],
        "min_rtt_ms": min_rtt,
        "packets_sent": total(tr["sent"]).astype(np.int64),
        "packets_lost": total(tr["lost"]).astype(np.int64),
        "packets_retransmitted": total(tr["retx"]).astype(np.int64),
        "is_zero_rtt": zero_rtt[first],
        "congestion_control": tpc.reno.astype(np.int8),
        "initial_window_packets": tpc.iw.astype(np.int64),
        "pacing": tpc.pacing,
        "close_delay_ms": latency_ms[last],
        "handshake_ms": handshake_ms[first],
        "bytes_sent": (total(size_bytes) + total(tr["retx"]) * 1350).astype(np.int64),
        "bytes_received": total(request_bytes).astype(np.int64),
        "cwnd_bytes": tr["cwnd_bytes"][last],
        "delivery_rate_kbps": tr["rate_kbps"][last],
        "path_count": np.where(sched > 0, 2, 1).astype(np.int64),
        "scheduler": sched,
    }
    return EventBatch("connections", session[first], end_ms[last], cols)
