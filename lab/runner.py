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
from lab import host
from lab.config import Arm, Condition, LabConfig
from lab.relay import Link, Relay
from quicexp.config import ConfigError, Settings
from simulation.assignment import assign
from simulation.hashing import hash2, hex_ids, str_key

HOST = "127.0.0.1"
NGTCP2 = {"client": "gtlsclient", "server": "gtlsserver"}


class LabError(ConfigError):
    """The lab cannot run as configured (missing stack, past day …): one line."""


#: a run with host drops is invalid: the reason written to its summary, manifest and sidecar line
HOST_DROPS = "host_drops"


@dataclass
class Connection:
    """One client's run (one connection); a client whose run is invalid runs again (``attempt``)."""

    condition: str
    arm: str
    client_id: str
    ok: bool
    odcid: str | None = None
    seconds: float = 0.0
    error: str | None = None
    attempt: int = 1
    #: what the host dropped while it ran (lab.host.HostDrops.as_dict()): total, rcvbuf_errors, …
    host_drops: dict = field(default_factory=dict)
    #: the relay's counters over the run, per direction: received, dropped, …
    relay: dict = field(default_factory=dict)
    #: why the run cannot be used (``HOST_DROPS``), None for a clean run
    invalid: str | None = None

    @property
    def valid(self) -> bool:
        return self.ok and self.invalid is None


@dataclass
class LabSummary:
    """Every run of a lab (``connections``: invalid runs and their retries included)."""

    day: date
    run_id: str
    experiment_id: str = ""
    connections: list[Connection] = field(default_factory=list)
    relay: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        """Runs whose client process failed (no transfer)."""
        return sum(not c.ok for c in self.connections)

    @property
    def invalid_runs(self) -> int:
        """Runs marked invalid (the host dropped datagrams), each excluded from results."""
        return sum(c.ok and c.invalid is not None for c in self.connections)

    @property
    def clients(self) -> int:
        return len({(c.condition, c.client_id) for c in self.connections})

    @property
    def clients_without_clean_run(self) -> list[tuple[str, str]]:
        """(condition, client) whose every run failed or was invalid: not in the results."""
        good = {(c.condition, c.client_id) for c in self.connections if c.valid}
        return sorted({(c.condition, c.client_id) for c in self.connections} - good)

    def invalid_by_arm(self) -> dict[str, tuple[int, int]]:
        """arm -> (invalid runs, runs)."""
        out: dict[str, tuple[int, int]] = {}
        for c in self.connections:
            bad, total = out.get(c.arm, (0, 0))
            out[c.arm] = (bad + (c.ok and c.invalid is not None), total + 1)
        return out


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


def _server_cmd(arm: Arm, port: int, qlog_dir: Path, cert: Path, key: Path, htdocs: Path,
                socket_buffer: int) -> list[str]:
    if arm.stack == "ngtcp2":
        return [_binary(NGTCP2["server"]), "-q", "--no-quic-dump", "--no-http-dump", f"--qlog-dir={qlog_dir}",
                f"--cc={arm.congestion_control}", f"--htdocs={htdocs}", HOST, str(port), str(key), str(cert)]
    return [sys.executable, "-m", "lab.aioquic_peer", "server", "--port", str(port), "--qlog-dir", str(qlog_dir),
            "--cc", arm.congestion_control, "--cert", str(cert), "--key", str(key),
            "--socket-buffer", str(socket_buffer)]


def _client_cmd(arm: Arm, port: int, qlog_dir: Path, config: LabConfig, dcid: str) -> list[str]:
    if arm.stack == "ngtcp2":
        url = f"https://localhost:{port}/{config.transfer_bytes}"
        return [_binary(NGTCP2["client"]), "-q", "--no-quic-dump", "--no-http-dump", f"--qlog-dir={qlog_dir}",
                f"--cc={arm.congestion_control}", f"--dcid={dcid}", "--exit-on-all-streams-close",
                f"--timeout={int(config.timeout_s)}s", "-n", str(config.requests), HOST, str(port), url]
    return [sys.executable, "-m", "lab.aioquic_peer", "client", "--port", str(port), "--qlog-dir", str(qlog_dir),
            "--cc", arm.congestion_control, "--size", str(config.transfer_bytes), "--requests", str(config.requests),
            "--timeout", str(config.timeout_s), "--socket-buffer", str(config.socket_buffer_bytes)]


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


