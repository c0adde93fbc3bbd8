"""Shared pieces of the per-app event generators.

An app generator returns :class:`EventBatch` objects: for each event the session it belongs to,
its true time (epoch ms), and the kind-specific columns as numpy arrays named exactly as in the
telemetry schema. Common fields (ids, platform, experiments, times) are added later by
:mod:`simulation.events`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulation.hashing import hash2, str_key


@dataclass
class EventBatch:
    kind: str
    session: np.ndarray  # index into Sessions
    t_ms: np.ndarray  # int64 epoch ms, true time of the event
    cols: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray] = field(default_factory=dict)  # column -> bool mask of nulls

    def __len__(self) -> int:
        return len(self.session)

    def subset(self, keep: np.ndarray) -> EventBatch:
        """The events where ``keep`` (a boolean mask) is true."""
        return EventBatch(self.kind, self.session[keep], self.t_ms[keep],
                          {k: v[keep] for k, v in self.cols.items()},
                          {k: m[keep] for k, m in self.nulls.items()})  # fmt: skip


def ragged_index(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups with ``counts`` members: (group of each member, position within its group)."""
    counts = np.asarray(counts, dtype=np.int64)
    group = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    return group, np.arange(len(group), dtype=np.int64) - first


def heavy_count(rng: np.random.Generator, mean: np.ndarray | float, size: int, dispersion: float = 1.0) -> np.ndarray:
    """At least one; negative-binomial (gamma-Poisson) counts with the given mean: heavy right tail."""
    mean = np.broadcast_to(np.asarray(mean, dtype=float), (size,))
    extra = np.maximum(mean - 1.0, 1e-9)
    lam = rng.gamma(dispersion, extra / dispersion)
    return 1 + rng.poisson(lam)


def lognormal(rng: np.random.Generator, median: np.ndarray | float, sigma: np.ndarray | float, size: int) -> np.ndarray:
    return np.asarray(median, dtype=float) * np.exp(np.asarray(sigma, dtype=float) * rng.standard_normal(size))


def connection_u64(session_u64: np.ndarray, conn_no: np.ndarray, app_tag: str) -> np.ndarray:
    """Stable connection id from the session id and the connection's number in the session."""
    return hash2(session_u64 ^ (conn_no.astype(np.uint64) << np.uint64(48)), str_key("conn", app_tag))


def first_in_group(keys: np.ndarray) -> np.ndarray:
    """Mask of the first occurrence of each key (keys in event order)."""
    _, first = np.unique(keys, return_index=True)
    mask = np.zeros(len(keys), dtype=bool)
    mask[first] = True
    return mask


def group_cumsum(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum of non-negative ``values`` restarting at each new (contiguous) group."""
    c = np.cumsum(values)
    starts = np.r_[0, np.flatnonzero(np.diff(group)) + 1]
    offset = np.zeros(len(values))
    offset[starts[1:]] = c[starts[1:] - 1]
    return c - np.maximum.accumulate(offset)
