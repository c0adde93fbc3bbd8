"""Typed, frozen result objects. Fields are scalars or per-row numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stats._types import Arr


@dataclass(frozen=True)
class ArmEstimate:
    """One arm's linearised estimate.

    Attributes:
        estimate: point estimate of the metric in this arm.
        variance: variance of that estimate (influence variance / n).
        n: number of units.
    """

    estimate: Arr
    variance: Arr
    n: Arr


@dataclass(frozen=True)
class ComparisonResult:
    """Treatment versus control for one metric (or a batch of rows).

    Attributes:
        value_control, value_treatment: the arms' estimates.
        delta_abs: value_treatment - value_control.
        se_abs: standard error of delta_abs.
        ci_abs_lower, ci_abs_upper: two-sided (1 - alpha) interval of delta_abs.
        p_value: two-sided p-value of H0: delta = 0.
        df: degrees of freedom of the reference t distribution (inf for z).
        delta_rel: value_treatment / value_control - 1.
        se_rel: delta-method standard error of delta_rel.
        ci_rel_lower, ci_rel_upper: interval of delta_rel (delta method or Fieller).
        rel_unbounded: True where Fieller's interval is unbounded (CI bounds are NaN).
    """

    value_control: Arr
    value_treatment: Arr
    delta_abs: Arr
    se_abs: Arr
    ci_abs_lower: Arr
    ci_abs_upper: Arr
    p_value: Arr
    df: Arr
    delta_rel: Arr
    se_rel: Arr
    ci_rel_lower: Arr
    ci_rel_upper: Arr
    rel_unbounded: npt.NDArray[np.bool_] | bool


@dataclass(frozen=True)
class SequentialResult:
    """Always-valid (confidence-sequence) interval at one look.

    Attributes:
        ci_lower, ci_upper: the confidence sequence at this look.
        p_value: always-valid p-value, min(1, 1 / Lambda) of the mixture likelihood ratio.
    """

    ci_lower: Arr
    ci_upper: Arr
    p_value: Arr
