"""Video sessions: ``video_playbacks`` (and their ``connections``).

A playback fetches fixed-duration media chunks one after another over the session's connection.
The player picks a bitrate from a ladder below 75% of its bandwidth estimate (the session's
throughput seen so far, with estimation noise), keeps at most :data:`BUFFER_S` seconds buffered,
and plays chunk *k* once it has arrived: it stalls (a rebuffer) when a download falls behind
playback. The buffer dynamics are a recursion over the chunk position, vectorised across all
playbacks:

    start_k = max(done_{k-1}, play_{k-c} + chunk)      (wait for buffer room, c = BUFFER_S / chunk)
    done_k  = start_k + download_k
    play_k  = max(play_{k-1} + chunk, done_k),  stall_k = max(0, done_k - play_{k-1} - chunk)

Each chunk download is a :func:`simulation.transport.transfer` on the chunk's network (bandwidth
fading and loss bursts vary per chunk). The audio track and other requests (thumbnails, stats
pings) are in flight on the same connection; with forced head-of-line blocking their losses stall
the video chunk too, which lowers the measured bandwidth and adds rebuffers (seed 000).
Connectivity gaps (:data:`OUTAGES_PER_S`) delay a chunk's request whatever the transport, so not
every rebuffer is a transport stall; they do not count as download time in the bandwidth meter.
"""

from __future__ import annotations

import numpy as np

from simulation.apps.common import (
    EventBatch,
    connection_u64,
    group_cumsum,
    heavy_count,
    lognormal,
    ragged_index,
)
from simulation.apps.connections import aggregate_connections
from simulation.multipath import multipath_transfer
from simulation.network import NETWORK_TYPES
from simulation.population import Population
from simulation.scenario import VideoWorkload
from simulation.sessions import Sessions
from simulation.transport import TransportArrays, flow_share, handshake_ms, transfer

LADDER_KBPS = np.array([150.0, 300.0, 750.0, 1200.0, 2500.0, 4500.0, 8000.0])
AUDIO_KBPS = 128.0
AUDIO_LOW_KBPS = 48.0  # audio rendition paired with sub-1 Mbit/s video
SAFE_BUFFER_S = 10.0
FADING_SIGMA = 0.4  # chunk-to-chunk bandwidth variation (log-normal)
BUFFER_S = 30.0
DECODE_MS = 80.0
OTHER_SHARE_MEDIAN = 0.03  # other requests in flight per chunk, relative to the chunk
OTHER_REQUESTS = 0.5  # prefetches, thumbnails, ads, stats pings in flight per chunk
# connectivity gaps (wifi roaming, cellular handover, radio dropping out): per second of content,
# by network type (ethernet, wifi, cellular), and their log-normal length; no protocol helps there
OUTAGES_PER_S = np.array([1 / 900.0, 1 / 150.0, 1 / 60.0])
OUTAGE_MEDIAN_MS = 1500.0
OUTAGE_SIGMA = 1.0


def choose_bitrate(estimate_kbps: np.ndarray, buffer_s: np.ndarray) -> np.ndarray:
    """Highest ladder rung below a safety fraction of the throughput estimate.

    Rate-based ABR with a buffer guard: 85% of the estimate once :data:`SAFE_BUFFER_S` seconds
    are buffered, 50% below that (and for the first chunk).
    """
    target = estimate_kbps * np.where(buffer_s >= SAFE_BUFFER_S, 0.85, 0.5)
    idx = np.searchsorted(LADDER_KBPS, target, side="right") - 1
    return LADDER_KBPS[np.clip(idx, 0, len(LADDER_KBPS) - 1)]


