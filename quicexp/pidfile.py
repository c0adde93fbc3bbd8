"""Background services started by quicexp (Thrift server, Superset): a pid file per service and
a stop that signals the whole process group, TERM first, KILL after a grace period."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def read_pid(path: Path) -> int | None:
    """The recorded pid if that process is alive (a child of ours that exited is reaped)."""
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return None
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def stop_group(path: Path, grace_s: float = 30.0) -> bool:
    """Stop the process group of the pid in ``path``; True if one was running. The file goes."""
    pid = read_pid(path)
    if pid is None:
        path.unlink(missing_ok=True)
        return False
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and read_pid(path):
            time.sleep(0.3)
        if read_pid(path) is None:
            break
    path.unlink(missing_ok=True)
    return True
