"""Sample ratio mismatch: Pearson chi-square of arm counts against the configured split.

(Fabijan, Gupchup, Gupta, Omhover, Qin, Vermeer, Dmitriev 2019, "Diagnosing Sample Ratio
Mismatch in Online Controlled Experiments".) Vectorised across rows; the distribution is
scipy's chi2, the statistic the same as ``scipy.stats.chisquare``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats as sps


def srm_p_value(
    counts: npt.ArrayLike, expected_weights: npt.ArrayLike, continuity: bool = True
) -> npt.NDArray[np.float64]:
    """Chi-square goodness-of-fit p-values, one per row.

    Args:
        counts: (rows, arms) observed units per arm; NaN pads rows with fewer arms.
        expected_weights: (rows, arms) configured split (need not sum to 1), NaN-padded alike.
        continuity: for two arms, apply Yates' continuity correction,
            sum (|O - E| - 1/2)^2 / E (Yates 1934). The uncorrected statistic on the
            binomial lattice has a size slightly above nominal (at 200,000 units and
            alpha = 0.001 the exact size is 0.1004%); the corrected one approximates the
            exact binomial test and stays below it. Rows with three or more arms always use
            Pearson's statistic (identical to ``scipy.stats.chisquare``).

    Returns:
        (rows,) p-values; NaN where a row has fewer than two arms or no units.
    """
    obs = np.atleast_2d(np.asarray(counts, dtype=float))
    w = np.atleast_2d(np.asarray(expected_weights, dtype=float))
    valid = np.isfinite(obs) & np.isfinite(w) & (w > 0)
    obs0, w0 = np.where(valid, obs, 0.0), np.where(valid, w, 0.0)
    total = obs0.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = total * w0 / w0.sum(axis=1, keepdims=True)
        k = valid.sum(axis=1)
        dev = np.abs(obs0 - exp)
        if continuity:
            dev = np.where((k == 2)[:, None], np.maximum(dev - 0.5, 0.0), dev)
        chi2 = np.where(valid, dev**2 / exp, 0.0).sum(axis=1)
    p = sps.chi2.sf(chi2, np.maximum(k - 1, 1))
    return np.where((k >= 2) & (total[:, 0] > 0), p, np.nan)
