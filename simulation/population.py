"""The client population, generated deterministically in fixed-size blocks.

Clients are numbered 0..N-1 and generated in blocks of :data:`BLOCK` clients, each from its own
seeded stream, so a client's attributes do not depend on how many workers run the simulation or on
which day is being simulated. Per client: a 64-bit id (hex ``client_id``), platform, network type,
app version, own network (:mod:`simulation.network`), activity (median sessions per day times a
log-normal factor, σ=1: heavy-tailed, so a few clients contribute many sessions and observations
cluster within clients), and the probability that it holds cached server config for 0-RTT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.hashing import hash2, str_key
from simulation.network import (
    NETWORK_TYPES,
    PLATFORMS,
    sample_client_networks,
    sample_platform_network,
    typical_networks,
)

BLOCK = 50_000
APP_VERSIONS = ("126.0.6478", "127.0.6533", "128.0.6613")
APP_VERSION_SHARES = np.array([0.15, 0.55, 0.30])


@dataclass(frozen=True)
class Population:
    """Arrays of one block of clients (all the same length)."""

    index: np.ndarray  # global client number
    client_u64: np.ndarray  # id hashed for assignment; client_id is its 16-hex form
    platform: np.ndarray  # int8 code into network.PLATFORMS
    net: np.ndarray  # int8 code into network.NETWORK_TYPES
    app_version: np.ndarray  # int8 code into APP_VERSIONS
    activity: np.ndarray  # mean sessions per day
    zero_rtt_p: np.ndarray  # P(cached server config) per connection
    network: dict[str, np.ndarray]
    typical: dict[str, np.ndarray]  # the fleet's medians for each client's platform and network type

    def __len__(self) -> int:
        return len(self.index)


def block_count(clients: int) -> int:
    return (clients + BLOCK - 1) // BLOCK


def make_block(
    seed: int,
    block: int,
    clients: int,
    sessions_per_day: float,
    platform_shares: dict | None = None,
    factors: tuple[float, float, float] = (1.0, 1.0, 1.0),
    network_shares: dict | None = None,
) -> Population:
    """Clients ``block*BLOCK .. min(clients, (block+1)*BLOCK)`` of the population of ``seed``.

    ``factors`` scale the fleet's (RTT, bandwidth, loss) for scenarios set on other networks.
    """
    lo, hi = block * BLOCK, min(clients, (block + 1) * BLOCK)
    if lo >= hi:
        raise ValueError(f"block {block} is empty for {clients} clients")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x504F50, block]))
    n = hi - lo
    index = np.arange(lo, hi, dtype=np.int64)
    shares = None
    if platform_shares:
        shares = np.array([platform_shares.get(p, 0.0) for p in PLATFORMS], dtype=float)
    nshares = None
    if network_shares:
        nshares = np.array([network_shares.get(t, 0.0) for t in NETWORK_TYPES], dtype=float)
    platform, net = sample_platform_network(rng, n, shares, nshares)
    version = rng.choice(len(APP_VERSIONS), size=n, p=APP_VERSION_SHARES).astype(np.int8)
    activity = sessions_per_day * np.exp(1.0 * rng.standard_normal(n))
    zero_rtt_p = rng.beta(9.0, 1.0, size=n)
    network = sample_client_networks(rng, platform, net)
    network["rtt_ms"] = network["rtt_ms"] * factors[0]
    network["bw_kbps"] = network["bw_kbps"] * factors[1]
    network["loss"] = np.minimum(network["loss"] * factors[2], 0.2)
    return Population(
        index=index,
        client_u64=hash2(index.astype(np.uint64), str_key("quicexp-client", seed)),
        platform=platform,
        net=net,
        app_version=version,
        activity=activity,
        zero_rtt_p=zero_rtt_p,
        network=network,
        typical=typical_networks(platform, net, factors),
    )
