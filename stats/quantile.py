"""Standard error of a clustered quantile by the outer-CI method with cluster post-adjustment.

Method (Deng, Knoblich, Lu 2018 §4 "Quantile metrics"; Liu, Sun, Varshney, Xu 2019,
"Large-Scale Online Experimentation with Quantile Metrics", §3):

1. i.i.d. outer CI on the rank scale: with N events, the fraction of events at or below the
   true p-quantile has i.i.d. standard error sigma_iid = sqrt(p (1 - p) / N), so
   [Q(p - z sigma_iid), Q(p + z sigma_iid)] is the (1 - alpha) interval of the quantile
   (DKL 2018 eq. (9); the order statistics X_(L), X_(U) with L, U = N p -/+ z sqrt(N p (1-p))).
   Its half-width over z is the i.i.d. standard error of q_hat.
2. Cluster adjustment: events of one unit are correlated, so the fraction
   F_hat = sum_i s_i / sum_i n_i (s_i = unit i's events <= q_hat, n_i its events) has the
   delta-method variance of a ratio of per-unit sums (DKL 2018 eq. (4)), sigma_F^2. The
   standard error is scaled by sigma_F / sigma_iid (LSVX 2019, the "post-adjustment"):

       se(q_hat) = (Q(p + h) - Q(p - h)) / (2 z) * sigma_F / sigma_iid,  h = z sigma_iid
                 = slope_of_Q_around_p * sigma_F.

   Equivalently (DKL 2018 §4) the outer CI can be read directly at h = z sigma_F, the
   clustered window, with no post-scaling: se = (Q(p + h) - Q(p - h)) / (2 z). Both give
   slope * sigma_F; they differ only in the window over which the slope is measured (see
   :func:`quantile_arm`, argument ``window``).

Q is read from the warehouse's grid (``grid_p``, ``grid_value``) by linear interpolation.
If p -/+ h falls outside the grid the end segment is extrapolated and the row is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from stats._types import Arr
from stats.results import ArmEstimate
from stats.statistics import QuantileStatistic

WINDOW_TAIL_FRACTION = 1.0 / 3.0
"""Largest half-width of the slope window as a fraction of min(p, 1 - p) (see quantile_arm)."""


@dataclass(frozen=True)
class QuantileArm:
    """A quantile arm's linearised estimate and diagnostics.

    Attributes:
        arm: estimate q_hat and Var(q_hat).
        grid_extrapolated: True where p -/+ h was outside the grid.
        design_effect: sigma_F^2 / sigma_iid^2 (1 for independent events).
        window_widened: True where Q was flat over the window (binned or discrete values)
            and the slope was read over the widest symmetric window of the grid.
    """

    arm: ArmEstimate
    grid_extrapolated: npt.NDArray[np.bool_]
    design_effect: Arr
    window_widened: npt.NDArray[np.bool_]


def interpolate_grid(
    grid_p: npt.ArrayLike, grid_value: npt.ArrayLike, target: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Row-wise linear interpolation of a quantile function given on a grid.

    Args:
        grid_p: (rows, k) increasing probabilities, NaN-padded at the end of short rows.
        grid_value: (rows, k) quantile function values at ``grid_p``.
        target: (rows,) probabilities to evaluate.

    Returns:
        (values, extrapolated): NaN where a row has fewer than two grid points.
    """
    gp = np.atleast_2d(np.asarray(grid_p, dtype=float))
    gv = np.atleast_2d(np.asarray(grid_value, dtype=float))
    t = np.broadcast_to(np.asarray(target, dtype=float), (gp.shape[0],))
    valid = np.isfinite(gp) & np.isfinite(gv)
    k = valid.sum(axis=1)
    rows = np.arange(gp.shape[0])
    below = (np.where(valid, gp, np.inf) <= t[:, None]).sum(axis=1)
    j = np.clip(below, 1, np.maximum(k - 1, 1))
    p0, p1 = gp[rows, j - 1], gp[rows, j]
    v0, v1 = gv[rows, j - 1], gv[rows, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = v0 + (v1 - v0) * (t - p0) / (p1 - p0)
    first, last = gp[rows, 0], gp[rows, np.maximum(k - 1, 0)]
    out = np.where(k >= 2, out, np.nan)
    return out, (k >= 2) & ((t < first) | (t > last))


def quantile_arm(
    stat: QuantileStatistic, z: float, window: Literal["clustered", "iid"] = "clustered"
) -> QuantileArm:
    """Estimate and clustered variance of one arm's quantile (outer CI + post-adjustment).

    Args:
        stat: the arm's quantile statistic (scalar or batch).
        z: the normal quantile defining the outer CI, z_{1 - alpha / 2}.
        window: where the slope of Q is read. "clustered": over the clustered outer CI
            p -/+ z sigma_F (DKL 2018 §4; the default: more order statistics inside the
            window, so a less noisy slope). "iid": over the i.i.d. outer CI p -/+ z sigma_iid,
            then scaled by sigma_F / sigma_iid (the LSVX 2019 one-pass post-adjustment).
            Both are the same to first order; docs/stats.md reports both in simulation.

    Returns:
        The arm's :class:`QuantileArm`.
    """
    p = np.asarray(stat.p, dtype=float)
    n_events = np.asarray(stat.n_events, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma_iid = np.sqrt(p * (1 - p) / n_events)
        var_f = stat.fraction_unit_variance() / stat.n
    h = z * (np.sqrt(np.maximum(var_f, sigma_iid**2)) if window == "clustered" else sigma_iid)
    # Finite-sample rule: the window stays within WINDOW_TAIL_FRACTION of the distance to the
    # nearer end of [0, 1]. The central difference over-estimates the slope of a convex tail by
    # Q'''(p) h^2 / 6 (Taylor); for a tail Q(p) ~ (1 - p)^(-xi) that relative bias is
    # (1 + xi)(2 + xi) / 6 * (h / (1 - p))^2, which the cap keeps below 7% for xi <= 1/2
    # (1/3 was chosen by the calibration study in docs/stats.md: 1/2 left p95 at 100 units
    # per arm conservative).
    # At thousands of units per arm h is far below the cap and nothing changes.
    h = np.minimum(h, WINDOW_TAIL_FRACTION * np.minimum(p, 1 - p))
    slope, extrapolated = _slope(stat, p, h)
    # A flat quantile function over the window (values binned or discrete, so Q(p - h) and
    # Q(p + h) fall in one bin) would give se = 0. Read the slope over the widest symmetric
    # window the grid offers instead, and flag it; still flat -> variance NaN (no estimate).
    gp = np.atleast_2d(np.asarray(stat.grid_p, dtype=float))
    finite = np.isfinite(gp)
    lo, hi = np.where(finite, gp, np.inf).min(axis=1), np.where(finite, gp, -np.inf).max(axis=1)
    h_wide = np.minimum(p - lo, hi - p)
    widened = ~(slope > 0) & (h_wide > h)
    if widened.any():
        slope_wide, _ = _slope(stat, p, np.where(widened, h_wide, h))
        slope = np.where(widened, slope_wide, slope)
    with np.errstate(divide="ignore", invalid="ignore"):
        design_effect = var_f / sigma_iid**2
    variance = np.where(slope > 0, slope * slope * var_f, np.nan)
    arm = ArmEstimate(stat.estimate(), variance, stat.n)
    return QuantileArm(arm, extrapolated, design_effect, widened)


def _slope(
    stat: QuantileStatistic, p: npt.NDArray[np.float64], h: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Central-difference slope (Q(p + h) - Q(p - h)) / 2h on the grid, and extrapolation."""
    q_lo, ext_lo = interpolate_grid(stat.grid_p, stat.grid_value, p - h)
    q_hi, ext_hi = interpolate_grid(stat.grid_p, stat.grid_value, p + h)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (q_hi - q_lo) / (2 * np.asarray(h, dtype=float)), ext_lo | ext_hi
