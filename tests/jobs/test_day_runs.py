"""The per-day ingest lock (no JVM): one holder per lake and upload day, a second one named and refused."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date

import pytest

from jobs.day_runs import DayLocked, day_lock, lock_path
from quicexp.config import REPO_ROOT, load_settings
from quicexp.errors import InputDataError

D = date(2026, 6, 20)


def _settings(tmp_path, schema="bronze"):
    return load_settings(home=tmp_path / "home", state_dir=tmp_path / "state", bronze_schema=schema)


def test_second_holder_of_a_day_is_refused_in_one_line_naming_the_first(tmp_path):
    settings = _settings(tmp_path)
    code = (
        "import sys\nfrom datetime import date\nfrom pathlib import Path\nfrom jobs.day_runs import day_lock\n"
        "from quicexp.config import load_settings\n"
        f"s = load_settings(home=Path({str(tmp_path / 'home')!r}), state_dir=Path({str(tmp_path / 'state')!r}))\n"
        f"with day_lock(s, date.fromisoformat({str(D)!r}), 'events ingest'):\n"
        "    print('held', flush=True)\n    sys.stdin.read()\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(DayLocked, match=f"upload day {D} is being ingested by another run "
                                            f"\\(events ingest pid {holder.pid} ") as err:
            with day_lock(settings, D, "qlog ingest"):
                pass
        assert isinstance(err.value, InputDataError) and "\n" not in str(err.value)
        with day_lock(settings, date(2026, 6, 21), "events ingest"):  # another day is free
            pass
        with day_lock(_settings(tmp_path, "other_bronze"), D, "events ingest"):  # another lake is free
            pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with day_lock(settings, D, "events ingest"):  # released with its holder
        assert "events ingest pid" in lock_path(settings, D).read_text()
    assert lock_path(settings, D).read_text() == ""


def test_a_killed_holder_releases_the_lock(tmp_path):
    settings = _settings(tmp_path)
    code = (
        "import sys, time\nfrom datetime import date\nfrom pathlib import Path\nfrom jobs.day_runs import day_lock\n"
        "from quicexp.config import load_settings\n"
        f"s = load_settings(home=Path({str(tmp_path / 'home')!r}), state_dir=Path({str(tmp_path / 'state')!r}))\n"
        f"with day_lock(s, date.fromisoformat({str(D)!r}), 'events ingest'):\n"
        "    print('held', flush=True)\n    time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ))
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=30)
    with day_lock(settings, D, "events ingest"):
        pass
