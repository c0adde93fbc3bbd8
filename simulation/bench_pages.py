"""Bench of the h3_prioritization scenario's lab grid: seed 001's comparison, per page-size class.

    .venvs/pipeline/bin/python -m simulation.bench_pages [--sites 35] [--replays 30] [--full]

For each size class and grid point (loss, burst size, RTT, bandwidth; the seed's grid with
``--full``, else its 2 Mbit/s, 100 ms row and the 10 Mbit/s column) it prints the seed's Δ
(median over sites of the relative difference of the medians over replays, round-robin vs
sequential) for SpeedIndex and HoL-blocked bytes, and what head-of-line blocking costs each
scheduler's SpeedIndex (median over loads of SpeedIndex minus the SpeedIndex had every packet been
painted as it arrived, in % of SpeedIndex), with the seconds each point took.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from simulation.apps.pages import SIZE_CLASSES, draw_pages, lab_path, load_pages, repeat_pages

#: seed 001's grid (slide "Evaluate impact of prioritization on HTTP/3 performance under loss")
LOSS = (0.0, 0.01, 0.02, 0.05)
RTT_MS = (10.0, 50.0, 100.0)
BW_KBPS = (1000.0, 2000.0, 5000.0, 10_000.0)
BURST = (1.0, 5.0, 10.0, 15.0)


def grid_point(
    size_class: str,
    loss: float,
    rtt_ms: float,
    bw_kbps: float,
    burst: float,
    *,
    sites: int,
    replays: int,
    seed: int = 1,
) -> dict[str, float]:
    """The seed's Δ at one point, plus the head-of-line cost of SpeedIndex under each scheduler."""
    rng = np.random.default_rng([seed, SIZE_CLASSES.index(size_class)])
    pages = repeat_pages(
        draw_pages(rng, np.full(sites, SIZE_CLASSES.index(size_class), np.int8)), replays
    )
    seq, rr = load_pages(
        pages,
        lab_path(pages.n, loss, rtt_ms, bw_kbps, burst),
        [np.zeros(pages.n, bool), np.ones(pages.n, bool)],
        np.random.default_rng([seed, 7, int(loss * 1e4), int(rtt_ms), int(bw_kbps), int(burst)]),
    )

    def delta(key: str) -> float:
        a = np.median(rr[key].reshape(sites, replays), axis=1)
        b = np.median(seq[key].reshape(sites, replays), axis=1)
        ok = b > 0
        return float(np.median(100.0 * (a[ok] / b[ok] - 1.0))) if ok.any() else 0.0

    def hol_cost(m: dict[str, np.ndarray]) -> float:
        return float(np.median(100.0 * (m["speed_index_ms"] / m["speed_index_unordered_ms"] - 1.0)))

    return {
        "si": delta("speed_index_ms"),
        "hol": delta("hol_bytes"),
        "hol_cost_seq": hol_cost(seq),
        "hol_cost_rr": hol_cost(rr),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sites", type=int, default=35)
    ap.add_argument("--replays", type=int, default=30)
    ap.add_argument("--full", action="store_true", help="the seed's whole grid (slow)")
    args = ap.parse_args(argv)
    if args.sites < 1 or args.replays < 1:
        ap.error("--sites and --replays must be positive")
    if args.full:
        points = list(itertools.product(LOSS, BURST, RTT_MS, BW_KBPS))
    else:
        points = [(loss, 1.0, 100.0, 2000.0) for loss in LOSS] + [
            (loss, 1.0, 100.0, 10_000.0) for loss in LOSS
        ]
        points += [(0.02, b, 100.0, 2000.0) for b in BURST[1:]]
    print(
        "class   loss burst  rtt    bw | SI RR vs seq  HoL RR vs seq | HoL cost of SI: seq   RR |  s"
    )
    for size_class in SIZE_CLASSES:
        for loss, burst, rtt, bw in points:
            t0 = time.perf_counter()
            g = grid_point(size_class, loss, rtt, bw, burst, sites=args.sites, replays=args.replays)
            print(
                f"{size_class:7s} {loss:4.0%} {burst:5.0f} {rtt:4.0f} {bw / 1000:5.0f} | {g['si']:+11.2f}% {g['hol']:+13.1f}% |"
                f" {g['hol_cost_seq']:+17.2f}% {g['hol_cost_rr']:+5.2f}% | {time.perf_counter() - t0:4.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
