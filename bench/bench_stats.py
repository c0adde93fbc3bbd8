"""How long does the stats engine take for 10,000 comparisons?

``python bench/bench_stats.py [--comparisons N] [--repeat R]`` builds a synthetic input table
(10 experiments x metrics x 8 segments x 5 days, two arms, a mix of mean, proportion, ratio
with and without CUPED, and p95 quantile rows), then times :func:`stats.engine.analyze_table`
end to end (validation, pairing, SRM, corrections, sequential, output) and, separately, the
vectorised kernel alone. Goal: < 1 s for 10,000 comparisons. The run's row goes to
bench/results/stats.csv (bench/results.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` importable when run as a script

KINDS = ("mean", "mean", "proportion", "ratio", "ratio", "quantile")


def build_table(comparisons: int, seed: int = 0) -> pd.DataFrame:
    """Two arm rows per comparison with plausible, internally consistent sums."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    experiments, segments, days = 10, 8, 5
    metrics = max(1, comparisons // (experiments * segments * days))
    idx = pd.MultiIndex.from_product(
        [range(experiments), range(metrics), range(segments), range(days), range(2)],
        names=["e", "m", "s", "d", "arm"],
    ).to_frame(index=False)
    rows = len(idx)
    kind = np.array(KINDS)[idx["m"].to_numpy() % len(KINDS)]
    n = rng.integers(5_000, 50_000, rows).astype(float)
    mean, sd = rng.uniform(1, 100, rows), rng.uniform(1, 50, rows)
    x_mean = rng.uniform(2, 8, rows)
    p = np.where(kind == "quantile", 0.95, np.nan)
    n_ev = np.round(n * x_mean)  # counts are whole numbers (stats.inputs checks it)
    s_iid = np.sqrt(0.95 * 0.05 / n_ev)
    grid_c = np.array([-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0])
    grid_p = 0.95 + s_iid[:, None] * grid_c
    grid_v = mean[:, None] * (1 + 20 * (grid_p - 0.95))
    table = pd.DataFrame({
        "experiment_id": "exp" + idx["e"].astype(str), "metric": "metric" + idx["m"].astype(str),
        "metric_kind": kind, "is_guardrail": idx["m"].to_numpy() % 7 == 0,
        "segment_type": np.where(idx["s"] == 0, "overall", "platform"),
        "segment_value": np.where(idx["s"] == 0, "all", "p" + idx["s"].astype(str)),
        "arm": np.where(idx["arm"] == 0, "control", "treatment"), "is_control": idx["arm"] == 0,
        "as_of_date": pd.Timestamp("2026-01-01") + pd.to_timedelta(idx["d"], "D"), "n_units": n,
        "sum_y": np.where(kind == "proportion", np.round(n * 0.3), n * mean),
        "sum_y2": np.where(kind == "proportion", np.round(n * 0.3), n * (mean**2 + sd**2)),
        "sum_x": n * x_mean, "sum_x2": n * (x_mean**2 + 4), "sum_xy": n * (mean * x_mean + sd),
        "quantile_p": p, "quantile_value": mean, "n_events": n_ev, "sum_s": np.ceil(0.95 * n_ev),
        "sum_s2": np.round(n * ((0.95 * x_mean) ** 2 * 1.5 + 0.05 * x_mean)), "sum_n": n_ev,
        "sum_n2": np.round(n * x_mean**2 * 1.6), "sum_sn": np.round(n * 0.95 * x_mean**2 * 1.55),
    })  # fmt: skip
    is_q = kind == "quantile"
    table["grid_p"] = pd.Series(list(grid_p), dtype=object).where(is_q, None)
    table["grid_value"] = pd.Series(list(grid_v), dtype=object).where(is_q, None)
    cuped = (kind == "mean") | ((kind == "ratio") & (idx["m"].to_numpy() % 2 == 0))
    c = mean * 0.9
    table.loc[cuped, "sum_c"] = (n * c)[cuped]
    table.loc[cuped, "sum_c2"] = (n * (c**2 + sd**2))[cuped]
    table.loc[cuped, "sum_yc"] = (n * (mean * c + 0.6 * sd**2))[cuped]
    ratio_c = cuped & (kind == "ratio")
    # correlations y-x .5, y-c .6, y-d .3, x-c .3, x-d .75, c-d .5 (var x = var d = 4)
    for col, val in {"sum_d": n * x_mean, "sum_d2": n * (x_mean**2 + 4), "sum_cd": n * (c * x_mean + sd),
                     "sum_yd": n * (mean * x_mean + 0.6 * sd), "sum_xc": n * (x_mean * c + 0.6 * sd),
                     "sum_xd": n * (x_mean**2 + 3)}.items():  # fmt: skip
        table.loc[ratio_c, col] = val[ratio_c]
    return table


def row(comparisons: int, times: list[float], cpu: list[float], kernel_s: float) -> dict[str, object]:
    """The run's measured fields of bench/results/stats.csv (the columns in bench/results.py)."""
    return {"comparisons": comparisons, "wall_best_s": min(times), "wall_median_s": statistics.median(times),
            "cpu_best_s": min(cpu), "kernel_s": kernel_s}  # fmt: skip


def main() -> None:
    """Print timings (best and median of ``--repeat`` runs)."""
    import numpy as np

    from stats.engine import analyze_table
    from stats.frequentist import compare, linearize
    from stats.statistics import MeanStatistic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    table = build_table(args.comparisons)
    out = analyze_table(table)  # warm-up (imports, caches)
    assert not out.issues, out.issues[:3]
    times, cpu = [], []
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = analyze_table(table)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    k = len(out.results)
    print(f"analyze_table: {k} comparisons ({len(table)} input rows), "
          f"wall best {min(times):.3f} s, median {np.median(times):.3f} s; "
          f"CPU best {min(cpu):.3f} s (CPU time is robust to other load on the machine)")  # fmt: skip
    n = np.full(k, 10_000.0)
    stat = MeanStatistic(n, n * 5.0, n * 30.0)
    start = time.perf_counter()
    compare(linearize(stat), linearize(stat + stat), test="welch")
    kernel_s = time.perf_counter() - start
    print(f"kernel only (Welch, {k} comparisons): {kernel_s:.4f} s")
    from bench import results

    results.append("stats", row(k, times, cpu, kernel_s))


if __name__ == "__main__":
    main()
