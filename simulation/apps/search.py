"""Search sessions: ``search_queries`` (and their ``connections``).

A session is a chain of queries. Each results page is a :func:`simulation.transport.transfer`
(plus server time and rendering) while the page's other requests (suggestions, thumbnails) are in
flight on the same connection. The user abandons a query when results take longer than their
patience (log-normal), and after each query continues the session with a probability that falls
with the latency just experienced, faster with the time the page sat frozen behind another
response's lost packet (head-of-line blocking), and drops after an abandonment. So slower search
produces both more abandonment and fewer queries ("fewer events", seed 000) without any effect
being pasted in.
"""

from __future__ import annotations

import numpy as np

from simulation.apps.common import EventBatch, connection_u64, lognormal, ragged_index
from simulation.apps.connections import aggregate_connections
from simulation.population import Population
from simulation.scenario import SearchWorkload
from simulation.sessions import Sessions
from simulation.transport import TransportArrays, handshake_ms, transfer

MAX_QUERIES = 24
RESULTS_MEDIAN_BYTES = 70_000.0
SERVER_MEDIAN_MS = 180.0
RENDER_MS = 60.0
PATIENCE_MEDIAN_MS = 4_000.0
LATENCY_TOLERANCE_MS = 15_000.0  # continuation probability decays as exp(-latency / this)
CONTINUE_AFTER_ABANDON = 0.2
# a results page that freezes half-drawn (a stall while a lost packet of *another* response blocks
# it) puts users off more than the same time spent waiting: continuation also decays with the
# head-of-line-blocked time, calibrated so FHOL's stalls cost seed 000's share of queries
STALL_TOLERANCE_MS = 400.0
OTHER_REQUESTS = 1.0
OTHER_MEDIAN_BYTES = 10_000.0


def search_events(
    rng: np.random.Generator,
    sess: Sessions,
    sidx: np.ndarray,
    pop: Population,
    tp_client: TransportArrays,
    cfg: SearchWorkload,
) -> dict[str, EventBatch]:
    """Queries of the search sessions ``sidx`` and their connections."""
    ns = len(sidx)
    g, pos = ragged_index(np.full(ns, MAX_QUERIES))
    s = sidx[g]
    m = len(s)
    client = sess.client[s]
    tp = tp_client.take(client)
    net = {k: v[s] for k, v in sess.net.items()}
    size = np.maximum(lognormal(rng, RESULTS_MEDIAN_BYTES, 0.5, m), 2_000.0).round()
    others = rng.poisson(OTHER_REQUESTS, m) * lognormal(rng, OTHER_MEDIAN_BYTES, 0.8, m) * rng.uniform(0.3, 1.0, m)
    new = (pos == 0) | ~tp.pooling
    tr = transfer(rng, size, net, tp, warm=~new, interleaved_bytes=others)
    hs, zr = handshake_ms(rng, net["rtt_ms"], tp.zero_rtt, pop.zero_rtt_p[client])
    hs = np.where(new, hs, 0.0)
    zr = zr & new
    latency = hs + lognormal(rng, SERVER_MEDIAN_MS, 0.4, m) + tr["time_ms"] + RENDER_MS
    patience = lognormal(rng, PATIENCE_MEDIAN_MS, 0.8, m)
    abandoned = latency > patience

    # which of the candidate queries happen: continue after query j with probability c_j
    c0 = 1.0 - 1.0 / max(cfg.queries_per_session, 1.0 + 1e-9)
    cont = (
        c0
        * np.exp(-latency / LATENCY_TOLERANCE_MS - tr["hol_ms"] / STALL_TOLERANCE_MS)
        * np.where(abandoned, CONTINUE_AFTER_ABANDON, 1.0)
    )
    go_on = (rng.random(m) < cont).reshape(ns, MAX_QUERIES)
    alive = np.ones((ns, MAX_QUERIES), dtype=bool)
    alive[:, 1:] = np.cumprod(go_on[:, :-1], axis=1).astype(bool)
    keep = alive.ravel()

    gap = rng.exponential(25_000.0, m).reshape(ns, MAX_QUERIES)
    t = (sess.start_ms[s].reshape(ns, MAX_QUERIES) + np.cumsum(gap, axis=1)).ravel().astype(np.int64)
    end = t + np.where(abandoned, patience, latency).astype(np.int64)
    conn = connection_u64(sess.session_u64[s], np.where(tp.pooling, 0, pos), "search")
    queries = EventBatch(
        "search_queries",
        s[keep],
        end[keep],
        {
            "connection_id": conn[keep],
            "query_index": pos[keep],
            "latency_ms": np.where(abandoned, np.nan, latency)[keep],
            "abandoned": abandoned[keep],
            "time_to_abandon_ms": np.where(abandoned, patience, np.nan)[keep],
            "response_bytes": size[keep].astype(np.int64),
            "hol_blocked_ms": tr["hol_ms"][keep],
        },
        nulls={"latency_ms": abandoned[keep], "time_to_abandon_ms": ~abandoned[keep]},
    )
    trk = {k: v[keep] for k, v in tr.items()}
    conns = aggregate_connections(
        conn[keep], s[keep], end[keep], trk, latency[keep], size[keep], np.full(keep.sum(), 900.0), hs[keep], zr[keep], tp.take(np.flatnonzero(keep))
    )
    return {"search_queries": queries, "connections": conns}
