"""Run a lab: real HTTP/3 client and server processes through the impairment relay, into the landing zone.

For every network condition of the grid, ``clients_per_condition`` clients get stable ids
(``simulation.hashing``) and arms (``simulation.assignment.assign``, the project's own
randomisation). Per (condition, arm) one server process of the arm's stack and congestion
control listens on 127.0.0.1 behind one :class:`lab.relay.Relay`; the arm's clients run one
after the other (one client process per connection), each with its own qlog folder.

Written for upload day ``D`` under ``<landing>/upload_date=D/`` (a rerun replaces its own files):

* ``qlog/lab/<run>/client/*`` and ``qlog/lab/<run>/server/*`` (gzip) and the sidecar
  ``qlog/lab/<run>/_connections.jsonl`` (one line per connection: ODCID, client, experiments,
  ``opened_at``, and the lab's ``condition``);
* ``connections/lab-<run>.jsonl.gz`` and ``http_transactions/lab-<run>.jsonl.gz``: the matching
  telemetry events, computed from the client's and the server's traces;
* ``lab/<run>/relay.jsonl``: the relay's counters per condition, arm and direction;
  ``lab/<run>/manifest.json``: the config, the conditions and every client's arm.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np

from jobs.ingest.landing import day_dir
from jobs.qlog.parse import QlogError, decode, load_traces, parse_path
from lab.config import Arm, Condition, LabConfig
from lab.relay import Link, Relay
from quicexp.config import ConfigError, Settings
from simulation.assignment import assign
from simulation.hashing import hash2, hex_ids, str_key

HOST = "127.0.0.1"
NGTCP2 = {"client": "gtlsclient", "server": "gtlsserver"}


class LabError(ConfigError):
    """The lab cannot run as configured (missing stack, past day …): one line."""


@dataclass
class Connection:
    condition: str
    arm: str
    client_id: str
    ok: bool
    odcid: str | None = None
    seconds: float = 0.0
    error: str | None = None


@dataclass
class LabSummary:
    day: date
    run_id: str
    connections: list[Connection] = field(default_factory=list)
    relay: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return sum(not c.ok for c in self.connections)


def _stderr_progress(message: str) -> None:
    print(f"lab: {message}", file=sys.stderr, flush=True)


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _certificate(folder: Path) -> tuple[Path, Path]:
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def check_stacks(config: LabConfig) -> None:
    """One-line error when an arm's stack is not installed (before anything runs)."""
    if any(a.stack == "ngtcp2" for a in config.arms):
        missing = [b for b in NGTCP2.values() if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
        if missing:
            raise LabError(f"ngtcp2 arms need {', '.join(missing)} (Debian packages ngtcp2-client/ngtcp2-server; "
                           f"scripts/test-deps.d/ngtcp2.sh installs them)")


def _env() -> dict[str, str]:
    """The peers' environment: this checkout on the path, so ``python -m lab.aioquic_peer`` imports."""
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _server_cmd(arm: Arm, port: int, qlog_dir: Path, cert: Path, key: Path, htdocs: Path) -> list[str]:
    if arm.stack == "ngtcp2":
        return [_binary(NGTCP2["server"]), "-q", "--no-quic-dump", "--no-http-dump", f"--qlog-dir={qlog_dir}",
                f"--cc={arm.congestion_control}", f"--htdocs={htdocs}", HOST, str(port), str(key), str(cert)]
    return [sys.executable, "-m", "lab.aioquic_peer", "server", "--port", str(port), "--qlog-dir", str(qlog_dir),
            "--cc", arm.congestion_control, "--cert", str(cert), "--key", str(key)]


def _client_cmd(arm: Arm, port: int, qlog_dir: Path, config: LabConfig, dcid: str) -> list[str]:
    if arm.stack == "ngtcp2":
        url = f"https://localhost:{port}/{config.transfer_bytes}"
        return [_binary(NGTCP2["client"]), "-q", "--no-quic-dump", "--no-http-dump", f"--qlog-dir={qlog_dir}",
                f"--cc={arm.congestion_control}", f"--dcid={dcid}", "--exit-on-all-streams-close",
                f"--timeout={int(config.timeout_s)}s", "-n", str(config.requests), HOST, str(port), url]
    return [sys.executable, "-m", "lab.aioquic_peer", "client", "--port", str(port), "--qlog-dir", str(qlog_dir),
            "--cc", arm.congestion_control, "--size", str(config.transfer_bytes), "--requests", str(config.requests),
            "--timeout", str(config.timeout_s)]


def _clients(config: LabConfig, condition_index: int) -> tuple[list[str], np.ndarray]:
    """Stable client ids of one condition and their arm indexes (the project's hashing)."""
    n = config.clients_per_condition
    u64 = hash2(np.arange(condition_index * n, (condition_index + 1) * n, dtype=np.uint64),
                str_key("quicexp-lab", config.experiment_id, config.seed))
    arms = assign(u64, config.experiment_id, [a.weight for a in config.arms], salt=config.salt)
    return [str(x) for x in hex_ids(u64).to_pylist()], arms


def _trace(path: Path) -> dict | None:
    try:
        _, traces = load_traces(decode(path.read_bytes()))
    except (OSError, QlogError):
        return None
    return traces[0] if traces and isinstance(traces[0], dict) else None


def _stream_times(trace: dict) -> dict[int, dict[str, float]]:
    """Per request stream: first sent / first received / last received stream-frame times (ms)."""
    out: dict[int, dict[str, float]] = {}
    delta = (trace.get("common_fields") or {}).get("time_format") == "delta"
    clock = 0.0
    for event in trace.get("events") or []:
        at = event.get("time")
        if not isinstance(at, (int, float)):
            continue
        clock = clock + at if delta else at
        name = event.get("name", "")
        way = "sent" if name.endswith("packet_sent") else "received" if name.endswith("packet_received") else None
        if way is None:
            continue
        for frame in (event.get("data") or {}).get("frames") or []:
            if frame.get("frame_type") == "stream" and isinstance(frame.get("stream_id"), int) and frame["stream_id"] % 4 == 0:
                s = out.setdefault(frame["stream_id"], {})
                s.setdefault(f"first_{way}", clock)
                s[f"last_{way}"] = clock
    return out


def _ts(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _events(config: LabConfig, arm: Arm, client_id: str, odcid: str, opened: datetime, uploaded: datetime,
            client_trace: dict, client_row: dict, server_row: dict | None, version: str) -> tuple[dict, list[dict]]:
    """The connection event and the request events of one lab connection (telemetry schema v1)."""
    def common(kind_type: str, key: str) -> dict:
        return {
            "event_id": hashlib.blake2b(f"{config.experiment_id}/{config.seed}/{odcid}/{key}".encode(),
                                        digest_size=16).hexdigest(),
            "event_type": kind_type, "schema_version": 1, "client_id": client_id, "session_id": f"lab-{odcid[:16]}",
            "event_time": _ts(opened), "upload_time": _ts(uploaded), "platform": config.platform,
            "network_type": config.network_type, "app": "lab", "app_version": f"{arm.stack}-{version}",
            "experiments": {config.experiment_id: arm.name},
        }

    sender = server_row or {}
    duration = max(client_row.get("duration_ms") or 0.0, 1e-3)
    connection = {
        **common("connection", "connection"),
        "connection_id": odcid, "srtt_ms": client_row["srtt_ms"], "min_rtt_ms": client_row["min_rtt_ms"],
        "packets_sent": sender.get("packets_sent", 0), "packets_lost": sender.get("packets_lost", 0),
        "packets_retransmitted": sender.get("packets_lost", 0), "is_zero_rtt": False,
        "congestion_control": arm.congestion_control, "initial_window_packets": 10, "pacing": True,
        "close_delay_ms": 0.0, "handshake_ms": client_row.get("handshake_ms") or 0.0,
        "bytes_sent": client_row["bytes_sent"], "bytes_received": client_row["bytes_received"],
        "cwnd_bytes": sender.get("cwnd_bytes") or 0,
        "delivery_rate_kbps": client_row["bytes_received"] * 8 / duration,
        "path_count": 1, "scheduler": "single",
    }
    requests = []
    streams = sorted(_stream_times(client_trace).items())
    for i, (stream_id, t) in enumerate(streams):
        if "first_sent" not in t or "last_received" not in t:
            continue
        requests.append({
            **common("http_transaction", f"stream-{stream_id}"),
            "connection_id": odcid, "stream_id": stream_id, "request_bytes": 0,
            "response_bytes": config.transfer_bytes,
            "latency_ms": float(t["last_received"] - t["first_sent"]),
            "ttfb_ms": float(t["first_received"] - t["first_sent"]), "hol_blocked_ms": 0.0,
            "packets_lost": sender.get("packets_lost", 0) if i == len(streams) - 1 else 0,
            "new_connection": i == 0, "protocol": "h3", "status_code": 200,
        })
    return connection, requests


def _stack_version(stack: str) -> str:
    if stack == "aioquic":
        from importlib.metadata import version

        return version("aioquic")
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "ngtcp2-client"], capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


async def _wait_listening(proc: asyncio.subprocess.Process, arm: Arm) -> None:
    if arm.stack == "aioquic":
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        if line.strip() != b"ready":
            raise LabError(f"aioquic server did not start: {line!r}")
    else:
        await asyncio.sleep(0.3)
        if proc.returncode is not None:
            raise LabError(f"{NGTCP2['server']} exited at start with code {proc.returncode}")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _run_arm(config: LabConfig, condition: Condition, arm: Arm, clients: list[str], work: Path,
                   cert: Path, key: Path, progress: Callable[[str], None], out: dict) -> None:
    server_q = work / "server"
    server_q.mkdir(parents=True)
    htdocs = work / "htdocs"
    htdocs.mkdir()
    port = _free_udp_port()
    server = await asyncio.create_subprocess_exec(
        *_server_cmd(arm, port, server_q, cert, key, htdocs), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, start_new_session=True, env=_env())
    relay = None
    try:
        await _wait_listening(server, arm)
        half = condition.rtt_ms / 2.0
        queue = int(max(condition.bandwidth_mbps or 0, 1) * 1e6 / 8 * config.queue_ms / 1000)
        link = Link(delay_ms=half, loss=condition.loss, burst=condition.burst,
                    bandwidth_mbps=condition.bandwidth_mbps, queue_bytes=max(queue, 3000))
        seed = int(str_key(config.experiment_id, config.seed, condition.name, arm.name) % np.uint64(2**31))
        relay = await Relay(port, link, link, seed=seed).start()
        for i, client_id in enumerate(clients):
            client_q = work / "client" / client_id
            client_q.mkdir(parents=True)
            dcid = hashlib.blake2b(f"{config.seed}/{condition.name}/{client_id}".encode(), digest_size=16).hexdigest()
            opened = datetime.now(UTC)
            started = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                *_client_cmd(arm, relay.port, client_q, config, dcid), stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, env=_env())
            try:
                _, stderr = await asyncio.wait_for(proc.communicate(), config.timeout_s + 10)
            except TimeoutError:
                proc.kill()
                _, stderr = await proc.communicate()
            seconds = time.monotonic() - started
            files = sorted(p for p in client_q.iterdir() if p.is_file())
            rows = parse_path(str(files[0])) if files else []
            row = rows[0] if rows and rows[0].get("reason") is None else None
            ok = proc.returncode == 0 and row is not None
            conn = Connection(condition.name, arm.name, client_id, ok, row["odcid"] if row else None, seconds,
                              None if ok else (stderr.decode(errors="replace").strip().splitlines() or
                                               [f"exit {proc.returncode}"])[-1][:200])
            out["connections"].append((conn, opened, files[0] if files else None, row, arm))
            progress(f"{condition.name} arm {arm.name}: client {i + 1}/{len(clients)} "
                     f"{'ok' if ok else 'FAILED'} in {seconds:.2f}s")
        # each server writes a connection's trace when it drops the connection (aioquic after its
        # draining period): wait for one per connection that reached it, at most 5 s
        expected = sum(1 for c in out["connections"] if c[0].ok and c[4] is arm and c[0].condition == condition.name)
        deadline = time.monotonic() + 5.0
        while sum(1 for p in server_q.iterdir() if p.is_file()) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)  # the last file's final write
    finally:
        if relay is not None:
            for direction, counters in relay.counters().items():
                out["relay"].append({"condition": condition.name, "arm": arm.name, "direction": direction,
                                     **condition.model_dump(), **counters})
            relay.close()
        await _stop(server)
    out["server_dirs"].append((arm, server_q))


