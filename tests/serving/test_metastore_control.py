"""The metastore's Derby network server takes control commands only with its credentials
(quicexp.jvm.DerbyCommandGate on the server's socket, quicexp.jvm.DerbyControl to send them).

Derby asks for credentials on ``shutdown`` only; without the gate any local process could turn
tracing on (files in the metastore folder), read the sessions' runtime information, or set
``maxthreads 1`` and starve every Spark JVM of the metastore (seen while this was built). The
unauthenticated commands are sent as any local program can: raw frames of Derby's command
protocol, and once with Derby's own client."""

from __future__ import annotations

import re
import socket
import struct
import subprocess

import pytest

from quicexp.catalog import (
    _derby_classpath,
    derby_control,
    derby_password,
    is_listening,
    start_derby,
    stop_derby,
)
from quicexp.config import load_settings
from tests.conftest import free_port

pytestmark = pytest.mark.spark  # a Derby network server (a JVM) of its own

REFUSED = "this metastore server's control commands need its credentials"
#: Derby's command codes (NetworkServerControlImpl.COMMAND_*) and their arguments on the wire.
COMMANDS = {
    "trace on": (2, struct.pack(">iB", 0, 1)),
    "tracedirectory": (3, struct.pack(">H", 4) + b"/tmp"),
    "logconnections on": (5, b"\x01"),
    "sysinfo": (6, b""),
    "runtimeinfo": (7, b""),
    "maxthreads 1": (8, struct.pack(">i", 1)),
    "timeslice 7": (9, struct.pack(">i", 7)),
}


def _frame(code: int, args: bytes) -> bytes:
    return b"CMD:" + struct.pack(">H", 1) + b"\x00\x00" + bytes([code]) + args


def _credentials(user: str, password: str) -> bytes:
    return b"QXA:" + struct.pack(">H", len(user)) + user.encode() + struct.pack(">H", len(password)) + password.encode()


def _send(port: int, payload: bytes) -> tuple[int, bytes]:
    """(status, rest of the answer) of one command connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(payload)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer[:4] == b"RPY:", answer[:40]
    return answer[4], answer[5:]


def _drda_properties(settings) -> dict[str, str]:
    done = derby_control(settings, "sysinfo")
    assert done.returncode == 0, done.stderr
    return dict(re.findall(r"^(derby\.drda\.\w+)=(.*)$", done.stdout, flags=re.M))


@pytest.fixture(scope="module")
def metastore(tmp_path_factory):
    settings = load_settings(home=tmp_path_factory.mktemp("metastore-control"), catalog={"port": free_port()})
    assert start_derby(settings) is True
    yield settings
    stop_derby(settings)


def test_control_commands_without_the_credentials_are_refused_and_change_nothing(metastore):
    port = metastore.catalog.port
    before = _drda_properties(metastore)
    assert before["derby.drda.maxThreads"] == "0" and before["derby.drda.logConnections"] == "false"
    for name, (code, args) in COMMANDS.items():
        status, rest = _send(port, _frame(code, args))
        assert status != 0 and REFUSED in rest.decode(errors="replace"), name
        assert b"Session" not in rest and b"Version" not in rest, name  # no runtime or system information
    wrong = _credentials("app", derby_password(metastore) + "x")
    status, rest = _send(port, wrong + _frame(*COMMANDS["maxthreads 1"]))
    assert status != 0 and b"wrong metastore user or password" in rest
    # Derby's own client, as an operator (or anyone) would type it
    typed = subprocess.run(
        ["java", "-cp", _derby_classpath(metastore), "org.apache.derby.drda.NetworkServerControl",
         "maxthreads", "1", "-h", "127.0.0.1", "-p", str(port)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert REFUSED in typed.stdout + typed.stderr
    assert _drda_properties(metastore) == before
    assert not list(metastore.metastore_dir.glob("Server*.trace")), "no trace file was started"
    status, _ = _send(port, _frame(4, b"\x00\x00" * 3))  # ping: says only that the server answers
    assert status == 0


def test_with_the_credentials_they_run_and_shutdown_still_checks_them(metastore, tmp_path):
    done = derby_control(metastore, "runtimeinfo")
    assert done.returncode == 0 and "Session Information" in done.stdout
    assert derby_control(metastore, "maxthreads", "5").returncode == 0
    assert _drda_properties(metastore)["derby.drda.maxThreads"] == "5"
    assert derby_control(metastore, "maxthreads", "0").returncode == 0
    wrong = tmp_path / "derby.properties"
    wrong.write_text("derby.user.app=not-the-password\n")
    for command in (("maxthreads", "1"), ("shutdown",)):
        refused = derby_control(metastore, *command, properties=wrong)
        assert refused.returncode == 1 and refused.stderr.startswith("DerbyControl: "), refused.stderr
    assert is_listening("127.0.0.1", metastore.catalog.port)
    assert _drda_properties(metastore)["derby.drda.maxThreads"] == "0"
