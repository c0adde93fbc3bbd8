"""Seeded stats.study of the statistics engine (``stats``), vectorised with numpy.

Internal validation only (cf. gbstats ``devtools/simulation.py``). Each simulated experiment
is drawn at the *unit* (client) level with clustered, heavy-tailed data, reduced to exactly
the sufficient statistics the warehouse produces (docs/stats.md), and analysed by
:func:`stats.engine.analyze_table` - the same call the pipeline makes. Simulations are rows of
one table: ``segment_type="sim"``, ``segment_value=<index>``.

Data model (per unit i, per arm):
    lambda_i ~ LogNormal(LAM_MU, LAM_SIGMA)           heavy-tailed activity
    x_i      = 1 + Poisson(lambda_i)                   events (requests) in the experiment
    u_i      ~ N(0, TAU^2)                             per-unit random effect (clustering)
    event j latency = exp(LAT_MU + u_i + SIGMA_E e_ij) x (1 + effect)   (quantile metrics),
             binned like the mart (log bins of relative width QUANTILE_BIN_WIDTH)
    y_i      = sum of x_i Gamma(K, THETA e^{u_i}) latencies x (1 + effect)
             = Gamma(K x_i, THETA e^{u_i}) (1 + effect)   (mean metric y_i, ratio y_i / x_i)
    pre-period: d_i = 1 + Poisson(lambda_i), c_i = Gamma(K d_i, THETA e^{u_i})   (CUPED)
Truths: E[y] = K THETA e^{TAU^2/2} E[x], ratio K THETA e^{TAU^2/2}, event-level latency is
LogNormal(LAT_MU, TAU^2 + SIGMA_E^2) (u independent of x), so every true delta is known.

Run ``python -m stats.study --full`` for the documented numbers (10,000 tests each).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from stats.engine import analyze_table
from stats.settings import AnalysisSettings
from stats.srm import srm_p_value

LAM_MU, LAM_SIGMA, TAU, K, THETA = 1.0, 1.0, 0.5, 2.0, 50.0
LAT_MU, SIGMA_E = np.log(80.0), 0.8
GRID_C = (-8.0, -6.0, -4.0, -2.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.5, 4.0, 6.0, 8.0)
"""Grid of the quantile function: p + c sqrt(p (1 - p) / n_events) for c in GRID_C."""
QUANTILE_BIN_WIDTH = 0.001
"""Relative width of the warehouse's value bins for quantiles (dbt var quantile_bin_width)."""
EFFECT = 0.03
QUANTILES = (0.5, 0.95)


def bin_values(values: np.ndarray, width: float = QUANTILE_BIN_WIDTH) -> np.ndarray:
    """The mart's log binning: v -> (1 + w)^(floor(log_{1+w} v) + 1/2) (macros/quantile_bins.sql)."""
    if width <= 0:
        return values
    step = np.log1p(width)
    return np.exp((np.floor(np.log(values) / step) + 0.5) * step)


def true_values(effect: float = 0.0) -> dict[str, float]:
    """Population values of each metric in an arm with multiplicative ``effect``."""
    ex = 1.0 + np.exp(LAM_MU + LAM_SIGMA**2 / 2)
    per_event = K * THETA * np.exp(TAU**2 / 2) * (1 + effect)
    sd = np.sqrt(TAU**2 + SIGMA_E**2)
    out = {"mean": per_event * ex, "ratio": per_event}
    for p in QUANTILES:
        out[f"p{round(p * 100)}"] = float(np.exp(LAT_MU + sps.norm.ppf(p) * sd) * (1 + effect))
    return out


@dataclass
class _Arm:
    """Per-unit arrays of one arm for a chunk of simulations, (sims, units), 0-padded."""

    mask: np.ndarray
    x: np.ndarray
    y: np.ndarray
    c: np.ndarray
    d: np.ndarray
    u: np.ndarray


