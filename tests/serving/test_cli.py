"""`quicexp serve` / `quicexp superset`: user errors are one line and exit 2 (no services needed)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def _run(args: list[str], tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        "QUICEXP_HOME": str(tmp_path / "home"),
        "QUICEXP_STATE_DIR": str(tmp_path / "state"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "quicexp.app.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )


def test_superset_start_before_setup_is_a_one_line_error(tmp_path):
    proc = _run(["superset", "start"], tmp_path)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == "quicexp: error: superset is not set up: run `quicexp superset setup` first"
    )


def test_serve_start_on_a_taken_port_is_a_one_line_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _run(["serve", "start"], tmp_path, QUICEXP_SERVICES__THRIFT_PORT=str(port))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"quicexp: error: port 127.0.0.1:{port} is taken")
    assert "Traceback" not in proc.stderr


def test_services_refuse_a_non_loopback_bind_host(tmp_path):
    proc = _run(["serve", "status"], tmp_path, QUICEXP_SERVICES__BIND_HOST="0.0.0.0")
    assert proc.returncode == 2
    assert "loopback" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
