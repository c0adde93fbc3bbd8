"""Pid files of background services: liveness, and stopping a whole process group."""

from __future__ import annotations

import subprocess

from quicexp.pidfile import read_pid, stop_group


def test_stop_group_stops_the_child_and_its_children(tmp_path):
    pid_file = tmp_path / "svc.pid"
    # a service that ignores TERM in a child: the group stop must still end both
    proc = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; sleep 300 & wait"], start_new_session=True
    )
    pid_file.write_text(f"{proc.pid}\n")
    assert read_pid(pid_file) == proc.pid

    assert stop_group(pid_file, grace_s=1.0) is True

    assert proc.wait(timeout=15) is not None
    assert read_pid(pid_file) is None and not pid_file.exists()
    assert stop_group(pid_file) is False  # nothing running: no error


def test_a_stale_or_garbled_pid_file_reads_as_not_running(tmp_path):
    pid_file = tmp_path / "svc.pid"
    pid_file.write_text("not a pid\n")
    assert read_pid(pid_file) is None
    proc = subprocess.Popen(["true"])
    proc.wait()
    pid_file.write_text(str(proc.pid))
    assert read_pid(pid_file) is None
