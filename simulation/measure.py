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


def worlds(
    scenario: str | Scenario, arms: dict[str, dict[str, str]], *, clients: int, days: int = 1, kinds: tuple[str, ...] | None = None
) -> dict[str, dict[str, pd.DataFrame]]:
    """Counterfactual worlds of one population: label -> frames (common random numbers)."""
    return {label: collect(scenario, clients=clients, days=days, kinds=kinds, world=w) for label, w in arms.items()}


def rel(treat: float, control: float) -> float:
    """Relative difference in percent."""
    return 100.0 * (treat / control - 1.0)


def rebuffer_rate(playbacks: pd.DataFrame) -> float:
    """Share of the playback time spent rebuffering, YouTube's "rebuffer rate" (Langley et al.,
    SIGCOMM 2017): the pipeline's ``rebuffer_time_ratio`` (docs/metrics.md)."""
    stalled = playbacks.rebuffer_time_ms.sum()
    return float(stalled / (stalled + playbacks.watch_time_ms.sum()))


Row = tuple[str, str, str, float]  # (seed, metric, seed says, simulator)


def fhol_headlines(clients: int = 150_000) -> list[Row]:
    """Seed 000: QUIC+FHOL vs QUIC, per platform."""
    exp = "fhol_2026_06"
    w = worlds("fhol", {"control": {exp: "control"}, "fhol": {exp: "fhol"}}, clients=clients,
               kinds=("http_transactions", "video_playbacks", "search_queries"))

    def metric(kind: str, plat: str, fn: Callable[[pd.DataFrame], float]) -> tuple[float, float]:
        a, b = (fn(w[arm][kind][w[arm][kind].platform == plat]) for arm in ("control", "fhol"))
        return a, b

    rows: list[Row] = []
    for plat, seed95 in (("Windows", "+3% (98 ms)"), ("Android", "+1% (16 ms)")):
        a, b = metric("http_transactions", plat, lambda d: d.latency_ms.quantile(0.5))
        rows.append(("000", f"HTTP latency p50, {plat}", "negligible", rel(b, a)))
        a, b = metric("http_transactions", plat, lambda d: d.latency_ms.quantile(0.95))
        rows.append(("000", f"HTTP latency p95, {plat}", seed95, rel(b, a)))
        rows.append(("000", f"HTTP latency p95 (ms), {plat} control", "3200" if plat == "Windows" else "1600", a))
    a, b = metric("video_playbacks", "Windows", lambda d: d.watch_time_ms.sum() / max(d.rebuffer_count.sum(), 1))
    rows.append(("000", "Mean time between rebuffers, Windows", "-2%", rel(b, a)))
    a, b = metric("video_playbacks", "Windows", rebuffer_rate)
    rows.append(("000", "Rebuffer rate, Windows", "+2.5%", rel(b, a)))
    for plat, seed_bw in (("Windows", "-2.32%"), ("Android", "-2.98%")):
        a, b = metric("video_playbacks", plat, lambda d: d.mean_bandwidth_kbps.mean())
        rows.append(("000", f"Mean client bandwidth, {plat}", seed_bw, rel(b, a)))
    for plat, seed_lat in (("Windows", "+0.16%"), ("Android", "+0.13%")):
        a, b = metric("search_queries", plat, lambda d: d.latency_ms.mean())
        rows.append(("000", f"Search latency (mean), {plat}", seed_lat, rel(b, a)))
    a, b = (w[arm]["search_queries"].abandoned.mean() for arm in ("control", "fhol"))
    rows.append(("000", "Search abandonment, all platforms", "up", rel(b, a)))
    a, b = metric("search_queries", "Windows", len)
    rows.append(("000", "Search events, Windows", "-0.82%", rel(b, a)))
    return rows


def retransmit_rate(frames: dict[str, pd.DataFrame]) -> float:
    c = frames["connections"]
    return float(c.packets_retransmitted.sum() / c.packets_sent.sum())


