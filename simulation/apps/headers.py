"""Header compression: head-of-line blocking of header blocks (HPACK vs QPACK vs QCRAM).

Model (after A. Frindell's QCRAM/QPACK simulator, seed 002): a header block is encoded when its
request starts and decoded by the peer at least RTT/2 later; a block whose packet is lost arrives
1.1–2 RTT later. Then, per connection, with blocks in request order:

* **HPACK** (one ordered header stream): block *j* can only be decoded after every earlier block,
  ``decoded_j = max_{i<=j} arrival_i`` (a per-connection running maximum), so one loss blocks all
  header blocks sent during its recovery;
* **QPACK**: blocks are decoded independently except when they reference a dynamic-table entry
  not yet acknowledged (probability :data:`QPACK_DEPENDENT`); such a block waits for the latest
  insertion, which in turn trails every earlier block, so it waits as long as under HPACK;
* **QCRAM**: never references unacknowledged entries, so it never blocks, at the price of
  :data:`QCRAM_EXTRA_BYTES` more header bytes on the wire.

Blocked time is counted per request (``header_hol_delay_ms`` sums it over the connection).
"""

from __future__ import annotations

import numpy as np

from simulation.apps.common import EventBatch
from simulation.transport import HDR_CODES

QPACK_DEPENDENT = 0.2
QCRAM_EXTRA_BYTES = 0.15
RAW_MEDIAN_BYTES = 700.0
FIRST_RATIO = 0.75  # compressed/raw of a connection's first block (static table only)
LATER_RATIO = 0.28  # with the dynamic table populated
# the synthetic page of the grid check: 227 requests (the HAR of seed 002) in 8 bursts
PAGE_REQUESTS = 227
PAGE_BURSTS = 8
BURST_GAP_MS = 2.0
BURST_SPACING_MS = 2000.0


def block_arrivals(u_loss: np.ndarray, u_delay: np.ndarray, start_ms: np.ndarray, rtt_ms: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """When each header block reaches the decoder (lost blocks 1.1–2 RTT late)."""
    lost = u_loss < loss
    return start_ms + rtt_ms / 2.0 + lost * (1.1 + 0.9 * u_delay) * rtt_ms


def header_hol(arrival: np.ndarray, group: np.ndarray, scheme: np.ndarray, u_dep: np.ndarray) -> np.ndarray:
    """Blocked time of each header block; blocks sorted by ``group`` (connection), then send time."""
    m = len(arrival)
    if m == 0:
        return np.zeros(0)
    starts = np.r_[True, group[1:] != group[:-1]]
    # HPACK: running maximum of arrivals within each connection (offset groups so they don't mix)
    span = float(arrival.max() - arrival.min()) + 1.0
    gid = np.cumsum(starts) - 1
    shifted = arrival - arrival.min() + gid * span
    hpack = np.maximum.accumulate(shifted) - shifted
    qpack = np.where(u_dep < QPACK_DEPENDENT, hpack, 0.0)
    code = np.asarray(scheme)
    return np.select([code == HDR_CODES.index("hpack"), code == HDR_CODES.index("qpack")], [hpack, qpack], 0.0)


def header_bytes(rng: np.random.Generator, first: np.ndarray, scheme: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(raw, on-the-wire) header bytes of each block."""
    m = len(first)
    raw = (RAW_MEDIAN_BYTES * np.exp(0.4 * rng.standard_normal(m))).round()
    ratio = np.where(first, FIRST_RATIO, LATER_RATIO) * np.exp(0.2 * rng.standard_normal(m))
    qcram = np.asarray(scheme) == HDR_CODES.index("qcram")
    wire = raw * np.minimum(ratio * np.where(qcram & ~first, 1.0 + QCRAM_EXTRA_BYTES, 1.0), 1.0)
    return raw, wire.round()


def connection_events(
    conn: np.ndarray, session: np.ndarray, end_ms: np.ndarray, scheme: np.ndarray, raw: np.ndarray, wire: np.ndarray, hol: np.ndarray
) -> EventBatch:
    """One ``header_compression`` event per connection from its blocks."""
    uniq, first, inv = np.unique(conn, return_index=True, return_inverse=True)
    k = len(uniq)
    last_end = np.full(k, np.iinfo(np.int64).min)
    np.maximum.at(last_end, inv, end_ms)
    max_hol = np.zeros(k)
    np.maximum.at(max_hol, inv, hol)
    return EventBatch(
        "header_compression",
        session[first],
        last_end,
        {
            "connection_id": uniq,
            "scheme": scheme[first],
            "requests": np.bincount(inv, minlength=k).astype(np.int64),
            "header_bytes_raw": np.bincount(inv, weights=raw, minlength=k).astype(np.int64),
            "header_bytes_compressed": np.bincount(inv, weights=wire, minlength=k).astype(np.int64),
            "header_hol_delay_ms": np.bincount(inv, weights=hol, minlength=k),
            "max_header_hol_ms": max_hol,
        },
    )


def page_schedule(rng: np.random.Generator, pages: int) -> tuple[np.ndarray, np.ndarray]:
    """Request start times of ``pages`` synthetic page loads: (page of each request, start ms)."""
    page = np.repeat(np.arange(pages), PAGE_REQUESTS)
    burst = np.sort(rng.integers(0, PAGE_BURSTS, size=(pages, PAGE_REQUESTS)), axis=1)
    burst_start = np.cumsum(rng.exponential(BURST_SPACING_MS, size=(pages, PAGE_BURSTS)), axis=1)
    first = np.ones((pages, PAGE_REQUESTS), dtype=bool)
    first[:, 1:] = burst[:, 1:] != burst[:, :-1]
    idx = np.arange(PAGE_REQUESTS)[None, :].repeat(pages, 0)
    run_start = np.maximum.accumulate(np.where(first, idx, 0), axis=1)
    start = np.take_along_axis(burst_start, burst, axis=1) + (idx - run_start) * BURST_GAP_MS
    return page, start.ravel()


def hol_grid(rtt_ms: float, loss: float, scheme: str, pages: int = 200, seed: int = 2) -> dict[str, float]:
    """Mean/p95/max header HoL per request on synthetic pages at a fixed RTT and loss (seed 002's setup)."""
    rng = np.random.default_rng(seed)
    page, start = page_schedule(rng, pages)
    m = len(start)
    u = rng.random((3, m))
    arr = block_arrivals(u[0], u[1], start, np.full(m, rtt_ms), np.full(m, loss))
    hol = header_hol(arr, page, np.full(m, HDR_CODES.index(scheme)), u[2])
    return {"mean": float(hol.mean()), "p95": float(np.quantile(hol, 0.95)), "max": float(hol.max())}
