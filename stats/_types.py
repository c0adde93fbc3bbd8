"""Shared type aliases."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

Arr: TypeAlias = float | npt.NDArray[np.float64]
"""A scalar or an array of per-row values; all maths in ``stats`` works element-wise."""
