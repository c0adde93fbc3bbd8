"""Page loads under HTTP/3 prioritisation: ``page_loads`` events and the seed-001 grid.

A page is an HTML document plus sub-resources, all requested at once on one connection and sent
by the server either **sequentially** (one stream at a time, in request order, like Chrome's
default) or **round-robin** (all streams interleaved). Per page (vectorised over pages × resources
× loss events):

* without loss the connection delivers at the bottleneck rate; sequential completes resource *r*
  at the sum of the sizes up to *r*, round-robin is processor sharing (the *k*-th smallest
  resource completes at ``(sum_{j<k} s_(j) + (R-k+1) s_(k)) / rate``);
* each loss burst hits the packet being sent at a uniformly drawn byte offset, which belongs to
  the resource being sent then (sequential) or to one of the resources active then
  (round-robin). Its retransmission arrives one recovery later (RTT plus detection), so the
  resource completes at ``max(c_r, t_loss + recovery)``: with sequential scheduling the resource
  usually ends soon after the loss and waits, with round-robin it usually still has data to come;
* head-of-line-blocked bytes are the resource's bytes that arrive behind the hole while it is
  repaired: ``rate_of_stream × min(recovery, c_r − t_loss)``, where a stream gets the whole rate
  when sequential and 1/active of it under round-robin (Sander, Kunze, Wehrle, IETF 114 maprg);
* SpeedIndex is the byte-weighted mean completion time (visual progress by delivered resources).
"""

from __future__ import annotations

import numpy as np

from simulation import variates
from simulation.apps.common import (
    EventBatch,
    connection_u64,
    group_cumsum,
    heavy_count,
    lognormal,
    ragged_index,
)
from simulation.network import MSS
from simulation.population import Population
from simulation.scenario import PageWorkload
from simulation.sessions import Sessions
from simulation.transport import TransportArrays, flow_share, handshake_ms

MAX_LOSS_EVENTS = 32
RESOURCES_MEAN = 30.0
RESOURCE_MEDIAN_BYTES = 12_000.0
RESOURCE_SIGMA = 1.3
HTML_MEDIAN_BYTES = 40_000.0
SERVER_MS = 60.0


def page_resources(rng: np.random.Generator, pages: int, max_resources: int) -> tuple[np.ndarray, np.ndarray]:
    """Resource sizes (pages × max_resources, 0 = absent) and the validity mask; column 0 is the HTML."""
    count = np.minimum(heavy_count(rng, RESOURCES_MEAN, pages, dispersion=1.5), max_resources)
    valid = np.arange(max_resources)[None, :] < count[:, None]
    sizes = lognormal(rng, RESOURCE_MEDIAN_BYTES, RESOURCE_SIGMA, pages * max_resources).reshape(pages, max_resources)
    sizes[:, 0] = lognormal(rng, HTML_MEDIAN_BYTES, 0.6, pages)
    return np.where(valid, np.maximum(sizes, 300.0).round(), 0.0), valid


def _no_loss_completion(sizes: np.ndarray, valid: np.ndarray, rate: np.ndarray, rr: np.ndarray) -> np.ndarray:
    """Completion time (ms from first byte) of each resource without loss."""
    seq = np.cumsum(sizes, axis=1) / rate[:, None]
    big = np.where(valid, sizes, np.inf)
    order = np.argsort(big, axis=1, kind="stable")
    s_sorted = np.take_along_axis(sizes, order, axis=1)
    n = valid.sum(axis=1)[:, None]
    k = np.arange(sizes.shape[1])[None, :]
    before = np.cumsum(s_sorted, axis=1) - s_sorted
    f_sorted = (before + (n - k) * s_sorted) / rate[:, None]
    ps = np.empty_like(f_sorted)
    np.put_along_axis(ps, order, f_sorted, axis=1)
    return np.where(valid, np.where(rr[:, None], ps, seq), 0.0)


