"""Sessions of one day for one block of clients.

Each client has ``Poisson(activity)`` sessions a day (activity is heavy-tailed across clients, see
:mod:`simulation.population`). A session uses one app (browser, search or video, by the scenario's
shares), starts at a time drawn from a diurnal profile (UTC, evening peak), and runs on the
client's network varied per session (:func:`simulation.network.session_networks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.hashing import hash2, str_key
from simulation.network import session_networks
from simulation.population import Population
from simulation.scenario import APPS

# Relative session starts per UTC hour (a blend of time zones with an evening peak).
DIURNAL = np.array(
    [3, 2, 1.5, 1.2, 1.2, 1.5, 2.5, 3.5, 4.5, 5, 5.2, 5.5, 6, 6, 5.8, 5.8, 6, 6.5, 7, 7.5, 7.5, 6.5, 5, 4],
    dtype=float,
)
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Sessions:
    client: np.ndarray  # index into the population block
    session_u64: np.ndarray  # session id (hex in events)
    app: np.ndarray  # int8 code into scenario.APPS
    start_ms: np.ndarray  # epoch milliseconds (true time)
    net: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.client)


def make_sessions(
    rng: np.random.Generator, pop: Population, day_start_ms: int, app_shares: dict[str, float], day_key: int
) -> Sessions:
    """All sessions of the block's clients on one day."""
    per_client = rng.poisson(pop.activity)
    client = np.repeat(np.arange(len(pop), dtype=np.int64), per_client)
    m = len(client)
    shares = np.array([app_shares.get(a, 0.0) for a in APPS], dtype=float)
    app = rng.choice(len(APPS), size=m, p=shares / shares.sum()).astype(np.int8)
    hour = rng.choice(24, size=m, p=DIURNAL / DIURNAL.sum())
    start = day_start_ms + hour * 3_600_000 + rng.integers(0, 3_600_000, size=m)
    # session number within the client (0..k-1) makes the session id unique and stable
    first = np.repeat(np.cumsum(per_client) - per_client, per_client)
    ordinal = np.arange(m) - first
    sid = hash2(hash2(pop.client_u64[client] ^ np.uint64(day_key), str_key("session")) + ordinal.astype(np.uint64), str_key("session-n"))
    return Sessions(
        client=client,
        session_u64=sid,
        app=app,
        start_ms=start.astype(np.int64),
        net=session_networks(rng, pop.network, client),
    )
