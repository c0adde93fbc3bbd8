"""Helpers shared by the stats tests (imported by module name; tests/stats is on sys.path)."""

from __future__ import annotations

import numpy as np


def sums(y: np.ndarray, x: np.ndarray | None = None) -> dict[str, float]:
    """Sufficient statistics of per-unit values (as the warehouse computes them)."""
    out = {"n": float(y.size), "sum_y": float(y.sum()), "sum_y2": float((y * y).sum())}
    if x is not None:
        out |= {
            "sum_x": float(x.sum()),
            "sum_x2": float((x * x).sum()),
            "sum_xy": float((x * y).sum()),
        }
    return out
