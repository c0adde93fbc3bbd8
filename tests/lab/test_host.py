"""The host's UDP counters and socket buffers (lab/host.py), the lab's next step and its help, without stacks."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from datetime import date

import pytest
import yaml

from lab import host
from lab.config import parse_config
from lab.runner import next_step
from quicexp.app.cli import main
from quicexp.config import load_settings

SNMP = """Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 35800 48 82 23568 80 3 2 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 0 0 0 0 0
"""
UDP = """   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 0100007F:1F90 00000000:0000 07 00000000 00000000 00:00000000 00000000     0        0 101 2 0000000000000000 17
  2: 0100007F:1F91 0100007F:1F90 01 00000000 00000000 00:00000000 00000000     0        0 102 2 0000000000000000 0
  3: 00000000:1F90 00000000:0000 07 00000000 00000000 00:00000000 00000000     0        0 103 2 0000000000000000 5
"""


def test_counters_parse_the_kernel_files():
    assert host.parse_snmp(SNMP)["RcvbufErrors"] == 80 and host.parse_snmp(SNMP)["InErrors"] == 82
    # 0x1F90 = 8080 on 127.0.0.1 only (the 0.0.0.0 socket on the same port is another host's address)
    assert host.parse_udp_sockets(UDP, [8080, 8081, 9999]) == {8080: 17, 8081: 0, 9999: 0}
    with pytest.raises(host.HostCountersUnavailable):
        host.parse_snmp("Ip: Forwarding\nIp: 1\n")


def test_drops_between_two_readings():
    before = host.UdpCounters(in_errors=82, rcvbuf_errors=80, sndbuf_errors=3, mem_errors=0, socket_drops={1: 2, 2: 0})
    after = host.UdpCounters(in_errors=130, rcvbuf_errors=126, sndbuf_errors=4, mem_errors=0, socket_drops={1: 40, 2: 1})
    drops = host.drops_between(before, after, {"relay": [1], "server": [2]})
    assert (drops.total, drops.rcvbuf_errors, drops.sndbuf_errors) == (49, 46, 1)
    assert drops.as_dict() == {"total": 49, "rcvbuf_errors": 46, "sndbuf_errors": 1, "relay_socket": 38,
                               "server_socket": 1}


def test_the_running_kernel_counts_a_full_receive_buffer():
    """A socket with the smallest buffer that nobody reads: the kernel drops the burst, and the
    namespace's counters and the socket's own say so."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)  # the kernel's minimum
    receiver.bind(("127.0.0.1", 0))
    port = receiver.getsockname()[1]
    before = host.read_counters([port])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        for _ in range(50):
            sender.sendto(b"x" * 1200, ("127.0.0.1", port))
    after = host.read_counters([port])
    receiver.close()
    drops = host.drops_between(before, after, {"receiver": [port]})
    assert drops.by_socket["receiver"] >= 40 and drops.total >= drops.by_socket["receiver"]
    assert drops.rcvbuf_errors >= drops.by_socket["receiver"]


def test_buffers_of_own_sockets_and_of_a_child_process():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        default = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        assert host.enlarge_buffers(sock, 0) == default  # 0: the system's default, untouched
        assert host.enlarge_buffers(sock, 1 << 20) > default
    # a child with a UDP socket: its buffer is enlarged through a copy of its descriptor
    child = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys, time\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0))\n"
        "print(s.getsockname()[1], flush=True); sys.stdin.readline()\n"
        "print(s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF), flush=True)\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child.stdout.readline()
        deadline = time.monotonic() + 10
        while not (found := host.enlarge_child_buffers(child.pid, 1 << 20)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert found == 1
        child.stdin.write("\n")
        child.stdin.flush()
        assert int(child.stdout.readline()) > default
    finally:
        child.kill()
        child.wait()
    assert host.enlarge_child_buffers(child.pid) == 0  # gone: nothing to enlarge, no error


CONFIG = {"experiment_id": "lab_next", "arms": [{"name": "cubic", "stack": "ngtcp2"},
                                                {"name": "bbr", "stack": "ngtcp2", "cc": "bbr", "weight": 3}],
          "grid": {"rtt_ms": [20]}}


def test_the_last_line_says_what_to_run_next(tmp_path):
    day = date(2026, 6, 15)
    registry = tmp_path / "experiments.yml"
    settings = load_settings(home=tmp_path, registry_file=registry)
    config = parse_config(CONFIG)
    entry = {"id": "lab_next", "title": "t", "start_date": "2026-06-15",
             "arms": [{"name": "cubic", "share": 0.25, "is_control": True}, {"name": "bbr", "share": 0.75}]}
    registry.write_text(yaml.safe_dump({"experiments": []}))
    line = next_step(settings, config, day)
    assert line.startswith("next: add experiment lab_next to ") and "bbr (share 0.75)" in line
    assert "cubic (share 0.25, control)" in line and line.endswith("quicexp run-day --date 2026-06-15")
    registry.write_text(yaml.safe_dump({"experiments": [{**entry, "arms": [entry["arms"][0],
                                                                          {"name": "reno", "share": 0.75}]}]}))
    assert "has no arm bbr" in next_step(settings, config, day)
    registry.write_text(yaml.safe_dump({"experiments": [{**entry, "start_date": "2026-06-16"}]}))
    assert "does not run on 2026-06-15" in next_step(settings, config, day)
    registry.write_text(yaml.safe_dump({"experiments": [entry]}))
    assert next_step(settings, config, day) == "next: quicexp run-day --date 2026-06-15"


def test_lab_help_names_what_it_needs(capsys):
    assert main(["lab", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ngtcp2-client" in out and "ngtcp2-server" in out and "registry/experiments.yml" in out
    assert "quicexp run-day --date D" in out


def test_grid_values_become_segments_when_two_or_more_vary():
    def dims(grid):
        return parse_config({**CONFIG, "grid": grid}).segment_dimensions

    assert dims({"rtt_ms": [20, 80]}) == []  # one varying value is the condition itself
    assert dims({"rtt_ms": [20, 80], "loss": [0.0, 0.02], "burst": [2]}) == ["rtt", "loss"]
    assert dims({"rtt_ms": [20], "bandwidth_mbps": [None, 10], "burst": [1, 4]}) == ["burst", "bandwidth"]
    (condition,) = parse_config({**CONFIG, "grid": {"rtt_ms": [20], "loss": [0.025], "bandwidth_mbps": [None]}}).conditions
    assert condition.labels() == {"rtt": "20ms", "loss": "2.5%", "burst": "1", "bandwidth": "unlimited"}
