"""What the host itself dropped: the kernel's UDP counters, and larger socket buffers.

A datagram between two lab processes on 127.0.0.1 can be lost where the relay never sees it:
the kernel drops it when the receiving socket's buffer is full (a process descheduled on a
loaded machine while a burst arrives). The stacks then count that loss as the path's. The lab
samples the kernel's counters before and after each client and calls a run clean only when
they did not move (docs/lab.md, "Host drops").

* ``/proc/net/snmp``, line ``Udp`` (per network namespace; Linux ``net/ipv4/udp.c``):
  ``InErrors`` counts every datagram the kernel received for a socket and could not queue —
  ``RcvbufErrors`` (receive buffer full), ``MemErrors`` (socket memory accounting) and
  ``InCsumErrors`` are counted there too; ``SndbufErrors`` counts sends refused for want of
  send buffer. A run's host drops are ``ΔInErrors + ΔSndbufErrors``. The counters are the whole
  namespace's: another process's UDP drops in the same window count against the run (a clean
  run may be called invalid, never the reverse).
* ``/proc/net/udp``: ``drops`` per socket, by local port: which of the relay's and the server's
  sockets overflowed (the client's socket is gone when the client has exited: the rest).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SNMP = Path("/proc/net/snmp")
UDP_SOCKETS = Path("/proc/net/udp")
#: receive and send buffer asked for on the sockets the lab owns (the relay's, aioquic's)
BUFFER_BYTES = 4 << 20
# Linux socket options that pass net.core.rmem_max / wmem_max with CAP_NET_ADMIN (socket(7))
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
_LOOPBACK_HEX = "0100007F"  # 127.0.0.1 as /proc/net/udp writes it (little-endian hex)


class HostCountersUnavailable(OSError):
    """The kernel's UDP counters cannot be read (not Linux, or /proc not mounted)."""


@dataclass(frozen=True)
class UdpCounters:
    """One reading of the kernel's UDP counters."""

    in_errors: int
    rcvbuf_errors: int
    sndbuf_errors: int
    mem_errors: int
    #: local port (127.0.0.1) -> that socket's drops, for the ports asked about
    socket_drops: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class HostDrops:
    """What the host dropped between two readings."""

    total: int  # ΔInErrors + ΔSndbufErrors: the run is clean when 0
    rcvbuf_errors: int
    sndbuf_errors: int
    #: drops of the named sockets (e.g. relay, server) over the window
    by_socket: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"total": self.total, "rcvbuf_errors": self.rcvbuf_errors, "sndbuf_errors": self.sndbuf_errors,
                **{f"{name}_socket": n for name, n in self.by_socket.items()}}


def parse_snmp(text: str) -> dict[str, int]:
    """The ``Udp`` counters of a ``/proc/net/snmp`` text (a header line, then a value line)."""
    lines = [line.split() for line in text.splitlines() if line.startswith("Udp:")]
    if len(lines) < 2 or len(lines[0]) != len(lines[1]):
        raise HostCountersUnavailable(f"no Udp counters in {SNMP}")
    return {key: int(value) for key, value in zip(lines[0][1:], lines[1][1:], strict=True)}


def parse_udp_sockets(text: str, ports: Iterable[int]) -> dict[int, int]:
    """``drops`` of the 127.0.0.1 sockets bound to ``ports`` in a ``/proc/net/udp`` text (0 when absent)."""
    wanted = set(ports)
    drops = dict.fromkeys(wanted, 0)
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 13 or ":" not in parts[1]:
            continue
        address, port_hex = parts[1].split(":")
        port = int(port_hex, 16)
        if address == _LOOPBACK_HEX and port in wanted:
            drops[port] += int(parts[-1])
    return drops


def read_counters(ports: Iterable[int] = ()) -> UdpCounters:
    """The kernel's UDP counters now, and the drops of the 127.0.0.1 sockets on ``ports``."""
    try:
        udp = parse_snmp(SNMP.read_text())
        sockets = parse_udp_sockets(UDP_SOCKETS.read_text(), ports) if ports else {}
    except OSError as exc:
        raise HostCountersUnavailable(f"cannot read the kernel's UDP counters: {exc}") from None
    return UdpCounters(udp.get("InErrors", 0), udp.get("RcvbufErrors", 0), udp.get("SndbufErrors", 0),
                       udp.get("MemErrors", 0), sockets)


def drops_between(before: UdpCounters, after: UdpCounters, sockets: dict[str, Iterable[int]]) -> HostDrops:
    """The host's drops from ``before`` to ``after``; ``sockets``: a name -> the ports of that name's sockets."""
    by_socket = {name: sum(after.socket_drops.get(p, 0) - before.socket_drops.get(p, 0) for p in ports)
                 for name, ports in sockets.items()}
    return HostDrops(
        total=(after.in_errors - before.in_errors) + (after.sndbuf_errors - before.sndbuf_errors),
        rcvbuf_errors=after.rcvbuf_errors - before.rcvbuf_errors,
        sndbuf_errors=after.sndbuf_errors - before.sndbuf_errors,
        by_socket=by_socket,
    )


def enlarge_buffers(sock, size: int = BUFFER_BYTES) -> int:
    """Ask for ``size``-byte receive and send buffers; returns the receive buffer the kernel granted.

    ``SO_RCVBUFFORCE`` passes ``net.core.rmem_max`` where the process may (CAP_NET_ADMIN);
    otherwise ``SO_RCVBUF`` is capped by it. Linux reports twice the size asked for (the
    bookkeeping overhead, socket(7)): the value returned is what it reports. ``size`` 0 leaves
    the system's defaults.
    """
    if size <= 0:
        return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, size)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, plain, size)
    return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


def default_receive_buffer() -> int:
    """What a socket gets without asking (``net.core.rmem_default``, as getsockopt reports it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


_SYS_PIDFD_GETFD = 438  # pidfd_getfd(2), Linux 5.6+, the same number on every architecture


def enlarge_child_buffers(pid: int, size: int = BUFFER_BYTES) -> int:
    """Enlarge the buffers of the UDP sockets process ``pid`` holds now; returns how many it had.

    For a stack with no option of its own (ngtcp2's example client): a copy of each socket's
    descriptor comes from pidfd_getfd(2) — allowed for a child of this process (ptrace access
    mode) — and setting a buffer on the copy sets it on the socket the child uses. Returns 0 when
    the child has no UDP socket yet, has exited, or the kernel refuses (the run is then checked
    by its drop counters all the same).
    """
    import ctypes
    import os

    if size <= 0:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        pidfd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return 0
    found = 0
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            except OSError:
                continue
            fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                continue
            sock = socket.socket(fileno=fd)
            try:
                if sock.type == socket.SOCK_DGRAM:
                    enlarge_buffers(sock, size)
                    found += 1
            finally:
                sock.close()  # the copy only: the child's socket stays open
    except OSError:
        return found
    finally:
        os.close(pidfd)
    return found
