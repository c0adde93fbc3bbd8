"""Client access networks: RTT, bursty loss, bandwidth, bottleneck buffer.

Model (all per client, then varied per session):

* base RTT, loss rate, bandwidth and bottleneck buffer are log-normal, with medians and spreads by
  network type (ethernet < wifi < cellular for RTT and loss, the reverse for bandwidth) and a
  platform modifier (Android fleets sit more often on slow, distant networks). Log-normal RTT and
  throughput are the usual fit of fleet measurements (e.g. Kakhki et al. 2017, "Taking a Long
  Look at QUIC"; M-Lab NDT distributions).
* loss follows a two-state Gilbert–Elliott channel (Gilbert 1960, Elliott 1963): in the bad state
  every packet is lost, bursts last a geometric number of packets with mean ``burst_len``, and the
  long-run loss rate is ``loss``. For a transfer of *n* packets the number of bursts is
  ``Poisson(n * loss / burst_len)`` and the packets lost are the sum of that many geometric burst
  lengths, which is the GE chain's count distribution for sparse bursts.
* each session varies around the client's own network (log-normal factors), so observations of a
  client are correlated, as in real fleets.
"""

from __future__ import annotations

import numpy as np

from simulation import variates

PLATFORMS = ("Windows", "Android", "macOS", "iOS", "Linux")
NETWORK_TYPES = ("ethernet", "wifi", "cellular")
PLATFORM_SHARES = np.array([0.40, 0.35, 0.10, 0.10, 0.05])
MOBILE = np.array([False, True, False, True, False])

# P(network type | platform): desktop mostly wired/wifi, mobile wifi/cellular.
NET_GIVEN_DESKTOP = np.array([0.45, 0.53, 0.02])
NET_GIVEN_MOBILE = np.array([0.0, 0.5, 0.5])

#                      ethernet  wifi    cellular
RTT_MEDIAN_MS = np.array([35.0, 55.0, 95.0])
RTT_SIGMA = np.array([0.55, 0.6, 0.65])
LOSS_MEDIAN = np.array([0.00005, 0.00015, 0.0003])
LOSS_SIGMA = np.array([2.0, 2.0, 1.9])
BURST_MEAN = np.array([1.5, 2.0, 3.0])
BW_MEDIAN_KBPS = np.array([15_000.0, 9_000.0, 4_000.0])
BW_SIGMA = np.array([1.0, 1.0, 1.1])
BUFFER_MEDIAN_PKTS = np.array([48.0, 64.0, 256.0])  # bottleneck queue (home routers, RAN buffers)
BUFFER_SIGMA = np.array([0.7, 0.7, 0.6])
JITTER_SIGMA = np.array([0.2, 0.4, 0.5])  # per-ack RTT noise (log-normal sigma)
CROSS_FLOWS = np.array([0.3, 0.4, 0.2])  # mean competing flows at the bottleneck

#                         Windows Android macOS iOS  Linux
PLATFORM_RTT_FACTOR = np.array([1.0, 1.3, 0.9, 1.05, 0.9])
PLATFORM_BW_FACTOR = np.array([1.0, 0.6, 1.3, 1.0, 1.2])
PLATFORM_LOSS_FACTOR = np.array([1.0, 1.3, 0.8, 0.9, 0.9])

MAX_LOSS = 0.2
MSS = 1350  # payload bytes per packet


