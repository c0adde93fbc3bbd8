"""Multipath QUIC: one chunk download over a primary (fast) and a secondary (slower, lossier) path.

Schedulers (seed 004, XLINK, Zheng et al. SIGCOMM 2021):

* **single_path** – the whole chunk on path 1 (:func:`simulation.transport.transfer`).
* **min_rtt** – the scheduler fills the lowest-RTT path's window first and spills the rest to the
  other path, so each path carries a share of the chunk proportional to the rate it drains at; the
  chunk completes when *both* parts are delivered. Losses on the slow path need its long RTT to be
  repaired, so the slow path's part often finishes last: multipath head-of-line blocking.
* **reinjection** – once path 1 has delivered its part, whatever path 2 still has outstanding
  (its unacknowledged bytes, at least its in-flight window) is re-sent on path 1; the chunk
  completes at the earlier of the two copies. Costs the re-injected bytes.
* **qoe_reinjection** – XLINK: the client reports its buffer level (QoE feedback) and the server
  switches re-injection by XLINK's double threshold: always below :data:`QOE_BUFFER_LOW_S` of
  buffered play time, never above :data:`QOE_BUFFER_HIGH_S`, and in between only when path 2's
  lateness would outlast the buffer; otherwise it behaves like ``min_rtt``. The rare, very late
  chunks of a draining buffer are still rescued, the many slightly late ones of a full buffer are
  not, so it keeps most of the tail gain for a fraction of the bytes. XLINK also returns path 2's
  ACKs on the fast path ("fast-path ACK"), so path 2's feedback loop (slow-start rounds, loss
  recovery) takes half of each path's RTT instead of path 2's whole RTT, which shortens
  multipath head-of-line blocking where no re-injection happens: at the median.

The second path is the other access network of the device: RTT, loss and rate drawn around the
first path's by the factors in :data:`SECOND_PATH`, only weakly correlated with it (a congested
wifi does not congest the cellular path), which is why a second path rescues the tail.
"""

from __future__ import annotations

import numpy as np

from simulation.network import MSS
from simulation.transport import MP_CODES, TransportArrays, transfer

# XLINK's double-threshold QoE control: below LOW the server always re-injects, above HIGH never,
# in between when the buffered play time would not cover path 2's expected lateness
QOE_BUFFER_LOW_S = 8.0
QOE_BUFFER_HIGH_S = 20.0
# median factor and log-normal sigma of path 2 relative to path 1
SECOND_PATH = {"rtt": (3.0, 0.8), "loss": (6.0, 1.0), "bw": (0.2, 0.8)}
SECOND_PATH_CORRELATION = 0.3  # the two access networks share the device and place, little else
SECOND_PATH_BURST = 3.0
SECOND_PATH_BUFFER_PKTS = 256.0


def _around(rng_z: np.ndarray, first: np.ndarray, typical: np.ndarray, factor: float, sigma: float) -> np.ndarray:
    """Path-2 values: ``factor`` × path 1's, correlated with it only by :data:`SECOND_PATH_CORRELATION`.

    In log space path 2 is pulled from path 1's value toward what is typical for the device
    (the fleet's median for its platform and network type), then spread by ``sigma``: a very bad
    wifi does not make the cellular path as bad.
    """
    rho = SECOND_PATH_CORRELATION
    log1 = np.log(np.maximum(first, 1e-12))
    return factor * np.exp(rho * log1 + (1.0 - rho) * np.log(np.maximum(typical, 1e-12)) + sigma * rng_z)