def video_events(
    rng: np.random.Generator,
    sess: Sessions,
    sidx: np.ndarray,
    pop: Population,
    tp_client: TransportArrays,
    cfg: VideoWorkload,
) -> dict[str, EventBatch]:
    """Playbacks of the video sessions ``sidx`` and their connections."""
    chunk_ms = cfg.chunk_seconds * 1000.0
    count = heavy_count(rng, cfg.playbacks_per_session, len(sidx))
    gp, pb_pos = ragged_index(count)
    s_pb = sidx[gp]
    npb = len(s_pb)
    tp_pb = tp_client.take(sess.client[s_pb])
    watch_ms = np.clip(lognormal(rng, cfg.watch_median_seconds * 1000.0, 1.0, npb), chunk_ms, cfg.max_chunks * chunk_ms)
    nchunks = np.ceil(watch_ms / chunk_ms).astype(np.int64)
    kmax = int(nchunks.max()) if npb else 0
    buffer_chunks = max(1, int(BUFFER_S * 1000.0 / chunk_ms))
    share = flow_share(sess.net["bw_kbps"][s_pb], tp_pb.nconn, sess.net["cross"][s_pb])
    est = share * np.exp(0.25 * rng.standard_normal(npb))  # what the player remembers of this network
    pooled_new = (pb_pos == 0) | ~tp_pb.pooling
    hs_pb, zr_pb = handshake_ms(rng, sess.net["rtt_ms"][s_pb], tp_pb.zero_rtt, pop.zero_rtt_p[sess.client[s_pb]])
    hs_pb = np.where(pooled_new, hs_pb, 0.0)
    zr_pb = zr_pb & pooled_new

    play = np.zeros((npb, max(kmax, 1)))
    done_prev = np.zeros(npb)
    stall_ms = np.zeros(npb)
    stalls = np.zeros(npb, dtype=np.int64)
    media_bytes = np.zeros(npb)
    dl_time = np.zeros(npb)
    bitrate_sum = np.zeros(npb)
    first_frame = np.zeros(npb)
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]] = []
    for k in range(kmax):
        a = np.flatnonzero(nchunks > k)
        s = s_pb[a]
        m = len(a)
        buffered = (play[a, k - 1] + chunk_ms - done_prev[a]) / 1000.0 if k else np.zeros(m)
        rate = choose_bitrate(est[a], buffered)
        vbr = np.exp(0.15 * rng.standard_normal(m))
        size = (vbr * (cfg.fixed_chunk_bytes if cfg.fixed_chunk_bytes else rate * chunk_ms / 8.0)).round()
        net = {key: v[s] for key, v in sess.net.items()}
        net["bw_kbps"] = net["bw_kbps"] * np.exp(FADING_SIGMA * rng.standard_normal(m))
        net["loss"] = np.minimum(net["loss"] * np.exp(0.5 * rng.standard_normal(m)), 0.2)
        tp = tp_pb.take(a)
        audio = np.where(rate < 1000.0, AUDIO_LOW_KBPS, AUDIO_KBPS) * chunk_ms / 8.0
        other = rng.poisson(OTHER_REQUESTS, m) * lognormal(rng, OTHER_SHARE_MEDIAN, 0.8, m) * size
        new = np.full(m, k == 0) & pooled_new[a]
        # a full buffer pauses downloads; after an idle longer than the RTO the window restarts
        # from the initial window (slow-start restart, RFC 5681 §4.1)
        room_at = play[a, k - buffer_chunks] + chunk_ms if k >= buffer_chunks else np.zeros(m)
        idle = (room_at - done_prev[a]) > np.maximum(200.0, 3.0 * net["rtt_ms"])
        cold = new | idle
        outage = np.where(
            rng.random(m) < -np.expm1(-OUTAGES_PER_S[pop.net[sess.client[s]]] * cfg.chunk_seconds),
            lognormal(rng, OUTAGE_MEDIAN_MS, OUTAGE_SIGMA, m),
            0.0,
        )
        if cfg.two_paths:
            typical = {key: v[sess.client[s]] for key, v in pop.typical.items()}
            tr = multipath_transfer(rng, size, net, tp, ~cold, buffered, typical, interleaved_bytes=audio + other)
        else:
            tr = transfer(rng, size, net, tp, warm=~cold, interleaved_bytes=audio + other)
        dl = tr["time_ms"] + outage + (hs_pb[a] if k == 0 else 0.0)
        if k == 0:
            done = dl
            play[a, 0] = done
            first_frame[a] = done
        else:
            done = np.maximum(done_prev[a], room_at) + dl
            due = play[a, k - 1] + chunk_ms
            stall = np.maximum(0.0, done - due)
            play[a, k] = np.maximum(due, done)
            stall_ms[a] += stall
            stalls[a] += stall > 0.5
        done_prev[a] = done
        est[a] = 0.6 * est[a] + 0.4 * size * 8.0 / np.maximum(tr["time_ms"], 1.0)
        media_bytes[a] += size
        dl_time[a] += tr["time_ms"]
        bitrate_sum[a] += rate
        chunks.append((a, np.full(m, k), size, tr, new, done))

    pb = np.concatenate([c[0] for c in chunks])
    k_of = np.concatenate([c[1] for c in chunks])
    size = np.concatenate([c[2] for c in chunks])
    tr = {key: np.concatenate([c[3][key] for c in chunks]) for key in chunks[0][3]}
    new = np.concatenate([c[4] for c in chunks])
    done_at = np.concatenate([c[5] for c in chunks])

    duration = first_frame + watch_ms + stall_ms
    gap = rng.exponential(20_000.0, npb)
    start = sess.start_ms[s_pb] + (group_cumsum(duration + gap, gp) - duration - gap).astype(np.int64)
    conn_pb = connection_u64(sess.session_u64[s_pb], np.where(tp_pb.pooling, 0, pb_pos), "video")
    playbacks = EventBatch(
        "video_playbacks",
        s_pb,
        start + duration.astype(np.int64),
        {
            "connection_id": conn_pb,
            "time_to_first_frame_ms": first_frame + DECODE_MS,
            "watch_time_ms": watch_ms,
            "rebuffer_count": stalls,
            "rebuffer_time_ms": stall_ms,
            "mean_bandwidth_kbps": media_bytes * 8.0 / np.maximum(dl_time, 1e-3),
            "bitrate_kbps": bitrate_sum / nchunks,
            "chunks": nchunks,
            "media_bytes": media_bytes.astype(np.int64),
        },
    )
    hs = np.where(new, hs_pb[pb], 0.0)
    end = start[pb] + done_at.astype(np.int64)
    out = {"video_playbacks": playbacks}
    if cfg.connection_per_chunk:  # one request-level record per chunk (close delay = completion)
        conn = connection_u64(sess.session_u64[s_pb[pb]], (pb_pos[pb] << 16) + k_of, "video-chunk")
    else:
        conn = conn_pb[pb]
    tpc = tp_pb.take(pb)
    out["connections"] = aggregate_connections(
        conn, s_pb[pb], end, tr, tr["time_ms"] + hs, size, np.full(len(pb), 400.0), hs, zr_pb[pb] & new, tpc, tpc.multipath
    )
    if cfg.two_paths and cfg.connection_per_chunk:
        out["multipath_paths"] = path_events(conn, s_pb[pb], end, tr, pop.net[sess.client[s_pb[pb]]], tpc.multipath > 0)
    return out