def sample_platform_network(
    rng: np.random.Generator, n: int, platform_shares: np.ndarray | None = None, network_shares: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Platform and network-type codes (int8) of ``n`` clients."""
    shares = PLATFORM_SHARES if platform_shares is None else platform_shares
    platform = rng.choice(len(PLATFORMS), size=n, p=shares / shares.sum()).astype(np.int8)
    u = rng.random(n)
    cdf = np.where(MOBILE[platform][:, None], np.cumsum(NET_GIVEN_MOBILE), np.cumsum(NET_GIVEN_DESKTOP))
    if network_shares is not None:
        cdf = np.broadcast_to(np.cumsum(network_shares / network_shares.sum()), cdf.shape)
    net = (u[:, None] >= cdf[:, :-1]).sum(axis=1).astype(np.int8)
    return platform, net


def _lognormal(rng: np.random.Generator, median: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return median * np.exp(sigma * rng.standard_normal(len(median)))


def sample_client_networks(rng: np.random.Generator, platform: np.ndarray, net: np.ndarray) -> dict[str, np.ndarray]:
    """Each client's own network (arrays keyed rtt_ms, loss, burst, bw_kbps, buffer_pkts, jitter, cross)."""
    rtt = _lognormal(rng, RTT_MEDIAN_MS[net] * PLATFORM_RTT_FACTOR[platform], RTT_SIGMA[net])
    loss = _lognormal(rng, LOSS_MEDIAN[net] * PLATFORM_LOSS_FACTOR[platform], LOSS_SIGMA[net])
    bw = _lognormal(rng, BW_MEDIAN_KBPS[net] * PLATFORM_BW_FACTOR[platform], BW_SIGMA[net])
    buf = _lognormal(rng, BUFFER_MEDIAN_PKTS[net], BUFFER_SIGMA[net])
    return {
        "rtt_ms": np.clip(rtt, 2.0, 3000.0),
        "loss": np.minimum(loss, MAX_LOSS),
        "burst": BURST_MEAN[net] * np.exp(0.3 * rng.standard_normal(len(net))).clip(0.5, 3.0),
        "bw_kbps": np.clip(bw, 150.0, 1_000_000.0),
        "buffer_pkts": np.clip(buf, 4.0, 4000.0),
        "jitter": JITTER_SIGMA[net].copy(),
        "cross": CROSS_FLOWS[net].copy(),
    }


def typical_networks(platform: np.ndarray, net: np.ndarray, factors: tuple[float, float, float]) -> dict[str, np.ndarray]:
    """The fleet's median RTT, loss and bandwidth for each client's platform and network type
    (scaled by the scenario's (RTT, bandwidth, loss) factors): what is typical, not what it drew."""
    return {
        "rtt_ms": RTT_MEDIAN_MS[net] * PLATFORM_RTT_FACTOR[platform] * factors[0],
        "bw_kbps": BW_MEDIAN_KBPS[net] * PLATFORM_BW_FACTOR[platform] * factors[1],
        "loss": np.minimum(LOSS_MEDIAN[net] * PLATFORM_LOSS_FACTOR[platform] * factors[2], MAX_LOSS),
    }


def session_networks(rng: np.random.Generator, client_net: dict[str, np.ndarray], idx: np.ndarray) -> dict[str, np.ndarray]:
    """Network of each session: the owning client's, varied by session-level log-normal factors."""
    m = len(idx)
    out = {k: v[idx] for k, v in client_net.items()}
    out["rtt_ms"] = np.clip(out["rtt_ms"] * np.exp(0.2 * rng.standard_normal(m)), 2.0, 5000.0)
    out["loss"] = np.minimum(out["loss"] * np.exp(0.7 * rng.standard_normal(m)), MAX_LOSS)
    out["bw_kbps"] = np.clip(out["bw_kbps"] * np.exp(0.3 * rng.standard_normal(m)), 100.0, 1_000_000.0)
    out["cross"] = rng.poisson(out["cross"]).astype(np.int16)
    return out


def ge_losses(u_bursts: np.ndarray, u_lengths: np.ndarray, packets: np.ndarray, loss: np.ndarray, burst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gilbert–Elliott loss of transfers of ``packets`` packets: (loss bursts, packets lost).

    Bursts ~ Poisson(n·loss/burst); the packets beyond the first of each burst ~ Poisson(bursts ·
    (burst − 1)) (the sum of geometric burst lengths, Poisson-approximated). Both by inversion of
    the given uniforms, see :mod:`simulation.variates`.
    """
    b = np.maximum(burst, 1.0)
    events = variates.poisson(u_bursts, packets * loss / b)
    extra = variates.poisson(u_lengths, events * (b - 1.0))
    return events, np.minimum(events + extra, packets).astype(np.int64)
