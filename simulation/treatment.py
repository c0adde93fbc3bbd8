"""From experiment arms to each client's effective transport settings on a given day.

For every experiment the client is enrolled in (and which has started by that day), the arm's
overrides are applied over the scenario baseline, in experiment order. The returned arm matrix
(experiments × clients, -1 = not enrolled / not started) also feeds the ``experiments`` map.
"""

from __future__ import annotations

import numpy as np

from simulation.assignment import assign
from simulation.scenario import Scenario, TransportSettings
from simulation.transport import HDR_CODES, MP_CODES, TransportArrays


def _encode(ts: TransportSettings) -> dict[str, object]:
    return {
        "single_stream": ts.stream_mode == "single_stream",
        "hdr": HDR_CODES.index(ts.header_compression),
        "iw": ts.initial_window,
        "reno": ts.congestion_control == "reno",
        "pacing": ts.pacing,
        "tlp": ts.tail_loss_probes,
        "zero_rtt": ts.zero_rtt,
        "pooling": ts.connection_pooling,
        "nconn": ts.emulated_connections,
        "round_robin": ts.prioritization == "round_robin",
        "multipath": MP_CODES.index(ts.multipath),
    }


_DTYPES = {
    "single_stream": np.bool_,
    "hdr": np.int8,
    "iw": np.int16,
    "reno": np.bool_,
    "pacing": np.bool_,
    "tlp": np.int8,
    "zero_rtt": np.bool_,
    "pooling": np.bool_,
    "nconn": np.int8,
    "round_robin": np.bool_,
    "multipath": np.int8,
}


def arm_matrix(scenario: Scenario, client_u64: np.ndarray, day: int) -> np.ndarray:
    """Arm index per (experiment, client) on ``day`` (0-based), -1 when not enrolled or not started."""
    out = np.full((len(scenario.experiments), len(client_u64)), -1, dtype=np.int8)
    for i, exp in enumerate(scenario.experiments):
        if day < exp.start_day:
            continue
        out[i] = assign(
            client_u64,
            exp.id,
            [a.weight for a in exp.arms],
            salt=exp.salt,
            enrolled_fraction=exp.enrolled_fraction,
        )
    return out


def client_transport(scenario: Scenario, arms: np.ndarray) -> TransportArrays:
    """Effective transport settings per client given the arm matrix."""
    n = arms.shape[1]
    base = _encode(scenario.transport)
    cols = {k: np.full(n, v, dtype=_DTYPES[k]) for k, v in base.items()}
    for i, exp in enumerate(scenario.experiments):
        for j, arm in enumerate(exp.arms):
            changed = arm.transport.model_dump(exclude_none=True)
            if not changed:
                continue
            mask = arms[i] == j
            enc = _encode(arm.transport.apply(scenario.transport))
            for field in changed:
                for key in _FIELD_KEYS[field]:
                    cols[key][mask] = enc[key]
    return TransportArrays(**cols)


_FIELD_KEYS = {
    "stream_mode": ("single_stream",),
    "header_compression": ("hdr",),
    "initial_window": ("iw",),
    "congestion_control": ("reno",),
    "pacing": ("pacing",),
    "tail_loss_probes": ("tlp",),
    "zero_rtt": ("zero_rtt",),
    "connection_pooling": ("pooling",),
    "emulated_connections": ("nconn",),
    "prioritization": ("round_robin",),
    "multipath": ("multipath",),
}
