"""``run_dbt``: the project parsed on its own while the Spark work it needs runs alongside, then the
command with its own selection (``dbt ls``: no Spark, no warehouse connection)."""

from __future__ import annotations

import threading
from datetime import date

import pytest

from quicexp.app.dbt import run_dbt
from quicexp.config import load_settings
from quicexp.errors import ServiceUnavailable

DAY = date(2026, 6, 15)


def test_the_work_alongside_runs_on_another_thread_and_the_selection_is_the_commands(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    threads: list[str] = []
    # parse takes no --select: given to it, dbt would stop ("No such option") before the command
    run_dbt("ls", settings, DAY, ["--select", "stg_registry__experiment_arms"],
            alongside=lambda: threads.append(threading.current_thread().name))
    assert len(threads) == 1 and threads[0] != threading.current_thread().name
    assert (settings.home / "dbt" / "target" / "manifest.json").is_file()


def test_an_error_alongside_is_the_commands_error(tmp_path):
    settings = load_settings(home=tmp_path / "home")

    def publish() -> None:
        raise RuntimeError("registry publish failed")

    with pytest.raises(RuntimeError, match="registry publish failed"):
        run_dbt("ls", settings, DAY, alongside=publish)


def test_a_command_dbt_refuses_is_one_error(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    with pytest.raises(ServiceUnavailable, match="dbt ls failed"):
        run_dbt("ls", settings, DAY, ["--no-such-flag"])
