"""Page loads under HTTP/3 prioritisation: ``page_loads`` events and seed 001's lab grid.

Seed 001 (Sander, Kunze, Wehrle, "Analyzing the Influence of Resource Prioritization on HTTP/3
HOL Blocking and Performance", IETF 114 maprg) replays websites over a loss × burst × RTT ×
bandwidth grid and compares the server sending responses **sequentially** (Chrome's scheme: one
response at a time, in priority order) with **round-robin** (all requested responses interleaved
packet by packet). This module models a page load mechanistically, in four parts.

**Pages** (:func:`draw_pages`). A page is an HTML document plus sub-resources of seven kinds, with
counts and sizes from the HTTP Archive's Web Almanac 2022 ("Page Weight" and "Media" chapters:
the median mobile page makes 70 requests, 22 images, 21 scripts, 7 stylesheets, and weighs about
2 MB; images are ~10 KB at the median with a heavy tail). Sites come in three size classes
(:data:`SIZE_CLASSES`) that scale the request counts and the response sizes like the Almanac's
10th/50th/90th percentile pages. Stylesheets and head scripts are *render-blocking*; images are
above the fold (visible) or below it, their bytes pixels × bits per pixel (Almanac: 0.046 MP and
2.3 bits per pixel at the median, drawn independently).

**Requests** (:func:`schedule`). Chromium's ResourceScheduler
(services/network/resource_scheduler) decides *when* the browser asks for what: the HTML first;
its head resources (stylesheets, scripts, fonts) as soon as the first HTML bytes arrive, with at
most one "delayable" request (the first image) in flight while those layout-blocking requests
load; the visible images once layout can run (the render-blocking resources are in); the
delayable rest (async scripts, images below the fold, XHR) when no high-priority request is in
flight, at most ten at a time. Every request reaches the server half an RTT after the browser
sends it; the server sends what has been requested, in Chrome's priority order (sequential) or
interleaving all requested responses one packet each in turn (round-robin; the ten delayable
requests in flight behave as ten chains of responses).

**Transport** (:func:`transmission_clock`). One QUIC connection, simulated round by round: slow
start from the initial window, AIMD with the controller's (α, β) after a loss round, a drop-tail
bottleneck buffer (the seed's lab: one BDP), Gilbert–Elliott channel loss (burst size as in the
seed's grid), and a lost packet repaired in the next round when the ACK of the third later
packet returns (RFC 9002 packet threshold), i.e. one round trip plus three packets later, behind
whatever the bottleneck queue holds. The clock gives every *transmission slot* its arrival time;
it does not depend on the scheduler, so both schedulers see the same losses at the same times
(common random numbers) and differ only in which response each slot carries.

**Visual progress** (:func:`page_metrics`). A stream's bytes are delivered in order: a packet is
usable when it and every earlier packet of its stream have arrived, so the bytes that arrive
behind a hole are head-of-line blocked until the retransmission (``hol_blocked_bytes``). The page
paints first when the render-blocking resources and the first HTML bytes are in; after that the
text (the HTML, shown once the web fonts are in; 30% of the change) and the visible images
(painted progressively, as Chrome decodes JPEG/PNG/WebP incrementally; weighted by their bytes,
like Bocchi, De Cicco and Rossi's ByteIndex, "Measuring the Quality of Experience of Web users",
SIGCOMM CCR 2016) add their weight as their in-order bytes arrive. SpeedIndex is the integral of visual incompleteness over time (WebPageTest's definition),
so what a lost packet stalls reaches it through the schedule: under sequential scheduling the
hole sits in the one response being sent and everything behind it waits a repair time; under
round-robin the same hole holds back one response of many, whose next packets were due later
anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.apps.common import EventBatch, connection_u64, group_cumsum, ragged_index
from simulation.hashing import hash2, str_key
from simulation.network import MSS
from simulation.population import Population
from simulation.scenario import PageWorkload
from simulation.sessions import Sessions
from simulation.transport import TransportArrays, aimd_params, flow_share, handshake_ms

# --- resources -------------------------------------------------------------------------------
#: resource kinds in Chrome's priority order (HTTP/3 urgency, then request order), which is the
#: order the sequential scheduler sends them in
KINDS = ("html", "css", "font", "script", "image_visible", "script_async", "image_below", "other")
HTML, CSS, FONT, SCRIPT, IMAGE_VISIBLE, SCRIPT_ASYNC, IMAGE_BELOW, OTHER = range(len(KINDS))
RENDER_BLOCKING = np.array([False, True, False, True, False, False, False, False])
#: request phase of each kind: 0 the document, 1 layout-blocking (head), 2 visible images (after
#: layout), 3 delayable (when no high-priority request is in flight)
PHASE = np.array([0, 1, 1, 1, 2, 3, 3, 3])
#: mean count of each kind on the median page (Web Almanac 2022, mobile: 70 requests, of them
#: 22 images, 21 scripts, 7 stylesheets; about a quarter of the images are above the fold and a
#: quarter of the scripts block rendering; "other" is XHR/JSON, beacons, media manifests)
MEDIAN_COUNTS = np.array([1.0, 7.0, 3.0, 5.0, 5.0, 16.0, 17.0, 16.0])
#: response size (bytes): log-normal median and sigma per kind (Almanac 2022: per-page medians of
#: 30 KB HTML, 68 KB CSS over 7 files, 461 KB of scripts over 21, fonts ~20 KB each; responses are
#: small at the median with heavy tails). Images are pixels x bits per pixel (below).
SIZE_MEDIAN = np.array([30_000.0, 3_000.0, 20_000.0, 4_000.0, 0.0, 4_000.0, 0.0, 1_500.0])
SIZE_SIGMA = np.array([0.8, 1.6, 0.6, 1.85, 0.0, 1.85, 0.0, 1.2])
IMAGE_PIXELS_MEDIAN = 35_000.0  # Almanac 2022 Media: 0.046 MP at the median <img>
IMAGE_PIXELS_SIGMA = 1.2
VISIBLE_PIXELS_FACTOR = (
    3.0  # above-the-fold images are the page's big ones (the LCP image, median 0.43 MP)
)
BITS_PER_PIXEL_MEDIAN = 2.3  # Almanac 2022 Media, mobile; inter-quartile 1.0-5.8
BITS_PER_PIXEL_SIGMA = 1.3
MIN_RESPONSE = 300.0
MAX_RESPONSE = 4_000_000.0
TEXT_SHARE = 0.3  # share of the viewport's visual change that is text (the rest: visible images)

#: site size classes: (name, share of sites, request-count factor, response-size factor). The
#: Almanac's 10th/50th/90th percentile mobile pages make 23/70/168 requests and weigh
#: 445 KB/2.0 MB/8.1 MB, i.e. x0.33/x1/x2.4 the requests and about x0.65/x1/x1.7 the bytes per
#: request; the classes are the lower quartile, the middle half and the upper quartile of sites.
SIZE_CLASSES = ("small", "medium", "large")
CLASS_SHARES = np.array([0.25, 0.5, 0.25])
CLASS_COUNT_FACTOR = np.array([0.35, 1.0, 2.2])
CLASS_SIZE_FACTOR = np.array([0.65, 1.0, 1.6])
#: spread of a page's counts around its class (gamma factor, mean 1): sites differ within a class
COUNT_SHAPE = 6.0

DELAYABLE_IN_FLIGHT = 10  # Chromium ResourceScheduler: at most 10 delayable requests in flight
SERVER_MS = 60.0
DUPACK_THRESHOLD = 3  # RFC 9002 kPacketThreshold
#: fleet page loads are simulated in transmission units of several packets when a page has more
#: packets than this (the lab grid uses single packets)
FLEET_MAX_UNITS = 96
PIPE_UNITS = 8.0  # a unit is at most an eighth of the path's pipe ...
FINEST_FACTOR = 4  # ... unless that makes more than 4 x FLEET_MAX_UNITS units


@dataclass(frozen=True)
class Pages:
    """Resources of ``n`` pages, flat and grouped by page (resources of a page are contiguous, in
    document order within each kind)."""

    n: int
    page: np.ndarray  # int64 page of each resource
    kind: np.ndarray  # int8 index into KINDS
    size: np.ndarray  # float bytes
    #: visual weight (sums to 1 per page; 0 for what is not painted above the fold)
    weight: np.ndarray
    size_class: np.ndarray  # int8 per page, index into SIZE_CLASSES

    @property
    def page_bytes(self) -> np.ndarray:
        return np.bincount(self.page, weights=self.size, minlength=self.n)

    @property
    def resources(self) -> np.ndarray:
        return np.bincount(self.page, minlength=self.n)


def draw_pages(rng: np.random.Generator, size_class: np.ndarray) -> Pages:
    """One page (structure and sizes) per element of ``size_class`` (codes into SIZE_CLASSES)."""
    size_class = np.asarray(size_class, dtype=np.int8)
    n = len(size_class)
    site = rng.gamma(COUNT_SHAPE, 1.0 / COUNT_SHAPE, n) * CLASS_COUNT_FACTOR[size_class]
    counts = rng.poisson(site[:, None] * MEDIAN_COUNTS[None, :])
    counts[:, HTML] = 1
    page = np.repeat(np.repeat(np.arange(n), len(KINDS)), counts.ravel())
    kind = np.repeat(np.tile(np.arange(len(KINDS), dtype=np.int8), n), counts.ravel())
    m = len(kind)
    z = rng.standard_normal((3, m))
    scale = CLASS_SIZE_FACTOR[size_class[page]]
    size = SIZE_MEDIAN[kind] * np.exp(SIZE_SIGMA[kind] * z[0]) * scale
    image = (kind == IMAGE_VISIBLE) | (kind == IMAGE_BELOW)
    pixels = (
        IMAGE_PIXELS_MEDIAN
        * np.exp(IMAGE_PIXELS_SIGMA * z[1])
        * np.where(kind == IMAGE_VISIBLE, VISIBLE_PIXELS_FACTOR, 1.0)
        * scale
    )
    bits = BITS_PER_PIXEL_MEDIAN * np.exp(BITS_PER_PIXEL_SIGMA * z[2])
    size = np.where(image, pixels * bits / 8.0, size)
    size = np.clip(size, MIN_RESPONSE, MAX_RESPONSE).round()
    # visual weight: text TEXT_SHARE (all of it without visible images), visible images by bytes
    visible = kind == IMAGE_VISIBLE
    vis_total = np.bincount(page, weights=np.where(visible, size, 0.0), minlength=n)
    has_img = vis_total > 0
    weight = np.where(visible, (1.0 - TEXT_SHARE) * size / np.maximum(vis_total[page], 1e-9), 0.0)
    weight = np.where(kind == HTML, np.where(has_img[page], TEXT_SHARE, 1.0), weight)
    return Pages(n=n, page=page, kind=kind, size=size, weight=weight, size_class=size_class)


# --- transport --------------------------------------------------------------------------------
def loss_flags(
    u_start: np.ndarray, u_len: np.ndarray, loss: np.ndarray, burst: np.ndarray
) -> np.ndarray:
    """Gilbert–Elliott losses of consecutive transmissions (rows: connections).

    A loss burst starts at a transmission with probability ``loss / burst`` and lasts a geometric
    number of transmissions with mean ``burst`` (so the long-run loss rate is about ``loss``). The
    *k*-th burst of a row takes its length from ``u_len[row, k]`` (bursts past its width last one
    transmission)."""
    b = np.maximum(np.asarray(burst, dtype=float), 1.0)
    start = u_start < (np.asarray(loss, dtype=float) / b)[:, None]
    rows, pos = np.nonzero(start)
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows)
    keep = np.clip(1.0 - 1.0 / b[rows], 1e-12, 1.0 - 1e-12)
    uu = np.where(rank < u_len.shape[1], u_len[rows, np.minimum(rank, u_len.shape[1] - 1)], 0.5)
    length = np.where(
        b[rows] > 1.0, 1 + np.floor(np.log(np.maximum(uu, 1e-30)) / np.log(keep)), 1.0
    )
    ends = np.zeros(u_start.shape, np.int64)
    ends[rows, pos] = pos + np.minimum(length, u_start.shape[1]).astype(np.int64)
    return np.arange(u_start.shape[1])[None, :] < np.maximum.accumulate(ends, axis=1)


@dataclass(frozen=True)
class Clock:
    """Per connection and new-data slot: receiver arrival of its first transmission (inf when
    lost), of the transmission that got through, and the time the slot was first sent."""

    first: np.ndarray
    final: np.ndarray
    sent: np.ndarray  # non-decreasing per row


def transmission_clock(
    slots: np.ndarray,
    rtt_ms: np.ndarray,
    unit_ms: np.ndarray,
    buffer_units: np.ndarray,
    iw_units: np.ndarray,
    alpha_units: np.ndarray,
    beta: np.ndarray,
    lost: np.ndarray,
    min_window: np.ndarray | float = 2.0,
    dupack_units: np.ndarray | int = DUPACK_THRESHOLD,
) -> Clock:
    """Simulate connections sending ``slots`` new-data units each, round by round.

    ``unit_ms`` is a unit's serialisation time at the bottleneck; ``lost`` (rows x transmissions)
    says which transmissions the channel drops. In round *i* a connection sends ``floor(cwnd)``
    units (the fraction carried over to the next round): the repairs due first (a unit lost at position *k* of the previous round is re-sent at
    position *k* + 3, when the ACK of the third later unit returns), then new data. Arrivals at the
    receiver follow the bottleneck's FIFO: a unit arrives ``unit_ms`` after the one before it, or
    half an RTT after it was sent if the queue was empty. Units beyond the pipe (BDP + buffer) are
    dropped at the round's end (every other one, as the queue overflows in slow start). A round
    with a loss sets cwnd = max(``min_window``, beta·cwnd); otherwise slow start doubles it below
    ssthresh and congestion avoidance adds alpha."""
    p, n_max = len(slots), int(slots.max()) if len(slots) else 0
    first = np.full((p, n_max), np.inf)
    final = np.full((p, n_max), np.inf)
    sent = np.full((p, n_max), np.inf)
    cap = np.maximum(rtt_ms / unit_ms + buffer_units, 1.0)
    floor = np.broadcast_to(np.asarray(min_window, dtype=float), (p,))
    dupack = np.broadcast_to(np.asarray(dupack_units, dtype=np.int64), (p,))
    w = iw_units.astype(float).copy()
    ssthresh = np.full(p, np.inf)
    nxt = np.zeros(p, np.int64)
    tx = np.zeros(p, np.int64)
    start = np.zeros(p)
    last = np.full(p, -np.inf)
    prev_n = iw_units.astype(float).copy()
    # units waiting for repair, in the order they are due, and the round position they were lost at
    pend = np.full((p, 8), -1, np.int64)
    ppos = np.zeros((p, 8), np.int64)
    npend = np.zeros(p, np.int64)
    width = lost.shape[1]
    act = np.arange(p)
    credit = np.zeros(p)  # the window's fraction of a unit carried to the next round
    while len(act):
        a_np = npend[act]
        whole = np.maximum(np.floor(w[act] + credit[act]), 1.0)
        credit[act] = w[act] + credit[act] - whole
        n = np.minimum(whole.astype(np.int64), a_np + slots[act] - nxt[act])
        r = np.minimum(a_np, n)
        nn = n - r
        wmax = int(n.max())
        jj = np.arange(wmax)[None, :]
        m = len(act)
        # repairs go out when the ACK of the third later unit returns: the i-th due repair at
        # position i + min(lost position + 3, new units this round); new data fills the rest
        k = min(pend.shape[1], wmax)
        kk = np.arange(k)[None, :]
        pa, pp = pend[act, :k], ppos[act, :k]
        is_rtx = kk < r[:, None]
        at = np.where(is_rtx, kk + np.minimum(pp + dupack[act][:, None], nn[:, None]), wmax)
        taken = np.zeros((m, wmax + 1), bool)
        ri = np.repeat(np.arange(m), k)
        taken[ri, at.ravel()] = True
        taken = taken[:, :wmax]
        valid = jj < n[:, None]
        slot = np.where(valid, nxt[act][:, None] + np.cumsum(~taken, axis=1) - 1, -1)
        rtx_slot = np.full((m, wmax + 1), -1, np.int64)
        rtx_slot[ri, at.ravel()] = np.where(is_rtx, pa, -1).ravel()
        slot = np.where(taken, rtx_slot[:, :wmax], slot)
        drop = np.take_along_axis(lost[act], np.minimum(tx[act][:, None] + jj, width - 1), axis=1)
        excess = np.ceil(np.maximum(n - cap[act], 0.0)).astype(np.int64)
        from_end = n[:, None] - 1 - jj
        drop = valid & (drop | ((from_end < 2 * excess[:, None]) & (from_end % 2 == 0)))
        u = unit_ms[act][:, None]
        arrive = np.maximum(
            start[act][:, None] + rtt_ms[act][:, None] / 2 + jj * u,
            last[act][:, None] + (jj + 1) * u,
        )
        # the sender clocks a round out on the previous round's ACKs, which return one unit apart
        sent_at = start[act][:, None] + jj * (u * np.minimum(1.0, prev_n[act] / n)[:, None])
        rows = np.broadcast_to(act[:, None], (m, wmax))
        ok = valid & ~drop
        fresh = valid & ~taken
        first[rows[fresh & ~drop], slot[fresh & ~drop]] = arrive[fresh & ~drop]
        sent[rows[fresh], slot[fresh]] = sent_at[fresh]
        final[rows[ok], slot[ok]] = arrive[ok]
        # due next round: the repairs not sent (overdue: position -3, first), then this round's losses
        n_left = a_np - r
        n_lost = drop.sum(axis=1)
        need = int((n_left + n_lost).max())
        if need > pend.shape[1]:
            grow = need - pend.shape[1] + 8
            pend = np.concatenate([pend, np.full((p, grow), -1, np.int64)], axis=1)
            ppos = np.concatenate([ppos, np.zeros((p, grow), np.int64)], axis=1)
        if need:
            cols = np.arange(need)[None, :]
            left_src = np.minimum(r[:, None] + cols, pend.shape[1] - 1)
            left_v = np.take_along_axis(pend[act], left_src, axis=1)
            order = np.argsort(~drop, axis=1, kind="stable")[:, :need]
            lost_v = np.take_along_axis(slot, order, axis=1)
            lost_p = np.take_along_axis(np.broadcast_to(jj, (m, wmax)), order, axis=1)
            from_left = cols < n_left[:, None]
            li = np.clip(cols - n_left[:, None], 0, max(need - 1, 0))
            newp = np.where(
                from_left,
                left_v,
                np.take_along_axis(lost_v, np.minimum(li, lost_v.shape[1] - 1), axis=1),
            )
            newpos = np.where(
                from_left,
                -dupack[act][:, None],
                np.take_along_axis(lost_p, np.minimum(li, lost_p.shape[1] - 1), axis=1),
            )
            live = cols < (n_left + n_lost)[:, None]
            pend[act, :need] = np.where(live, newp, -1)
            ppos[act, :need] = np.where(live, newpos, 0)
        npend[act] = n_left + n_lost
        nxt[act] += nn
        tx[act] += n
        prev_n[act] = n
        last[act] = np.maximum(last[act], arrive[np.arange(m), n - 1])
        start[act] = arrive[:, 0] + rtt_ms[act] / 2
        loss_round = n_lost > 0
        wa = w[act]
        low = np.maximum(floor[act], beta[act] * wa)
        ssthresh[act] = np.where(loss_round, low, ssthresh[act])
        w[act] = np.where(
            loss_round, low, np.where(wa < ssthresh[act], 2.0 * wa, wa + alpha_units[act])
        )
        act = act[(nxt[act] < slots[act]) | (npend[act] > 0)]
    return Clock(first=first, final=final, sent=np.fmax.accumulate(sent, axis=1))


# --- schedule and visual progress --------------------------------------------------------------
_TICKS = 1000.0  # integer microseconds for exact per-stream running maxima
_SHIFT = np.int64(1) << np.int64(34)  # > any time in microseconds (about 4.8 hours)


def _rank_within(groups_sorted: np.ndarray) -> np.ndarray:
    """Position of each element within its run of equal values (input sorted by group)."""
    if len(groups_sorted) == 0:
        return np.zeros(0, np.int64)
    new = np.r_[True, groups_sorted[1:] != groups_sorted[:-1]]
    return np.arange(len(groups_sorted)) - np.maximum.accumulate(
        np.where(new, np.arange(len(groups_sorted)), 0)
    )


@dataclass(frozen=True)
class Delivery:
    """Per transmission unit (grouped by resource, in stream order): the slot that carried it, its
    first arrival (inf if lost) and its in-order delivery time."""

    resource: np.ndarray
    slot: np.ndarray
    first: np.ndarray
    delivered: np.ndarray


def _deliver(
    res_of_unit: np.ndarray, page_of_unit: np.ndarray, slot: np.ndarray, final: np.ndarray
) -> np.ndarray:
    """In-order delivery of every unit: the running maximum of arrivals within its resource."""
    t = np.where(slot >= 0, final[page_of_unit, np.maximum(slot, 0)], np.inf)
    ticks = np.minimum(np.round(np.nan_to_num(t, posinf=1e13) * _TICKS), _SHIFT - 1).astype(
        np.int64
    )
    base = res_of_unit.astype(np.int64) * _SHIFT
    return np.where(slot >= 0, (np.maximum.accumulate(base + ticks) - base) / _TICKS, np.inf)


def schedule(
    pages: Pages,
    units: np.ndarray,
    clock: Clock,
    round_robin: np.ndarray,
    rtt_ms: np.ndarray,
    head_lead_ms: np.ndarray | float = 0.0,
) -> Delivery:
    """Assign every unit of every resource a transmission slot, phase by phase (module docstring).

    ``units`` is the number of transmission units of each resource; ``round_robin`` is per page;
    ``head_lead_ms`` is how much earlier than its unit the first packet of the HTML arrives (units
    of several packets), which is when the browser sees the head and asks for its resources.
    When a wave of requests reaches the server after it has sent everything asked for so far, the
    connection pauses: the rest of its clock is shifted by the wait (its window is kept)."""
    res_of_unit = np.repeat(np.arange(len(units)), units)
    first_unit = np.cumsum(units) - units
    idx = np.arange(len(res_of_unit)) - first_unit[res_of_unit]
    page_u = pages.page[res_of_unit]
    kind_u = pages.kind[res_of_unit].astype(np.int64)
    phase = PHASE[pages.kind].copy()
    image = np.flatnonzero((pages.kind == IMAGE_VISIBLE) | (pages.kind == IMAGE_BELOW))
    if len(image):  # the one delayable request allowed while layout-blocking requests load
        _, at = np.unique(pages.page[image], return_index=True)
        phase[image[at]] = 1
    # delayable requests in flight: ten chains of responses
    chain = np.arange(len(units), dtype=np.int64)
    late = np.flatnonzero(phase == 3)
    if len(late):
        lane = _rank_within(pages.page[late]) % DELAYABLE_IN_FLIGHT
        chain[late] = len(units) + pages.page[late] * DELAYABLE_IN_FLIGHT + lane
    chain_u = chain[res_of_unit]
    phase_u = phase[res_of_unit]
    rr_u = round_robin[page_u]
    slot = np.full(len(res_of_unit), -1, np.int64)
    n_slots = clock.final.shape[1]
    cols = np.arange(n_slots)[None, :]
    offset = np.zeros((pages.n, n_slots))
    used = np.zeros(pages.n, np.int64)
    rows = np.arange(pages.n)
    row_shift = rows.astype(np.float64) * 1e12
    last_of = first_unit + units - 1
    html = pages.kind == HTML
    for ph in range(4):
        if ph == 0:
            avail = np.zeros(pages.n, np.int64)
        else:
            d = _deliver(res_of_unit, page_u, slot, clock.final + offset)
            done = d[last_of]
            trigger = np.zeros(pages.n)
            head = np.zeros(pages.n)
            head[pages.page[html]] = d[first_unit[html]]
            head = np.maximum(head - head_lead_ms, 0.0)
            if ph == 1:
                trigger = head
            else:
                gate = (
                    RENDER_BLOCKING[pages.kind] if ph == 2 else (phase <= 2) & (pages.kind != HTML)
                )
                np.maximum.at(trigger, pages.page[gate], done[gate])
                if ph == 2:
                    trigger = np.maximum(trigger, head)
            target = trigger + rtt_ms / 2
            sent = np.minimum(clock.sent + offset, 1e11)  # rows non-decreasing
            avail = (
                np.searchsorted((sent + row_shift[:, None]).ravel(), target + row_shift)
                - rows * n_slots
            )
            # everything asked for so far was sent before the requests came: the connection waits
            idle = avail > used
            at_used = sent[rows, np.minimum(used, n_slots - 1)]
            wait = np.where(idle & (used < n_slots), np.maximum(target - at_used, 0.0), 0.0)
            offset += np.where(cols >= used[:, None], wait[:, None], 0.0)
            avail = np.minimum(avail, used)
        todo = np.flatnonzero((phase_u <= ph) & ((slot < 0) | (slot >= avail[page_u])))
        if len(todo) == 0:
            continue
        pg = page_u[todo]
        # sequential: Chrome's priority order, then request order, then stream order
        seq_key = np.lexsort((idx[todo], res_of_unit[todo], kind_u[todo], pg))
        # round-robin: one unit of each requested response (or chain) in turn
        by_chain = todo[np.lexsort((idx[todo], res_of_unit[todo], chain_u[todo]))]
        cycle = np.empty(len(res_of_unit), np.int64)
        cycle[by_chain] = _rank_within(chain_u[by_chain])
        rr_key = np.lexsort((chain_u[todo], cycle[todo], pg))
        pos_seq = np.empty(len(todo), np.int64)
        pos_seq[seq_key] = _rank_within(pg[seq_key])
        pos_rr = np.empty(len(todo), np.int64)
        pos_rr[rr_key] = _rank_within(pg[rr_key])
        slot[todo] = avail[pg] + np.where(rr_u[todo], pos_rr, pos_seq)
        used = np.zeros(pages.n, np.int64)
        np.maximum.at(used, page_u[slot >= 0], slot[slot >= 0] + 1)
    final = clock.final + offset
    delivered = _deliver(res_of_unit, page_u, slot, final)
    first = (clock.first + offset)[page_u, slot]
    return Delivery(resource=res_of_unit, slot=slot, first=first, delivered=delivered)


def page_metrics(
    pages: Pages,
    units: np.ndarray,
    unit_bytes: np.ndarray,
    dl: Delivery,
    head_lead_ms: np.ndarray | float = 0.0,
) -> dict[str, np.ndarray]:
    """Page load time, first paint, SpeedIndex and head-of-line-blocked bytes of each page
    (times from the server's first byte).

    Also ``speed_index_unordered_ms``: the SpeedIndex had every packet been painted as it arrived
    (no byte waiting for an earlier one of its stream); the difference is what head-of-line
    blocking costs the SpeedIndex. Completion times (first paint, fonts, load) are the same."""
    n, res = pages.n, dl.resource
    page_u = pages.page[res]
    first_unit = np.cumsum(units) - units
    done = dl.delivered[first_unit + units - 1]
    rb = RENDER_BLOCKING[pages.kind]
    html = pages.kind == HTML
    paint = np.zeros(n)
    np.maximum.at(paint, pages.page[rb], done[rb])
    head = np.zeros(n)
    head[pages.page[html]] = dl.delivered[first_unit[html]]
    paint = np.maximum(paint, head - head_lead_ms)
    fonts = np.zeros(n)
    font = pages.kind == FONT
    np.maximum.at(fonts, pages.page[font], done[font])
    gate = np.where(pages.kind[res] == HTML, np.maximum(paint, fonts)[page_u], paint[page_u])
    w = (pages.weight / units)[res]
    late = np.where(w > 0, w * np.maximum(0.0, np.maximum(dl.delivered, gate) - paint[page_u]), 0.0)
    speed_index = paint + np.bincount(page_u, weights=late, minlength=n)
    own = np.fmin(dl.delivered, dl.first)
    late_own = np.where(w > 0, w * np.maximum(0.0, np.maximum(own, gate) - paint[page_u]), 0.0)
    unordered = paint + np.bincount(page_u, weights=late_own, minlength=n)
    plt = np.zeros(n)
    np.maximum.at(plt, pages.page, done)
    # bytes of a unit: full units, the last one partial
    ub = unit_bytes[pages.page][res]
    is_last = (np.arange(len(res)) - first_unit[res]) == units[res] - 1
    nbytes = np.where(is_last, pages.size[res] - (units[res] - 1) * ub, ub)
    blocked = np.isfinite(dl.first) & (dl.first < dl.delivered - 1e-3)
    hol = np.bincount(page_u, weights=np.where(blocked, nbytes, 0.0), minlength=n)
    return {
        "plt_ms": plt,
        "first_paint_ms": paint,
        "speed_index_ms": speed_index,
        "speed_index_unordered_ms": unordered,
        "hol_bytes": hol,
    }


# --- putting it together -----------------------------------------------------------------------
@dataclass(frozen=True)
class Paths:
    """Per page: the network and the connection's congestion controller."""

    rtt_ms: np.ndarray
    rate_kbps: np.ndarray  # the connection's share of the bottleneck
    buffer_pkts: np.ndarray
    loss: np.ndarray
    burst: np.ndarray
    iw_pkts: np.ndarray
    alpha: np.ndarray  # congestion-avoidance growth, packets per RTT
    beta: np.ndarray  # multiplicative decrease


def transmission_units(
    pages: Pages, max_units: int | None, pipe_pkts: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(units per resource, packets per unit per page): single packets, or for pages of more than
    ``max_units`` packets, units of several packets (the fleet's cheaper resolution), but never
    more than 1/PIPE_UNITS of the path's pipe (BDP + buffer, ``pipe_pkts``; so that windows still
    count several units) unless that makes more than FINEST_FACTOR x ``max_units`` units."""
    pkts = np.ceil(pages.size / MSS)
    total = np.bincount(pages.page, weights=pkts, minlength=pages.n)
    per_unit = np.ones(pages.n, np.int64)
    if max_units is not None:
        per_unit = np.ceil(total / max_units)
        if pipe_pkts is not None:  # finer on narrow pipes, down to FINEST_UNITS units a page
            per_unit = np.maximum(
                np.minimum(per_unit, np.floor(pipe_pkts / PIPE_UNITS)),
                np.ceil(total / (FINEST_FACTOR * max_units)),
            )
        per_unit = np.maximum(1, per_unit).astype(np.int64)
    units = np.ceil(pages.size / (per_unit[pages.page] * MSS)).astype(np.int64)
    return units, per_unit


def connection_clocks(
    pages: Pages, units: np.ndarray, per_unit: np.ndarray, path: Paths, rng: np.random.Generator
) -> Clock:
    """The transmission clock of each page's connection (independent of the scheduler)."""
    unit_ms = per_unit * MSS * 8.0 / path.rate_kbps
    total = np.bincount(pages.page, weights=units, minlength=pages.n).astype(np.int64)
    slots = total
    width = int(2 * slots.max() + 64)
    u_start = rng.random((pages.n, width), dtype=np.float32)
    b = np.maximum(path.burst, 1.0)
    bursts = int(np.ceil(2.0 * width * np.max(np.minimum(path.loss / b, 1.0), initial=0.0))) + 16
    u_len = rng.random((pages.n, bursts), dtype=np.float32)
    # a burst starts within the unit (at most every other unit: a coarse unit's repair re-sends only
    # its lost packets, which are seldom all lost again)
    start_p = np.minimum(1.0 - (1.0 - np.minimum(path.loss / b, 1.0)) ** per_unit, 0.5)
    burst_units = np.maximum(1.0, b / per_unit)
    lost = loss_flags(u_start, u_len, start_p * burst_units, burst_units)
    lost[:, -1] = False  # past the drawn horizon transmissions get through
    return transmission_clock(
        slots,
        path.rtt_ms,
        unit_ms,
        path.buffer_pkts / per_unit,
        np.maximum(1.0, path.iw_pkts / per_unit),
        path.alpha / per_unit,
        path.beta,
        lost,
        min_window=np.maximum(1.0, 2.0 / per_unit),
        dupack_units=np.ceil(DUPACK_THRESHOLD / per_unit).astype(np.int64),
    )


def load_pages(
    pages: Pages,
    path: Paths,
    round_robin: np.ndarray | list[np.ndarray],
    rng: np.random.Generator,
    *,
    max_units: int | None = None,
) -> dict[str, np.ndarray] | list[dict[str, np.ndarray]]:
    """Metrics of each page (times from the HTML request, which takes half an RTT to the server).

    ``round_robin`` is per page; a list of such arrays simulates the same loads (same losses, same
    times) once per scheduler assignment and returns a list."""
    pipe = path.rate_kbps * path.rtt_ms / (8.0 * MSS) + path.buffer_pkts
    units, per_unit = transmission_units(pages, max_units, pipe)
    clock = connection_clocks(pages, units, per_unit, path, rng)
    out = []
    for rr in round_robin if isinstance(round_robin, list) else [round_robin]:
        lead = (per_unit - 1) * MSS * 8.0 / path.rate_kbps
        m = page_metrics(
            pages,
            units,
            per_unit * MSS,
            schedule(pages, units, clock, np.asarray(rr, bool), path.rtt_ms, lead),
            lead,
        )
        for key in ("plt_ms", "first_paint_ms", "speed_index_ms", "speed_index_unordered_ms"):
            m[key] = m[key] + path.rtt_ms / 2
        m["hol_bytes"] = np.minimum(m["hol_bytes"], pages.page_bytes)
        out.append(m)
    return out if isinstance(round_robin, list) else out[0]


def lab_path(n: int, loss: float, rtt_ms: float, bw_kbps: float, burst: float) -> Paths:
    """The seed's lab path: one bottleneck with a one-BDP buffer, a single Cubic connection with
    RFC 9002's initial window of 10 packets (RFC 8312's beta 0.7, TCP-friendly alpha)."""
    alpha, beta = 3.0 * (1.0 - 0.7) / (1.0 + 0.7), 0.7

    def full(x: float) -> np.ndarray:
        return np.full(n, float(x))

    return Paths(
        full(rtt_ms),
        full(bw_kbps),
        full(bw_kbps * rtt_ms / (8.0 * MSS)),
        full(loss),
        full(burst),
        full(10),
        full(alpha),
        full(beta),
    )


def repeat_pages(pages: Pages, times: int) -> Pages:
    """Each page ``times`` times in a row (replays of the same site)."""
    res = np.tile(np.arange(len(pages.page)), times)
    rep = np.repeat(np.arange(times), len(pages.page))
    sel = res[np.lexsort((res, rep, pages.page[res]))]
    rep = rep[np.lexsort((res, rep, pages.page[res]))]
    return Pages(
        n=pages.n * times,
        page=pages.page[sel] * times + rep,
        kind=pages.kind[sel],
        size=pages.size[sel],
        weight=pages.weight[sel],
        size_class=np.repeat(pages.size_class, times),
    )


def page_grid(
    loss: float,
    rtt_ms: float,
    bw_kbps: float,
    burst: float,
    *,
    size_class: str,
    sites: int = 35,
    replays: int = 30,
    seed: int = 1,
) -> dict[str, object]:
    """Seed 001's lab comparison for one grid point and one size class: ``sites`` sites of the
    class, each replayed ``replays`` times under each scheduler (the same losses for both); per
    site the relative difference (round-robin vs sequential, %) of the median SpeedIndex and of
    the median HoL-blocked bytes over its replays, and their median over sites (the seed's Δ)."""
    rng = np.random.default_rng([seed, SIZE_CLASSES.index(size_class)])
    site_pages = draw_pages(rng, np.full(sites, SIZE_CLASSES.index(size_class), np.int8))
    pages = repeat_pages(site_pages, replays)
    seq, rr = load_pages(
        pages,
        lab_path(pages.n, loss, rtt_ms, bw_kbps, burst),
        [np.zeros(pages.n, bool), np.ones(pages.n, bool)],
        np.random.default_rng(
            [seed, 101, int(loss * 1e4), int(rtt_ms), int(bw_kbps), int(burst * 10)]
        ),
    )

    def per_site(key: str) -> np.ndarray:
        a = np.median(rr[key].reshape(sites, replays), axis=1)
        b = np.median(seq[key].reshape(sites, replays), axis=1)
        return np.where(b > 0, 100.0 * (a / np.where(b > 0, b, 1.0) - 1.0), np.nan)

    si, hol = per_site("speed_index_ms"), per_site("hol_bytes")
    return {
        "speed_index_delta_pct": float(np.median(si)),
        "hol_delta_pct": float(np.nanmedian(hol)) if np.isfinite(hol).any() else 0.0,
        "site_speed_index_delta_pct": si,
        "speed_index_sequential_ms": float(np.median(seq["speed_index_ms"])),
        "hol_bytes_sequential": float(np.median(seq["hol_bytes"])),
        "page_bytes": float(np.median(site_pages.page_bytes)),
    }


# --- the fleet -----------------------------------------------------------------------------------
_CLASS_KEY = str_key("page-size-class")


def home_site_class(client_u64: np.ndarray) -> np.ndarray:
    """Size class of each client's home site (a hash of the client id, so the same in every arm,
    day and run): every page a client loads is a page of its home site."""
    u = (hash2(client_u64, _CLASS_KEY) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return np.searchsorted(np.cumsum(CLASS_SHARES)[:-1], u, side="right").astype(np.int8)


def page_events(
    rng: np.random.Generator,
    sess: Sessions,
    sidx: np.ndarray,
    pop: Population,
    tp_client: TransportArrays,
    cfg: PageWorkload,
) -> dict[str, EventBatch]:
    """Page loads of the browser sessions ``sidx`` (each on a new connection to the home site)."""
    count = rng.poisson(cfg.pages_per_session, len(sidx))
    g, pos = ragged_index(count)
    s = sidx[g]
    m = len(s)
    client = sess.client[s]
    tp = tp_client.take(client)
    size_class = home_site_class(pop.client_u64[client])
    pages = draw_pages(rng, size_class)
    alpha, beta = aimd_params(tp)
    path = Paths(
        rtt_ms=sess.net["rtt_ms"][s],
        rate_kbps=flow_share(sess.net["bw_kbps"][s], tp.nconn, sess.net["cross"][s]),
        buffer_pkts=sess.net["buffer_pkts"][s],
        loss=sess.net["loss"][s],
        burst=sess.net["burst"][s],
        iw_pkts=tp.iw.astype(float),
        alpha=alpha,
        beta=beta,
    )
    res = _load_in_batches(pages, path, tp.round_robin, rng)
    new = pos == 0
    hs, _ = handshake_ms(rng, sess.net["rtt_ms"][s], tp.zero_rtt, pop.zero_rtt_p[client])
    hs = np.where(new, hs, 0.0)
    t = sess.start_ms[s] + group_cumsum(rng.exponential(30_000.0, m), g).astype(np.int64)
    plt = hs + SERVER_MS + res["plt_ms"]
    batch = EventBatch(
        "page_loads",
        s,
        t + plt.astype(np.int64),
        {
            "connection_id": connection_u64(
                sess.session_u64[s], np.zeros(m, dtype=np.int64), "browser"
            ),
            "page_load_time_ms": plt,
            "speed_index_ms": hs + SERVER_MS + res["speed_index_ms"],
            "hol_blocked_bytes": res["hol_bytes"].round().astype(np.int64),
            "resource_count": pages.resources.astype(np.int64),
            "page_bytes": pages.page_bytes.astype(np.int64),
            "prioritization": tp.round_robin.astype(np.int8),
            "page_size_class": size_class,
        },
    )
    return {"page_loads": batch}


FLEET_BATCH = 4096


def take_pages(pages: Pages, order: np.ndarray) -> Pages:
    """The pages ``order`` (indices), renumbered 0..len(order)-1 in that order."""
    start = np.searchsorted(pages.page, np.arange(pages.n))
    count = np.bincount(pages.page, minlength=pages.n)[order]
    res = np.repeat(start[order] - np.cumsum(count) + count, count) + np.arange(count.sum())
    return Pages(
        n=len(order),
        page=np.repeat(np.arange(len(order)), count),
        kind=pages.kind[res],
        size=pages.size[res],
        weight=pages.weight[res],
        size_class=pages.size_class[order],
    )


def _load_in_batches(
    pages: Pages, path: Paths, round_robin: np.ndarray, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """:func:`load_pages` at the fleet's resolution, a bounded number of pages of similar weight
    at a time."""
    out: dict[str, np.ndarray] = {}
    by_weight = np.argsort(pages.page_bytes, kind="stable")
    for lo in range(0, pages.n, FLEET_BATCH):
        sel = by_weight[lo : lo + FLEET_BATCH]
        sub_path = Paths(*(getattr(path, f)[sel] for f in Paths.__dataclass_fields__))
        res = load_pages(
            take_pages(pages, sel), sub_path, round_robin[sel], rng, max_units=FLEET_MAX_UNITS
        )
        for k, v in res.items():
            out.setdefault(k, np.empty(pages.n))[sel] = v
    return out
