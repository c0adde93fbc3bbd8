"""Multiple-comparison control within families, via statsmodels.stats.multitest."""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
import numpy.typing as npt

Correction = Literal["bh", "holm", "bonferroni", "none"]
_METHODS = {"bh": "fdr_bh", "holm": "holm", "bonferroni": "bonferroni"}


def adjust_p_values(
    p_values: npt.ArrayLike, family: npt.ArrayLike, method: Correction = "bh"
) -> npt.NDArray[np.float64]:
    """Adjusted p-values, each family corrected on its own; NaN p-values are left out.

    Args:
        p_values: raw p-values.
        family: family label per p-value (e.g. experiment x date x primary/guardrail).
        method: "bh" (Benjamini-Hochberg FDR), "holm", "bonferroni" or "none".

    Returns:
        Adjusted p-values in input order.
    """
    from statsmodels.stats.multitest import multipletests  # seconds to import: not for settings

    p = np.asarray(p_values, dtype=float)
    out = p.copy()
    if method == "none" or p.size == 0:
        return out
    fam = np.asarray(family)
    _, inverse = np.unique(fam, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0, True])
    for a, b in itertools.pairwise(bounds):
        idx = order[a:b]
        idx = idx[np.isfinite(p[idx])]
        if idx.size:
            out[idx] = multipletests(p[idx], method=_METHODS[method])[1]
    return out