def cc_headlines(clients: int = 30_000) -> list[Row]:
    """Seed 003: congestion control and loss recovery experiments, one at a time from the baseline."""
    sc = load_scenario("cc_loss_recovery")
    base = {e.id: e.arms[0].name for e in sc.experiments}
    arms = {"base": base}
    for e in sc.experiments:
        arms[e.id] = {**base, e.id: e.arms[1].name}
    w = {}
    for label, world in arms.items():  # one world at a time: keep only the summaries in memory
        f = collect(sc, clients=clients, kinds=("connections", "http_transactions", "video_playbacks"), world=world)
        w[label] = {
            "connections": f["connections"][["packets_retransmitted", "packets_sent", "is_zero_rtt"]],
            "http_transactions": f["http_transactions"][["latency_ms"]],
            "video_playbacks": f["video_playbacks"][["time_to_first_frame_ms", "rebuffer_time_ms", "watch_time_ms"]],
        }
        del f
    b = w["base"]
    p95 = lambda f: f["http_transactions"].latency_ms.quantile(0.95)  # noqa: E731
    p50 = lambda f: f["http_transactions"].latency_ms.quantile(0.5)  # noqa: E731
    ttff = lambda f: f["video_playbacks"].time_to_first_frame_ms.mean()  # noqa: E731
    rebuf = lambda f: rebuffer_rate(f["video_playbacks"])  # noqa: E731
    rr = retransmit_rate
    return [
        ("003", "Retransmit rate, Reno vs Cubic", "~-20%", rel(rr(w["reno_vs_cubic"]), rr(b))),
        ("003", "HTTP latency p95, Reno vs Cubic", "extremely similar", rel(p95(w["reno_vs_cubic"]), p95(b))),
        ("003", "Retransmit rate, paced vs unpaced", "~-25%", rel(rr(b), rr(w["pacing"]))),
        ("003", "HTTP latency p50, paced vs unpaced", "unchanged", rel(p50(b), p50(w["pacing"]))),
        ("003", "HTTP latency p95, TLP vs no TLP", "~-1%", rel(p95(b), p95(w["tail_loss_probe"]))),
        ("003", "Retransmit rate, no TLP vs TLP", "-5%", rel(rr(w["tail_loss_probe"]), rr(b))),
        ("003", "Rebuffer rate, TLP vs no TLP", "~-1%", rel(rebuf(b), rebuf(w["tail_loss_probe"]))),
        ("003", "Retransmit rate, IW10 vs IW32", "slightly lower", rel(rr(w["iw10_vs_iw32"]), rr(b))),
        ("003", "Time to first frame (mean), IW10 vs IW32", "worse", rel(ttff(w["iw10_vs_iw32"]), ttff(b))),
        ("003", "HTTP latency p95, IW10 vs IW32", "equal or slightly worse", rel(p95(w["iw10_vs_iw32"]), p95(b))),
        ("003", "0-RTT share of connections", "~75%", 100.0 * float(b["connections"].is_zero_rtt.mean())),
        ("003", "HTTP latency p50, 0-RTT off vs on", "worse", rel(p50(w["zero_rtt"]), p50(b))),
        ("003", "HTTP latency (mean), pooling vs none", "~-10%", rel(b["http_transactions"].latency_ms.mean(), w["connection_pooling"]["http_transactions"].latency_ms.mean())),
        ("003", "HTTP latency p50, pooling vs none", "~-10%", rel(p50(b), p50(w["connection_pooling"]))),
        ("003", "Retransmit rate, 2 vs 1 emulated connections", "+20%", rel(rr(b), rr(w["connection_emulation"]))),
        ("003", "Rebuffer rate, 2 vs 1 emulated connections", "large improvement", rel(rebuf(b), rebuf(w["connection_emulation"]))),
    ]


