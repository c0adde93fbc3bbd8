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
"""

from __future__ import annotations

import numpy as np

from simulation.apps.common import EventBatch, connection_u64, group_cumsum, heavy_count, lognormal, ragged_index
from simulation.apps.connections import aggregate_connections
from simulation.population import Population
from simulation.scenario import VideoWorkload
from simulation.sessions import Sessions
from simulation.transport import TransportArrays, flow_share, handshake_ms, transfer

LADDER_KBPS = np.array([300.0, 750.0, 1200.0, 2500.0, 4500.0, 8000.0])
AUDIO_KBPS = 128.0
BUFFER_S = 30.0
WATCH_MEDIAN_S = 150.0
DECODE_MS = 80.0
OTHER_BYTES_MEDIAN = 40_000.0


def choose_bitrate(estimate_kbps: np.ndarray) -> np.ndarray:
    """Highest ladder rung not above 75% of the estimate (lowest rung at least)."""
    idx = np.searchsorted(LADDER_KBPS, 0.75 * estimate_kbps, side="right") - 1
    return LADDER_KBPS[np.clip(idx, 0, len(LADDER_KBPS) - 1)]


def play_out(download_ms: np.ndarray, valid: np.ndarray, chunk_ms: float, buffer_chunks: int) -> dict[str, np.ndarray]:
    """Buffer dynamics of playbacks (rows) over chunk downloads (columns); see the module doc."""
    p, kmax = download_ms.shape
    play = np.zeros((p, kmax))
    done_prev = download_ms[:, 0].copy()
    play[:, 0] = done_prev
    stall_time = np.zeros(p)
    stalls = np.zeros(p, dtype=np.int64)
    for k in range(1, kmax):
        room = play[:, k - buffer_chunks] + chunk_ms if k >= buffer_chunks else 0.0
        start = np.maximum(done_prev, room)
        done = start + download_ms[:, k]
        due = play[:, k - 1] + chunk_ms
        stall = np.where(valid[:, k], np.maximum(0.0, done - due), 0.0)
        play[:, k] = np.where(valid[:, k], np.maximum(due, done), play[:, k - 1])
        done_prev = np.where(valid[:, k], done, done_prev)
        stall_time += stall
        stalls += stall > 0.5
    return {"first_frame_ms": download_ms[:, 0], "stall_ms": stall_time, "stalls": stalls}


def video_events(
    rng: np.random.Generator,
    sess: Sessions,
    sidx: np.ndarray,
    pop: Population,
    tp_client: TransportArrays,
    cfg: VideoWorkload,
) -> dict[str, EventBatch]:
    """Playbacks of the video sessions ``sidx`` and their connections."""
    chunk_s = cfg.chunk_seconds
    count = heavy_count(rng, cfg.playbacks_per_session, len(sidx))
    gp, pb_pos = ragged_index(count)
    s_pb = sidx[gp]
    npb = len(s_pb)
    client_pb = sess.client[s_pb]
    tp_pb = tp_client.take(client_pb)
    watch_s = np.clip(lognormal(rng, WATCH_MEDIAN_S, 1.0, npb), chunk_s, cfg.max_chunks * chunk_s)
    nchunks = np.ceil(watch_s / chunk_s).astype(np.int64)
    share = flow_share(sess.net["bw_kbps"][s_pb], tp_pb.nconn, sess.net["cross"][s_pb])
    bitrate = choose_bitrate(share * np.exp(0.25 * rng.standard_normal(npb)))

    # one row per chunk
    pb, k = ragged_index(nchunks)
    s = s_pb[pb]
    m = len(pb)
    tp = tp_pb.take(pb)
    net = {key: v[s] for key, v in sess.net.items()}
    net["bw_kbps"] = net["bw_kbps"] * np.exp(0.35 * rng.standard_normal(m))
    net["loss"] = np.minimum(net["loss"] * np.exp(0.5 * rng.standard_normal(m)), 0.2)
    size = (bitrate[pb] * chunk_s * 125.0 * np.exp(0.15 * rng.standard_normal(m))).round()
    audio = AUDIO_KBPS * chunk_s * 125.0
    other = rng.poisson(0.5, m) * lognormal(rng, OTHER_BYTES_MEDIAN, 1.0, m)
    cross = np.where(tp.single_stream, audio + other, 0.0)
    conn_no = np.where(tp.pooling, 0, pb_pos[pb])
    conn = connection_u64(sess.session_u64[s], conn_no, "video")
    new = (k == 0) & ((pb_pos[pb] == 0) | ~tp.pooling)
    tr = transfer(rng, size, net, tp, warm=~new, cross_bytes=cross)
    hs, zr = handshake_ms(rng, net["rtt_ms"], tp.zero_rtt, pop.zero_rtt_p[sess.client[s]])
    hs = np.where(new, hs, 0.0)
    zr = zr & new

    kmax = int(nchunks.max()) if npb else 1
    dl = np.zeros((npb, kmax))
    dl[pb, k] = tr["time_ms"] + hs
    valid = np.zeros((npb, kmax), dtype=bool)
    valid[pb, k] = True
    out = play_out(dl, valid, chunk_s * 1000.0, max(1, int(BUFFER_S / chunk_s)))
    media_bytes = np.bincount(pb, weights=size, minlength=npb)
    dl_time = np.bincount(pb, weights=tr["time_ms"], minlength=npb)

    duration = out["first_frame_ms"] + watch_s * 1000.0 + out["stall_ms"]
    gap = rng.exponential(20_000.0, npb)
    start = sess.start_ms[s_pb] + (group_cumsum(duration + gap, gp) - duration - gap).astype(np.int64)
    end = start + duration.astype(np.int64)
    playbacks = EventBatch(
        "video_playbacks",
        s_pb,
        end,
        {
            "connection_id": connection_u64(sess.session_u64[s_pb], np.where(tp_pb.pooling, 0, pb_pos), "video"),
            "time_to_first_frame_ms": out["first_frame_ms"] + DECODE_MS,
            "watch_time_ms": watch_s * 1000.0,
            "rebuffer_count": out["stalls"],
            "rebuffer_time_ms": out["stall_ms"],
            "mean_bandwidth_kbps": media_bytes * 8.0 / np.maximum(dl_time, 1e-3),
            "bitrate_kbps": bitrate,
            "chunks": nchunks,
            "media_bytes": media_bytes.astype(np.int64),
        },
    )
    chunk_end = start[pb] + (k * chunk_s * 1000.0).astype(np.int64) + tr["time_ms"].astype(np.int64)
    req = np.full(m, 400.0)
    conns = aggregate_connections(conn, s, chunk_end, tr, tr["time_ms"] + hs, size, req, hs, zr, tp)
    return {"video_playbacks": playbacks, "connections": conns}
