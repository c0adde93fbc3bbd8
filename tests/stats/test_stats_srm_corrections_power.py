"""SRM, multiple-comparison corrections and power against scipy / statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

from stats import power
from stats.corrections import adjust_p_values
from stats.srm import srm_p_value


def test_srm_pearson_matches_scipy_chisquare():
    counts = np.array([[5000, 5200, np.nan], [3000, 3100, 2950]])
    weights = np.array([[1, 1, np.nan], [1, 1, 1]])
    p = srm_p_value(counts, weights, continuity=False)
    assert p[0] == pytest.approx(sps.chisquare([5000, 5200]).pvalue, rel=1e-12)
    assert p[1] == pytest.approx(sps.chisquare([3000, 3100, 2950]).pvalue, rel=1e-12)


def test_srm_unequal_split_and_yates():
    p = srm_p_value([[2500, 7500]], [[0.25, 0.75]])
    assert p[0] == pytest.approx(1.0)
    n0, n1 = 101_000, 99_000
    yates = ((abs(n0 - 100_000) - 0.5) ** 2 / 100_000) * 2
    assert srm_p_value([[n0, n1]], [[1, 1]])[0] == pytest.approx(sps.chi2.sf(yates, 1), rel=1e-12)
    assert srm_p_value([[n0, n1]], [[1, 1]])[0] < 0.001


def test_srm_needs_two_arms():
    assert np.isnan(srm_p_value([[100, np.nan]], [[1, 1]])[0])


def test_corrections_per_family_match_statsmodels(rng):
    p = rng.uniform(0, 0.2, 30)
    fam = np.repeat(["a", "b", "c"], 10)
    for method, sm_name in (("bh", "fdr_bh"), ("holm", "holm")):
        adj = adjust_p_values(p, fam, method)
        for f in "abc":
            np.testing.assert_allclose(adj[fam == f], multipletests(p[fam == f], method=sm_name)[1])


def test_corrections_skip_nan_and_none_is_identity():
    p = np.array([0.01, np.nan, 0.04])
    adj = adjust_p_values(p, np.zeros(3), "bh")
    assert np.isnan(adj[1])
    np.testing.assert_allclose(adj[[0, 2]], multipletests([0.01, 0.04], method="fdr_bh")[1])
    np.testing.assert_array_equal(adjust_p_values(p, np.zeros(3), "none"), p)


def test_power_and_mde_match_statsmodels():
    sd, n = 2.0, 500
    var = 2 * sd**2 / n
    effect = 0.3
    ref = NormalIndPower().power(effect_size=effect / sd, nobs1=n, alpha=0.05, ratio=1.0)
    assert power.power(effect, var) == pytest.approx(ref, rel=1e-6)
    es = NormalIndPower().solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=1.0)
    assert power.mde(var) == pytest.approx(es * sd, rel=1e-3)  # statsmodels keeps the far tail
    assert power.power(power.mde(var), var) == pytest.approx(0.8, abs=1e-3)
    n_needed = power.sample_size_per_arm(sd**2, power.mde(var))
    assert n_needed == pytest.approx(n, rel=1e-9)
