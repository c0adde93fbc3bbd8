"""CUPED: regression adjustment on a pre-period covariate (Deng, Xu, Kohavi, Walker 2013).

For each arm a with influence values l (the metric, linearised as in
:mod:`stats.statistics`) and lc (the covariate, linearised the same way):

    theta      = sum_a (n_a - 1) Cov_a(l, lc) / sum_a (n_a - 1) Var_a(lc)     (pooled across arms)
    m_adj,a    = m_a - theta (mc_a - mc_pooled)                              (DXKW 2013 eq. (3))
    Var(m_adj) = (Var(l) - 2 theta Cov(l, lc) + theta^2 Var(lc)) / n_a        (DXKW 2013 eq. (4))

theta is the same for both arms, so the adjusted delta is unbiased whatever the covariate's
distribution; centring on the pooled covariate mean keeps each arm's adjusted value on the
metric's scale (needed for the relative delta). For a ratio metric the covariate is the
pre-period ratio, both linearised by the delta method (Deng, Knoblich, Lu 2018 §2 + DXKW 2013),
so the same three formulas apply. theta is treated as known (its estimation error is
O(1/n) in the variance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stats._types import Arr
from stats.results import ArmEstimate
from stats.statistics import MeanStatistic, RatioStatistic


@dataclass(frozen=True)
class CupedResult:
    """Adjusted arm estimates.

    Attributes:
        control, treatment: CUPED-adjusted arm estimates.
        theta: pooled regression coefficient.
        variance_reduction: 1 - Var(adjusted delta) / Var(unadjusted delta).
    """

    control: ArmEstimate
    treatment: ArmEstimate
    theta: Arr
    variance_reduction: Arr


def cuped_adjust(
    control: MeanStatistic | RatioStatistic, treatment: MeanStatistic | RatioStatistic
) -> CupedResult:
    """Apply CUPED with theta pooled across the two arms.

    Args:
        control: control statistic with ``covariate`` set.
        treatment: treatment statistic (same type) with ``covariate`` set.

    Returns:
        The adjusted arm estimates. Where the covariate has no variance, theta is 0 and
        the estimates are the unadjusted ones.

    Raises:
        ValueError: if a statistic has no covariate.
    """
    mom_c, mom_t = control.covariate_moments(), treatment.covariate_moments()
    pooled = (control + treatment).covariate_moments()
    if mom_c is None or mom_t is None or pooled is None:
        raise ValueError("CUPED needs covariate parts in both arms")
    (mc_c, vc_c, cross_c), (mc_t, vc_t, cross_t) = mom_c, mom_t
    wc, wt = np.subtract(control.n, 1), np.subtract(treatment.n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = wc * vc_c + wt * vc_t
        theta = np.where(den > 0, (wc * cross_c + wt * cross_t) / den, 0.0)
    theta = np.nan_to_num(theta, nan=0.0, posinf=0.0, neginf=0.0)
    mc_pooled = pooled[0]

    def adjusted(stat: MeanStatistic | RatioStatistic, mc: Arr, vc: Arr, cross: Arr) -> ArmEstimate:
        # Never below 0: with a covariate almost collinear with the metric the terms cancel.
        s2 = np.maximum(stat.unit_variance() - 2 * theta * cross + theta * theta * vc, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return ArmEstimate(stat.estimate() - theta * (mc - mc_pooled), s2 / stat.n, stat.n)

    adj_c = adjusted(control, mc_c, vc_c, cross_c)
    adj_t = adjusted(treatment, mc_t, vc_t, cross_t)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = control.unit_variance() / control.n + treatment.unit_variance() / treatment.n
        reduction = 1.0 - (adj_c.variance + adj_t.variance) / raw
    return CupedResult(adj_c, adj_t, theta, reduction)
