"""The daily A/A placebo and the known-effect canary over a simulated experiment's days.

A seeded simulation of what ``models/marts/experiment_placebo_sufficient_stats.sql`` and the
results step do every day (docs/stats.md, "Health checks"), to check that on clean data every
estimator's running A/A tally stays in its band around alpha and the canary's coverage in its
band around 1 - alpha: the control arm's units arrive day by day (the unit model of
:mod:`stats.study`: heavy-tailed activity, a per-unit random effect, clustered latencies,
pre-period covariates), are re-split every day into two pseudo-arms by ``splits`` independent
salts, and each look's experiment-to-date sums are formed per split and pseudo-arm exactly as the
mart forms them (quantiles from log-binned values, the unit sums of the outer-CI method; the
canary on split 0 with every value times (1 + w)^bins, a binned value moved by exactly that many
bins). The engine analyses every look (:func:`stats.engine.analyze_table`, the pipeline's call),
the looks are tallied (:func:`stats.health.placebo_tally`) and the running checks of the last day
read (:func:`stats.health.placebo_checks`).

Metrics: a per-unit mean, a ratio, a proportion (each with and without its CUPED covariate)
and the p50 and p95 of the event latencies: every estimator of the engine.

``python -m stats.health_study --seeds 20`` prints the checks of 20 studies.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import pandas as pd

from stats.engine import analyze_table
from stats.health import (
    HealthSettings,
    placebo_checks,
    placebo_input,
    placebo_tally,
)
from stats.settings import AnalysisSettings, ExperimentPlan
from stats.study import GRID_C, LAM_MU, LAM_SIGMA, LAT_MU, QUANTILE_BIN_WIDTH, SIGMA_E, TAU, THETA
from stats.study import K as GAMMA_SHAPE

START = date(2026, 1, 1)
QUANTILES = (0.5, 0.95)
SLOW_MS = 250.0
"""The proportion metric: the unit had a request slower than this."""


@dataclass(frozen=True)
class PlaceboStudy:
    """The tally of every day, and the running checks of the last day."""

    tally: pd.DataFrame
    checks: pd.DataFrame


def _bin_value(b: np.ndarray) -> np.ndarray:
    return np.exp((b + 0.5) * np.log1p(QUANTILE_BIN_WIDTH))


def _moment_rows(v: dict[str, np.ndarray], member: np.ndarray, kind: str, metric: str,
                 factor: float) -> dict[str, np.ndarray]:  # fmt: skip
    """Sums over the units in ``member`` (units x groups, 0/1) of y, x, c, d and their
    products, y multiplied by ``factor``."""
    y = v["y"] * factor
    cols = {"n_units": np.ones_like(y), "sum_y": y, "sum_y2": y * y}
    if kind == "ratio":
        x = v["x"]
        cols |= {"sum_x": x, "sum_x2": x * x, "sum_xy": x * y}
    if "c" in v:
        c = v["c"]
        cols |= {"sum_c": c, "sum_c2": c * c, "sum_yc": y * c}
        if kind == "ratio":
            d, x = v["d"], v["x"]
            cols |= {"sum_d": d, "sum_d2": d * d, "sum_cd": c * d, "sum_yd": y * d,
                     "sum_xc": x * c, "sum_xd": x * d}  # fmt: skip
    names = list(cols)
    sums = member.T @ np.stack([cols[n] for n in names], axis=1)
    out = dict(zip(names, sums.T, strict=True))
    out |= {"metric": metric, "metric_kind": kind}
    return out


def _quantile_rows(bins: np.ndarray, unit: np.ndarray, groups: np.ndarray, n_units: int,
                   p: float, shift: int) -> pd.DataFrame:  # fmt: skip
    """The outer-CI sufficient statistics of the binned events of each group (``groups``: events
    x groups, True where the event's unit is in the group), as
    int_quantile_statistics_aggregated_to_arms forms them: the type-1 quantile's bin, the
    quantile function on the grid, and the unit sums of s_i (events at or below it) and n_i."""
    lo = int(bins.min())
    width = int(bins.max()) - lo + 1
    n_groups = groups.shape[1]
    event, group = np.nonzero(groups)
    rel = bins[event] - lo
    hist = np.bincount(group * width + rel, minlength=n_groups * width).reshape(n_groups, width)
    cum = np.cumsum(hist, axis=1)
    total = cum[:, -1].astype(float)
    big = float(total.max()) + 1.0
    flat = (cum + big * np.arange(n_groups)[:, None]).ravel()

    def at(g: np.ndarray) -> np.ndarray:
        """Bin (relative) of the type-1 quantile of each group at probabilities g (groups x m)."""
        rank = np.clip(np.ceil(total[:, None] * g), 1, np.maximum(total, 1)[:, None])
        found = np.searchsorted(flat, rank + big * np.arange(n_groups)[:, None])
        return found - width * np.arange(n_groups)[:, None]

    q = at(np.full((n_groups, 1), p))[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = p + np.outer(np.sqrt(p * (1 - p) / total), GRID_C)
    grid_bins = at(np.clip(np.nan_to_num(grid, nan=p), 0.0, 1.0))
    below = rel <= q[group]
    cell = group * n_units + unit[event]
    s_i = np.bincount(cell, weights=below, minlength=n_groups * n_units).reshape(n_groups, n_units)
    n_i = np.bincount(cell, minlength=n_groups * n_units).reshape(n_groups, n_units).astype(float)
    inside = (grid > 0) & (grid < 1)
    return pd.DataFrame({
        "metric": f"latency_p{round(p * 100)}", "metric_kind": "quantile", "quantile_p": p,
        "quantile_value": _bin_value(q + lo + shift), "n_events": total,
        "n_units": (n_i > 0).sum(1).astype(float), "sum_s": s_i.sum(1), "sum_s2": (s_i * s_i).sum(1),
        "sum_n": n_i.sum(1), "sum_n2": (n_i * n_i).sum(1), "sum_sn": (s_i * n_i).sum(1),
        "grid_p": [list(g[m]) for g, m in zip(grid, inside, strict=True)],
        "grid_value": [list(_bin_value(b[m] + lo + shift)) for b, m in zip(grid_bins, inside, strict=True)],
    })[total >= 2]  # fmt: skip


def placebo_study(seed: int, days: int = 30, new_units_per_day: int = 120, splits: int = 32,
                  canary_bins: int = 30,
                  settings: HealthSettings | None = None) -> PlaceboStudy:  # fmt: skip
    """Simulate ``days`` daily runs of the placebo on a control arm (module docstring)."""
    s = settings or HealthSettings()
    rng = np.random.default_rng(seed)
    n = new_units_per_day * days
    arrival = np.repeat(np.arange(days), new_units_per_day)
    lam = rng.lognormal(LAM_MU, LAM_SIGMA, n) / 4.0  # events per unit per day
    u = rng.normal(0.0, TAU, n)
    pre_d = rng.poisson(lam * 7.0).astype(float)
    pre_c = np.where(
        pre_d > 0, rng.gamma(GAMMA_SHAPE * np.maximum(pre_d, 1), THETA * np.exp(u)), 0.0
    )
    pre_slow = (rng.random(n) < 1 - np.exp(-pre_d * 0.1 * np.exp(2 * u))).astype(float)
    factor = float((1 + QUANTILE_BIN_WIDTH) ** canary_bins)
    y = np.zeros(n)
    x = np.zeros(n)
    slow = np.zeros(n)
    ev_unit: list[np.ndarray] = []
    ev_bin: list[np.ndarray] = []
    plan = {"study": ExperimentPlan(start_date=START, planned_units_per_arm=float(n),
                                    planned_days=days)}  # fmt: skip
    analysis = AnalysisSettings(plans=plan, alpha=s.placebo_alpha)
    looks: list[pd.DataFrame] = []
    for day in range(days):
        active = arrival <= day
        k = np.where(active, rng.poisson(lam), 0)
        y += np.where(k > 0, rng.gamma(GAMMA_SHAPE * np.maximum(k, 1), THETA * np.exp(u)), 0.0)
        x += k
        unit = np.repeat(np.arange(n), k)
        values = np.exp(LAT_MU + u[unit] + SIGMA_E * rng.standard_normal(unit.size))
        slow = np.maximum(slow, np.bincount(unit, values > SLOW_MS, minlength=n) > 0)
        ev_unit.append(unit)
        ev_bin.append(np.floor(np.log(values) / np.log1p(QUANTILE_BIN_WIDTH)).astype(np.int64))
        member = (rng.random((n, splits)) < 0.5).astype(float)  # the day's pseudo-arm b per split
        looks.append(_look(day, x > 0, y, x, slow, pre_c, pre_d, pre_slow, member,
                           np.concatenate(ev_unit), np.concatenate(ev_bin), factor, canary_bins))  # fmt: skip
    # every look's splits are comparisons of their own (placebo_input), so one engine call over
    # all looks gives what the daily calls give, vectorised
    res = analyze_table(placebo_input(pd.concat(looks, ignore_index=True)), analysis).results
    tally = placebo_tally(res, factor, s.placebo_alpha)
    checks = placebo_checks(tally, [START + timedelta(days=days - 1)], s)
    return PlaceboStudy(tally, checks)


def _look(day, seen, y, x, slow, pre_c, pre_d, pre_slow, member, ev_unit, ev_bin, factor,
          canary_bins) -> pd.DataFrame:  # fmt: skip
    """One look's placebo rows: every split x pseudo-arm x metric, and the day's canary."""
    splits, canary = member.shape[1], 0
    idx = np.flatnonzero(seen)
    mean_c = np.where(pre_d > 0, pre_c / np.maximum(pre_d, 1), 0.0)
    per = {
        "mean": ({"y": y / np.maximum(x, 1)}, {"c": mean_c}),
        "ratio": ({"y": y, "x": x}, {"c": pre_c, "d": pre_d}),
        "proportion": ({"y": slow.astype(float)}, {"c": pre_slow}),
    }
    frames = []
    in_b = member[ev_unit] > 0
    for arm, m, groups, f, shift in (
        ("a", 1.0 - member[idx], ~in_b, 1.0, 0),
        ("b", member[idx], in_b, 1.0, 0),
        ("b_canary", member[idx][:, [canary]], in_b[:, [canary]], factor, canary_bins),
    ):  # fmt: skip
        split_ids = [canary] if arm == "b_canary" else list(range(splits))
        for kind, (vals, cov) in per.items():
            if arm == "b_canary" and kind == "proportion":
                continue
            for suffix, v in (("", vals), ("_cuped", {**vals, **cov})):
                sums = _moment_rows({k: a[idx] for k, a in v.items()}, m, kind, kind + suffix, f)
                frames.append(pd.DataFrame(sums | {"arm": arm, "placebo_split": split_ids}))
        for p in QUANTILES:
            rows = _quantile_rows(ev_bin, ev_unit, groups, len(seen), p, shift)
            frames.append(rows.assign(arm=arm, placebo_split=np.asarray(split_ids)[rows.index]))
    out = pd.concat(frames, ignore_index=True)
    out["experiment_id"] = "study"
    out["segment_type"], out["segment_value"] = "overall", "all"
    out["is_control"] = out["arm"] == "a"
    out["as_of_date"] = START + timedelta(days=day)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=20260601)
    ap.add_argument("--days", type=int, default=30)
    args = ap.parse_args(argv)
    frames = []
    for i in range(args.seeds):
        c = placebo_study(args.seed + i, days=args.days).checks
        frames.append(c.assign(seed=args.seed + i))
    out = pd.concat(frames, ignore_index=True)
    summary = out.groupby(["check", "estimator"]).agg(
        share=("statistic", "mean"), failed=("passed", lambda p: int((p == False).sum())),  # noqa: E712
        studies=("passed", "size"))  # fmt: skip
    print(summary.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
