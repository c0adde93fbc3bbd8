"""Browser sessions: ``http_transactions`` (and their ``connections``).

A browser session issues a heavy-tailed number of HTTP requests to a few origins. With connection
pooling, origins that can be coalesced (same certificate and address) share one connection;
without it each origin opens its own. The first request of a connection pays the
handshake (0 or 1 RTT) and starts from the initial window; later ones reuse an open window.
0-RTT needs a cached server config of that origin, which the client holds less often for a
page's other origins than for the page's own, so unpooled connections more often cost an RTT.

Responses are log-normal in size (desktop pages pull larger resources than mobile ones). While a
response is in flight other requests of the page are in flight on the same connection (more on
desktop than on mobile); with forced head-of-line blocking (``single_stream``) their bytes are
interleaved on the one ordered stream, so their losses stall this response too
(:func:`simulation.transport.transfer`), which is why FHOL costs more at the tail on Windows than
on Android (seed 000). A few percent of desktop requests are hanging GETs whose server holds the
response for seconds, which puts the desktop tail far above the mobile one.
"""

from __future__ import annotations

import numpy as np

from simulation.apps import headers
from simulation.apps.common import (
    EventBatch,
    connection_u64,
    first_in_group,
    group_cumsum,
    heavy_count,
    lognormal,
    ragged_index,
)
from simulation.apps.connections import aggregate_connections
from simulation.population import Population
from simulation.scenario import HttpWorkload
from simulation.sessions import Sessions
from simulation.transport import TransportArrays, handshake_ms, transfer

#                         Windows Android macOS iOS   Linux
SIZE_MEDIAN = np.array([30_000.0, 14_000.0, 30_000.0, 14_000.0, 30_000.0])
SIZE_SIGMA = np.array([2.0, 1.7, 2.0, 1.7, 2.0])
CONCURRENT = np.array([2.8, 1.5, 2.8, 1.5, 2.8])  # mean other streams in flight on the connection
CONCURRENCY_SHAPE = 0.3  # gamma-Poisson: most requests alone, some in bursts of dozens
TX_FACTOR = np.array([1.3, 0.8, 1.3, 0.8, 1.3])  # requests per session relative to the workload's
SERVER_MEDIAN_MS = 40.0
# hanging GETs (long polls for notifications, chat, sync): the server holds the response until it
# has something to say; desktop browsers keep many open, which is what puts Windows' p95 at twice
# Android's in seed 000
HANGING_SHARE = np.array([0.025, 0.005, 0.025, 0.005, 0.025])
HANGING_MEDIAN_MS = 6000.0
PAGE_BURST_SHARE = 0.9  # requests that follow the previous one within the same page
IN_PAGE_GAP_MS = 5.0
PAGE_GAP_MS = 20_000.0
HOSTS_EXTRA = 6.0  # origins per session: 1 + Poisson(6)
COALESCABLE = 0.8  # share of sessions whose origins share a certificate and address (poolable)
# the 0-RTT server config is cached per origin: the page's own origin as often as the client's
# cache probability says, its other origins (visited through this site only) less often
OTHER_ORIGIN_CACHED = 0.3


def concurrent_cross_bytes(rng: np.random.Generator, size: np.ndarray, platform: np.ndarray) -> np.ndarray:
    """Bytes of other in-flight responses interleaved with this one before its last byte."""
    m = len(size)
    others = rng.poisson(rng.gamma(CONCURRENCY_SHAPE, CONCURRENT[platform] / CONCURRENCY_SHAPE))
    other_size = lognormal(rng, SIZE_MEDIAN[platform], 1.0, m)
    return others * np.minimum(other_size, size) * rng.uniform(0.3, 1.0, m)


