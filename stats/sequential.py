"""Always-valid inference for daily looks: the normal-mixture mSPRT / confidence sequence.

With delta_hat ~ N(delta, V) at a look and a N(0, tau^2) mixing distribution over delta, the
mixture likelihood ratio against H0: delta = delta_0 is (Johari, Koomen, Pekelis, Walsh 2017,
"Peeking at A/B Tests", eq. (9), two-sample normal case)

    Lambda = sqrt(V / (V + tau^2)) * exp(tau^2 (delta_hat - delta_0)^2 / (2 V (V + tau^2))).

Lambda is a non-negative martingale under H0, so P(ever Lambda >= 1/alpha) <= alpha (Ville).
Inverting it gives the confidence sequence {delta_0 : Lambda < 1/alpha}, of half-width

    hw = sqrt( V (V + tau^2) / tau^2 * (2 log(1/alpha) + log((V + tau^2) / V)) ).

Mixing parameter. Writing V = s^2 / N (N = total units, s^2 = V N) and tau^2 = rho^2 s^2,
hw = s sqrt(2 (N rho^2 + 1) / (N^2 rho^2) * log(sqrt(N rho^2 + 1) / alpha)), and the
boundary is tightest near N = N* when (Howard, Ramdas, McAuliffe, Sekhon 2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", eq. (3.7) / the
closed form used by GrowthBook's gbstats ``sequential_rho``)

    rho^2 = (-2 log(alpha) + log(-2 log(alpha) + 1)) / N*.

``tuning_n`` = N* is the configured mixing parameter: the total number of units at which the
interval should be tightest (set it near the experiment's planned final size). The sequence
is valid for any N*; a poor choice only widens it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stats._types import Arr
from stats.results import SequentialResult


def mixing_rho2(alpha: float, tuning_n: float) -> float:
    """rho^2 of the normal mixture, tightest at ``tuning_n`` units (HRMS 2021 eq. (3.7))."""
    la = -2.0 * np.log(alpha)
    return float((la + np.log(la + 1.0)) / tuning_n)


def confidence_sequence(
    estimate: Arr, variance: Arr, n_total: Arr, alpha: float, tuning_n: float
) -> SequentialResult:
    """Always-valid interval and p-value at one look (see the module docstring).

    Args:
        estimate: the point estimate delta_hat (absolute or relative).
        variance: its variance V at this look.
        n_total: units in both arms at this look (N).
        alpha: level of the sequence.
        tuning_n: N*, the mixing parameter (see :func:`mixing_rho2`).

    Returns:
        The :class:`SequentialResult` at this look.
    """
    est, var = np.asarray(estimate, float), np.asarray(variance, float)
    n = np.asarray(n_total, float)
    nr2 = n * mixing_rho2(alpha, tuning_n)  # = tau^2 / V
    with np.errstate(divide="ignore", invalid="ignore"):
        hw = np.sqrt(var * (1.0 + nr2) / nr2 * (2.0 * np.log(1.0 / alpha) + np.log1p(nr2)))
        log_lambda = -0.5 * np.log1p(nr2) + nr2 * est * est / (2.0 * var * (1.0 + nr2))
    p_value = np.minimum(1.0, np.exp(-log_lambda))
    return SequentialResult(est - hw, est + hw, p_value)


def running_intersection(
    group: npt.ArrayLike,
    order: npt.ArrayLike,
    lower: npt.ArrayLike,
    upper: npt.ArrayLike,
    p_value: npt.ArrayLike,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Intersect each look's sequence with all earlier looks of the same comparison.

    A confidence sequence is valid at all looks simultaneously, so the running intersection
    (and the running minimum of the always-valid p-value) is valid too.

    Args:
        group: comparison id per row.
        order: look time per row (e.g. as_of_date as an integer).
        lower, upper, p_value: per-look sequence bounds and p-values.

    Returns:
        (lower, upper, p_value) running over looks, in the input row order. NaN looks are
        skipped.
    """
    g, t = np.asarray(group), np.asarray(order)
    idx = np.lexsort((t, g))
    gs = g[idx]
    starts = np.r_[True, gs[1:] != gs[:-1]]
    seg = np.cumsum(starts) - 1
    out = []
    for arr, sign in ((lower, 1.0), (upper, -1.0), (p_value, -1.0)):
        a = sign * np.asarray(arr, float)[idx]
        a = np.where(np.isnan(a), -np.inf, a)
        res = sign * _grouped_cummax(seg, a)
        res = np.where(np.isinf(res), np.nan, res)
        back = np.empty_like(res)
        back[idx] = res
        out.append(back)
    return out[0], out[1], out[2]


def _grouped_cummax(
    seg: npt.NDArray[np.int64], a: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Cumulative max restarting at each segment (``seg`` non-decreasing), fully vectorised.

    Values are replaced by their ranks and offset by ``seg * len(a)``, so one global
    ``np.maximum.accumulate`` never carries a value across a segment boundary.
    """
    m = a.size
    by_value = np.argsort(a, kind="stable")
    rank = np.empty(m, dtype=np.int64)
    rank[by_value] = np.arange(m)
    acc = np.maximum.accumulate(seg * m + rank)
    return a[by_value][acc - seg * m]
