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

Level calibrated to the plan. Ville's inequality bounds the crossing probability over an
*unbounded* horizon; an experiment stops at its planned size N*, where the mixture boundary at
level alpha is crossed with probability only ~1.9% (alpha = 0.05) even under continuous
monitoring. :func:`calibrated_alpha` finds the level alpha' > alpha at which the same mixture
boundary is crossed with probability alpha by a Brownian motion monitored *continuously* on
(0, N*] - the finite-horizon counterpart of Ville's bound, with one calibrated constant as in
Pocock's group-sequential boundary (Jennison & Turnbull 2000, "Group Sequential Methods", §2.4
and ch. 7). Any schedule of looks up to N* (daily, uneven traffic, extra looks) then rejects a
true H0 with probability at most alpha, and a finite schedule strictly less: 3.4% over 30
equally spaced looks. ``calibrated_alpha(alpha, looks=K)`` is the exact level for K equally
spaced looks (crossing exactly alpha), kept as the reference it replaced: it spends all of
alpha in the Gaussian limit, so finite samples scatter around alpha, and it exceeds alpha when
traffic overshoots the plan (5.4% at 1.2x the planned units over 30 looks).
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from stats._types import Arr
from stats.frequentist import fieller_interval
from stats.results import ArmEstimate, SequentialResult


def mixing_rho2(alpha: Arr, tuning_n: Arr) -> Arr:
    """rho^2 of the normal mixture, tightest at ``tuning_n`` units (HRMS 2021 eq. (3.7))."""
    la = -2.0 * np.log(np.asarray(alpha, float))
    return (la + np.log(la + 1.0)) / np.asarray(tuning_n, float)


_CALIBRATION_PATHS = 200_000
_CONTINUOUS_STEPS = 100
_SIEGMUND_RHO = 0.5826
"""-zeta(1/2) / sqrt(2 pi): a Brownian motion watched on a grid of step h crosses a boundary b
about as often as continuously watched crosses b + rho sqrt(h) (Siegmund 1985, "Sequential
Analysis", §10.3; Chernoff 1965)."""


def brownian_boundary(frac: npt.NDArray[np.float64], level: float) -> npt.NDArray[np.float64]:
    """The mixture boundary at level ``level`` for W(t), t = N / N* (module docstring, N* = 1):
    |W(t)| >= sqrt(t) x (the standardised boundary at N = t N*)."""
    nr2 = frac * mixing_rho2(level, 1.0)
    return np.sqrt(frac * (1.0 + nr2) / nr2 * (2.0 * np.log(1.0 / level) + np.log1p(nr2)))


@functools.lru_cache(maxsize=64)
def calibrated_alpha(
    alpha: float, looks: int | None = None, seed: int = 20260101, sides: int = 2
) -> float:
    """Level alpha' whose mixture boundary is crossed with probability ``alpha`` up to N*.

    ``looks=None`` (what the engine uses): a Brownian motion W on (0, 1] (t = N / N*) watched
    continuously. It is simulated on a grid of 100 steps with the boundary lowered by
    Siegmund's discreteness correction 0.5826 sqrt(1/100) (a Brownian-bridge correction on a
    300-step grid agrees within the Monte-Carlo error). ``looks=K``: exactly K equally spaced
    looks t = k/K, no correction (the reference; see the module docstring). Both by bisection on
    the crossing rate of 200,000 simulated paths (fixed seed, so the result is deterministic;
    Monte-Carlo standard error of the rate 0.05 points at alpha = 0.05; bisection to 1e-4 in
    alpha').

    Args:
        alpha: target probability of ever rejecting a true H0 up to the planned size.
        looks: None for any schedule of looks up to N*; K for exactly K equally spaced looks.
        sides: 2 for the two-sided interval (|W| crosses); 1 for a one-sided test (W crosses
            the upper boundary only: superiority, non-inferiority and deterioration tests of
            :mod:`stats.decision`).

    Returns:
        alpha' (>= alpha).
    """
    if sides not in (1, 2):
        raise ValueError(f"sides must be 1 or 2, got {sides}")
    rng = np.random.default_rng(seed)
    steps = _CONTINUOUS_STEPS if looks is None else looks
    shift = _SIEGMUND_RHO / np.sqrt(steps) if looks is None else 0.0
    frac = np.arange(1, steps + 1) / steps
    w = np.cumsum(rng.standard_normal((_CALIBRATION_PATHS, steps), dtype=np.float32), axis=1)
    abs_w = (np.abs(w) if sides == 2 else w) / np.float32(np.sqrt(steps))

    def crossing(level: float) -> float:
        bound = (brownian_boundary(frac, level) - shift).astype(np.float32)
        return float((abs_w >= bound).any(axis=1).mean())

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


def boundary_multiplier(n_total: Arr, alpha: Arr, tuning_n: Arr) -> Arr:
    """The sequence's half-width in standard errors at a look: hw / sqrt(V).

    hw^2 = V (1 + N rho^2) / (N rho^2) (2 log(1/alpha) + log(1 + N rho^2)) depends on V only as
    a factor (module docstring), so the boundary of *any* asymptotically normal statistic with
    variance V at this look is this multiplier times sqrt(V) - which is what makes the
    Fieller-type relative sequence (:func:`relative_sequence`) and the one-sided tests of
    :mod:`stats.decision` the same mixture martingale as the absolute interval.
    """
    n = np.asarray(n_total, float)
    a = np.asarray(alpha, float)
    nr2 = n * mixing_rho2(a, tuning_n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((1.0 + nr2) / nr2 * (2.0 * np.log(1.0 / a) + np.log1p(nr2)))


def relative_sequence(
    control: ArmEstimate, treatment: ArmEstimate, n_total: Arr, alpha: Arr, tuning_n: Arr
) -> tuple[Arr, Arr, Arr]:
    """Always-valid interval of m_t / m_c - 1 at one look: Fieller's set at the sequence's
    boundary (Fieller 1954, with the fixed z replaced by :func:`boundary_multiplier`).

    For every fixed lift r, D(r) = m_t - (1 + r) m_c has mean 0 when r is the true lift and
    variance V_t + (1 + r)^2 V_c; the normal-mixture martingale of D(r) crosses its boundary
    with probability at most alpha over all looks, so {r : D(r)^2 <= c (V_t + (1 + r)^2 V_c)}
    holds the true lift at every look at once. Unlike a symmetric delta-method interval on the
    lift it is unbounded (not a point at -100%) while the control mean is not significantly
    above 0, and it is the interval the one-sided decision tests of :mod:`stats.decision`
    invert. An arm whose variance estimate is 0 (no events yet) still makes any normal
    interval degenerate: the engine keeps such looks out (``sequential_min_events``).

    Returns:
        (ci_lower, ci_upper, unbounded) as :func:`stats.frequentist.fieller_interval`.
    """
    z = boundary_multiplier(n_total, alpha, tuning_n)
    return fieller_interval(control, treatment, z)


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