def _outcome(conn: Connection) -> str:
    if not conn.ok:
        return "FAILED"
    if conn.invalid == HOST_DROPS:
        h = conn.host_drops
        return (f"INVALID (the host dropped {h['total']} UDP datagrams, {h['rcvbuf_errors']} for full receive "
                f"buffers, while the relay dropped {conn.relay['server_to_client']['dropped']} server packets)")
    return "ok"


def _relay_delta(before: dict, after: dict) -> dict:
    return {way: {k: after[way][k] - before[way][k] for k in ("received", "forwarded", "dropped")}
            for way in after}


async def _enlarge_client(proc: asyncio.subprocess.Process, arm: Arm, size: int, out: dict) -> None:
    """ngtcp2's client has no socket-buffer option: enlarge its socket's buffers from here as soon
    as it has one (lab.host.enlarge_child_buffers), before the body's first round trip."""
    if arm.stack != "ngtcp2" or size <= 0:
        return
    counts = out["buffers"]
    deadline = time.monotonic() + 2.0
    while proc.returncode is None and time.monotonic() < deadline:
        if host.enlarge_child_buffers(proc.pid, size):
            counts["ngtcp2_clients_enlarged"] = counts.get("ngtcp2_clients_enlarged", 0) + 1
            return
        await asyncio.sleep(0.002)
    counts["ngtcp2_clients_not_enlarged"] = counts.get("ngtcp2_clients_not_enlarged", 0) + 1


async def _run_client(config: LabConfig, condition: Condition, arm: Arm, client_id: str, attempt: int,
                      relay: Relay, server_port: int, client_q: Path, out: dict) -> Connection:
    """One client's run through ``relay``, with the host's UDP counters read before and after it."""
    client_q.mkdir(parents=True)
    dcid = hashlib.blake2b(f"{config.seed}/{condition.name}/{client_id}/{attempt}".encode(),
                           digest_size=16).hexdigest()
    opened = datetime.now(UTC)
    relay_before = relay.counters()
    host_before = host.read_counters([*relay.ports(), server_port])
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *_client_cmd(arm, relay.port, client_q, config, dcid), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True, env=_env())
    buffers = asyncio.ensure_future(_enlarge_client(proc, arm, config.socket_buffer_bytes, out))
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), config.timeout_s + 10)
    except TimeoutError:
        proc.kill()
        _, stderr = await proc.communicate()
    finally:
        buffers.cancel()
    seconds = time.monotonic() - started
    host_after = host.read_counters([*relay.ports(), server_port])
    relay_after = relay.counters()
    drops = host.drops_between(host_before, host_after,
                               {"relay": set(relay.ports()), "server": [server_port]})
    files = sorted(p for p in client_q.iterdir() if p.is_file())
    rows = parse_path(str(files[0])) if files else []
    row = rows[0] if rows and rows[0].get("reason") is None else None
    ok = proc.returncode == 0 and row is not None
    conn = Connection(condition.name, arm.name, client_id, ok, row["odcid"] if row else None, seconds,
                      None if ok else (stderr.decode(errors="replace").strip().splitlines() or
                                       [f"exit {proc.returncode}"])[-1][:200],
                      attempt=attempt, host_drops=drops.as_dict(), relay=_relay_delta(relay_before, relay_after),
                      invalid=HOST_DROPS if drops.total else None)
    out["connections"].append((conn, opened, files[0] if files else None, row, arm))
    return conn