async def _run(config: LabConfig, work: Path, progress: Callable[[str], None]) -> dict:
    cert, key = _certificate(work)
    out: dict = {"connections": [], "relay": [], "server_dirs": [], "assignments": []}
    conditions = config.conditions
    for ci, condition in enumerate(conditions):
        ids, arms = _clients(config, ci)
        progress(f"condition {ci + 1}/{len(conditions)} {condition.name}: {len(ids)} clients")
        for ai, arm in enumerate(config.arms):
            mine = [c for c, a in zip(ids, arms, strict=True) if a == ai]
            out["assignments"] += [{"client_id": c, "arm": arm.name, "condition": condition.name} for c in mine]
            if mine:
                await _run_arm(config, condition, arm, mine, work / f"c{ci}" / arm.name, cert, key, progress, out)
    return out


def run(settings: Settings, config: LabConfig, day: date | None = None, *,
        progress: Callable[[str], None] | None = _stderr_progress) -> LabSummary:
    """Run every (condition, arm) of ``config`` and write the day's landing files; see the module docstring.

    ``day`` defaults to today (UTC) and must be within ``[today, today + lookback]``: the traces
    carry the real time they were taken, and the ingest quarantines traces dated after their
    upload day.
    """
    started = time.monotonic()
    today = datetime.now(UTC).date()
    day = day or today
    if not today <= day <= today + timedelta(days=settings.ingest.lookback_days):
        raise LabError(f"lab day {day} must be between today ({today}) and today + "
                       f"{settings.ingest.lookback_days} days: the traces carry the real time")
    check_stacks(config)
    progress = progress or (lambda _m: None)
    run_id = f"{config.experiment_id}-s{config.seed}"
    versions = {stack: _stack_version(stack) for stack in {a.stack for a in config.arms}}
    with tempfile.TemporaryDirectory(prefix="quicexp-lab-") as tmp:
        out = asyncio.run(_run(config, Path(tmp), progress))
        summary = LabSummary(day=day, run_id=run_id, relay=out["relay"])
        _write_landing(settings, config, day, run_id, out, versions, summary)
    summary.seconds = time.monotonic() - started
    progress(f"done: {len(summary.connections)} connections ({summary.failed} failed) in {summary.seconds:.1f}s")
    return summary


