"""Quantile standard errors: grid interpolation, i.i.d. limit and the cluster adjustment."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from stats.quantile import interpolate_grid, quantile_arm
from stats.statistics import QuantileStatistic

Z = float(sps.norm.ppf(0.975))


def test_interpolate_grid_rows_padding_and_extrapolation():
    gp = np.array([[0.1, 0.2, 0.3], [0.4, 0.6, np.nan]])
    gv = np.array([[1.0, 2.0, 4.0], [10.0, 20.0, np.nan]])
    vals, ext = interpolate_grid(gp, gv, np.array([0.25, 0.7]))
    np.testing.assert_allclose(vals, [3.0, 25.0])
    np.testing.assert_array_equal(ext, [False, True])


def _reduce(values_by_unit, p):
    """The warehouse's reduction of event-level values to the quantile statistic."""
    allv = np.sort(np.concatenate(values_by_unit))
    n_ev = allv.size
    q = allv[int(np.ceil(n_ev * p)) - 1]
    s = np.array([(v <= q).sum() for v in values_by_unit], float)
    n = np.array([v.size for v in values_by_unit], float)
    grid = p + np.array([-8, -4, -2, -1, 0, 1, 2, 4, 8]) * np.sqrt(p * (1 - p) / n_ev)
    gv = allv[np.clip(np.ceil(n_ev * grid).astype(int) - 1, 0, n_ev - 1)]
    return QuantileStatistic(float(len(values_by_unit)), p, q, float(n_ev), s.sum(), (s * s).sum(),
                             n.sum(), (n * n).sum(), (s * n).sum(), grid, gv)  # fmt: skip


def test_one_event_per_unit_reduces_to_iid_asymptotic_variance(rng):
    p, n = 0.9, 200_000
    stat = _reduce([np.array([v]) for v in rng.normal(0, 1, n)], p)
    arm = quantile_arm(stat, Z)
    expected = np.sqrt(p * (1 - p) / n) / sps.norm.pdf(sps.norm.ppf(p))
    assert np.sqrt(arm.arm.variance[0]) == pytest.approx(expected, rel=0.05)
    assert arm.design_effect == pytest.approx(1.0, rel=1e-3)


def test_clustered_units_get_a_design_effect(rng):
    units = [rng.normal(u, 0.5, 8) for u in rng.normal(0, 1, 3000)]
    arm = quantile_arm(_reduce(units, 0.5), Z)
    assert arm.design_effect > 3  # 8 events per unit sharing most of their variance
    assert not arm.grid_extrapolated[0]


def test_clustered_standard_error_matches_monte_carlo(rng):
    """The engine's se agrees with the spread of q_hat over repeated experiments."""
    p = 0.95
    est, ses = [], []
    for _ in range(300):
        counts = 1 + rng.poisson(3, 400)
        units = [
            np.exp(u + 0.8 * rng.normal(size=k))
            for u, k in zip(rng.normal(0, 0.5, 400), counts, strict=True)
        ]
        stat = _reduce(units, p)
        est.append(stat.quantile_value)
        ses.append(np.sqrt(quantile_arm(stat, Z).arm.variance[0]))
    assert np.mean(ses) == pytest.approx(np.std(est, ddof=1), rel=0.12)


def test_grid_too_narrow_is_flagged():
    stat = QuantileStatistic(100.0, 0.5, 1.0, 100.0, 50.0, 50.0, 100.0, 100.0, 50.0,
                             np.array([0.499, 0.5, 0.501]), np.array([0.99, 1.0, 1.01]))  # fmt: skip
    assert quantile_arm(stat, Z).grid_extrapolated[0]


def test_iid_window_needs_only_a_narrow_grid_and_agrees_to_first_order(rng):
    units = [rng.normal(u, 0.5, 8) for u in rng.normal(0, 1, 3000)]
    stat = _reduce(units, 0.5)
    narrow = QuantileStatistic(*[getattr(stat, f) for f in ("n", "p", "quantile_value", "n_events", "sum_s",
                                 "sum_s2", "sum_n", "sum_n2", "sum_sn")], stat.grid_p[2:-2], stat.grid_value[2:-2])  # fmt: skip
    iid = quantile_arm(narrow, Z, window="iid")
    clustered = quantile_arm(stat, Z, window="clustered")
    assert not iid.grid_extrapolated[0]
    assert np.sqrt(iid.arm.variance[0]) == pytest.approx(
        np.sqrt(clustered.arm.variance[0]), rel=0.15
    )


def _with_grid(stat, grid_value):
    names = (
        "n",
        "p",
        "quantile_value",
        "n_events",
        "sum_s",
        "sum_s2",
        "sum_n",
        "sum_n2",
        "sum_sn",
        "grid_p",
    )
    return QuantileStatistic(*(getattr(stat, f) for f in names), np.asarray(grid_value, float))


def test_flat_window_from_binned_values_is_widened_then_flagged(rng):
    units = [rng.normal(u, 0.5, 8) for u in rng.normal(0, 1, 3000)]
    stat = _reduce(units, 0.5)
    gv = np.array(stat.grid_value, float)
    binned = gv.copy()
    binned[1:-1] = gv[len(gv) // 2]  # every inner grid point in the bin of q_hat
    arm = quantile_arm(_with_grid(stat, binned), Z, window="iid")  # window inside the flat part
    assert arm.window_widened[0]
    expected = (gv[-1] - gv[0]) / (stat.grid_p[-1] - stat.grid_p[0])
    assert np.sqrt(arm.arm.variance[0]) == pytest.approx(
        expected * np.sqrt(stat.fraction_unit_variance() / stat.n)
    )
    flat = quantile_arm(_with_grid(stat, np.full_like(gv, gv[0])), Z, window="iid")
    assert np.isnan(flat.arm.variance[0])
    assert not quantile_arm(stat, Z).window_widened[0]
