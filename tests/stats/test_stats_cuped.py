"""CUPED against statsmodels OLS (ANCOVA) and the 1 - rho^2 variance reduction."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from stats.cuped import cuped_adjust
from stats.frequentist import linearize
from stats.statistics import MeanCovariate, MeanStatistic, RatioCovariate, RatioStatistic


def _mean_stat(y, c):
    return MeanStatistic(
        float(y.size), y.sum(), (y * y).sum(), MeanCovariate(c.sum(), (c * c).sum(), (y * c).sum())
    )


def _bivariate(rng, n, rho, shift=0.0):
    c = rng.normal(10, 2, n)
    y = 5 + shift + rho * (c - 10) / 2 * 3 + np.sqrt(1 - rho**2) * 3 * rng.normal(size=n)
    return y, c


def test_pooled_theta_and_delta_equal_ols_with_arm_dummy(rng):
    yc, cc = _bivariate(rng, 700, 0.6)
    yt, ct = _bivariate(rng, 500, 0.6, shift=0.3)
    res = cuped_adjust(_mean_stat(yc, cc), _mean_stat(yt, ct))
    design = sm.add_constant(np.column_stack([np.r_[np.zeros(700), np.ones(500)], np.r_[cc, ct]]))
    ols = sm.OLS(np.r_[yc, yt], design).fit()
    assert res.theta == pytest.approx(ols.params[2], rel=1e-9)
    delta = res.treatment.estimate - res.control.estimate
    assert delta == pytest.approx(ols.params[1], rel=1e-9)


def test_variance_reduction_is_one_minus_rho_squared(rng):
    rho = 0.7
    yc, cc = _bivariate(rng, 200_000, rho)
    yt, ct = _bivariate(rng, 200_000, rho)
    res = cuped_adjust(_mean_stat(yc, cc), _mean_stat(yt, ct))
    assert 1 - res.variance_reduction == pytest.approx(1 - rho**2, rel=0.05)
    raw = linearize(MeanStatistic(float(yc.size), yc.sum(), (yc * yc).sum()))
    assert res.control.variance < raw.variance


def test_ratio_cuped_matches_per_unit_linearisation(rng):
    def arm(n):
        lam = rng.lognormal(1, 0.8, n)
        u = rng.normal(0, 0.5, n)
        x, d = 1 + rng.poisson(lam), 1 + rng.poisson(lam)
        y, c = rng.gamma(2 * x, 50 * np.exp(u)), rng.gamma(2 * d, 50 * np.exp(u))
        return x.astype(float), y, c, d.astype(float)

    arms = [arm(3000), arm(2500)]
    stats = []
    lin = []
    for x, y, c, d in arms:
        s = lambda v: float(v.sum())  # noqa: E731
        cov = RatioCovariate(
            s(c), s(c * c), s(d), s(d * d), s(c * d), s(y * c), s(y * d), s(x * c), s(x * d)
        )
        stats.append(RatioStatistic(float(x.size), s(y), s(y * y), s(x), s(x * x), s(x * y), cov))
        r, rc = y.sum() / x.sum(), c.sum() / d.sum()
        lin.append(((y - r * x) / x.mean(), (c - rc * d) / d.mean(), r, rc))
    res = cuped_adjust(stats[0], stats[1])
    num = sum((lm.size - 1) * np.cov(lm, lc)[0, 1] for lm, lc, _, _ in lin)
    den = sum((lm.size - 1) * lc.var(ddof=1) for lm, lc, _, _ in lin)
    theta = num / den
    assert res.theta == pytest.approx(theta, rel=1e-9)
    rc_pool = (arms[0][2].sum() + arms[1][2].sum()) / (arms[0][3].sum() + arms[1][3].sum())
    for adj, (lm, lc, r, rc) in zip((res.control, res.treatment), lin, strict=True):
        assert adj.estimate == pytest.approx(r - theta * (rc - rc_pool), rel=1e-9)
        assert adj.variance == pytest.approx((lm - theta * lc).var(ddof=1) / lm.size, rel=1e-9)


def test_constant_covariate_falls_back_to_unadjusted(rng):
    y = rng.normal(0, 1, 100)
    c = np.ones(100)
    res = cuped_adjust(_mean_stat(y, c), _mean_stat(y + 1, c))
    assert res.theta == 0
    assert res.variance_reduction == pytest.approx(0.0, abs=1e-12)


def _ratio_stat(x, y, c, d, jitter=1.0):
    """A ratio statistic from per-unit arrays; ``jitter`` scales every sum (another summation order
    in the warehouse changes the last bits of each sum)."""
    s = lambda v: float(v.sum()) * jitter  # noqa: E731
    cov = RatioCovariate(
        s(c), s(c * c), s(d), s(d * d), s(c * d), s(y * c), s(y * d), s(x * c), s(x * d)
    )
    return RatioStatistic(float(x.size), s(y), s(y * y), s(x), s(x * x), s(x * y), cov)


def test_covariate_of_one_unit_is_no_covariate_whatever_the_last_bits(rng):
    """Only one of 400 clients had pre-period data: its linearised covariate c - Rc d is 0 for
    every unit, so theta must be 0 — not a ratio of two rounding errors that moves by 100% when
    the warehouse sums in another order (seen in a rerun of the daily pipeline)."""

    def arm(n, with_history):
        x = 1.0 + rng.poisson(4, n)
        y = rng.gamma(2 * x, 300.0)
        c, d = np.zeros(n), np.zeros(n)
        if with_history:
            c[0], d[0] = 348.504, 1.0
        return x, y, c, d

    control, treatment = arm(414, True), arm(262, True)
    thetas, deltas, variances = set(), set(), set()
    for jitter in (1.0, 1 + 2**-52, 1 - 2**-52, 1 + 4 * 2**-52):
        res = cuped_adjust(_ratio_stat(*control), _ratio_stat(*treatment, jitter=jitter))
        thetas.add(float(res.theta))
        deltas.add(round(float(res.treatment.estimate - res.control.estimate), 9))
        variances.add(round(float(res.treatment.variance + res.control.variance), 6))
    assert thetas == {0.0}
    assert len(deltas) == 1 and len(variances) == 1
