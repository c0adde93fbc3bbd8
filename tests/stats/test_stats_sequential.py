"""Normal-mixture confidence sequence: closed form, duality with its p-value, intersection."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from stats.sequential import confidence_sequence, mixing_rho2, running_intersection


def test_halfwidth_matches_gbstats_closed_form():
    # gbstats sequential_interval_halfwidth: s sqrt(2 (n rho^2 + 1) / (n^2 rho^2) log(sqrt(n rho^2 + 1) / alpha))
    alpha, n_star, n, s2 = 0.05, 10_000, 4_000, 9.0
    rho2 = (-2 * np.log(alpha) + np.log(-2 * np.log(alpha) + 1)) / n_star
    expected = np.sqrt(s2) * np.sqrt(
        2 * (n * rho2 + 1) / (n**2 * rho2) * np.log(np.sqrt(n * rho2 + 1) / alpha)
    )
    cs = confidence_sequence(0.0, s2 / n, n, alpha, n_star)
    assert cs.ci_upper == pytest.approx(expected, rel=1e-12)
    assert mixing_rho2(alpha, n_star) == pytest.approx(rho2, rel=1e-12)


@pytest.mark.parametrize("estimate", [0.05, 0.2, 0.31, 1.0])
def test_p_value_below_alpha_iff_interval_excludes_zero(estimate):
    cs = confidence_sequence(estimate, 0.01, 5_000, 0.05, 10_000)
    assert (cs.p_value < 0.05) == (cs.ci_lower > 0)


def test_sequence_is_wider_than_fixed_horizon_interval():
    var = 0.01
    cs = confidence_sequence(0.0, var, 10_000, 0.05, 10_000)
    assert cs.ci_upper > sps.norm.ppf(0.975) * np.sqrt(var)


def test_running_intersection_per_comparison_in_time_order():
    group = np.array([0, 0, 0, 1, 1])
    day = np.array([2, 0, 1, 0, 1])
    lo = np.array([-1.0, -3.0, -2.5, 0.0, -1.0])
    hi = np.array([0.5, 3.0, 1.0, 2.0, 3.0])
    p = np.array([0.9, 0.5, 0.7, 0.2, 0.4])
    rlo, rhi, rp = running_intersection(group, day, lo, hi, p)
    np.testing.assert_allclose(rlo, [-1.0, -3.0, -2.5, 0.0, 0.0])
    np.testing.assert_allclose(rhi, [0.5, 3.0, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(rp, [0.5, 0.5, 0.5, 0.2, 0.2])
