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
  controller's response function needs to hold the window W=BDP+buffer (:func:`ca_loss_rate`:
  AIMD for Reno and Cubic's TCP-friendly region, the cubic curve for Cubic at large windows; N-
  connection emulation makes both more aggressive).
* **recovery**: a lost packet delays all later bytes of its stream by about one RTT plus the loss
  detection time (FACK/early retransmit: RTT/4 on average); losses in the last three packets (no
  dupacks) wait for a tail loss probe (PTO = max(2·SRTT, 10 ms)), one RTT more when the probe
  re-sent a packet that was not lost (its ACK then reveals the loss, and the probe counts as a
  retransmission), or, with TLP off, for the RTO (max(200 ms, 3·SRTT)). Loss during the bandwidth-limited phase also shrinks the window (β), which
  costs throughput when β·W falls below the BDP.
* **cross-stream head-of-line blocking**: when other streams' bytes are interleaved on the same
  ordered stream (forced HoL blocking: all bodies on one stream; or an ordered header stream),
  each loss among those ``cross_bytes`` also stalls this response by one recovery; with independent
  QUIC streams it does not.
* **spurious retransmissions**: a TLP fires needlessly when the ACK of the tail comes later than
  the PTO (RTT noise with log-normal σ = ``jitter`` plus the receiver's delayed-ACK timer); the
  RTO (≥ 200 ms) almost never fires spuriously, so disabling TLP removes those retransmissions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from simulation import variates
from simulation.network import MSS, ge_losses

HDR_CODES = ("hpack", "qpack", "qcram")
MP_CODES = ("off", "min_rtt", "reinjection", "qoe_reinjection")
CC_CODES = ("cubic", "reno")

PACED_INITIAL_BURST = 10
SS_OVERSHOOT = (0.11, 0.07)  # (unpaced, paced): fraction of the pipe lost at slow-start exit
QUEUE_DROP = 0.015  # per-packet drop rate from competing bursts into a full standing queue
PACED_BURST_FACTOR = 0.7
NEAR_FULL = 0.8
APP_LIMITED_TAIL = 0.12  # share of losses at the end of an application-limited flight (no dupacks follow)
DELAYED_ACK_MS = 25.0  # receiver's max ack delay (the tail packet may wait for it)
MIN_RTO_MS = 200.0
CUBIC_C = 0.4  # RFC 8312's cubic scaling constant


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


def aimd_params(tp: TransportArrays) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, beta) of the controller emulating N connections (Chromium's N-connection emulation).

    Reno: alpha = N packets/RTT, beta = (N - 1 + 0.5) / N. Cubic (TCP-friendly region, RFC 8312
    §4.2): beta = (N - 1 + 0.7) / N, alpha = 3 N^2 (1 - beta) / (1 + beta).
    """
    n = tp.nconn.astype(float)
    beta = np.where(tp.reno, (n - 0.5) / n, (n - 0.3) / n)
    alpha = np.where(tp.reno, n, 3.0 * n * n * (1.0 - beta) / (1.0 + beta))
    return alpha, beta


def queue_occupancy(beta: np.ndarray, bdp: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Mean fraction of the bottleneck buffer a sawtooth between beta·P and P fills (P = BDP + buffer).

    The window ramps (about linearly) from beta·P back to P after each reduction; the queue holds
    max(0, w − BDP). A larger beta (Cubic 0.7 vs Reno 0.5, more so with N-connection emulation)
    keeps a fuller standing queue (and a longer SRTT).
    """
    pipe = bdp + buf
    low = beta * pipe
    full = (low + pipe) / 2.0 - bdp
    partial = (pipe - bdp) ** 2 / (2.0 * np.maximum((1.0 - beta) * pipe, 1e-9))
    return np.clip(np.where(low >= bdp, full, partial) / np.maximum(buf, 1e-9), 0.0, 1.0)


def near_full_fraction(beta: np.ndarray, bdp: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Share of the sawtooth during which the queue is above :data:`NEAR_FULL` of the buffer.

    Bursts of competing traffic overflow a drop-tail buffer only then. The window spends a share
    (P − max(beta·P, T)) / ((1 − beta)·P) of each cycle above T = BDP + NEAR_FULL·buffer, so a
    controller that backs off less (larger beta) sits near the top longer: Cubic more than Reno.
    """
    pipe = bdp + buf
    top = bdp + NEAR_FULL * buf
    return np.clip((pipe - np.maximum(beta * pipe, top)) / np.maximum((1.0 - beta) * pipe, 1e-9), 0.0, 1.0)


def ca_loss_rate(tp: TransportArrays, bdp: np.ndarray, buf: np.ndarray, rtt_ms: np.ndarray) -> np.ndarray:
    """Per-packet congestion loss of a bandwidth-limited flow in congestion avoidance.

    Two parts: the loss rate the controller's response function needs to hold the window
    W = BDP + buffer with the (alpha, beta) of its N-connection emulation (:func:`aimd_params`):
    AIMD p = alpha·(1 + beta) / (2·(1 − beta)·W²) for Reno and Cubic's TCP-friendly region (1.5/W²
    for one Reno connection, Mathis et al. 1997), and for Cubic the larger of that and its
    cubic-curve rate p = (C·(3 + beta) / (4·(1 − beta)))^(1/3)·RTT/W^(4/3) (RFC 8312 §5.1, C = 0.4;
    1.072·RTT/W^(4/3) for beta = 0.7; RTT in seconds), so Cubic probes harder on paths with large
    windows and long RTTs; and drops of packets arriving while bursts of competing traffic overflow
    the standing queue, in proportion to how long the controller keeps the queue near full
    (:func:`near_full_fraction`), reduced by pacing, which removes the flow's own micro-bursts.
    """
    alpha, beta = aimd_params(tp)
    w = np.maximum(bdp + buf, 2.0)
    p_reno = alpha * (1.0 + beta) / (2.0 * (1.0 - beta) * w * w)
    cubic_k = (CUBIC_C * (3.0 + beta) / (4.0 * (1.0 - beta))) ** (1.0 / 3.0)
    p_cubic = np.maximum(p_reno, cubic_k * (rtt_ms / 1000.0) / w ** (4.0 / 3.0))
    p_aimd = np.where(tp.reno, p_reno, p_cubic)
    p_queue = QUEUE_DROP * near_full_fraction(beta, bdp, buf) * np.where(tp.pacing, PACED_BURST_FACTOR, 1.0)
    return np.minimum(p_aimd + p_queue, 0.05)


def _cong_losses(n, pipe, buf, cw0, warm, tp, rtt):
    """Expected congestion losses: initial burst, slow-start exit, congestion avoidance."""
    first = np.minimum(tp.iw, n)
    # unpaced: the initial window leaves at line rate into the buffer; paced: only the initial
    # burst does, the rest is spread over the RTT and is lost only if it exceeds the whole pipe
    burst_exp = np.where(
        tp.pacing,
        np.maximum(0.0, np.minimum(first, PACED_INITIAL_BURST) - buf) + np.maximum(0.0, first - pipe),
        np.maximum(0.0, first - buf),
    )
    burst_exp = np.where(warm, 0.0, burst_exp)
    exits = (n > pipe) & ~warm  # a reused connection is already past slow start
    ovs = np.where(tp.pacing, SS_OVERSHOOT[1], SS_OVERSHOOT[0])
    exit_exp = np.where(exits, ovs * np.minimum(n - pipe, pipe), 0.0)
    ca_exp = np.maximum(0.0, n - np.where(warm, 1.0, 2.0) * pipe) * ca_loss_rate(tp, pipe - buf, buf, rtt)
    return burst_exp, exit_exp, ca_exp


def transfer(
    rng: np.random.Generator,
    size_bytes: np.ndarray,
    net: dict[str, np.ndarray],
    tp: TransportArrays,
    *,
    warm: np.ndarray,
    interleaved_bytes: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Simulate transfers; ``net`` holds per-transfer rtt_ms, loss, burst, bw_kbps, buffer_pkts, jitter, cross.

    ``interleaved_bytes`` are other streams' bytes the connection delivers before this response's
    last byte (concurrent requests of a page, the audio track...). They share the connection's
    window and rate in every arm; with ``single_stream`` (FHOL) their losses also stall this
    response.

    Returns arrays: time_ms (request to last byte delivered), ttfb_ms, hol_ms, packets, lost,
    retx, sent, loss_events, srtt_ms, min_rtt_ms, cwnd_bytes, rate_kbps.
    """
    m = len(size_bytes)
    rtt = net["rtt_ms"]
    bw = flow_share(net["bw_kbps"], tp.nconn, net["cross"])
    n = np.maximum(np.ceil(size_bytes / MSS), 1.0)
    x = np.zeros(m) if interleaved_bytes is None else interleaved_bytes / MSS
    nt = n + x  # packets the connection delivers until this response is complete
    own = n / nt
    bdp = np.maximum(bw * rtt / (8.0 * MSS), 1.0)
    buf = net["buffer_pkts"]
    buffer_ms = buf * 8.0 * MSS / net["bw_kbps"]
    pipe = bdp + buf
    cw0 = np.where(warm, np.maximum(tp.iw, bdp), tp.iw).astype(float)
    target = np.minimum(nt, bdp)
    ss_rounds = np.where(target > cw0, np.ceil(np.log2(target / cw0 + 1.0)) - 1.0, 0.0)
    ser = nt * MSS * 8.0 / bw
    bw_limited = nt > pipe
    occ = queue_occupancy(aimd_params(tp)[1], bdp, buf)
    queue = np.where(bw_limited, occ * buffer_ms, 0.05 * buffer_ms * np.minimum(nt / pipe, 1.0))
    base = rtt * (1.0 + ss_rounds) + ser + queue

    # one fixed block of uniforms per transfer: common random numbers across arms
    u = rng.random((12, m))

    # losses: channel (Gilbert-Elliott) + self-inflicted congestion losses
    ev_ch, lost_ch = ge_losses(u[0], u[1], n, net["loss"], net["burst"])
    burst_exp, exit_exp, ca_exp = _cong_losses(nt, pipe, buf, cw0, warm, tp, rtt)
    bl = variates.poisson(u[2], burst_exp * own)
    el = variates.poisson(u[3], exit_exp * own)
    cl = variates.poisson(u[4], ca_exp * own)
    lost = np.minimum(lost_ch + bl + el + cl, n).astype(np.int64)
    events = ev_ch + (bl > 0) + (el > 0) + cl

    # recovery: fast retransmit (RTT + detection) vs a tail loss (TLP or RTO); at most one loss
    # burst can sit in the last packets (fewer than three dupacks follow it)
    q_tail = np.minimum((3.0 + net["burst"]) / n + APP_LIMITED_TAIL, 1.0)
    # slow-start overshoot losses sit at the end of a transfer that ends within a pipe after exit
    exit_tail = (el > 0) & (nt < 2.0 * pipe)
    tail = np.maximum(variates.binary(u[5], 1.0 - (1.0 - q_tail) ** (events - (el > 0))), exit_tail)
    fast = events - tail
    pto = np.maximum(2.0 * rtt, 10.0)
    rto = np.maximum(MIN_RTO_MS, 3.0 * rtt)
    # a probe re-sends the flight's last packet, which repairs the loss only when that packet was
    # among the lost ones (a burst of ~``burst`` packets somewhere in the last 3 + burst); else
    # the probe's ACK reveals the loss and its repair takes one more round trip
    probe_misses = u[11] >= net["burst"] / (3.0 + net["burst"])
    tail_wait = np.where(tp.tlp > 0, pto + np.where(probe_misses, rtt, 0.0), rto)
    recovery = rtt * fast * (1.0 + 0.5 * u[6]) + tail * tail_wait

    # window reduction in the bandwidth-limited phase
    alpha, beta_eff = aimd_params(tp)
    deficit = np.maximum(0.0, bdp - beta_eff * pipe) ** 2 / (2.0 * alpha)
    frac_bw = np.maximum(0.0, nt - pipe) / nt
    ev_bw = cl + (el > 0) + variates.rounded(u[7], ev_ch * frac_bw)
    penalty = np.minimum(ev_bw * deficit, np.maximum(0.0, nt - pipe)) * MSS * 8.0 / bw

    # cross-stream head-of-line blocking: losses of the interleaved bytes, on one ordered stream
    cross_rate = net["loss"] / np.maximum(net["burst"], 1.0) + (burst_exp + exit_exp + ca_exp) / nt
    k_cross = variates.poisson(u[8], np.where(tp.single_stream, x * cross_rate, 0.0))
    hol = rtt * k_cross * (1.0 + 0.5 * u[6])

    # spurious retransmissions: TLP fired although the tail ACK was only late
    # (RTT noise with log-normal sigma = jitter, plus the receiver's delayed-ACK wait)
    ack_at = rtt * np.exp(net["jitter"] * variates.normal(u[9])) + DELAYED_ACK_MS * u[10]
    spurious = np.where(tp.tlp > 0, (ack_at > pto).astype(np.int64) + ((tp.tlp > 1) & (ack_at > 2.0 * pto)), ack_at > rto)
    # a probe that repaired nothing was one more retransmission
    probe_redundant = (tp.tlp > 0) & (tail > 0) & probe_misses
    spurious = spurious.astype(np.int64) + probe_redundant
    retx = lost + spurious
    time = base + recovery + penalty + hol
    cwnd = np.where(events > 0, beta_eff * np.minimum(pipe, np.maximum(cw0, n)), np.minimum(pipe, np.maximum(cw0, n)))
    return {
        "time_ms": time,
        "ttfb_ms": rtt + np.minimum(ser, MSS * 8.0 / bw),
        "hol_ms": hol,
        "packets": n.astype(np.int64),
        "lost": lost,
        "lost_channel": lost_ch,
        "lost_burst": bl,
        "lost_exit": el,
        "lost_ca": cl,
        "spurious": spurious,
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