async def _run_arm(config: LabConfig, condition: Condition, arm: Arm, clients: list[str], work: Path,
                   cert: Path, key: Path, progress: Callable[[str], None], out: dict) -> None:
    server_q = work / "server"
    server_q.mkdir(parents=True)
    htdocs = work / "htdocs"
    htdocs.mkdir()
    port = _free_udp_port()
    server = await asyncio.create_subprocess_exec(
        *_server_cmd(arm, port, server_q, cert, key, htdocs, config.socket_buffer_bytes), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, start_new_session=True, env=_env())
    relay = None
    try:
        await _wait_listening(server, arm)
        if arm.stack == "ngtcp2":  # aioquic's peers enlarge their own (lab.aioquic_peer)
            enlarged = host.enlarge_child_buffers(server.pid, config.socket_buffer_bytes)
            counts = out["buffers"]
            counts["ngtcp2_server_sockets_enlarged"] = counts.get("ngtcp2_server_sockets_enlarged", 0) + enlarged
        half = condition.rtt_ms / 2.0
        queue = int(max(condition.bandwidth_mbps or 0, 1) * 1e6 / 8 * config.queue_ms / 1000)
        link = Link(delay_ms=half, loss=condition.loss, burst=condition.burst,
                    bandwidth_mbps=condition.bandwidth_mbps, queue_bytes=max(queue, 3000))
        seed = int(str_key(config.experiment_id, config.seed, condition.name, arm.name) % np.uint64(2**31))
        relay = await Relay(port, link, link, seed=seed, buffer_bytes=config.socket_buffer_bytes).start()
        out["buffers"].setdefault("relay_receive_buffer", relay.receive_buffer)
        for i, client_id in enumerate(clients):
            for attempt in range(1, config.attempts + 1):
                conn = await _run_client(config, condition, arm, client_id, attempt, relay, port,
                                         work / "client" / f"{client_id}-{attempt}", out)
                retry = conn.invalid is not None and attempt < config.attempts
                progress(f"{condition.name} arm {arm.name}: client {i + 1}/{len(clients)} "
                         f"{_outcome(conn)} in {conn.seconds:.2f}s" + (", running it again" if retry else ""))
                if not retry:
                    break
        # ngtcp2's server writes a trace as its connection goes (JSON-SEQ): wait for one per
        # connection that reached it, at most 5 s. aioquic's writes a trace when the connection
        # ends, and at its stop those of the connections that have not (lab.aioquic_peer).
        expected = sum(1 for c in out["connections"] if c[0].ok and c[4] is arm and c[0].condition == condition.name)
        deadline = time.monotonic() + (5.0 if arm.stack == "ngtcp2" else 0.0)
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
    out: dict = {"connections": [], "relay": [], "server_dirs": [], "assignments": [],
                 "buffers": {"asked": config.socket_buffer_bytes,
                             "system_default_receive_buffer": host.default_receive_buffer()}}
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
    try:
        host.read_counters()  # each run is billed for the host's drops, or the lab does not run
    except host.HostCountersUnavailable as exc:
        raise LabError(f"{exc}: the lab needs Linux's /proc/net/snmp to bill each run for the host's UDP drops") from None
    progress = progress or (lambda _m: None)
    run_id = f"{config.experiment_id}-s{config.seed}"
    versions = {stack: _stack_version(stack) for stack in {a.stack for a in config.arms}}
    with tempfile.TemporaryDirectory(prefix="quicexp-lab-") as tmp:
        out = asyncio.run(_run(config, Path(tmp), progress))
        summary = LabSummary(day=day, run_id=run_id, experiment_id=config.experiment_id, relay=out["relay"])
        _write_landing(settings, config, day, run_id, out, versions, summary)
    summary.seconds = time.monotonic() - started
    invalid = ", ".join(f"{arm} {bad} of {total}" for arm, (bad, total) in summary.invalid_by_arm().items())
    progress(f"done: {summary.clients} clients, {len(summary.connections)} runs ({summary.failed} failed, "
             f"{summary.invalid_runs} invalid for host drops: {invalid}) in {summary.seconds:.1f}s")
    return summary


