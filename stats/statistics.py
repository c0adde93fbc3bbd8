"""Frozen sufficient statistics, one per metric kind, as the warehouse produces them.

Every field is a float or a numpy array: a statistic built from arrays is a *batch* of
statistics (one per table row) and every derived property works element-wise, so the engine
and a hand-written test use the same code path. ``__add__`` merges two disjoint sets of units
(e.g. two days of new units, or two segments), field by field.

Moments use the sample (n - 1) denominator, except :class:`ProportionStatistic` whose
variance is the Wald p(1 - p) (n denominator) used by the two-proportion z test.

The per-arm *linearisation* (:meth:`estimate` and :meth:`unit_variance`) is the common
currency of the inference code: an estimate ``m`` and the variance ``s2`` of the per-unit
influence values, so that Var(m) ~= s2 / n. For a ratio R = sum_y / sum_x the influence
value of unit i is (y_i - R x_i) / x_bar (Deng, Knoblich, Lu 2018, "Applying the Delta
Method in Metric Analytics", §2 and eq. (4) for the ratio of two means).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Self

import numpy as np

from stats._types import Arr

# Relative size, against the terms it was computed from, below which a centred moment is taken
# to be exactly 0. The warehouse sums doubles in no fixed order, so every raw sum carries a
# relative error of up to about n * 1e-16; a moment that is a difference of such sums and comes
# out smaller than this is rounding, not signal (e.g. a CUPED covariate present for one unit,
# whose linearised variance is 0 but came out as +-1e-13 and gave theta = noise / noise).
ROUNDING_TOL = 1e-9


def _moment(n: Arr, *terms: tuple[Arr, Arr, Arr, Arr]) -> Arr:
    """sum_k coef_k * S_k with S_k = (sum_ab - sum_a sum_b / n) / (n - 1) from raw sums.

    Each term is (coef, sum_ab, sum_a, sum_b). The combination is set to exactly 0 where it is
    within ROUNDING_TOL of the magnitude of what was subtracted, so that sums differing in their
    last bits (another summation order) give the same answer, not amplified noise.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        value: Arr = 0.0
        scale: Arr = 0.0
        for coef, sum_ab, sum_a, sum_b in terms:
            product = sum_a * sum_b / n
            value = value + coef * (sum_ab - product)
            scale = scale + np.abs(coef) * (np.abs(sum_ab) + np.abs(product))
        value = np.where(np.abs(value) <= ROUNDING_TOL * scale, 0.0, value)
        return value / (np.asarray(n, dtype=float) - 1)


def _cov(sum_ab: Arr, sum_a: Arr, sum_b: Arr, n: Arr) -> Arr:
    """Sample covariance from raw sums: (sum_ab - sum_a sum_b / n) / (n - 1)."""
    return _moment(n, (1.0, sum_ab, sum_a, sum_b))


def _add_fields(a: Any, b: Any) -> dict[str, Any]:
    """Field-wise sum of two dataclasses of the same type (None + None = None)."""
    out: dict[str, Any] = {}
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None and y is None:
            out[f.name] = None
        elif x is None or y is None:
            raise ValueError(f"cannot add statistics: {f.name} is present in only one operand")
        elif hasattr(x, "__add__") and not isinstance(x, float | int | np.ndarray | np.number):
            out[f.name] = x + y
        else:
            out[f.name] = np.add(x, y)
    return out


@dataclass(frozen=True)
class MeanCovariate:
    """CUPED pre-period covariate parts for a per-unit mean (Deng, Xu, Kohavi, Walker 2013).

    Attributes:
        sum_c: sum over units of the pre-period covariate c_i.
        sum_c2: sum of c_i^2.
        sum_yc: sum of y_i c_i (y the in-experiment per-unit value).
    """

    sum_c: Arr
    sum_c2: Arr
    sum_yc: Arr

    def __add__(self, other: MeanCovariate) -> MeanCovariate:
        return MeanCovariate(**_add_fields(self, other))