def load_pages(
    u: np.ndarray,
    sizes: np.ndarray,
    valid: np.ndarray,
    rtt_ms: np.ndarray,
    rate_kbps: np.ndarray,
    loss: np.ndarray,
    burst: np.ndarray,
    round_robin: np.ndarray,
) -> dict[str, np.ndarray]:
    """Page load time, SpeedIndex and HoL-blocked bytes of each page (rows of ``sizes``).

    ``u`` is a block of uniforms of shape (4, pages, MAX_LOSS_EVENTS) (common random numbers).
    """
    p = sizes.shape[0]
    rate = rate_kbps / 8.0  # bytes per ms
    total = sizes.sum(axis=1)
    base = _no_loss_completion(sizes, valid, rate, round_robin)
    n_loss = np.minimum(variates.poisson(u[0, :, 0], total / MSS * loss / np.maximum(burst, 1.0)), MAX_LOSS_EVENTS)
    has = np.arange(MAX_LOSS_EVENTS)[None, :] < n_loss[:, None]  # pages x L
    t_loss = u[1] * total[:, None] / rate[:, None]  # send time of the lost packet
    recovery = rtt_ms[:, None] * (1.0 + 0.5 * u[2])
    # which resource the lost packet belongs to
    active = valid[:, None, :] & (base[:, None, :] > t_loss[:, :, None])  # pages x L x R
    if_seq = np.argmax(active, axis=2)  # sequential: the first unfinished resource is being sent
    n_active = np.maximum(active.sum(axis=2), 1)
    pick = np.minimum((u[3] * n_active).astype(np.int64), n_active - 1)
    if_rr = np.argmax(np.cumsum(active, axis=2) > pick[:, :, None], axis=2)
    target = np.where(round_robin[:, None], if_rr, if_seq)
    c_target = np.take_along_axis(base, target, axis=1)
    stream_rate = rate[:, None] / np.where(round_robin[:, None], n_active, 1)
    hol = np.where(has, stream_rate * np.clip(c_target - t_loss, 0.0, recovery), 0.0)
    done = base.copy()
    rows = np.broadcast_to(np.arange(p)[:, None], target.shape)
    np.maximum.at(done, (rows[has], target[has]), (t_loss + recovery)[has])
    done = np.where(valid, done + rtt_ms[:, None], 0.0)
    weights = sizes / np.maximum(total, 1.0)[:, None]
    return {
        "plt_ms": done.max(axis=1),
        "speed_index_ms": (weights * done).sum(axis=1),
        "hol_bytes": np.minimum(hol.sum(axis=1), total),
        "resources": valid.sum(axis=1),
        "page_bytes": total,
    }


def page_events(
    rng: np.random.Generator, sess: Sessions, sidx: np.ndarray, pop: Population, tp_client: TransportArrays, cfg: PageWorkload
) -> dict[str, EventBatch]:
    """Page loads of the browser sessions ``sidx``."""
    count = rng.poisson(cfg.pages_per_session, len(sidx))
    g, pos = ragged_index(count)
    s = sidx[g]
    m = len(s)
    client = sess.client[s]
    tp = tp_client.take(client)
    sizes, valid = page_resources(rng, m, cfg.max_resources)
    rate = flow_share(sess.net["bw_kbps"][s], tp.nconn, sess.net["cross"][s])
    u = rng.random((4, m, MAX_LOSS_EVENTS))
    res = load_pages(u, sizes, valid, sess.net["rtt_ms"][s], rate, sess.net["loss"][s], sess.net["burst"][s], tp.round_robin)
    new = pos == 0
    hs, _ = handshake_ms(rng, sess.net["rtt_ms"][s], tp.zero_rtt, pop.zero_rtt_p[client])
    hs = np.where(new, hs, 0.0)
    plt = hs + SERVER_MS + res["plt_ms"]
    t = sess.start_ms[s] + group_cumsum(rng.exponential(30_000.0, m), g).astype(np.int64)
    batch = EventBatch(
        "page_loads",
        s,
        t + plt.astype(np.int64),
        {
            "connection_id": connection_u64(sess.session_u64[s], np.zeros(m, dtype=np.int64), "browser"),
            "page_load_time_ms": plt,
            "speed_index_ms": hs + SERVER_MS + res["speed_index_ms"],
            "hol_blocked_bytes": res["hol_bytes"].round().astype(np.int64),
            "resource_count": res["resources"].astype(np.int64),
            "page_bytes": res["page_bytes"].astype(np.int64),
            "prioritization": tp.round_robin.astype(np.int8),
        },
    )
    return {"page_loads": batch}


def page_grid(
    loss: float, rtt_ms: float, bw_kbps: float, burst: float, *, sites: int = 35, replays: int = 30, seed: int = 1
) -> dict[str, float]:
    """Seed 001's lab setup: median over sites of the median relative difference (round-robin vs
    sequential, in %) of HoL-blocked bytes and SpeedIndex across replays of each site."""
    rng = np.random.default_rng(seed)
    sizes, valid = page_resources(rng, sites, 64)
    sizes = np.repeat(sizes, replays, axis=0)
    valid = np.repeat(valid, replays, axis=0)
    p = len(sizes)
    u = rng.random((4, p, MAX_LOSS_EVENTS))
    args = (np.full(p, rtt_ms), np.full(p, bw_kbps), np.full(p, loss), np.full(p, burst))
    seq = load_pages(u, sizes, valid, *args, np.zeros(p, dtype=bool))
    rr = load_pages(u, sizes, valid, *args, np.ones(p, dtype=bool))

    def delta(key: str) -> float:
        a = np.median(rr[key].reshape(sites, replays), axis=1)
        b = np.median(seq[key].reshape(sites, replays), axis=1)
        ok = b > 0
        return float(np.median(100.0 * (a[ok] / b[ok] - 1.0))) if ok.any() else 0.0

    return {"hol_delta_pct": delta("hol_bytes"), "speed_index_delta_pct": delta("speed_index_ms"), "hol_bytes_sequential": float(np.median(seq["hol_bytes"]))}
