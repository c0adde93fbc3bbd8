"""Seeded simulation study of the always-valid relative interval and of the decision rule.

In :mod:`stats.study`'s style: experiments drawn at the unit level with clustered,
heavy-tailed data (the same unit model: activity lambda_i ~ LogNormal, x_i = 1 + Poisson(lambda_i)
requests, a per-unit random effect u_i), reduced each day to exactly the sufficient statistics
the warehouse produces, and analysed by the engine and :func:`stats.decision.decide` - the calls
the pipeline makes - at every one of ``days`` daily looks, with the experiment's plan (N* and
the planned days) as the registry would give it. Units arrive evenly over the days.

Metrics of one simulated experiment (all "decrease is better" but ``crash_rate``):

- ``ratio`` / ``success``: per-request latency (ratio of per-unit sums, delta method): y_i =
  Gamma(K x_i, THETA e^{u_i}), two independent draws on the same requests;
- ``mean``: per-unit mean of another per-unit total Gamma(K d_i, THETA e^{u_i}),
  d_i = 1 + Poisson(lambda_i);
- ``crash_rate``: a rare per-unit event (proportion), Bernoulli(CRASH_P);
- ``latency_p95``: the 95th percentile of the x_i request latencies exp(LAT_MU + u_i +
  SIGMA_E e), binned like the mart (units clustered).

Effects are multiplicative per metric, so every true relative delta is the effect itself.

``python -m stats.decision_study --relative 10000`` and ``--decision 10000`` print the numbers
of docs/stats.md ("The relative always-valid interval", "The decision rule").
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from datetime import date

import numpy as np
import pandas as pd

from stats.decision import decide, plan_units, required_units
from stats.engine import analyze_table
from stats.settings import (
    AnalysisSettings,
    DecisionPlan,
    DecisionSettings,
    ExperimentPlan,
    MetricRole,
)
from stats.study import GRID_C, LAT_MU, SIGMA_E, THETA, K, _draw_arm, bin_values

CRASH_P = 0.001
START = date(2026, 1, 1)
METRICS = ("mean", "ratio", "crash_rate", "latency_p95")

#: the declared metrics of the decision study's experiment
ROLES = (
    MetricRole(role="success", metric="success", better="decrease", minimum_effect=0.10),
    MetricRole(role="guardrail", metric="mean", better="decrease", margin=0.10),
    MetricRole(role="guardrail", metric="ratio", better="decrease", margin=0.10),
    MetricRole(role="guardrail", metric="latency_p", quantile=0.95, better="decrease", margin=0.10),
)


@dataclass(frozen=True)
class Effects:
    """Multiplicative effect of the treatment arm on each metric."""

    success: float = 0.0
    mean: float = 0.0
    ratio: float = 0.0
    crash_rate: float = 0.0
    latency_p95: float = 0.0


def _arm(rng: np.random.Generator, sims: int, n: int, eff: Effects, quantile: bool) -> dict:
    """Per-unit data of one arm for ``sims`` experiments of ``n`` units, (sims, n): the unit
    model of :func:`stats.study._draw_arm` (its y is the ratio metric's numerator, its c the
    mean metric's per-unit total), one more latency total on the same requests, a rare event."""
    a = _draw_arm(rng, np.full(sims, n), n, eff.ratio)
    scale = THETA * np.exp(a.u)
    out = {
        "x": a.x,
        "y_ratio": a.y,
        "y_success": rng.gamma(K * a.x, scale) * (1 + eff.success),
        "y_mean": a.c * (1 + eff.mean),
        "crash": (rng.random((sims, n)) < CRASH_P * (1 + eff.crash_rate)).astype(float),
    }
    if quantile:
        out["u"], out["lat_effect"] = a.u, eff.latency_p95
    return out


def _cum(v: np.ndarray, days: int) -> np.ndarray:
    """Cumulative per-look sums: units arrive evenly, day by day. (sims, days)."""
    sims, n = v.shape
    return np.cumsum(v.reshape(sims, days, n // days).sum(axis=2), axis=1)


def _sum_rows(a: dict, arm: int, days: int, sims0: int) -> list[pd.DataFrame]:
    sims, n = a["x"].shape
    cum = {k: _cum(v, days) for k, v in (
        ("x", a["x"]), ("x2", a["x"] ** 2), ("yr", a["y_ratio"]), ("yr2", a["y_ratio"] ** 2),
        ("xyr", a["x"] * a["y_ratio"]), ("ys", a["y_success"]), ("ys2", a["y_success"] ** 2),
        ("xys", a["x"] * a["y_success"]), ("ym", a["y_mean"]), ("ym2", a["y_mean"] ** 2),
        ("c", a["crash"]),
    )}  # fmt: skip
    base = _base(sims, days, n, arm, sims0)
    r = lambda k: cum[k].ravel()  # noqa: E731
    return [
        pd.DataFrame({**base, "metric": "ratio", "metric_kind": "ratio", "sum_y": r("yr"),
                      "sum_y2": r("yr2"), "sum_x": r("x"), "sum_x2": r("x2"), "sum_xy": r("xyr")}),
        pd.DataFrame({**base, "metric": "success", "metric_kind": "ratio", "sum_y": r("ys"),
                      "sum_y2": r("ys2"), "sum_x": r("x"), "sum_x2": r("x2"), "sum_xy": r("xys")}),
        pd.DataFrame({**base, "metric": "mean", "metric_kind": "mean", "sum_y": r("ym"),
                      "sum_y2": r("ym2")}),
        pd.DataFrame({**base, "metric": "crash_rate", "metric_kind": "proportion",
                      "sum_y": r("c"), "sum_y2": r("c")}),
    ]  # fmt: skip


def _base(sims: int, days: int, n: int, arm: int, sims0: int) -> dict:
    look = np.tile(np.arange(days), sims)
    return {
        "experiment_id": "study", "segment_type": "overall",
        "segment_value": np.repeat(np.arange(sims0, sims0 + sims), days).astype(str),
        "arm": "AB"[arm], "is_control": arm == 0,
        "as_of_date": pd.Timestamp(START) + pd.to_timedelta(look, "D"),
        "n_units": (look + 1.0) * (n // days),
    }  # fmt: skip


def _quantile_rows(
    rng: np.random.Generator, a: dict, arm: int, days: int, sims0: int, p: float = 0.95
) -> pd.DataFrame:
    """The quantile's sufficient statistics of every look (module docstring of stats.study).

    Per experiment the event values are sorted once; at look k the included events are those
    of units that arrived by day k, so the type-1 quantile and the grid are ranks of the
    included events' running count along the sorted order, and s_i (events of unit i at or
    below the quantile) a count over the sorted prefix.
    """
    counts = a["x"].astype(np.int64)
    sims, n = counts.shape
    per_day = n // days
    rows = []
    for i in range(sims):
        unit = np.repeat(np.arange(n), counts[i])
        values = np.exp(LAT_MU + a["u"][i, unit] + SIGMA_E * rng.standard_normal(unit.size))
        values = bin_values(values * (1 + a["lat_effect"]))
        order = np.argsort(values, kind="stable")
        values, unit = values[order], unit[order]
        day = unit // per_day
        included = np.cumsum(day[None, :] <= np.arange(days)[:, None], axis=1)  # (days, E)
        n_ev = included[:, -1]
        n_i = np.cumsum(np.bincount(np.arange(n) // per_day, weights=counts[i], minlength=days))
        n_i2 = np.cumsum(np.bincount(np.arange(n) // per_day, weights=counts[i] ** 2.0,
                                     minlength=days))  # fmt: skip
        grid_p = p + np.outer(np.sqrt(p * (1 - p) / n_ev), GRID_C)
        ranks = np.clip(np.ceil(n_ev[:, None] * np.c_[np.full(days, p), grid_p]), 1, n_ev[:, None])
        pos = np.stack([np.searchsorted(included[k], ranks[k]) for k in range(days)])
        vals = values[np.minimum(pos, values.size - 1)]
        q = vals[:, 0]
        s2 = np.empty(days)
        sn = np.empty(days)
        ss = np.empty(days)
        for k in range(days):
            upto = np.searchsorted(values, q[k], side="right")
            u_k = unit[:upto][day[:upto] <= k]
            s_i = np.bincount(u_k, minlength=n).astype(float)
            ss[k], s2[k] = s_i.sum(), (s_i * s_i).sum()
            sn[k] = (s_i * counts[i]).sum()
        base = _base(1, days, n, arm, sims0 + i)
        rows.append(pd.DataFrame({
            **base, "metric": "latency_p", "metric_kind": "quantile", "quantile_p": p,
            "quantile_value": q, "n_events": n_ev.astype(float), "sum_s": ss, "sum_s2": s2,
            "sum_n": n_i, "sum_n2": n_i2, "sum_sn": sn,
            "grid_p": list(grid_p), "grid_value": list(vals[:, 1:]),
        }))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def simulate_looks(seed: int, sims: int, units_per_arm: int, days: int, effects: Effects,
                   quantile: bool = True, chunk: int | None = None):  # fmt: skip
    """Yield (first sim, sufficient-statistics table of every look) per chunk of experiments."""
    rng = np.random.default_rng(seed)
    per_day = units_per_arm // days
    n = per_day * days
    chunk = chunk or max(1, min(500, 2_000_000 // (n * 8)))
    for lo in range(0, sims, chunk):
        k = min(chunk, sims - lo)
        frames = []
        for arm in (0, 1):
            a = _arm(rng, k, n, effects if arm else Effects(), quantile)
            frames += _sum_rows(a, arm, days, lo)
            if quantile:
                frames.append(_quantile_rows(rng, a, arm, days, lo))
        yield lo, pd.concat(frames, ignore_index=True)


def analysis_settings(units_per_arm: int, days: int) -> AnalysisSettings:
    """The engine's settings for the study's experiment, planned as the registry would."""
    plan = ExperimentPlan(start_date=START, planned_units_per_arm=units_per_arm,
                          planned_days=days)  # fmt: skip
    return AnalysisSettings(correction="none", plans={"study": plan})


def relative_aa(seed: int, sims: int, units_per_arm: int, days: int = 30,
                metrics: tuple[str, ...] = METRICS) -> dict[str, float]:  # fmt: skip
    """A/A: how often each metric's always-valid intervals ever exclude 0 over the looks.

    Per metric: ``rel_ever_<m>`` (the relative interval, target <= alpha), ``abs_ever_<m>``
    (the absolute one), ``rel_ever_delta_<m>`` (the symmetric delta-method sequence on the lift
    the engine used before, intersected the same way, for comparison), the share of looks
    without a sequential interval (too few events) and of looks flagged ``sequential_conflict``.
    """
    from stats.sequential import calibrated_alpha, confidence_sequence, running_intersection

    settings = analysis_settings(units_per_arm, days)
    quantile = "latency_p95" in metrics
    res = []
    for _, table in simulate_looks(seed, sims, units_per_arm, days, Effects(), quantile):
        res.append(analyze_table(table, settings).results)
    r = pd.concat(res, ignore_index=True)
    r["metric"] = np.where(r["metric"] == "latency_p", "latency_p95", r["metric"])
    out: dict[str, float] = {"sims": float(sims), "units_per_arm": float(units_per_arm)}
    for m in metrics:
        g = r[r["metric"] == m]
        sim = g["segment_value"].to_numpy()
        out[f"rel_ever_{m}"] = _ever(g, sim, "seq_ci_rel")
        out[f"abs_ever_{m}"] = _ever(g, sim, "seq_ci_abs")
        n = (g["n_control"] + g["n_treatment"]).to_numpy(float)
        cs = confidence_sequence(g["delta_rel"].to_numpy(float), g["se_rel"].to_numpy(float) ** 2,
                                 n, calibrated_alpha(0.05), 2.0 * units_per_arm)  # fmt: skip
        day = pd.to_datetime(g["as_of_date"]).to_numpy().astype("datetime64[D]").astype(np.int64)
        lo, hi, _ = running_intersection(sim, day, cs.ci_lower, cs.ci_upper, cs.ci_lower)
        out[f"rel_ever_delta_{m}"] = float(
            pd.Series((lo > 0) | (hi < 0) | (lo > hi)).groupby(sim).any().mean()
        )
        flags = g["flags"].fillna("")
        out[f"insufficient_looks_{m}"] = float(flags.str.contains("insufficient_data").mean())
        out[f"conflict_looks_{m}"] = float(flags.str.contains("sequential_conflict").mean())
    return out


def _ever(g: pd.DataFrame, sim: np.ndarray, prefix: str) -> float:
    lo, hi = g[f"{prefix}_lower"].to_numpy(float), g[f"{prefix}_upper"].to_numpy(float)
    return float(pd.Series((lo > 0) | (hi < 0)).groupby(sim).any().mean())


def planned_units(seed: int = 5, pilot: int = 20_000, days: int = 30) -> int:
    """Units per arm the rule needs for :data:`ROLES` (alpha 5%, power 80%, ``days`` looks),
    from a pilot A/A experiment's per-unit variances (what ``quicexp plan-experiment`` does
    with the lake's recent variance)."""
    ((_, table),) = simulate_looks(seed, 1, pilot, 1, Effects(), True, chunk=1)
    res = analyze_table(table, AnalysisSettings(correction="none")).results
    res["label"] = np.where(res["metric"] == "latency_p", "latency_p@p95", res["metric"])
    var = dict(zip(res["label"], res["se_control"] ** 2 * res["n_control"], strict=True))
    mean = dict(zip(res["label"], res["value_control"], strict=True))
    return int(required_units(plan_units(ROLES, var, mean, looks=days)))


SCENARIOS = {
    "null": Effects(),
    "guardrail_mean_at_margin": Effects(success=-0.3, mean=0.10),
    "guardrail_ratio_at_margin": Effects(success=-0.3, ratio=0.10),
    "guardrail_p95_at_margin": Effects(success=-0.3, latency_p95=0.10),
    "minimum_effect": Effects(success=-0.10),
}
"""The study's lines: nothing moves (false ship, false rollback); the success metric moves
far beyond its minimum effect while one guardrail is worse by exactly its margin (false ship
through that guardrail); the success metric moves by exactly its minimum effect and no guardrail
moves (power at the planned size)."""


def decision_rates(seed: int, sims: int, scenario: str, units_per_arm: int,
                   days: int = 30) -> dict[str, float]:  # fmt: skip
    """Share of experiments of ``scenario`` with each final verdict (and ever shipped)."""
    settings = analysis_settings(units_per_arm, days)
    ds = DecisionSettings(experiments={"study": DecisionPlan(roles=ROLES, start_date=START,
                                                             planned_days=days)})  # fmt: skip
    verdicts = []
    for _, table in simulate_looks(seed, sims, units_per_arm, days, SCENARIOS[scenario]):
        res = analyze_table(table, settings).results
        verdicts.append(decide(res, ds).verdicts)
    v = pd.concat(verdicts, ignore_index=True)
    last = v.sort_values("as_of_date").groupby("segment_value").tail(1)
    out = {f"{scenario}_final_{k}": float((last["verdict"] == k).mean())
           for k in ("ship", "rollback", "no_ship", "keep_running", "invalid")}  # fmt: skip
    ever = v.groupby("segment_value")["verdict"]
    out[f"{scenario}_ever_ship"] = float(ever.apply(lambda s: (s == "ship").any()).mean())
    out[f"{scenario}_ever_rollback"] = float(ever.apply(lambda s: (s == "rollback").any()).mean())
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m stats.decision_study (--relative SIMS | --decision SIMS) [--seed N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--relative",
        type=int,
        metavar="SIMS",
        default=0,
        help="A/A of the relative always-valid interval, SIMS experiments a size",
    )
    parser.add_argument(
        "--sizes",
        default="200,2000,60000,100000",
        help="units per arm of --relative (comma-separated)",
    )
    parser.add_argument(
        "--quantile-sims",
        type=int,
        default=0,
        help="experiments a size for the p95 lines of --relative (default: as many)",
    )
    parser.add_argument(
        "--decision",
        type=int,
        metavar="SIMS",
        default=0,
        help="the decision rule's error rates, SIMS experiments a scenario",
    )
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args(argv)  # fmt: skip
    start = time.perf_counter()
    for size in [int(v) for v in args.sizes.split(",")] if args.relative else []:
        q_sims = min(args.relative, args.quantile_sims or args.relative)
        for metrics, sims, seed in ((METRICS[:3], args.relative, args.seed + size),
                                    (METRICS[3:], q_sims, args.seed + size + 1)):  # fmt: skip
            for name, value in relative_aa(seed, sims, size, metrics=metrics).items():
                print(f"{size:7d} {name:40s} {value:.6f}", flush=True)
    if args.decision:
        units = planned_units()
        print(f"{'planned units per arm':48s} {units}", flush=True)
        for i, scenario in enumerate(args.scenarios.split(",")):
            for name, value in decision_rates(
                args.seed + i, args.decision, scenario, units
            ).items():
                print(f"{name:48s} {value:.6f}", flush=True)
    print(f"{'seconds':48s} {time.perf_counter() - start:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
