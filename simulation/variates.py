"""Random variates by inversion from given uniforms (fixed random-number consumption).

numpy's Poisson/binomial samplers consume a number of uniforms that depends on their parameters,
so two runs whose parameters differ (two arms of an experiment) would drift apart in their random
streams. Drawing every variate of the transport model from a fixed block of uniforms keeps the
streams aligned: simulating the same clients under two arms then uses *common random numbers*
(Law & Kelton, "Simulation Modeling and Analysis", ch. 11), so paired counterfactual comparisons
isolate the transport change from sampling noise.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

NORMAL_APPROX_LAMBDA = 30.0


def poisson(u: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Poisson(lam) variates by inversion of ``u`` (normal approximation for lam > 30)."""
    u = np.asarray(u, dtype=float)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), u.shape)
    out = np.zeros(u.shape, dtype=np.int64)
    big = lam > NORMAL_APPROX_LAMBDA
    if big.any():
        z = ndtri(np.clip(u[big], 1e-12, 1 - 1e-12))
        out[big] = np.maximum(0, np.round(lam[big] + np.sqrt(lam[big]) * z)).astype(np.int64)
    idx = np.flatnonzero(~big & (lam > 0))
    if len(idx) == 0:
        return out
    lam_s = lam[idx]
    p = np.exp(-lam_s)
    cdf = p.copy()
    uu = u[idx]
    k = 0
    active = np.flatnonzero(uu > cdf)
    while len(active):
        k += 1
        p[active] *= lam_s[active] / k
        cdf[active] += p[active]
        out[idx[active]] = k
        active = active[uu[active] > cdf[active]]
        if k > 200:  # cdf rounding: stop, the remaining mass is negligible
            break
    return out


def binary(u: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Bernoulli(p) variates as integers."""
    return (u < p).astype(np.int64)


def rounded(u: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Unbiased random rounding of non-negative ``x`` to an integer (E = x)."""
    return np.floor(x + u).astype(np.int64)


def normal(u: np.ndarray) -> np.ndarray:
    """Standard normal variates by inversion."""
    return ndtri(np.clip(u, 1e-12, 1 - 1e-12))
