"""Sufficient-statistics types: derived moments and __add__."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _stats_helpers import sums

from stats.statistics import (
    MeanCovariate,
    MeanStatistic,
    ProportionStatistic,
    QuantileStatistic,
    RatioStatistic,
)


def test_mean_moments_match_numpy(rng):
    y = rng.lognormal(0, 1, 500)
    s = sums(y)
    stat = MeanStatistic(s["n"], s["sum_y"], s["sum_y2"])
    assert stat.mean == pytest.approx(y.mean(), rel=1e-12)
    assert stat.variance == pytest.approx(y.var(ddof=1), rel=1e-10)


def test_add_equals_statistic_of_union(rng):
    y1, y2 = rng.normal(3, 1, 100), rng.normal(3, 1, 250)
    c1, c2 = y1 + rng.normal(0, 1, 100), y2 + rng.normal(0, 1, 250)

    def make(y, c):
        s = sums(y)
        cov = MeanCovariate(c.sum(), (c * c).sum(), (y * c).sum())
        return MeanStatistic(s["n"], s["sum_y"], s["sum_y2"], cov)

    both = make(y1, c1) + make(y2, c2)
    union = make(np.r_[y1, y2], np.r_[c1, c2])
    for f in dataclasses.fields(MeanStatistic):
        if f.name != "covariate":
            assert getattr(both, f.name) == pytest.approx(getattr(union, f.name), rel=1e-12)
    assert both.covariate.sum_yc == pytest.approx(union.covariate.sum_yc, rel=1e-12)
    assert isinstance(both, MeanStatistic)


def test_add_keeps_subclass_and_works_on_batches():
    a = ProportionStatistic(np.array([10.0, 20.0]), np.array([3.0, 5.0]), np.array([3.0, 5.0]))
    b = a + a
    assert isinstance(b, ProportionStatistic)
    np.testing.assert_allclose(b.n, [20, 40])
    np.testing.assert_allclose(b.unit_variance(), [0.3 * 0.7, 0.25 * 0.75])


def test_add_with_covariate_on_one_side_only_is_an_error():
    a = MeanStatistic(10.0, 5.0, 5.0, MeanCovariate(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="covariate"):
        a + MeanStatistic(10.0, 5.0, 5.0)


def test_ratio_add(rng):
    x = rng.poisson(3, 40) + 1.0
    y = rng.gamma(x)
    s1, s2 = sums(y[:15], x[:15]), sums(y[15:], x[15:])
    r = RatioStatistic(**s1) + RatioStatistic(**s2)
    assert r.estimate() == pytest.approx(y.sum() / x.sum(), rel=1e-12)


def test_statistics_are_frozen():
    stat = MeanStatistic(10.0, 1.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stat.n = 3.0  # type: ignore[misc]


def test_quantiles_do_not_add():
    q = QuantileStatistic(10.0, 0.5, 1.0, 20.0, 10.0, 20.0, 20.0, 50.0, 30.0,
                          np.array([0.4, 0.6]), np.array([0.9, 1.1]))  # fmt: skip
    with pytest.raises(TypeError):
        q + q
