"""Power and minimum detectable effect for a two-sided normal test.

Power of a two-sided level-alpha z test when the true delta is d and Var(delta_hat) = V:
    power = Phi(d / sqrt(V) - z_{1-alpha/2}) + Phi(-d / sqrt(V) - z_{1-alpha/2}).
MDE at power 1 - beta (ignoring the far tail): (z_{1-alpha/2} + z_{1-beta}) sqrt(V)
(the same relation statsmodels' NormalIndPower solves for the standardized effect).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from stats._types import Arr
from stats.sequential import brownian_boundary, calibrated_alpha


def power(effect: Arr, variance: Arr, alpha: float = 0.05) -> Arr:
    """Probability that a two-sided z test rejects when the true delta is ``effect``."""
    z = sps.norm.ppf(1 - alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.asarray(effect, float) / np.sqrt(variance)
    return sps.norm.cdf(k - z) + sps.norm.cdf(-k - z)


def mde(variance: Arr, alpha: float = 0.05, target_power: float = 0.8) -> Arr:
    """Minimum detectable absolute effect given Var(delta_hat) = ``variance``."""
    mult = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(target_power)
    return mult * np.sqrt(variance)


def mde_for_sample_size(
    unit_variance_control: Arr,
    unit_variance_treatment: Arr,
    n_control: Arr,
    n_treatment: Arr,
    alpha: float = 0.05,
    target_power: float = 0.8,
) -> Arr:
    """MDE for planned arm sizes given per-unit (influence) variances of each arm."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.divide(unit_variance_control, n_control) + np.divide(
            unit_variance_treatment, n_treatment
        )
    return mde(v, alpha, target_power)


def sample_size_per_arm(
    unit_variance: Arr, effect: Arr, alpha: float = 0.05, target_power: float = 0.8
) -> Arr:
    """Units per arm (equal split, equal variances) to detect ``effect`` with ``target_power``."""
    mult = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(target_power)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2.0 * np.asarray(unit_variance, float) * (mult / np.asarray(effect, float)) ** 2


def sequential_power(
    noncentrality: Arr,
    looks: int,
    alpha: float = 0.05,
    paths: int = 100_000,
    seed: int = 1,
    sides: int = 2,
) -> Arr:
    """Probability that the plan-calibrated confidence sequence excludes 0 by the planned size.

    The engine's sequence (:mod:`stats.sequential`: N* = the planned size, level
    :func:`stats.sequential.calibrated_alpha`) watched at ``looks`` equally spaced looks up to N*,
    in the Gaussian limit: Z at information t = N / N* is W(t)/sqrt(t) + noncentrality sqrt(t),
    noncentrality = true delta / its standard error at N* (the fixed-horizon power at N* is
    :func:`power` with the same ratio). Monte Carlo over ``paths`` Brownian paths (fixed seed,
    common to every noncentrality). ``sides=1``: the one-sided test at level ``alpha`` (its
    boundary calibrated with ``calibrated_alpha(alpha, sides=1)``) crossing in the direction of
    the effect, as the decision's tests (:mod:`stats.decision`).
    """
    frac = np.arange(1, looks + 1) / looks
    rng = np.random.default_rng(seed)
    w = np.cumsum(rng.standard_normal((paths, looks)), axis=1) / np.sqrt(looks)
    bound = brownian_boundary(frac, calibrated_alpha(alpha, sides=sides))
    theta = np.atleast_1d(np.asarray(noncentrality, float))

    def crossed(th: float) -> np.ndarray:
        z = w + th * frac
        return (z if sides == 1 else np.abs(z)) >= bound

    out = np.array([crossed(th).any(axis=1).mean() for th in theta])
    return out if np.ndim(noncentrality) else float(out[0])


def sequential_noncentrality(
    target_power: float, looks: int, alpha: float = 0.05, sides: int = 2
) -> float:
    """Noncentrality at N* at which :func:`sequential_power` reaches ``target_power``.

    A metric whose true delta over its standard error at n units is theta reaches it at
    n (noncentrality / theta)^2 planned units (the standard error scales as 1/sqrt(n)).
    """
    lo, hi = 0.0, 10.0
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        reach = sequential_power(mid, looks, alpha, sides=sides)
        lo, hi = (mid, hi) if reach < target_power else (lo, mid)
    return 0.5 * (lo + hi)