def _write_landing(settings: Settings, config: LabConfig, day: date, run_id: str, out: dict,
                   versions: dict[str, str], summary: LabSummary) -> None:
    root = day_dir(settings.landing_root, day)
    qdir = root / "qlog" / "lab" / run_id
    labdir = root / "lab" / run_id
    for folder in (qdir, labdir):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    (qdir / "client").mkdir()
    (qdir / "server").mkdir()
    server_rows: dict[str, tuple[Path, dict]] = {}
    for arm, folder in out["server_dirs"]:
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            rows = parse_path(str(path))
            if rows and rows[0].get("reason") is None:
                server_rows[rows[0]["odcid"]] = (path, rows[0])
            _copy_gz(path, qdir / "server" / f"{arm.name}-{path.name}")
    uploaded = datetime.now(UTC)
    sidecar, connections, requests = [], [], []
    for conn, opened, client_file, row, arm in out["connections"]:
        summary.connections.append(conn)
        if client_file is None:
            continue
        _copy_gz(client_file, qdir / "client" / f"{arm.name}-{client_file.name}")
        if row is None:
            continue
        sidecar.append(json.dumps({
            "odcid": row["odcid"], "client_id": conn.client_id, "session_id": f"lab-{row['odcid'][:16]}",
            "platform": config.platform, "network_type": config.network_type,
            "experiments": {config.experiment_id: conn.arm}, "opened_at": _ts(opened), "condition": conn.condition}))
        trace = _trace(client_file)
        if not conn.ok or trace is None or row.get("srtt_ms") is None or row.get("min_rtt_ms") is None:
            continue
        server = server_rows.get(row["odcid"], (None, None))[1]
        event, reqs = _events(config, arm, conn.client_id, row["odcid"], opened, uploaded, trace, row, server,
                              versions[arm.stack])
        connections.append(json.dumps(event))
        requests += [json.dumps(r) for r in reqs]
    (qdir / "_connections.jsonl").write_text("".join(line + "\n" for line in sidecar))
    for kind, lines in (("connections", connections), ("http_transactions", requests)):
        (root / kind).mkdir(parents=True, exist_ok=True)
        target = root / kind / f"lab-{run_id}.jsonl.gz"
        target.unlink(missing_ok=True)
        if lines:
            target.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode()))
    (labdir / "relay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out["relay"]))
    (labdir / "manifest.json").write_text(json.dumps({
        "run_id": run_id, "day": day.isoformat(), "config": config.model_dump(mode="json"),
        "conditions": [c.model_dump() | {"name": c.name} for c in config.conditions],
        "stack_versions": versions, "assignments": out["assignments"],
        "connections": [{"condition": c.condition, "arm": c.arm, "client_id": c.client_id, "odcid": c.odcid,
                         "ok": c.ok, "seconds": round(c.seconds, 3), "error": c.error}
                        for c in summary.connections],
    }, indent=1))


def _copy_gz(source: Path, target: Path) -> None:
    name = target.name if target.name.endswith(".gz") else target.name + ".gz"
    with open(source, "rb") as fh:
        data = fh.read()
    (target.parent / name).write_bytes(gzip.compress(data))
    os.utime(target.parent / name, (source.stat().st_atime, source.stat().st_mtime))