def second_path(rng: np.random.Generator, net: dict[str, np.ndarray], typical: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Network of the secondary path of each transfer (e.g. cellular next to wifi); ``typical``
    holds the fleet's medians (rtt_ms, loss, bw_kbps) for each transfer's device."""
    m = len(net["rtt_ms"])
    z = rng.standard_normal((3, m))
    out = dict(net)
    out["rtt_ms"] = _around(z[0], net["rtt_ms"], typical["rtt_ms"], *SECOND_PATH["rtt"])
    loss1 = np.maximum(net["loss"], 1e-4)
    out["loss"] = np.minimum(_around(z[1], loss1, np.maximum(typical["loss"], 1e-4), *SECOND_PATH["loss"]), 0.2)
    out["bw_kbps"] = _around(z[2], net["bw_kbps"], typical["bw_kbps"], *SECOND_PATH["bw"])
    out["burst"] = np.full(m, SECOND_PATH_BURST)
    out["buffer_pkts"] = np.full(m, SECOND_PATH_BUFFER_PKTS)
    out["cross"] = np.zeros(m, dtype=np.int16)
    return out


def multipath_transfer(
    rng: np.random.Generator,
    size: np.ndarray,
    net: dict[str, np.ndarray],
    tp: TransportArrays,
    warm: np.ndarray,
    buffered_s: np.ndarray,
    typical: dict[str, np.ndarray],
    interleaved_bytes: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Chunk downloads under each element's scheduler (``tp.multipath``); ``typical``: see
    :func:`second_path`.

    Returns time_ms and the per-path arrays p1_* / p2_* (bytes, reinjected, srtt_ms, lost), plus the
    path-1 transfer's fields for the connection counters.
    """
    m = len(size)
    sched = tp.multipath.astype(np.int64)
    mp = sched > 0
    net2 = second_path(rng, net, typical)
    qoe = sched == MP_CODES.index("qoe_reinjection")
    # XLINK returns path 2's ACKs on the fast path: its feedback loop is half of each path's RTT
    net2["rtt_ms"] = np.where(qoe, (net["rtt_ms"] + net2["rtt_ms"]) / 2.0, net2["rtt_ms"])
    share2 = net2["bw_kbps"] / (net2["bw_kbps"] + net["bw_kbps"])
    # min-RTT fills path 1's window first, but path 2 always gets at least its own window's worth
    window2 = net2["bw_kbps"] * net2["rtt_ms"] / 8.0 + tp.iw * MSS
    s2 = np.where(mp, np.maximum(size * share2, np.minimum(size * 0.5, window2)), 0.0).round()
    s1 = size - s2
    t1 = transfer(rng, np.maximum(s1, 1.0), net, tp, warm=warm, interleaved_bytes=interleaved_bytes)
    t2 = transfer(rng, np.maximum(s2, 1.0), net2, tp, warm=warm)
    late = mp & (t2["time_ms"] > t1["time_ms"])
    # what path 2 has not delivered when path 1 is done: progress is ~linear after the first RTT,
    # and at least its in-flight window is unacknowledged
    span = np.maximum(t2["time_ms"] - net2["rtt_ms"], 1.0)
    remaining = s2 * np.clip((t2["time_ms"] - t1["time_ms"]) / span, 0.0, 1.0)
    in_flight = np.minimum(s2, net2["bw_kbps"] * net2["rtt_ms"] / 8.0)
    outstanding = np.where(late, np.maximum(remaining, in_flight), 0.0)
    # QoE-driven: tolerate path 2's lateness while the playback buffer can absorb it
    lag_s = (t2["time_ms"] - t1["time_ms"]) / 1000.0
    qoe_wants = qoe & ((buffered_s < QOE_BUFFER_LOW_S) | ((buffered_s < QOE_BUFFER_HIGH_S) & (buffered_s < lag_s)))
    wants = (sched == MP_CODES.index("reinjection")) | qoe_wants
    reinject = late & wants
    resend_ms = t1["time_ms"] + net["rtt_ms"] / 2.0 + outstanding * 8.0 / t1["rate_kbps"]
    t_mp = np.where(reinject, np.minimum(t2["time_ms"], resend_ms), np.maximum(t1["time_ms"], np.where(mp, t2["time_ms"], 0.0)))
    reinjected = np.where(reinject, outstanding, 0.0).round()
    out = dict(t1)
    for key in ("packets", "lost", "retx", "sent"):
        out[key] = t1[key] + np.where(mp, t2[key], 0)
    out["sent"] = out["sent"] + np.ceil(reinjected / MSS).astype(np.int64)
    out["time_ms"] = t_mp
    out.update(
        p1_bytes=s1 + reinjected,
        p1_reinjected=reinjected,
        p1_srtt_ms=t1["srtt_ms"],
        p1_lost=t1["lost"],
        p2_bytes=s2,
        p2_reinjected=np.zeros(m),
        p2_srtt_ms=t2["srtt_ms"],
        p2_lost=np.where(mp, t2["lost"], 0),
    )
    return out
