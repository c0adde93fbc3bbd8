"""The driver JVM's own output goes to a file, not the console (quicexp.spark._output_to).

Fast: a Python child stands in for the JVM (what matters is the inherited file descriptors); the
README test checks the real commands' consoles.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from quicexp.spark import _output_to

CHILD = "import sys, time; print('out', flush=True); print('err', file=sys.stderr, flush=True); time.sleep(0.3); print('late', file=sys.stderr)"


def test_a_child_started_inside_writes_to_the_file_for_its_whole_life(tmp_path, capfd):
    log = tmp_path / "logs" / "spark-console.log"
    with _output_to(log):
        child = subprocess.Popen([sys.executable, "-c", CHILD])
    print("progress")
    assert child.wait(timeout=30) == 0
    console = capfd.readouterr()
    assert console.out == "progress\n" and console.err == ""
    assert sorted(log.read_text().split()) == ["err", "late", "out"]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_the_console_comes_back_when_the_start_fails(tmp_path, capfd):
    log = tmp_path / "spark-console.log"
    try:
        with _output_to(log):
            os.write(2, b"hidden\n")  # what a child inheriting the descriptor writes
            raise RuntimeError("gateway exited")
    except RuntimeError:
        pass
    os.write(2, b"shown\n")
    assert capfd.readouterr().err == "shown\n"
    assert log.read_text() == "hidden\n"