@dataclass(frozen=True)
class RatioCovariate:
    """CUPED covariate for a ratio metric: the pre-period ratio sum_c / sum_d.

    The covariate is linearised like the metric itself, (c_i - Rc d_i) / d_bar, so its
    covariance with the metric's influence value needs the cross sums below.

    Attributes:
        sum_c, sum_c2: pre-period numerator sums.
        sum_d, sum_d2: pre-period denominator sums.
        sum_cd: sum of c_i d_i.
        sum_yc, sum_yd, sum_xc, sum_xd: cross sums between in-experiment numerator y /
            denominator x and pre-period numerator c / denominator d.
    """

    sum_c: Arr
    sum_c2: Arr
    sum_d: Arr
    sum_d2: Arr
    sum_cd: Arr
    sum_yc: Arr
    sum_yd: Arr
    sum_xc: Arr
    sum_xd: Arr

    def __add__(self, other: RatioCovariate) -> RatioCovariate:
        return RatioCovariate(**_add_fields(self, other))


@dataclass(frozen=True)
class MeanStatistic:
    """Per-unit mean: n units with values y_i.

    Attributes:
        n: number of units (randomization units, e.g. clients).
        sum_y: sum of y_i.
        sum_y2: sum of y_i^2.
        covariate: optional CUPED covariate parts.
    """

    n: Arr
    sum_y: Arr
    sum_y2: Arr
    covariate: MeanCovariate | None = None

    def __add__(self, other: Self) -> Self:
        return type(self)(**_add_fields(self, other))

    @property
    def mean(self) -> Arr:
        """Sample mean of y."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.sum_y / self.n

    @property
    def variance(self) -> Arr:
        """Sample variance of y (n - 1 denominator)."""
        return _cov(self.sum_y2, self.sum_y, self.sum_y, self.n)

    def estimate(self) -> Arr:
        """Point estimate of the metric (the mean)."""
        return self.mean

    def unit_variance(self) -> Arr:
        """Variance of the per-unit influence values; Var(estimate) = this / n."""
        return self.variance

    def covariate_moments(self) -> tuple[Arr, Arr, Arr] | None:
        """(covariate estimate, its influence variance, covariance with the metric's)."""
        c = self.covariate
        if c is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            mc = c.sum_c / self.n
        return (
            mc,
            _cov(c.sum_c2, c.sum_c, c.sum_c, self.n),
            _cov(c.sum_yc, self.sum_y, c.sum_c, self.n),
        )


@dataclass(frozen=True)
class ProportionStatistic(MeanStatistic):
    """Per-unit binary outcome (a proportion of units): y_i in {0, 1}, so sum_y2 == sum_y.

    The influence variance is the Wald p(1 - p), matching the two-proportion z test
    (statsmodels ``test_proportions_2indep(method="wald")``).
    """

    def unit_variance(self) -> Arr:
        """Wald variance p(1 - p) (n denominator)."""
        p = self.mean
        return p * (1.0 - p)


@dataclass(frozen=True)
class RatioStatistic:
    """Ratio of per-unit sums R = sum_y / sum_x (e.g. rebuffers per playback).

    Attributes:
        n: number of units.
        sum_y, sum_y2: per-unit numerator sums.
        sum_x, sum_x2: per-unit denominator sums.
        sum_xy: sum of x_i y_i.
        covariate: optional CUPED covariate parts (a pre-period ratio).
    """

    n: Arr
    sum_y: Arr
    sum_y2: Arr
    sum_x: Arr
    sum_x2: Arr
    sum_xy: Arr
    covariate: RatioCovariate | None = None

    def __add__(self, other: RatioStatistic) -> RatioStatistic:
        return RatioStatistic(**_add_fields(self, other))

    def estimate(self) -> Arr:
        """R = sum_y / sum_x."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.sum_y / self.sum_x

    def unit_variance(self) -> Arr:
        """Influence variance of R: Deng, Knoblich, Lu (2018) eq. (4), times n.

        s2 = (S_yy - 2 R S_xy + R^2 S_xx) / x_bar^2 with S the sample (co)variances.
        """
        r, n = self.estimate(), self.n
        num = _moment(
            n,
            (1.0, self.sum_y2, self.sum_y, self.sum_y),
            (-2 * r, self.sum_xy, self.sum_x, self.sum_y),
            (r * r, self.sum_x2, self.sum_x, self.sum_x),
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            xbar = self.sum_x / n
            return num / (xbar * xbar)

    def covariate_moments(self) -> tuple[Arr, Arr, Arr] | None:
        """(covariate ratio Rc, its influence variance, covariance with the metric's).

        Cov((y - R x)/x_bar, (c - Rc d)/d_bar)
          = (S_yc - Rc S_yd - R S_xc + R Rc S_xd) / (x_bar d_bar).
        """
        c = self.covariate
        if c is None:
            return None
        n, r = self.n, self.estimate()
        with np.errstate(divide="ignore", invalid="ignore"):
            rc = c.sum_c / c.sum_d
            xbar, dbar = self.sum_x / n, c.sum_d / n
            var_c = _moment(
                n,
                (1.0, c.sum_c2, c.sum_c, c.sum_c),
                (-2 * rc, c.sum_cd, c.sum_c, c.sum_d),
                (rc * rc, c.sum_d2, c.sum_d, c.sum_d),
            ) / (dbar * dbar)
            cross = _moment(
                n,
                (1.0, c.sum_yc, self.sum_y, c.sum_c),
                (-rc, c.sum_yd, self.sum_y, c.sum_d),
                (-r, c.sum_xc, self.sum_x, c.sum_c),
                (r * rc, c.sum_xd, self.sum_x, c.sum_d),
            ) / (xbar * dbar)
        return rc, var_c, cross


@dataclass(frozen=True)
class QuantileStatistic:
    """One arm's p-quantile of event-level values, with units clustered.

    Quantiles of a union are not a function of the parts' quantiles, so this statistic has
    no ``__add__`` (adding raises TypeError): the warehouse must recompute it over the union.

    Attributes:
        n: number of units.
        p: target probability (e.g. 0.95).
        quantile_value: the arm's estimate q_hat = Q(p) (inverse empirical CDF).
        n_events: number of events N.
        sum_s, sum_s2: per-unit counts s_i of events <= q_hat, and their squares.
        sum_n, sum_n2: per-unit event counts n_i and their squares (sum_n == n_events).
        sum_sn: sum of s_i n_i.
        grid_p: 1-d (or 2-d, one row per statistic) increasing probabilities around p.
        grid_value: the empirical quantile function at ``grid_p``; NaN pads ragged rows.
    """

    n: Arr
    p: Arr
    quantile_value: Arr
    n_events: Arr
    sum_s: Arr
    sum_s2: Arr
    sum_n: Arr
    sum_n2: Arr
    sum_sn: Arr
    grid_p: Arr
    grid_value: Arr

    def __add__(self, other: object) -> Any:
        return NotImplemented

    def estimate(self) -> Arr:
        """The quantile estimate q_hat."""
        return self.quantile_value

    def fraction_below(self) -> Arr:
        """F_hat(q_hat) = sum_s / sum_n, the event fraction at or below the estimate."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.sum_s / self.sum_n

    def fraction_unit_variance(self) -> Arr:
        """Clustered influence variance of F_hat (a ratio of per-unit sums, DKL 2018 eq. 4)."""
        ratio = RatioStatistic(
            n=self.n,
            sum_y=self.sum_s,
            sum_y2=self.sum_s2,
            sum_x=self.sum_n,
            sum_x2=self.sum_n2,
            sum_xy=self.sum_sn,
        )
        return ratio.unit_variance()


Statistic = MeanStatistic | ProportionStatistic | RatioStatistic | QuantileStatistic