def header_headlines(clients: int = 20_000) -> list[Row]:
    """Seed 002: header HoL per request at fixed conditions, and in the fleet."""
    from simulation.apps.headers import hol_grid

    rows: list[Row] = [
        ("002", "HPACK HoL per request at 100 ms / 2% (ms)", "40", hol_grid(100, 0.02, "hpack")["mean"]),
        ("002", "HPACK HoL per request at 200 ms / 5% (ms)", "~100", hol_grid(200, 0.05, "hpack")["mean"]),
        ("002", "QPACK HoL per request at 100 ms / 2% (ms)", "8 (avg)", hol_grid(100, 0.02, "qpack")["mean"]),
        ("002", "QCRAM HoL per request at 100 ms / 2% (ms)", "0", hol_grid(100, 0.02, "qcram")["mean"]),
    ]
    exp = "header_compression_2026"
    w = worlds("header_compression", {a: {exp: a} for a in ("hpack", "qpack", "qcram")}, clients=clients,
               kinds=("header_compression",))
    wire = {a: w[a]["header_compression"].header_bytes_compressed.sum() for a in w}
    rows.append(("002", "Header bytes on the wire, QCRAM vs QPACK", "up to +15%", rel(wire["qcram"], wire["qpack"])))
    h = w["hpack"]["header_compression"]
    per_req = h.header_hol_delay_ms / h.requests
    hi = (h.rtt_ms_true * h.loss_true) > (h.rtt_ms_true * h.loss_true).quantile(0.9)
    rows.append(("002", "Fleet HPACK HoL/request, top-decile vs rest RTT×loss (ratio)", "grows with RTT×loss", float(per_req[hi].mean() / max(per_req[~hi].mean(), 1e-9))))
    return rows


def multipath_headlines(clients: int = 20_000) -> list[Row]:
    """Seed 004: close delay of 1 MB chunks and re-injection overhead per scheduler."""
    exp = "multipath_2021_10"
    arms = ("single_path", "min_rtt", "reinjection", "qoe_reinjection")
    w = worlds("multipath", {a: {exp: a} for a in arms}, clients=clients, kinds=("connections", "multipath_paths"))
    sp = w["single_path"]["connections"].close_delay_ms

    def overhead(a: str) -> float:
        p = w[a]["multipath_paths"]
        return 100.0 * float(p.reinjected_bytes.sum() / (p.bytes.sum() - p.reinjected_bytes.sum()))

    rows: list[Row] = [
        ("004", "Close delay p50 single path (ms)", "294", float(sp.quantile(0.5))),
        ("004", "Close delay mean, min-RTT vs single path", "+16%", rel(w["min_rtt"]["connections"].close_delay_ms.mean(), sp.mean())),
        ("004", "Close delay p99, min-RTT vs single path", "-1%", rel(w["min_rtt"]["connections"].close_delay_ms.quantile(0.99), sp.quantile(0.99))),
        ("004", "Close delay p99, re-injection vs single path", "tens of % better", rel(w["reinjection"]["connections"].close_delay_ms.quantile(0.99), sp.quantile(0.99))),
        ("004", "Re-injection traffic overhead (%)", "~15", overhead("reinjection")),
        ("004", "Close delay p99, QoE-driven vs single path", "-19% to -50%", rel(w["qoe_reinjection"]["connections"].close_delay_ms.quantile(0.99), sp.quantile(0.99))),
        ("004", "Close delay p50, QoE-driven vs single path", "-2.3% to -8.9%", rel(w["qoe_reinjection"]["connections"].close_delay_ms.quantile(0.5), sp.quantile(0.5))),
        ("004", "Close delay p95, QoE-driven vs single path", "-9.4% to -34%", rel(w["qoe_reinjection"]["connections"].close_delay_ms.quantile(0.95), sp.quantile(0.95))),
        ("004", "QoE-driven re-injection overhead (%)", "2", overhead("qoe_reinjection")),
    ]
    return rows


#: lab sites per size class (and replays of each): small sites differ more among themselves
#: relative to the effect, so they need more sites (the seed replayed 35 sites 30 times)
LAB_SITES = {"small": (256, 4), "medium": (64, 4), "large": (35, 8)}


