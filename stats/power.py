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
