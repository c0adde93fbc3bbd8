"""Vectorised model of one HTTP response transferred over a QUIC connection.

Every function works on arrays (one element per transfer); nothing loops over events.

Per transfer of ``size`` bytes (``n`` packets of :data:`MSS`) on a path with base RTT ``rtt``,
bottleneck rate ``bw`` (the flow's share, given competing flows and N-connection emulation) and a
bottleneck buffer of ``buf`` packets:

* **delivery without loss**: one RTT for request/first byte, extra slow-start rounds from the
  initial window (``IW10`` vs ``IW32``, or an already open window on a reused connection) until the
  window covers the BDP, then serialisation at ``bw``; bandwidth-limited flows add a standing
  queue whose depth depends on the controller (Cubic's β=0.7 keeps more queue than Reno's 0.5) and
  pacing.
* **loss**: random channel loss from the Gilbert–Elliott channel plus congestion loss the sender
  causes itself: the initial burst overflowing a shallow buffer (IW packets at line rate, or 10 with
  pacing), the slow-start overshoot when the window passes BDP+buffer (halved by pacing, which
  lets delay-based slow-start exit act), and losses in congestion avoidance at the rate the
  controller's response function needs to hold the window W=BDP+buffer: Reno ``p = 1.5/W²``
  (Mathis et al. 1997), Cubic in its TCP-friendly region ``p = 8.5/W²`` (RFC 8312 §4.2, W =
  sqrt(3(1+β)/(2(1-β)))/sqrt(p) with β=0.7), both × N² for N-connection emulation.
* **recovery**: a lost packet delays all later bytes of its stream by about one RTT plus the loss
  detection time (FACK/early retransmit: RTT/4 on average); losses in the last three packets (no
  dupacks) wait for a tail loss probe (PTO = max(2·SRTT, 10 ms)) or, with TLP off, for the RTO
  (max(200 ms, 3·SRTT)). Loss during the bandwidth-limited phase also shrinks the window (β), which
  costs throughput when β·W falls below the BDP.
* **cross-stream head-of-line blocking**: when other streams' bytes are interleaved on the same
  ordered stream (forced HoL blocking: all bodies on one stream; or an ordered header stream),
  each loss among those ``cross_bytes`` also stalls this response by one recovery; with independent
  QUIC streams it does not.
* **spurious retransmissions**: a TLP fires needlessly when the ACK of the tail is later than the
  PTO (RTT noise with log-normal σ = ``jitter``); disabling TLP removes those.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from simulation.network import MSS, ge_losses

HDR_CODES = ("hpack", "qpack", "qcram")
MP_CODES = ("off", "min_rtt", "reinjection", "qoe_reinjection")
CC_CODES = ("cubic", "reno")

PACED_INITIAL_BURST = 10
SS_OVERSHOOT = (0.12, 0.06)  # (unpaced, paced): fraction of the pipe lost at slow-start exit
CA_LOSS_COEF = (8.5, 1.5)  # (cubic, reno): response-function constant c in p = c N^2 / W^2
BETA = (0.7, 0.5)  # (cubic, reno) multiplicative decrease
QUEUE_OCCUPANCY = (0.55, 0.35)  # (cubic, reno) mean standing-queue fraction of the buffer
MIN_RTO_MS = 200.0


@dataclass(frozen=True)
class TransportArrays:
    """Transport settings, one element per client (or per event after :meth:`take`)."""

    single_stream: np.ndarray  # bool: all bodies on one ordered stream (FHOL)
    hdr: np.ndarray  # int8 code into HDR_CODES
    iw: np.ndarray  # int16 initial window, packets
    reno: np.ndarray  # bool
    pacing: np.ndarray  # bool
    tlp: np.ndarray  # int8 number of TLPs before RTO
    zero_rtt: np.ndarray  # bool
    pooling: np.ndarray  # bool
    nconn: np.ndarray  # int8 emulated connections
    round_robin: np.ndarray  # bool
    multipath: np.ndarray  # int8 code into MP_CODES

    def take(self, idx: np.ndarray) -> TransportArrays:
        return TransportArrays(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})


def flow_share(bw_kbps: np.ndarray, nconn: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """Bottleneck rate of a flow emulating ``nconn`` connections against ``cross`` competing flows."""
    n = nconn.astype(float)
    return bw_kbps * n / (n + cross)


def _cong_losses(n, pipe, buf, bdp, cw0, warm, tp):
    """Expected congestion losses: initial burst, slow-start exit, congestion avoidance."""
    burst = np.where(tp.pacing, np.minimum(tp.iw, PACED_INITIAL_BURST), tp.iw)
    burst_exp = np.where(warm, 0.0, np.maximum(0.0, np.minimum(burst, n) - buf))
    exits = (n > pipe) & (cw0 < pipe)
    ovs = np.where(tp.pacing, SS_OVERSHOOT[1], SS_OVERSHOOT[0])
    exit_exp = np.where(exits, ovs * np.minimum(n - pipe, pipe), 0.0)
    coef = np.where(tp.reno, CA_LOSS_COEF[1], CA_LOSS_COEF[0])
    p_ca = np.minimum(coef * tp.nconn.astype(float) ** 2 / np.maximum(pipe, 2.0) ** 2, 0.05)
    ca_exp = np.maximum(0.0, n - 2.0 * pipe) * p_ca
    return burst_exp, exit_exp, ca_exp


def transfer(
    rng: np.random.Generator,
    size_bytes: np.ndarray,
    net: dict[str, np.ndarray],
    tp: TransportArrays,
    *,
    warm: np.ndarray,
    cross_bytes: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Simulate transfers; ``net`` holds per-transfer rtt_ms, loss, burst, bw_kbps, buffer_ms, jitter, cross.

    Returns arrays: time_ms (request to last byte delivered), ttfb_ms, hol_ms, packets, lost,
    retx, sent, loss_events, srtt_ms, min_rtt_ms, cwnd_bytes, rate_kbps.
    """
    m = len(size_bytes)
    rtt = net["rtt_ms"]
    bw = flow_share(net["bw_kbps"], tp.nconn, net["cross"])
    n = np.maximum(np.ceil(size_bytes / MSS), 1.0)
    bdp = np.maximum(bw * rtt / (8.0 * MSS), 1.0)
    buf = np.maximum(net["bw_kbps"] * net["buffer_ms"] / (8.0 * MSS), 2.0)
    pipe = bdp + buf
    cw0 = np.where(warm, np.maximum(tp.iw, bdp), tp.iw).astype(float)
    target = np.minimum(n, bdp)
    ss_rounds = np.where(target > cw0, np.ceil(np.log2(target / cw0 + 1.0)) - 1.0, 0.0)
    ser = size_bytes * 8.0 / bw
    reno = tp.reno.astype(np.intp)
    bw_limited = n > pipe
    occ = np.take(QUEUE_OCCUPANCY, reno) * np.where(tp.pacing, 0.8, 1.0)
    queue = np.where(bw_limited, occ * net["buffer_ms"], 0.05 * net["buffer_ms"] * np.minimum(n / pipe, 1.0))
    base = rtt * (1.0 + ss_rounds) + ser + queue

    # losses: channel (Gilbert-Elliott) + self-inflicted congestion losses
    ev_ch, lost_ch = ge_losses(rng, n, net["loss"], net["burst"])
    burst_exp, exit_exp, ca_exp = _cong_losses(n, pipe, buf, bdp, cw0, warm, tp)
    bl = rng.poisson(burst_exp)
    el = rng.poisson(exit_exp)
    cl = rng.poisson(ca_exp)
    lost = np.minimum(lost_ch + bl + el + cl, n).astype(np.int64)
    events = ev_ch + (bl > 0) + (el > 0) + cl

    # recovery: fast retransmit (RTT + detection) vs tail loss (TLP or RTO)
    tail = rng.binomial(events, np.minimum(3.0 / n, 1.0))
    fast = events - tail
    pto = np.maximum(2.0 * rtt, 10.0)
    rto = np.maximum(MIN_RTO_MS, 3.0 * rtt)
    tail_wait = np.where(tp.tlp > 0, pto, rto)
    u = rng.random((2, m))
    recovery = rtt * fast * (1.0 + 0.5 * u[0]) + tail * tail_wait

    # window reduction in the bandwidth-limited phase
    beta = np.take(BETA, reno)
    nconn = tp.nconn.astype(float)
    beta_eff = (nconn - 1.0 + beta) / nconn
    deficit = np.maximum(0.0, bdp - beta_eff * pipe) ** 2 / (2.0 * nconn)
    frac_bw = np.maximum(0.0, n - pipe) / n
    ev_bw = cl + (el > 0) + rng.binomial(ev_ch, frac_bw)
    penalty = np.minimum(ev_bw * deficit, np.maximum(0.0, n - pipe)) * MSS * 8.0 / bw

    # cross-stream head-of-line blocking on a shared ordered stream
    if cross_bytes is None:
        hol = np.zeros(m)
    else:
        cross_pkts = cross_bytes / MSS
        cong_rate = (burst_exp + exit_exp + ca_exp) / n
        k_cross = rng.poisson(cross_pkts * (net["loss"] / np.maximum(net["burst"], 1.0) + cong_rate))
        hol = rtt * k_cross * (1.0 + 0.5 * u[1])

    # spurious retransmissions: TLP fired although the tail ACK was only late
    sigma = net["jitter"]
    p_tlp = 0.5 * _erfc(np.log(2.0) / (sigma * np.sqrt(2.0)))
    p_rto = 0.5 * _erfc(np.log(np.maximum(rto / rtt, 1.0)) / (sigma * np.sqrt(2.0)))
    spurious = np.where(tp.tlp > 0, rng.binomial(tp.tlp.astype(np.int64), p_tlp), rng.binomial(1, p_rto))
    retx = lost + spurious
    time = base + recovery + penalty + hol
    cwnd = np.where(events > 0, beta_eff * np.minimum(pipe, np.maximum(cw0, n)), np.minimum(pipe, np.maximum(cw0, n)))
    return {
        "time_ms": time,
        "ttfb_ms": rtt + np.minimum(ser, MSS * 8.0 / bw),
        "hol_ms": hol,
        "packets": n.astype(np.int64),
        "lost": lost,
        "retx": retx.astype(np.int64),
        "sent": (n + retx).astype(np.int64),
        "loss_events": events,
        "srtt_ms": rtt + queue,
        "min_rtt_ms": rtt,
        "cwnd_bytes": (cwnd * MSS).astype(np.int64),
        "rate_kbps": bw,
    }


def _erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7), vectorised."""
    x = np.asarray(x, dtype=float)
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = poly * np.exp(-x * x)
    return np.where(x >= 0, y, 2.0 - y)


def handshake_ms(rng: np.random.Generator, rtt: np.ndarray, zero_rtt_enabled: np.ndarray, zero_rtt_p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Handshake time on the critical path of a new connection and whether it used 0-RTT.

    With 0-RTT enabled a client that holds a cached server config (probability ``zero_rtt_p``,
    ~75% of connections fleet-wide, as in seed 003) sends its request in the first flight; otherwise
    the QUIC crypto handshake costs one RTT.
    """
    zr = zero_rtt_enabled & (rng.random(len(rtt)) < zero_rtt_p)
    return np.where(zr, 0.0, rtt), zr
