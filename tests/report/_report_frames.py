"""Small, real result frames for the report's pure tests.

Per-unit events are drawn with numpy (seeded), reduced to the mart contract's sufficient
statistics exactly as the warehouse does (per-unit sums; quantiles with per-unit counts below the
estimate and a grid around the target), and analysed by the real stats engine. Nothing here
invents a result: the deltas, intervals and p-values come from ``stats.engine.analyze``.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pandas as pd

from stats.engine import analyze
from stats.settings import AnalysisSettings

PLATFORMS = np.array(["Windows", "Android", "macOS", "iOS", "Linux"])
RTT = np.array(["0-50ms", "50-100ms", "100-200ms", "200ms+"])
LOSS = np.array(["<0.5%", "0.5-2%", "2%+"])
BANDWIDTH = np.array(["<2Mbps", "2-10Mbps", "10Mbps+"])
QUANTILES = (0.5, 0.9, 0.95, 0.99)
CURVE = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
GRID_C = np.array([-8, -4, -2, -1, 0, 1, 2, 4, 8], float)


def _quantile_sums(values: np.ndarray, unit: np.ndarray, n_units: int, p: float) -> dict:
    order = np.sort(values)
    n = order.size
    q = order[int(np.ceil(n * p)) - 1]
    s = np.bincount(unit[values <= q], minlength=n_units).astype(float)
    k = np.bincount(unit, minlength=n_units).astype(float)
    s, k = s[k > 0], k[k > 0]
    grid = np.unique(np.clip(p + GRID_C * np.sqrt(p * (1 - p) / n), 1e-6, 1 - 1e-6))
    gv = order[np.clip(np.ceil(n * grid).astype(int) - 1, 0, n - 1)]
    return {"quantile_p": p, "quantile_value": q, "n_events": float(n), "sum_s": s.sum(), "sum_s2": (s * s).sum(),
            "sum_n": k.sum(), "sum_n2": (k * k).sum(), "sum_sn": (s * k).sum(),
            "grid_p": list(grid), "grid_value": list(gv)}  # fmt: skip


def _ratio_sums(y: np.ndarray, x: np.ndarray) -> dict:
    keep = x > 0
    y, x = y[keep], x[keep]
    return {"n_units": int(keep.sum()), "sum_y": y.sum(), "sum_y2": (y * y).sum(), "sum_x": x.sum(),
            "sum_x2": (x * x).sum(), "sum_xy": (x * y).sum()}  # fmt: skip


def sufficient_stats(
    experiment_id: str = "fhol_test",
    arms: tuple[str, ...] = ("control", "fhol"),
    shares: tuple[float, ...] = (0.5, 0.5),
    n_units: int = 4000,
    days: int = 3,
    start: date = date(2026, 6, 15),
    tail_effect: float = 0.06,
    multipath: bool = False,
    seed: int = 1,
    qlog: bool = False,
    hol: bool = False,
) -> pd.DataFrame:
    """Sufficient statistics of an experiment over ``days`` as-of dates (the first arm is the
    control; treatment arm k has k times the effects).

    The treatment slows request latency events above the control's 80th percentile by
    ``tail_effect`` (a tail effect, flat median: the FHOL shape; 0 gives an A/A test), and, with
    ``multipath``, shortens close delay and RTT tails while re-injecting ~2% of bytes. With
    ``qlog``, the qlog metrics qlog_loss_rate_server (treatment loses 30% more) and
    qlog_min_rtt_client (one connection per client and day) are added. With ``hol``,
    hol_blocked_time_per_request: 0 in the control by construction, some ms per request in a
    treatment arm (FHOL's mechanism metric).
    """
    rng = np.random.default_rng(seed)
    u = rng.random(n_units)
    arm = (u < shares[1]).astype(int) if len(arms) == 2 else np.searchsorted(np.cumsum(shares), u, side="right")
    arm = np.minimum(arm, len(arms) - 1)
    seg = {
        "platform": PLATFORMS[rng.choice(5, n_units, p=[0.45, 0.3, 0.1, 0.1, 0.05])],
        "rtt_bucket": RTT[rng.choice(4, n_units)],
        "loss_bucket": LOSS[rng.choice(3, n_units)],
        "bandwidth_bucket": BANDWIDTH[rng.choice(3, n_units)],
    }
    mu = rng.normal(5.5, 0.5, n_units)
    first_day = rng.integers(0, days, n_units)
    events_per_day = 1 + rng.poisson(4, (days, n_units))
    unit = np.concatenate([np.repeat(np.arange(n_units), events_per_day[d]) for d in range(days)])
    day_of = np.concatenate([np.full(events_per_day[d].sum(), d) for d in range(days)])
    lat = np.exp(mu[unit] + rng.normal(0, 0.9, unit.size))
    threshold = np.quantile(lat, 0.8)
    lat = np.where((arm[unit] >= 1) & (lat > threshold), lat * (1 + tail_effect * arm[unit]), lat)
    reb = rng.poisson(0.3 * (1 + 0.5 * tail_effect * arm), (days, n_units)).astype(float)
    plays = 1 + rng.poisson(1, (days, n_units)).astype(float)
    close = np.exp(rng.normal(12.8, 0.6, unit.size)) / 1000 * np.where(arm[unit] >= 1, 0.93, 1.0)
    srtt = np.exp(rng.normal(3.6, 0.5, unit.size)) * np.where(arm[unit] >= 1, 0.95, 1.0)
    path_bytes = rng.gamma(2, 5e5, (days, n_units))
    reinj = path_bytes * np.where(arm >= 1, 0.02, 0.0) * rng.uniform(0.5, 1.5, (days, n_units))
    q_sent = 50 + rng.poisson(200, (days, n_units)).astype(float)
    q_lost = rng.binomial(q_sent.astype(int), np.where(arm >= 1, 0.026, 0.02)).astype(float)
    q_rtt = rng.gamma(4, 10, (days, n_units))
    if hol:  # drawn last: the other metrics' draws stay those of the frames without it
        blocked = (arm[unit] >= 1) & (rng.random(unit.size) < 0.05)
        hol_ms = np.where(blocked, rng.exponential(40.0, unit.size), 0.0)
    rows = []
    for d in range(days):
        as_of = start + timedelta(days=d)
        ev = (day_of <= d) & (first_day[unit] <= d)
        active = first_day <= d
        per_unit = lambda v, mask=ev: np.bincount(unit[mask], weights=v[mask], minlength=n_units)  # noqa: E731
        lat_sum, lat_n = per_unit(lat), np.bincount(unit[ev], minlength=n_units).astype(float)
        upto = lambda m: m[: d + 1].sum(axis=0)  # noqa: E731
        for seg_type, values in [("overall", np.full(n_units, "all")), *seg.items()]:
            for seg_value in np.unique(values):
                for a in range(len(arms)):
                    in_seg = active & (values == seg_value) & (arm == a)
                    base = {"experiment_id": experiment_id, "segment_type": seg_type, "segment_value": seg_value,
                            "arm": arms[a], "is_control": a == 0, "as_of_date": as_of, "is_guardrail": False}  # fmt: skip
                    idx = np.flatnonzero(in_seg)
                    emask = ev & in_seg[unit]
                    metrics = [("request_latency", "ratio", _ratio_sums(lat_sum[idx], lat_n[idx])),
                               ("rebuffers_per_playback", "ratio", _ratio_sums(upto(reb)[idx], upto(plays)[idx]))]  # fmt: skip
                    qs = [("request_latency_p", QUANTILES, lat)]
                    if seg_type in ("overall", "platform"):
                        qs.append(("request_latency_curve", CURVE, lat))
                    if multipath:
                        metrics.append(
                            ("close_delay", "ratio", _ratio_sums(per_unit(close)[idx], lat_n[idx]))
                        )
                        metrics.append(("reinjection_overhead", "ratio", _ratio_sums(upto(reinj)[idx], upto(path_bytes)[idx])))  # fmt: skip
                        qs += [("close_delay_p", QUANTILES, close), ("srtt_p", QUANTILES, srtt)]
                    if qlog:
                        metrics.append(("qlog_loss_rate_server", "ratio", _ratio_sums(upto(q_lost)[idx], upto(q_sent)[idx])))  # fmt: skip
                        metrics.append(("qlog_min_rtt_client", "ratio", _ratio_sums(upto(q_rtt)[idx], np.full(idx.size, d + 1.0))))  # fmt: skip
                    if hol:
                        metrics.append(("hol_blocked_time_per_request", "ratio", _ratio_sums(per_unit(hol_ms)[idx], lat_n[idx])))  # fmt: skip
                    for name, kind, sums in metrics:
                        rows.append({**base, "metric": name, "metric_kind": kind, **sums})
                    for name, ps, values_ in qs:
                        for p in ps:
                            q = _quantile_sums(values_[emask], unit[emask], n_units, p)
                            rows.append({**base, "metric": name, "metric_kind": "quantile",
                                         "n_units": len(idx), **q})  # fmt: skip
    table = pd.DataFrame(rows)
    table.loc[table["metric"] == "request_latency", "is_guardrail"] = True
    return table


def results(
    table: pd.DataFrame, expected: dict[str, dict[str, float]] | None = None
) -> pd.DataFrame:
    """The real stats engine's output for ``table``."""
    return analyze(table, AnalysisSettings(expected_split=expected or {}))


#: FHOL's declaration (registry/experiments.yml) cut to the metrics these frames have
FHOL_ROLES = (
    {"role": "success", "metric": "request_latency", "better": "decrease", "minimum_effect": 0.01},
    {"role": "guardrail", "metric": "request_latency_p", "quantile": 0.95, "better": "decrease", "margin": 0.02},
    {"role": "guardrail", "metric": "rebuffers_per_playback", "better": "decrease", "margin": 0.05},
    {"role": "mechanism", "metric": "hol_blocked_time_per_request", "better": "increase"},
)


def decisions(results: pd.DataFrame, experiment_id: str, roles=FHOL_ROLES, start: date = date(2026, 6, 15),
              planned_days: int | None = 14):  # fmt: skip
    """The real decision layer's verdicts and tests (stats.decision.decide) for ``results``."""
    from stats.decision import decide
    from stats.settings import DecisionPlan, DecisionSettings

    plan = DecisionPlan(roles=roles, start_date=start, planned_days=planned_days)
    return decide(results, DecisionSettings(experiments={experiment_id: plan}))


def with_power(
    results: pd.DataFrame, planned_units: int | None = 40_000, target: float | None = 0.05
) -> pd.DataFrame:
    """``results`` with the power columns of gold.experiment_results, derived from the engine's
    own numbers: the MDE at the current size is the engine's ``mde_rel``; at the planned size it
    scales as 1/sqrt(n) (same variance per unit); a metric is underpowered when the MDE at the
    planned size (the current one without a plan) exceeds the target; the width ratio is the
    always-valid interval's width over the fixed one's."""
    out = results.copy()
    n = (out["n_control"] + out["n_treatment"]).astype(float)
    out["mde_relative"] = out["mde_rel"]
    out["mde_relative_planned"] = (
        out["mde_rel"] * np.sqrt(n / planned_units) if planned_units else np.nan
    )
    out["target_relative_effect"] = np.nan if target is None else target
    reach = out["mde_relative_planned"].fillna(out["mde_relative"])
    out["is_underpowered"] = (reach > target) if target is not None else False
    out["sequential_width_ratio"] = (out["seq_ci_abs_upper"] - out["seq_ci_abs_lower"]) / (
        out["ci_abs_upper"] - out["ci_abs_lower"]
    )
    return out
