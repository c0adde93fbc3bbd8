"""Naive measurement of the simulator's output: the seeds' headline deltas, computed from the data.

``collect`` runs a scenario in memory (no files) and returns one pandas DataFrame per event kind
with, besides the event columns, the client, platform, network type and the arm of each
experiment. ``headlines(name)`` computes, for the scenario reproducing a seed, the same numbers the
seed reports (medians, tails, ratios of sums, per arm) naively on those frames, and returns them
next to the seed's values. The tests assert on these; ``python -m simulation.measure`` prints the
table that ``docs/simulator.md`` carries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pandas as pd

from simulation.events import CATEGORIES
from simulation.network import NETWORK_TYPES, PLATFORMS
from simulation.population import block_count
from simulation.runner import generate_block
from simulation.scenario import Scenario, load_scenario


def collect(
    scenario: str | Scenario,
    *,
    days: int = 1,
    clients: int | None = None,
    seed: int | None = None,
    kinds: tuple[str, ...] | None = None,
    world: dict[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """Events of a scenario as DataFrames (true times, no faults), one per kind.

    ``world`` (experiment id -> arm) simulates the counterfactual world where every enrolled client
    is in that arm (see :func:`simulation.runner.generate_block`).
    """
    sc = load_scenario(scenario).with_overrides(days=days, clients=clients, seed=seed)
    parts: dict[str, list[pd.DataFrame]] = defaultdict(list)
    for day in range(sc.days):
        for block in range(block_count(sc.population.clients)):
            ctx, batches = generate_block(sc, day, block, world)
            for kind, b in batches.items():
                if kinds and kind not in kinds:
                    continue
                client = ctx.sess.client[b.session]
                df = pd.DataFrame({k: v for k, v in b.cols.items()})
                for name, values in CATEGORIES.items():
                    if name in df:
                        df[name] = np.asarray(values, dtype=object)[df[name].to_numpy()]
                df["client"] = ctx.pop.index[client]
                df["platform"] = np.asarray(PLATFORMS, dtype=object)[ctx.pop.platform[client]]
                df["network_type"] = np.asarray(NETWORK_TYPES, dtype=object)[ctx.pop.net[client]]
                df["rtt_ms_true"] = ctx.sess.net["rtt_ms"][b.session]
                df["loss_true"] = ctx.sess.net["loss"][b.session]
                df["day"] = day
                for i, exp in enumerate(sc.experiments):
                    names = np.asarray([a.name for a in exp.arms] + [None], dtype=object)
                    df[exp.id] = names[ctx.arms[i, client]]
                parts[kind].append(df)
    return {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}


def rel(treat: float, control: float) -> float:
    """Relative difference in percent."""
    return 100.0 * (treat / control - 1.0)


def by_arm(df: pd.DataFrame, exp: str, fn: Callable[[pd.DataFrame], float]) -> dict[str, float]:
    return {arm: float(fn(g)) for arm, g in df.groupby(exp)}


Row = tuple[str, str, float]  # (metric, seed says, simulator)


def fhol_headlines(frames: dict[str, pd.DataFrame], exp: str = "fhol_2026_06") -> list[Row]:
    """Seed 000: FHOL vs QUIC."""
    rows: list[Row] = []
    http = frames["http_transactions"]
    for plat, seed95 in (("Windows", "+3% (98 ms of 3.2 s)"), ("Android", "+1% (16 ms of 1.6 s)")):
        h = http[http.platform == plat]
        p50 = by_arm(h, exp, lambda g: g.latency_ms.quantile(0.5))
        p95 = by_arm(h, exp, lambda g: g.latency_ms.quantile(0.95))
        rows.append((f"HTTP latency p50 {plat}, %", "≈0 (negligible)", rel(p50["fhol"], p50["control"])))
        rows.append((f"HTTP latency p95 {plat}, %", seed95, rel(p95["fhol"], p95["control"])))
        rows.append((f"HTTP latency p95 {plat} control, ms", "3200" if plat == "Windows" else "1600", p95["control"]))
    video = frames["video_playbacks"]
    for plat in ("Windows", "Android"):
        v = video[video.platform == plat]
        mtbr = by_arm(v, exp, lambda g: g.watch_time_ms.sum() / max(g.rebuffer_count.sum(), 1))
        rate = by_arm(v, exp, lambda g: g.rebuffer_count.sum() / g.watch_time_ms.sum())
        bw = by_arm(v, exp, lambda g: g.mean_bandwidth_kbps.mean())
        if plat == "Windows":
            rows.append(("MTBR Windows, %", "-2%", rel(mtbr["fhol"], mtbr["control"])))
            rows.append(("Rebuffer rate Windows, %", "+2.5%", rel(rate["fhol"], rate["control"])))
        rows.append((f"Mean client bandwidth {plat}, %", "-2.32%" if plat == "Windows" else "-2.98%", rel(bw["fhol"], bw["control"])))
    search = frames["search_queries"]
    for plat, seed_lat in (("Windows", "+0.16%"), ("Android", "+0.13%")):
        s = search[search.platform == plat]
        lat = by_arm(s, exp, lambda g: g.latency_ms.mean())
        rows.append((f"Search latency {plat}, %", seed_lat, rel(lat["fhol"], lat["control"])))
    s = search[search.platform == "Windows"]
    ab = by_arm(s, exp, lambda g: g.abandoned.mean())
    per_client = by_arm(s, exp, lambda g: len(g) / g.client.nunique())
    rows.append(("Search abandonment Windows, %", "up (fewer events)", rel(ab["fhol"], ab["control"])))
    rows.append(("Search events per client Windows, %", "-0.82%", rel(per_client["fhol"], per_client["control"])))
    return rows


def main() -> None:  # pragma: no cover - a report printer
    import sys

    name = sys.argv[1] if len(sys.argv) > 1 else "fhol"
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    frames = collect(name, clients=clients)
    for metric, seed, sim in HEADLINES[name](frames):
        print(f"{metric:45s} {seed:25s} {sim:10.3f}")


HEADLINES: dict[str, Callable[[dict[str, pd.DataFrame]], list[Row]]] = {"fhol": fhol_headlines}

if __name__ == "__main__":  # pragma: no cover
    main()