def path_events(
    conn: np.ndarray, session: np.ndarray, end_ms: np.ndarray, tr: dict[str, np.ndarray], net1: np.ndarray, mp: np.ndarray
) -> EventBatch:
    """``multipath_paths`` rows per chunk download: the primary path always (a single-path client
    reports its one path, with nothing re-injected), the secondary path where multipath is on."""
    first = np.arange(len(mp))
    second = np.flatnonzero(mp)
    both = np.concatenate([first, second])
    path = np.repeat([0, 1], [len(first), len(second)])
    other_net = np.where(net1[second] == NETWORK_TYPES.index("cellular"), NETWORK_TYPES.index("wifi"), NETWORK_TYPES.index("cellular"))

    def pick(key: str) -> np.ndarray:
        return np.concatenate([tr["p1_" + key][first], tr["p2_" + key][second]])

    return EventBatch(
        "multipath_paths",
        session[both],
        end_ms[both],
        {
            "connection_id": conn[both],
            "path_id": path.astype(np.int64),
            "path_network_type": np.concatenate([net1[first], other_net]).astype(np.int8),
            "srtt_ms": pick("srtt_ms"),
            "bytes": pick("bytes").astype(np.int64),
            "reinjected_bytes": pick("reinjected").astype(np.int64),
            "packets_lost": pick("lost").astype(np.int64),
        },
    )