def _draw_arm(rng: np.random.Generator, n: np.ndarray, width: int, effect: float) -> _Arm:
    shape = (n.size, width)
    mask = np.arange(width)[None, :] < n[:, None]
    lam = rng.lognormal(LAM_MU, LAM_SIGMA, shape)
    u = rng.normal(0.0, TAU, shape)
    x = (1 + rng.poisson(lam)) * mask
    d = (1 + rng.poisson(lam)) * mask
    scale = THETA * np.exp(u)
    y = rng.gamma(K * np.maximum(x, 1), scale) * (1 + effect) * mask
    c = rng.gamma(K * np.maximum(d, 1), scale) * mask
    return _Arm(mask, x.astype(float), y, c, d.astype(float), u)


def _arm_sizes(rng: np.random.Generator, sims: int, n_per_arm: int) -> np.ndarray:
    """Units per arm: a 50/50 Bernoulli split of 2 n units, (sims, 2)."""
    a = rng.binomial(2 * n_per_arm, 0.5, sims)
    return np.stack([a, 2 * n_per_arm - a], axis=1)


def _base(sims: np.ndarray, arm: int, n: np.ndarray, metric: str, kind: str) -> dict:
    return {
        "experiment_id": "study", "metric": metric, "metric_kind": kind, "is_guardrail": False,
        "segment_type": "sim", "segment_value": sims.astype(str), "arm": "AB"[arm],
        "is_control": arm == 0, "as_of_date": "2026-01-01", "n_units": n.astype(float),
    }  # fmt: skip


def mean_ratio_rows(a: _Arm, sims: np.ndarray, arm: int) -> list[dict]:
    """Sufficient-statistic rows (mean and ratio, each with and without CUPED)."""
    n = a.mask.sum(1)
    s = lambda v: v.sum(axis=1)  # noqa: E731
    y, x, c, d = a.y, a.x, a.c, a.d
    mean = {"sum_y": s(y), "sum_y2": s(y * y)}
    mean_cov = {"sum_c": s(c), "sum_c2": s(c * c), "sum_yc": s(y * c)}
    ratio = {**mean, "sum_x": s(x), "sum_x2": s(x * x), "sum_xy": s(x * y)}
    ratio_cov = {**mean_cov, "sum_d": s(d), "sum_d2": s(d * d), "sum_cd": s(c * d),
                 "sum_yd": s(y * d), "sum_xc": s(x * c), "sum_xd": s(x * d)}  # fmt: skip
    return [
        {**_base(sims, arm, n, "mean", "mean"), **mean},
        {**_base(sims, arm, n, "mean_cuped", "mean"), **mean, **mean_cov},
        {**_base(sims, arm, n, "ratio", "ratio"), **ratio},
        {**_base(sims, arm, n, "ratio_cuped", "ratio"), **ratio, **ratio_cov},
    ]


def quantile_rows(
    rng: np.random.Generator, a: _Arm, sims: np.ndarray, arm: int, effect: float
) -> list[dict]:
    """Event-level latencies reduced to the quantile sufficient statistics of each sim."""
    counts = a.x.astype(np.int64)
    n_sims, width = counts.shape
    unit = np.repeat(np.arange(n_sims * width), counts.ravel())
    sim = unit // width
    values = np.exp(LAT_MU + a.u.ravel()[unit] + SIGMA_E * rng.standard_normal(unit.size))
    values = bin_values(values * (1 + effect))
    n_ev = counts.sum(axis=1)
    starts = np.r_[0, np.cumsum(n_ev)[:-1]]
    mat = np.full((n_sims, n_ev.max()), np.inf)
    mat[sim, np.arange(unit.size) - starts[sim]] = values
    mat.sort(axis=1)
    rows = []
    n_units = a.mask.sum(1)
    for p in QUANTILES:
        # type-1 empirical quantile, X_(ceil(N g)), what percentile_approx returns
        def at(g: np.ndarray) -> np.ndarray:
            idx = np.clip(np.ceil(n_ev[:, None] * g).astype(np.int64) - 1, 0, n_ev[:, None] - 1)
            return np.take_along_axis(mat, idx, axis=1)

        q = at(np.full((n_sims, 1), p))[:, 0]
        grid_p = p + np.outer(np.sqrt(p * (1 - p) / n_ev), GRID_C)
        grid_v = at(grid_p)
        s_i = np.bincount(unit, weights=values <= q[sim], minlength=n_sims * width)
        s_i = s_i.reshape(n_sims, width)
        n_i = counts.astype(float)
        rows.append({
            **_base(sims, arm, n_units, f"latency_p{round(p * 100)}", "quantile"),
            "quantile_p": p, "quantile_value": q, "n_events": n_ev.astype(float),
            "sum_s": s_i.sum(1), "sum_s2": (s_i * s_i).sum(1), "sum_n": n_i.sum(1),
            "sum_n2": (n_i * n_i).sum(1), "sum_sn": (s_i * n_i).sum(1),
            "grid_p": list(grid_p), "grid_value": list(grid_v),
        })  # fmt: skip
    return rows


