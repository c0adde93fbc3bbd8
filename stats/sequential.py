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

``tuning_n`` = N* is the mixing parameter: the total number of units at which the interval
should be tightest (the engine takes it from the experiment's plan in the registry). The
sequence is valid for any N* fixed in advance; a poor choice only widens it.

Planned looks. Ville's inequality bounds the crossing probability over *continuous*
monitoring, so with a known, finite schedule of K looks up to N* the sequence is
conservative (about 1% ever-significant over 30 daily looks at alpha = 0.05). When the plan
names K, :func:`calibrated_alpha` finds the level alpha' > alpha at which the same mixture
boundary is crossed with probability alpha over K equally spaced looks of a Brownian motion
up to N* - a group-sequential boundary of the mixture's shape, the Pocock-style calibration of
one constant (Jennison & Turnbull 2000, "Group Sequential Methods", §2.4 and ch. 7; computed
here by Monte Carlo instead of their recursive integration). Its guarantee covers at most K
looks up to N*; looking more often or past N* needs the uncalibrated alpha.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from stats._types import Arr
from stats.results import SequentialResult


def mixing_rho2(alpha: Arr, tuning_n: Arr) -> Arr:
    """rho^2 of the normal mixture, tightest at ``tuning_n`` units (HRMS 2021 eq. (3.7))."""
    la = -2.0 * np.log(np.asarray(alpha, float))
    return (la + np.log(la + 1.0)) / np.asarray(tuning_n, float)


_CALIBRATION_PATHS = 200_000


@functools.lru_cache(maxsize=64)
def calibrated_alpha(alpha: float, looks: int, seed: int = 20260101) -> float:
    """Level alpha' whose mixture boundary is crossed with probability ``alpha`` over K looks.

    Under H0 the standardised estimate at look k of K equally spaced looks up to N* is
    Z_k = W(k/K) / sqrt(k/K) for a Brownian motion W. The mixture statistic (module docstring,
    with N rho^2 = (k/K) N* rho^2(alpha')) must stay below 1/alpha' at every look; as rho^2
    depends on alpha' itself, the level is found by bisection on the exact crossing rate of
    200,000 simulated paths (fixed seed, so the result is deterministic; Monte-Carlo standard
    error of the crossing rate 0.05 points at alpha = 0.05; bisection to 1e-4 in alpha').

    Args:
        alpha: target probability of ever rejecting a true H0 over the K looks.
        looks: K, the planned number of looks (e.g. the planned days of daily analysis).

    Returns:
        alpha' (>= alpha; equal to alpha for K = 1 up to the Monte-Carlo error).
    """
    rng = np.random.default_rng(seed)
    frac = np.arange(1, looks + 1) / looks
    w = np.cumsum(rng.standard_normal((_CALIBRATION_PATHS, looks)), axis=1) / np.sqrt(looks)
    z2 = w * w / frac  # Z_k^2

    def crossing(level: float) -> float:
        nr2 = frac * mixing_rho2(level, 1.0)  # N rho^2 at each look, N* = 1
        log_lambda = -0.5 * np.log1p(nr2) + nr2 * z2 / (2.0 * (1.0 + nr2))
        return float((log_lambda.max(axis=1) >= -np.log(level)).mean())

    lo, hi = alpha, 0.5
    if crossing(hi) <= alpha:
        return hi
    while hi - lo > 1e-4:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if crossing(mid) <= alpha else (lo, mid)
    return lo


def confidence_sequence(
    estimate: Arr,
    variance: Arr,
    n_total: Arr,
    alpha: Arr,
    tuning_n: Arr,
    nominal_alpha: Arr | None = None,
) -> SequentialResult:
    """Always-valid interval and p-value at one look (see the module docstring).

    Args:
        estimate: the point estimate delta_hat (absolute or relative).
        variance: its variance V at this look.
        n_total: units in both arms at this look (N).
        alpha: level of the sequence (per row allowed, e.g. a :func:`calibrated_alpha`).
        tuning_n: N*, the mixing parameter (see :func:`mixing_rho2`; per row allowed).
        nominal_alpha: the level ``alpha`` was calibrated for (default: ``alpha``); the
            p-value is scaled by nominal_alpha / alpha so that it is below nominal_alpha
            exactly when the interval excludes the null.

    Returns:
        The :class:`SequentialResult` at this look.
    """
    est, var = np.asarray(estimate, float), np.asarray(variance, float)
    n = np.asarray(n_total, float)
    a = np.asarray(alpha, float)
    nr2 = n * mixing_rho2(a, tuning_n)  # = tau^2 / V
    with np.errstate(divide="ignore", invalid="ignore"):
        hw = np.sqrt(var * (1.0 + nr2) / nr2 * (2.0 * np.log(1.0 / a) + np.log1p(nr2)))
        log_lambda = -0.5 * np.log1p(nr2) + nr2 * est * est / (2.0 * var * (1.0 + nr2))
    # 1/Lambda is the always-valid p-value at level alpha; with a calibrated level alpha' the
    # boundary 1/alpha' maps to the nominal alpha, so the p-value is rescaled by alpha / alpha'
    # (unchanged without calibration).
    scale = 1.0 if nominal_alpha is None else np.asarray(nominal_alpha, float) / a
    p_value = np.minimum(1.0, scale * np.exp(-log_lambda))
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