def next_step(settings: Settings, config: LabConfig, day: date) -> str:
    """What to run next: ``quicexp run-day`` when the registry has the lab's experiment as run,
    otherwise what the registry lacks (the pipeline analyses registered experiments only)."""
    from quicexp.registry import load_registry

    run_day = f"quicexp run-day --date {day.isoformat()}"
    try:
        experiment = load_registry(settings.registry_file).get(config.experiment_id)
    except ConfigError:
        arms = ", ".join(f"{a.name} (share {a.weight / sum(b.weight for b in config.arms):.3g}"
                         f"{', control' if i == 0 else ''})" for i, a in enumerate(config.arms))
        return (f"next: add experiment {config.experiment_id} to {settings.registry_file} with arms {arms} "
                f"and start_date {day.isoformat()} or earlier, then {run_day}")
    missing = sorted({a.name for a in config.arms} - {a.name for a in experiment.arms})
    if missing:
        return (f"next: the registry's {config.experiment_id} has no arm {', '.join(missing)}: add it to "
                f"{settings.registry_file}, then {run_day}")
    if not experiment.running_on(day):
        return (f"next: the registry's {config.experiment_id} does not run on {day.isoformat()} (start "
                f"{experiment.start_date}): change its dates in {settings.registry_file}, then {run_day}")
    return f"next: {run_day}"


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
    labels = {c.name: c.labels() for c in config.conditions}
    sidecar, connections, requests, accounted = [], [], [], []
    for conn, opened, client_file, row, arm in out["connections"]:
        summary.connections.append(conn)
        server = server_rows.get(row["odcid"], (None, None))[1] if row else None
        accounted.append(_accounting(conn, row, server))
        if client_file is None:
            continue
        _copy_gz(client_file, qdir / "client" / f"{arm.name}-{client_file.name}")
        if row is None:
            continue
        sidecar.append(json.dumps(_sidecar_line(config, conn, row["odcid"], opened, labels[conn.condition])))
        trace = _trace(client_file)
        if not conn.valid or trace is None or row.get("srtt_ms") is None or row.get("min_rtt_ms") is None:
            continue  # no telemetry events for an invalid run: its loss is not the path's
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
        "stack_versions": versions, "socket_buffers": out["buffers"], "assignments": out["assignments"],
        "connections": [{"condition": c.condition, "arm": c.arm, "client_id": c.client_id, "attempt": c.attempt,
                         "odcid": c.odcid, "ok": c.ok, "invalid": c.invalid, "seconds": round(c.seconds, 3),
                         "error": c.error, "host_drops": c.host_drops, "relay": c.relay, **extra}
                        for c, extra in zip(summary.connections, accounted, strict=True)],
    }, indent=1))


def _sidecar_line(config: LabConfig, conn: Connection, odcid: str, opened: datetime, labels: dict[str, str]) -> dict:
    """The sidecar line of one run: the client's connection, its arm, its condition (and the
    condition's values that vary, LabConfig.segment_dimensions) and, for an invalid run, why."""
    line = {"odcid": odcid, "client_id": conn.client_id, "session_id": f"lab-{odcid[:16]}",
            "platform": config.platform, "network_type": config.network_type,
            "experiments": {config.experiment_id: conn.arm}, "opened_at": _ts(opened), "condition": conn.condition}
    if config.segment_dimensions:
        line["condition_values"] = {k: labels[k] for k in config.segment_dimensions}
    if conn.invalid:  # the ingest loads the traces with the reason; the models leave them out
        line |= {"invalid": conn.invalid, "host_drops": conn.host_drops.get("total", 0)}
    return line


def _accounting(conn: Connection, client: dict | None, server: dict | None) -> dict:
    """Packets the server sent that neither the relay dropped nor the client received (None
    without both traces): lost on the host, or still in flight when the client closed."""
    if client is None or server is None or not conn.relay:
        return {"unaccounted_server_to_client": None}
    gap = server["packets_sent"] - client["packets_received"] - conn.relay["server_to_client"]["dropped"]
    return {"unaccounted_server_to_client": gap}

def _copy_gz(source: Path, target: Path) -> None:
    name = target.name if target.name.endswith(".gz") else target.name + ".gz"
    with open(source, "rb") as fh:
        data = fh.read()
    (target.parent / name).write_bytes(gzip.compress(data))
    os.utime(target.parent / name, (source.stat().st_atime, source.stat().st_mtime))
