"""Stable randomisation of clients to experiment arms.

Each experiment hashes the client's 64-bit id under a key derived from ``experiment id + salt``
(BLAKE2b) into one of 10 000 buckets; the buckets are split between arms by their weights, and
only the first ``enrolled_fraction`` of the bucket space (taken from a second, independent hash) is
enrolled. Different experiments use different keys, so concurrent experiments are independently
randomised (their arm assignments are uncorrelated), and re-running gives identical assignments.
"""

from __future__ import annotations

import numpy as np

from simulation.hashing import hash2, str_key

BUCKETS = 10_000


def buckets(client_u64: np.ndarray, experiment_id: str, salt: str = "", purpose: str = "arm") -> np.ndarray:
    """Bucket in [0, BUCKETS) of each client for one experiment (and purpose)."""
    key = str_key("quicexp-assign", experiment_id, salt, purpose)
    return (hash2(client_u64, key) % np.uint64(BUCKETS)).astype(np.int32)


def arm_cutoffs(weights: list[float]) -> np.ndarray:
    """Upper bucket bound of each arm for the given traffic weights."""
    w = np.asarray(weights, dtype=float)
    if (w <= 0).any():
        raise ValueError("arm weights must be positive")
    return np.round(np.cumsum(w) / w.sum() * BUCKETS).astype(np.int32)


def assign(
    client_u64: np.ndarray,
    experiment_id: str,
    weights: list[float],
    *,
    salt: str = "",
    enrolled_fraction: float = 1.0,
) -> np.ndarray:
    """Arm index of each client (int8), or -1 for clients not enrolled."""
    b = buckets(client_u64, experiment_id, salt, "arm")
    arm = np.searchsorted(arm_cutoffs(weights), b, side="right").astype(np.int8)
    if enrolled_fraction < 1.0:
        e = buckets(client_u64, experiment_id, salt, "enrol")
        arm[e >= round(enrolled_fraction * BUCKETS)] = -1
    return arm
