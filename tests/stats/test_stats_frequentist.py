"""Fixed-horizon comparisons against scipy, statsmodels and independent per-unit formulas."""

from __future__ import annotations

import numpy as np
import pytest
from _stats_helpers import sums
from scipy import optimize
from scipy import stats as sps
from statsmodels.stats import proportion as smp

from stats.frequentist import compare, fieller_interval, linearize
from stats.results import ArmEstimate
from stats.statistics import MeanStatistic, ProportionStatistic, RatioStatistic


def test_welch_matches_scipy(rng):
    yc, yt = rng.lognormal(0, 1, 300), rng.lognormal(0.1, 1.3, 200)
    c, t = MeanStatistic(**sums(yc)), MeanStatistic(**sums(yt))
    res = compare(linearize(c), linearize(t), alpha=0.05, test="welch")
    ref = sps.ttest_ind_from_stats(
        yt.mean(), yt.std(ddof=1), yt.size, yc.mean(), yc.std(ddof=1), yc.size, equal_var=False
    )
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert res.delta_abs / res.se_abs == pytest.approx(ref.statistic, rel=1e-9)
    ci = sps.ttest_ind(yt, yc, equal_var=False).confidence_interval(0.95)
    assert res.ci_abs_lower == pytest.approx(ci.low, rel=1e-9)
    assert res.ci_abs_upper == pytest.approx(ci.high, rel=1e-9)


def test_welch_vectorised_equals_scalar(rng):
    ys = [(rng.normal(0, 1, 50), rng.normal(0.2, 2, 80)) for _ in range(5)]
    stats_c = [MeanStatistic(**sums(a)) for a, _ in ys]
    stats_t = [MeanStatistic(**sums(b)) for _, b in ys]

    def batch(items):
        return MeanStatistic(
            *(np.array([getattr(s, f) for s in items]) for f in ("n", "sum_y", "sum_y2"))
        )

    vec = compare(linearize(batch(stats_c)), linearize(batch(stats_t)), test="welch")
    for i in range(5):
        one = compare(linearize(stats_c[i]), linearize(stats_t[i]), test="welch")
        assert vec.p_value[i] == pytest.approx(one.p_value, rel=1e-12)


def test_proportions_match_statsmodels():
    c = ProportionStatistic(4000.0, 1210.0, 1210.0)
    t = ProportionStatistic(3900.0, 1260.0, 1260.0)
    res = compare(linearize(c), linearize(t), test="z")
    ref = smp.test_proportions_2indep(1260, 3900, 1210, 4000, method="wald", compare="diff")
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    lo, hi = smp.confint_proportions_2indep(1260, 3900, 1210, 4000, method="wald", compare="diff")
    assert (res.ci_abs_lower, res.ci_abs_upper) == pytest.approx((lo, hi), rel=1e-9)


def _influence_ratio(y, x):
    """Independent per-unit delta method: influence (y_i - R x_i) / x_bar."""
    r = y.sum() / x.sum()
    return r, (y - r * x) / x.mean()


def test_ratio_delta_method_matches_per_unit_computation(rng):
    x = 1.0 + rng.poisson(rng.lognormal(1, 1, 2000))
    y = rng.gamma(2 * x, 50 * np.exp(rng.normal(0, 0.5, 2000)))
    stat = RatioStatistic(**sums(y, x))
    r, infl = _influence_ratio(y, x)
    arm = linearize(stat, small_sample=False)
    assert arm.estimate == pytest.approx(r, rel=1e-12)
    assert arm.variance == pytest.approx(infl.var(ddof=1) / x.size, rel=1e-9)


def test_ratio_second_order_mse_matches_simulation():
    """Monte Carlo MSE of R_hat at 60 units with a heavy-tailed denominator: the second-order
    form is closer to it than the first-order variance, and both are equal at large n."""
    rng = np.random.default_rng(7)
    n, reps = 60, 40_000
    x = 1.0 + rng.poisson(rng.lognormal(1, 1, (reps, n)))
    y = rng.gamma(2 * x, 50 * np.exp(rng.normal(0, 0.5, (reps, n))))
    true_r = 2 * 50 * np.exp(0.125)
    stat = RatioStatistic(float(n), y.sum(1), (y * y).sum(1), x.sum(1), (x * x).sum(1),
                          (x * y).sum(1))  # fmt: skip
    mse = np.mean((y.sum(1) / x.sum(1) - true_r) ** 2)
    first = np.mean(linearize(stat, small_sample=False).variance)
    second = np.mean(linearize(stat).variance)
    assert first < second < mse * 1.02
    big = RatioStatistic(**sums(y[0].repeat(200), x[0].repeat(200)))
    assert linearize(big).variance == pytest.approx(
        linearize(big, small_sample=False).variance, rel=0.01
    )


def test_relative_delta_matches_per_unit_computation(rng):
    xc, xt = 1.0 + rng.poisson(3, 800), 1.0 + rng.poisson(3, 900)
    yc, yt = rng.gamma(xc, 2.0), rng.gamma(xt, 2.1)
    res = compare(
        linearize(RatioStatistic(**sums(yc, xc)), small_sample=False),
        linearize(RatioStatistic(**sums(yt, xt)), small_sample=False),
        relative_method="delta",
    )
    rc, ic = _influence_ratio(yc, xc)
    rt, it = _influence_ratio(yt, xt)
    # influence of rt / rc: it / rc on treatment units, -rt ic / rc^2 on control units
    var = (it / rc).var(ddof=1) / it.size + (rt * ic / rc**2).var(ddof=1) / ic.size
    assert res.delta_rel == pytest.approx(rt / rc - 1, rel=1e-12)
    assert res.se_rel == pytest.approx(np.sqrt(var), rel=1e-9)
    z = sps.norm.ppf(0.975)
    assert res.ci_rel_upper - res.delta_rel == pytest.approx(z * res.se_rel, rel=1e-12)


def test_fieller_solves_its_defining_equation():
    c, t = ArmEstimate(10.0, 0.8, 100.0), ArmEstimate(11.0, 1.1, 100.0)
    z = sps.norm.ppf(0.975)
    lo, hi, unbounded = fieller_interval(c, t, z)
    assert not unbounded

    def g(rho):
        return (11.0 - rho * 10.0) ** 2 - z**2 * (1.1 + rho**2 * 0.8)

    assert lo + 1 == pytest.approx(optimize.brentq(g, 0.5, 1.1), rel=1e-9)
    assert hi + 1 == pytest.approx(optimize.brentq(g, 1.1, 2.0), rel=1e-9)


def test_fieller_close_to_delta_for_precise_control_and_unbounded_for_noisy():
    c, t = ArmEstimate(10.0, 1e-4, 1e6), ArmEstimate(10.5, 1e-4, 1e6)
    f = compare(c, t, relative_method="fieller")
    d = compare(c, t, relative_method="delta")
    assert f.ci_rel_lower == pytest.approx(d.ci_rel_lower, rel=1e-3)
    noisy = compare(ArmEstimate(1.0, 1.0, 10.0), t, relative_method="fieller")
    assert noisy.rel_unbounded and np.isnan(noisy.ci_rel_lower)


def test_zero_variance_gives_nan_not_crash():
    c = linearize(MeanStatistic(np.array([10.0]), np.array([10.0]), np.array([10.0])))
    res = compare(c, c, test="welch")
    assert np.isnan(res.p_value[0])