def simulate_table(
    seed: int, sims: int, n_per_arm: int, effect: float, quantiles: bool, chunk: int = 500
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Sufficient-statistics table of ``sims`` experiments, and the within-arm rho^2.

    rho^2 is computed independently of the engine from the per-unit data: for the mean
    metric between y and c; for the ratio metric between the linearised values
    y - R x and c - Rc d (R, Rc the arm's ratios).

    Args:
        seed: RNG seed.
        sims: number of simulated experiments.
        n_per_arm: expected units per arm.
        effect: multiplicative treatment effect (arm B).
        quantiles: also draw events and produce the quantile metrics.
        chunk: simulations generated at once (memory bound).
    """
    rng = np.random.default_rng(seed)
    frames, cross = [], {"mean": np.zeros((2, 2)), "ratio": np.zeros((2, 2))}
    for lo in range(0, sims, chunk):
        ids = np.arange(lo, min(lo + chunk, sims))
        sizes = _arm_sizes(rng, ids.size, n_per_arm)
        width = int(sizes.max())
        for arm in (0, 1):
            a = _draw_arm(rng, sizes[:, arm], width, effect if arm else 0.0)
            rows = mean_ratio_rows(a, ids, arm)
            if quantiles:
                rows += quantile_rows(rng, a, ids, arm, effect if arm else 0.0)
            frames += [pd.DataFrame(r) for r in rows]
            y, x, c, d = (v[a.mask] for v in (a.y, a.x, a.c, a.d))
            pairs = {
                "mean": (y, c),
                "ratio": (y - y.sum() / x.sum() * x, c - c.sum() / d.sum() * d),
            }
            for name, (m1, m2) in pairs.items():
                v = np.stack([m1, m2])
                v = v - v.mean(axis=1, keepdims=True)
                cross[name] += v @ v.T
    rho2 = {k: float(v[0, 1] ** 2 / (v[0, 0] * v[1, 1])) for k, v in cross.items()}
    return pd.concat(frames, ignore_index=True), rho2


def sequential_fpr(
    seed: int, sims: int, units_per_day: int, days: int = 30, alpha: float = 0.05
) -> dict[str, float]:
    """A/A with ``days`` cumulative daily looks through the engine's confidence sequence."""
    rng = np.random.default_rng(seed)
    frames = []
    for arm in (0, 1):
        n = np.full(sims * days, units_per_day)
        a = _draw_arm(rng, n, units_per_day, 0.0)
        sy = np.cumsum(a.y.sum(1).reshape(sims, days), axis=1).ravel()
        sy2 = np.cumsum((a.y**2).sum(1).reshape(sims, days), axis=1).ravel()
        day = np.tile(np.arange(days), sims)
        frames.append(pd.DataFrame({
            **_base(np.repeat(np.arange(sims), days), arm, (day + 1.0) * units_per_day,
                    "mean", "mean"),
            "as_of_date": pd.Timestamp("2026-01-01") + pd.to_timedelta(day, "D"),
            "sum_y": sy, "sum_y2": sy2,
        }))  # fmt: skip
    settings = AnalysisSettings(
        alpha=alpha, correction="none", sequential_tuning_n=2.0 * units_per_day * days
    )
    res = analyze_table(pd.concat(frames, ignore_index=True), settings).results
    by_sim = res.groupby("segment_value")
    return {
        "sequential_ever_significant": float(by_sim["is_seq_significant"].any().mean()),
        "fixed_horizon_ever_significant": float((by_sim["p_value"].min() < alpha).mean()),
        "sequential_final_look": _rate(
            res.loc[res["as_of_date"] == res["as_of_date"].max(), "is_seq_significant"]
        ),
    }


SEQUENTIAL_METRICS = ("mean", "mean_cuped", "ratio", "ratio_cuped")


def sequential_plan_study(
    seed: int,
    sims: int,
    planned_units_per_arm: int,
    days: int = 30,
    effect: float = 0.0,
    alpha: float = 0.05,
    chunk: int = 250,
    metrics: tuple[str, ...] = SEQUENTIAL_METRICS,
) -> dict[str, float]:
    """Daily looks at an experiment sized by its registry plan (N* and the number of looks).

    Each day brings planned_units_per_arm / days new units per arm; the engine sees the
    cumulative sums at every look with the plan ``planned_units_per_arm`` x ``days`` (as the
    job passes it from registry/experiments.yml). Mean and ratio metrics of the unit model
    above, each with and without CUPED.

    Returns:
        Per metric: the rate at which the always-valid interval ever excludes 0 over the looks
        (``seq_ever_significant_*``; ``*_exact_looks``: the same results at the replaced level
        exact for ``days`` looks, paired), the rate at which it excludes 0 at the planned
        horizon (the last look), the median ``sequential_width_ratio`` there, the fixed-horizon
        rejection rate at the horizon, the root mean square ``se_abs`` at the horizon and the
        true absolute delta (their ratio is the lift's noncentrality).
    """
    from datetime import date

    from stats.settings import ExperimentPlan

    rng = np.random.default_rng(seed)
    per_day = planned_units_per_arm // days
    start = pd.Timestamp("2026-01-01")
    plan = ExperimentPlan(start_date=date(2026, 1, 1), planned_units_per_arm=per_day * days,
                          planned_days=days)  # fmt: skip
    settings = AnalysisSettings(alpha=alpha, correction="none", plans={"study": plan})
    results = []
    for lo in range(0, sims, chunk):
        ids = np.arange(lo, min(lo + chunk, sims))
        frames = []
        for arm in (0, 1):
            a = _draw_arm(rng, np.full(ids.size * days, per_day), per_day, effect if arm else 0.0)
            day = np.tile(np.arange(days), ids.size)

            def cum(v: np.ndarray, k: int = ids.size) -> np.ndarray:
                return np.cumsum(v.sum(1).reshape(k, days), axis=1).ravel()

            base = _base(np.repeat(ids, days), arm, (day + 1.0) * per_day, "", "")
            base["as_of_date"] = start + pd.to_timedelta(day, "D")
            y, x, c, d = a.y, a.x, a.c, a.d
            sums = {"sum_y": cum(y), "sum_y2": cum(y * y)}
            ratio = {"sum_x": cum(x), "sum_x2": cum(x * x), "sum_xy": cum(x * y)}
            cov = {"sum_c": cum(c), "sum_c2": cum(c * c), "sum_yc": cum(y * c)}
            ratio_cov = {
                "sum_d": cum(d),
                "sum_d2": cum(d * d),
                "sum_cd": cum(c * d),
                "sum_yd": cum(y * d),
                "sum_xc": cum(x * c),
                "sum_xd": cum(x * d),
            }
            for metric, kind, extra in (
                ("mean", "mean", {}),
                ("mean_cuped", "mean", cov),
                ("ratio", "ratio", ratio),
                ("ratio_cuped", "ratio", {**ratio, **cov, **ratio_cov}),
            ):
                if metric not in metrics:
                    continue
                frames.append(pd.DataFrame(
                    {**base, **sums, **extra, "metric": metric, "metric_kind": kind}
                ))  # fmt: skip
        results.append(analyze_table(pd.concat(frames, ignore_index=True), settings).results)
    res = pd.concat(results, ignore_index=True)
    out = {}
    last = res["as_of_date"] == res["as_of_date"].max()
    for m in metrics:
        r = res[res["metric"] == m]
        out[f"seq_ever_significant_{m}"] = float(
            r.groupby("segment_value")["is_seq_significant"].any().mean()
        )
        fin = r[last[r.index]]
        out[f"seq_significant_at_horizon_{m}"] = _rate(fin["is_seq_significant"])
        out[f"fixed_significant_at_horizon_{m}"] = _rate(fin["p_value"] < alpha)
        out[f"seq_width_ratio_at_horizon_{m}"] = float(fin["sequential_width_ratio"].median())
        out[f"seq_ever_significant_{m}_exact_looks"] = _ever_at_exact_looks(r, days, alpha)
        # noncentrality at the horizon: true delta / its standard error (for the size finder)
        true_abs = np.diff([true_values(e)[m.removesuffix("_cuped")] for e in (0.0, effect)])[0]
        out[f"horizon_se_{m}"] = float(np.sqrt(np.mean(fin["se_abs"].to_numpy(float) ** 2)))
        out[f"true_delta_{m}"] = float(true_abs)
    return out


def _ever_at_exact_looks(r: pd.DataFrame, looks: int, alpha: float) -> float:
    """P(ever significant) of the same results under the replaced calibration: the level
    exact for ``looks`` equally spaced looks (``calibrated_alpha(alpha, looks)``), paired."""
    from stats.sequential import calibrated_alpha, confidence_sequence, running_intersection

    n = (r["n_control"] + r["n_treatment"]).to_numpy(float)
    cs = confidence_sequence(r["delta_abs"].to_numpy(float), r["se_abs"].to_numpy(float) ** 2, n,
                             calibrated_alpha(alpha, looks), n.max())  # fmt: skip
    sim = r["segment_value"].to_numpy()
    day = pd.to_datetime(r["as_of_date"]).to_numpy().astype("datetime64[D]").astype(np.int64)
    lo, hi, _ = running_intersection(sim, day, cs.ci_lower, cs.ci_upper, cs.p_value)
    sig = pd.Series((lo > 0) | (hi < 0)).groupby(sim).any()
    return float(sig.mean())


def sequential_summary(seed: int, sims: int, units: int, days: int = 30) -> dict[str, float]:
    """The plan-sized sequential study of docs/stats.md: A/A (seed) and a 3% lift (seed + 2)
    at ``units`` planned units per arm over ``days`` daily looks, and per metric the planned
    units per arm at which the always-valid interval detects the lift in 50% / 80% of runs
    (Gaussian limit, :func:`stats.power.sequential_noncentrality`, from the lift's
    noncentrality at the horizon) next to the fixed-horizon size for 80% power."""
    from stats.power import sequential_noncentrality

    out = {f"aa_{k}": v for k, v in sequential_plan_study(seed, sims, units, days).items()}
    lift = sequential_plan_study(seed + 2, sims, units, days, effect=EFFECT)
    out.update({f"lift_{k}": v for k, v in lift.items()})
    theta = {m: lift[f"true_delta_{m}"] / lift[f"horizon_se_{m}"] for m in SEQUENTIAL_METRICS}
    need = {q: sequential_noncentrality(q, days) for q in (0.5, 0.8)}
    fixed80 = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    for m, th in theta.items():
        out[f"lift_noncentrality_at_horizon_{m}"] = th
        out[f"units_per_arm_seq_detects_50pct_{m}"] = units * (need[0.5] / th) ** 2
        out[f"units_per_arm_seq_detects_80pct_{m}"] = units * (need[0.8] / th) ** 2
        out[f"units_per_arm_fixed_power_80pct_{m}"] = units * (fixed80 / th) ** 2
    return out


def srm_study(seed: int, sims: int, n_total: int = 200_000, alpha: float = 0.001) -> dict:
    """SRM alarm rate under a 50/50 split, and detection of a 50.5/49.5 split."""
    rng = np.random.default_rng(seed)
    a = rng.binomial(n_total, 0.5, sims)
    p = srm_p_value(np.stack([a, n_total - a], 1), np.ones((sims, 2)))
    # exact size of the chi-square gate: P(reject) summed over the binomial distribution
    k = np.arange(n_total + 1)
    pk = srm_p_value(np.stack([k, n_total - k], 1), np.ones((k.size, 2)))
    exact = float(sps.binom.pmf(k[pk < alpha], n_total, 0.5).sum())
    b = rng.binomial(n_total, 0.505, sims)
    p_b = srm_p_value(np.stack([b, n_total - b], 1), np.ones((sims, 2)))
    fixed = srm_p_value([[0.505 * n_total, 0.495 * n_total]], [[1, 1]])[0]
    return {
        "srm_alarm_rate_aa": float((p < alpha).mean()),
        "srm_exact_size_aa": exact,
        "srm_p_505_495_exact_counts": float(fixed),
        "srm_power_505_495": float((p_b < alpha).mean()),
    }


def _rate(mask: pd.Series) -> float:
    return float(np.mean(mask.to_numpy(bool)))


def fpr_and_coverage(seed: int, sims: int, n_mean: int, n_quantile: int) -> dict[str, float]:
    """A/A false-positive rates and 95% coverage with a known 3% effect, per metric.

    Mean/ratio tables are also analysed with the delta-method relative interval, quantile tables
    also with the i.i.d. outer-CI window (suffixes ``_delta`` and ``_iid_window``).
    """
    out: dict[str, float] = {}
    for label, effect in (("aa", 0.0), ("effect", EFFECT)):
        for n, with_q, metrics in (
            (n_mean, False, ("mean", "mean_cuped", "ratio", "ratio_cuped")),
            (n_quantile, True, ("latency_p50", "latency_p95")),
        ):
            table, rho2 = simulate_table(seed + (7 if effect else 0) + n, sims, n, effect, with_q)
            variants = {"": AnalysisSettings(correction="none")}
            if with_q:
                table = table[table["metric_kind"] == "quantile"]
                variants["_iid_window"] = AnalysisSettings(correction="none", quantile_window="iid")
            elif effect:
                variants["_delta"] = AnalysisSettings(correction="none", relative_ci="delta")
            for suffix, settings in variants.items():
                res = analyze_table(table, settings).results
                if not with_q and label == "effect" and not suffix:
                    out.update(_cuped_numbers(res, rho2))
                out.update(_rates(res, metrics, effect, suffix))
    return out


CALIBRATION_SIZES = (100, 200, 400, 1_000, 4_000)
"""Units per arm of the small-sample calibration grid (docs/stats.md, "Small samples")."""

CALIBRATION_METRICS = ("mean", "ratio", "latency_p50", "latency_p95")

#: analysis variants of the calibration grid: the engine's default, and the large-sample
#: reference it replaced (z everywhere, delta-method relative interval)
CALIBRATION_VARIANTS = {
    "": {},
    "_z_delta": {"reference": "z", "relative_ci": "delta"},
    "_t_delta": {"relative_ci": "delta"},
}


def calibration(seed: int, sims: int, n_per_arm: int) -> dict[str, float]:
    """A/A FPR and 95% coverage (absolute and relative, 3% effect) at one arm size.

    Mean, ratio, p50 and p95 come from the same simulated experiments; each variant of
    :data:`CALIBRATION_VARIANTS` analyses the same tables, so their differences are paired.
    """
    out: dict[str, float] = {}
    for effect in (0.0, EFFECT):
        table, _ = simulate_table(seed + (7 if effect else 0) + n_per_arm, sims, n_per_arm,
                                  effect, True)  # fmt: skip
        table = table[table["metric"].isin(CALIBRATION_METRICS)]
        for suffix, extra in CALIBRATION_VARIANTS.items():
            res = analyze_table(table, AnalysisSettings(correction="none", **extra)).results
            out.update(_rates(res, CALIBRATION_METRICS, effect, suffix))
    return out


def calibration_grid(
    seed: int, sims: int, sizes: tuple[int, ...] = CALIBRATION_SIZES
) -> dict[int, dict[str, float]]:
    """:func:`calibration` at every size of ``sizes`` (and its wall seconds)."""
    grid = {}
    for n in sizes:
        t0 = time.perf_counter()
        grid[n] = calibration(seed, sims, n)
        grid[n]["seconds"] = time.perf_counter() - t0
    return grid


def _rates(res: pd.DataFrame, metrics: tuple[str, ...], effect: float, suffix: str) -> dict:
    """Rejection rate (A/A) or coverage of the true deltas (effect) per metric."""
    out = {}
    c0, c1 = true_values(0.0), true_values(effect)
    for m in metrics:
        r = res[res["metric"] == m]
        if effect == 0.0:
            out[f"fpr_{m}{suffix}"] = _rate(r["p_value"] < 0.05)
            continue
        key = m.removeprefix("latency_").removesuffix("_cuped")
        true_abs = c1[key] - c0[key]
        if suffix != "_delta":
            out[f"coverage_abs_{m}{suffix}"] = _rate(
                (r["ci_abs_lower"] <= true_abs) & (true_abs <= r["ci_abs_upper"])
            )
        out[f"coverage_rel_{m}{suffix}"] = _rate(
            (r["ci_rel_lower"] <= effect) & (effect <= r["ci_rel_upper"])
        )
    return out


def _cuped_numbers(res: pd.DataFrame, rho2: dict[str, float]) -> dict[str, float]:
    """Monte-Carlo variance of the CUPED delta over the plain one, against 1 - rho^2."""
    raw = res.loc[res["metric"] == "mean", "delta_abs"].to_numpy()
    adj = res.loc[res["metric"] == "mean_cuped", "delta_abs"].to_numpy()
    est = res.loc[res["metric"] == "mean_cuped", "cuped_variance_reduction"].to_numpy()
    raw_r = res.loc[res["metric"] == "ratio", "delta_abs"].to_numpy()
    adj_r = res.loc[res["metric"] == "ratio_cuped", "delta_abs"].to_numpy()
    est_r = res.loc[res["metric"] == "ratio_cuped", "cuped_variance_reduction"].to_numpy()
    return {
        "cuped_mean_one_minus_rho2": 1.0 - rho2["mean"],
        "cuped_mean_mc_variance_ratio": float(np.var(adj) / np.var(raw)),
        "cuped_mean_estimated_variance_ratio": float(np.mean(1.0 - est)),
        "cuped_ratio_one_minus_rho2": 1.0 - rho2["ratio"],
        "cuped_ratio_mc_variance_ratio": float(np.var(adj_r) / np.var(raw_r)),
        "cuped_ratio_estimated_variance_ratio": float(np.mean(1.0 - est_r)),
    }


@dataclass(frozen=True)
class StudySize:
    """How big a study to run."""

    sims: int = 10_000
    n_mean: int = 2_000
    n_quantile: int = 800
    seq_sims: int = 10_000
    seq_units_per_day: int = 100
    srm_sims: int = 1_000_000


FULL = StudySize()
FAST = StudySize(sims=2_000, n_mean=600, n_quantile=300, seq_sims=1_000, srm_sims=200_000)


def run_study(size: StudySize = FULL, seed: int = 20260101) -> dict[str, float]:
    """All validation numbers of docs/stats.md for one study size."""
    t0 = time.perf_counter()
    out = fpr_and_coverage(seed, size.sims, size.n_mean, size.n_quantile)
    t1 = time.perf_counter()
    out.update(sequential_fpr(seed + 1, size.seq_sims, size.seq_units_per_day))
    t2 = time.perf_counter()
    out.update(srm_study(seed + 2, size.srm_sims))
    out.update({"seconds_fpr_coverage": t1 - t0, "seconds_sequential": t2 - t1,
                "seconds_srm": time.perf_counter() - t2})  # fmt: skip
    return out


def acceptance(numbers: dict[str, float]) -> list[tuple[str, float, str, bool]]:
    """The acceptance criteria of the full study: (quantity, value, target, met)."""
    out = []
    for m in ("mean", "mean_cuped", "ratio", "ratio_cuped", "latency_p50", "latency_p95"):
        v = numbers[f"fpr_{m}"]
        out.append((f"fpr_{m}", v, "[0.0445, 0.0557]", 0.0445 <= v <= 0.0557))
        for scale in ("abs", "rel"):
            v = numbers[f"coverage_{scale}_{m}"]
            out.append((f"coverage_{scale}_{m}", v, "[0.944, 0.956]", 0.944 <= v <= 0.956))
    for kind in ("mean", "ratio"):
        target = numbers[f"cuped_{kind}_one_minus_rho2"]
        v = numbers[f"cuped_{kind}_mc_variance_ratio"]
        out.append((f"cuped_{kind}_mc_variance_ratio", v, f"{target:.4f} +-5%",
                    abs(v / target - 1) <= 0.05))  # fmt: skip
    v = numbers["sequential_ever_significant"]
    out.append(("sequential_ever_significant", v, "<= 0.05", v <= 0.05))
    v = numbers["srm_exact_size_aa"]
    out.append(("srm_exact_size_aa", v, "<= 0.001", v <= 0.001))
    v = numbers["srm_p_505_495_exact_counts"]
    out.append(("srm_p_505_495_exact_counts", v, "< 0.001", v < 0.001))
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m stats.study [--full] [--seed N]``.

    Prints one number per line, then each acceptance criterion with PASS/FAIL (the bands are
    those of the full study; the reduced default run is only indicative). Returns 1 if a
    criterion fails with ``--full``.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="10,000 simulations per check")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument(
        "--calibration",
        type=int,
        metavar="SIMS",
        default=0,
        help="only the small-sample grid, SIMS experiments per size and check",
    )
    parser.add_argument(
        "--sequential",
        type=int,
        metavar="SIMS",
        default=0,
        help="only the plan-sized sequential study (A/A and a 3%% lift), SIMS experiments each",
    )
    parser.add_argument("--units", type=int, default=4_000,
                        help="planned units per arm of --sequential (default 4000)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.sequential:
        for name, value in sequential_summary(args.seed, args.sequential, args.units).items():
            print(f"{name:50s} {value:.6f}", flush=True)
        return 0
    if args.calibration:
        start = time.perf_counter()
        for n in CALIBRATION_SIZES:
            numbers = calibration_grid(args.seed, args.calibration, (n,))[n]
            for name, value in numbers.items():
                print(f"{n:6d} {name:45s} {value:.6f}", flush=True)
        print(f"{'seconds':52s} {time.perf_counter() - start:.1f}")
        return 0
    size = FULL if args.full else FAST
    start = time.perf_counter()
    numbers = run_study(size, args.seed)
    for name, value in numbers.items():
        print(f"{name:45s} {value:.6f}")
    print(f"{'sims':45s} {size.sims}")
    print(f"{'seconds':45s} {time.perf_counter() - start:.1f}")
    checks = acceptance(numbers)
    for name, value, target, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'} {name:40s} {value:.6f}  target {target}")
    return int(args.full and not all(ok for *_, ok in checks))


if __name__ == "__main__":
    raise SystemExit(main())