def browser_events(
    rng: np.random.Generator,
    sess: Sessions,
    sidx: np.ndarray,
    pop: Population,
    tp_client: TransportArrays,
    cfg: HttpWorkload,
    emit_headers: bool = False,
) -> dict[str, EventBatch]:
    """HTTP transactions of the browser sessions ``sidx`` and the connections they used."""
    plat_s = pop.platform[sess.client[sidx]]
    count = heavy_count(rng, cfg.transactions_per_session * TX_FACTOR[plat_s], len(sidx))
    g, pos = ragged_index(count)
    s = sidx[g]
    m = len(s)
    client = sess.client[s]
    plat = pop.platform[client]
    tp = tp_client.take(client)
    net = {k: v[s] for k, v in sess.net.items()}

    hosts = 1 + rng.poisson(HOSTS_EXTRA, len(sidx))
    host = np.where(pos == 0, 0, rng.integers(0, hosts[g]))
    coalescable = rng.random(len(sidx))[g] < COALESCABLE
    conn_no = np.where(tp.pooling & coalescable, 0, host)
    conn = connection_u64(sess.session_u64[s], conn_no, "browser")
    new = first_in_group(conn)

    size = np.maximum(lognormal(rng, SIZE_MEDIAN[plat], SIZE_SIGMA[plat], m), 200.0).round()
    req = np.maximum(lognormal(rng, 700.0, 0.5, m), 80.0).round()
    cross = concurrent_cross_bytes(rng, size, plat)
    tr = transfer(rng, size, net, tp, warm=~new, interleaved_bytes=cross)
    cached_p = pop.zero_rtt_p[client] * np.where(conn_no > 0, OTHER_ORIGIN_CACHED, 1.0)
    hs, zr = handshake_ms(rng, net["rtt_ms"], tp.zero_rtt, cached_p)
    hs = np.where(new, hs, 0.0)
    zr = zr & new
    server = lognormal(rng, SERVER_MEDIAN_MS, 1.2, m)
    hanging = rng.random(m) < HANGING_SHARE[plat]
    server = np.where(hanging, lognormal(rng, HANGING_MEDIAN_MS, 0.8, m), server)
    # requests come in page bursts (a few ms apart), pages tens of seconds apart
    u = rng.random((4, m))
    gap = np.where(u[0] < PAGE_BURST_SHARE, -IN_PAGE_GAP_MS * np.log1p(-u[1]), -PAGE_GAP_MS * np.log1p(-u[1]))
    t = sess.start_ms[s] + group_cumsum(gap, g).astype(np.int64)

    # request header blocks: HPACK blocks wait for earlier lost ones on the same connection
    order = np.lexsort((t, conn))
    arrival = headers.block_arrivals(u[2], u[3], t.astype(float), net["rtt_ms"], net["loss"])
    hdr_hol = np.empty(m)
    hdr_hol[order] = headers.header_hol(arrival[order], conn[order], tp.hdr[order], rng.random(m)[order])
    latency = hs + hdr_hol + server + tr["time_ms"]
    http = EventBatch(
        "http_transactions",
        s,
        t,
        {
            "connection_id": conn,
            "stream_id": 4 * pos,
            "request_bytes": req.astype(np.int64),
            "response_bytes": size.astype(np.int64),
            "latency_ms": latency,
            "ttfb_ms": hs + hdr_hol + server + tr["ttfb_ms"],
            "hol_blocked_ms": tr["hol_ms"],
            "packets_lost": tr["lost"],
            "new_connection": new,
            "protocol": np.zeros(m, dtype=np.int8),
            "status_code": np.full(m, 200, dtype=np.int64),
        },
    )
    conns = aggregate_connections(conn, s, t + latency.astype(np.int64), tr, latency, size, req, hs, zr, tp)
    out = {"http_transactions": http, "connections": conns}
    if emit_headers:
        raw, wire = headers.header_bytes(rng, new, tp.hdr)
        out["header_compression"] = headers.connection_events(
            conn, s, t + latency.astype(np.int64), tp.hdr, raw, wire, hdr_hol
        )
    return out