def prioritization_headlines(clients: int = 12_000, sites: dict[str, tuple[int, int]] | None = None) -> list[Row]:
    """Seed 001: round-robin vs sequential on the lab grid, per page-size class, and on the fleet."""
    from simulation.apps.pages import SIZE_CLASSES, page_grid

    gain = "worse without loss; for large sites a gain at 1-5% loss"
    rows: list[Row] = []
    for size_class in SIZE_CLASSES:
        n_sites, replays = (sites or LAB_SITES)[size_class]
        for loss in (0.0, 0.01, 0.02, 0.05):
            g = page_grid(loss, 100, 2000, 1, size_class=size_class, sites=n_sites, replays=replays)
            if loss:
                rows.append(("001", f"HoL bytes RR vs seq, {size_class} sites, {loss:.0%} loss, 2 Mbit/s, 100 ms", "lower, more so for large sites", g["hol_delta_pct"]))
            says = gain if size_class == "large" else ("worse without loss; no gain for small sites" if size_class == "small" else gain.split(";")[0])
            rows.append(("001", f"SpeedIndex RR vs seq, {size_class} sites, {loss:.0%} loss, 2 Mbit/s, 100 ms", says, g["speed_index_delta_pct"]))
        g = page_grid(0.0, 100, 10_000, 1, size_class=size_class, sites=n_sites, replays=replays)
        rows.append(("001", f"SpeedIndex RR vs seq, {size_class} sites, 0% loss, 10 Mbit/s", "differences vanish with bandwidth", g["speed_index_delta_pct"]))
        rows.append(("001", f"HoL bytes RR vs seq, {size_class} sites, 0% loss, 10 Mbit/s", "differences vanish with bandwidth", g["hol_delta_pct"]))
    exp = "h3_prioritization_2022"
    w = worlds("h3_prioritization", {a: {exp: a} for a in ("sequential", "round_robin")}, clients=clients, kinds=("page_loads",))
    s, r = w["sequential"]["page_loads"], w["round_robin"]["page_loads"]
    rows.append(("001", "Fleet HoL-blocked bytes (mean), RR vs seq", "lower", rel(r.hol_blocked_bytes.mean(), s.hol_blocked_bytes.mean())))
    lossy = s.loss_true > s.loss_true.quantile(0.9)
    for size_class in ("small", "large"):
        m = lossy & (s.page_size_class == size_class)
        rows.append(("001", f"Fleet SpeedIndex p50, RR vs seq, {size_class} sites, top-decile loss", "gain for large sites on lossy paths", rel(r.speed_index_ms[m].median(), s.speed_index_ms[m].median())))
    return rows


HEADLINES: dict[str, Callable[..., list[Row]]] = {
    "fhol": fhol_headlines,
    "h3_prioritization": prioritization_headlines,
    "header_compression": header_headlines,
    "cc_loss_recovery": cc_headlines,
    "multipath": multipath_headlines,
}


def markdown_table(rows: list[Row]) -> str:
    lines = ["| seed | metric | seed says | simulator |", "|---|---|---|---|"]
    for seed, metric, says, value in rows:
        unit = "" if "(ms)" in metric or "ratio" in metric or "(%)" in metric or "share" in metric else "%"
        lines.append(f"| {seed} | {metric} | {says} | {value:+.2f}{unit} |" if unit else f"| {seed} | {metric} | {says} | {value:.2f} |")
    return "\n".join(lines)


BEGIN, END = "<!-- measured:begin -->", "<!-- measured:end -->"


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - a report writer
    import argparse
    import time
    from pathlib import Path

    ap = argparse.ArgumentParser(description="Measure the seeds' headline effects on simulated data.")
    ap.add_argument("scenarios", nargs="*", default=list(HEADLINES))
    ap.add_argument("--write", type=Path, help="replace the measured table in this markdown file")
    args = ap.parse_args(argv)
    rows: list[Row] = []
    t0 = time.perf_counter()
    for name in sorted(args.scenarios):
        rows += HEADLINES[name]()
    table = markdown_table(rows)
    print(table)
    if args.write:
        text = args.write.read_text()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        stamp = f"\n_Measured by `python -m simulation.measure --write docs/simulator.md` in {time.perf_counter() - t0:.0f} s._\n"
        args.write.write_text(f"{head}{BEGIN}\n{table}\n{stamp}{END}{tail}")


if __name__ == "__main__":  # pragma: no cover
    main()
