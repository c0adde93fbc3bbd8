"""A command whose Spark JVM ran out of memory says so: one line, exit 7 (kind ``resources``).

Fast: the JVM's log lines are written by the test. A task that runs out of heap stops a local
Spark context, and the job then fails with an effect (a NullPointerException, "SparkContext was
shut down"); the command line reports the OutOfMemoryError the session logged instead.
"""

from __future__ import annotations

import pytest

from quicexp import spark
from quicexp.app.cli import main
from quicexp.errors import ResourceExhausted

OOM = "26/11/27 02:26:20 ERROR Executor: Exception in task 20.0 in stage 62.0 (TID 242)\njava.lang.OutOfMemoryError: Java heap space\n\tat org.apache.spark.unsafe.types.UTF8String.fromAddress(UTF8String.java:177)\n"


@pytest.fixture
def logs(tmp_path, monkeypatch):
    """spark.log and spark-console.log with an earlier session's lines, marked as a session start."""
    folder = tmp_path / "logs"
    folder.mkdir()
    files = {name: folder / name for name in (spark.SPARK_LOG, spark.JVM_CONSOLE_LOG)}
    files[spark.SPARK_LOG].write_text("an earlier session\n" + OOM)
    files[spark.JVM_CONSOLE_LOG].write_text("")
    monkeypatch.setattr(spark, "_LOG_MARKS", {path: path.stat().st_size for path in files.values()})
    return files


def test_only_what_the_session_logged_counts(logs):
    assert spark.out_of_memory() is None  # the earlier session's error is before the mark
    with logs[spark.SPARK_LOG].open("a") as fh:
        fh.write("26/11/27 02:26:19 WARN BlockManager: Block rdd_247_20 could not be removed\n" + OOM)
    assert spark.out_of_memory() == ("java.lang.OutOfMemoryError: Java heap space", logs[spark.SPARK_LOG])


def test_the_console_log_counts_too(logs):
    with logs[spark.JVM_CONSOLE_LOG].open("a") as fh:
        fh.write('Exception in thread "dispatcher-event-loop-1" java.lang.OutOfMemoryError: GC overhead limit exceeded\n')
    assert spark.out_of_memory() == (
        "java.lang.OutOfMemoryError: GC overhead limit exceeded", logs[spark.JVM_CONSOLE_LOG])


def test_without_a_session_nothing_is_found(monkeypatch):
    monkeypatch.setattr(spark, "_LOG_MARKS", {})
    assert spark.out_of_memory() is None


def test_a_failed_command_reports_the_out_of_memory_error(logs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QUICEXP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("QUICEXP_LANDING_ROOT", str(tmp_path / "no-landing"))
    assert main(["ingest", "--date", "2026-06-15"]) == 3  # the command's own error: no landing day
    assert "landing zone" in capsys.readouterr().err
    with logs[spark.SPARK_LOG].open("a") as fh:
        fh.write(OOM)
    assert main(["ingest", "--date", "2026-06-15"]) == ResourceExhausted.exit_code == 7
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert err[0].startswith("quicexp: error: Spark ran out of memory (java.lang.OutOfMemoryError: Java heap space; ")
    assert str(logs[spark.SPARK_LOG]) in err[0] and "spark.driver_memory" in err[0]


def test_an_error_that_says_what_it_is_keeps_its_kind(logs, tmp_path, monkeypatch, capsys):
    """A usage error (like a failed data test or a partial failure) is not an effect of the JVM's
    memory, even after an OutOfMemoryError the session survived (a cluster's lost executor)."""
    monkeypatch.setenv("QUICEXP_HOME", str(tmp_path / "home"))
    with logs[spark.SPARK_LOG].open("a") as fh:
        fh.write(OOM)
    assert main(["ingest", "--date", "2026-13-01"]) == 2
    assert "bad day" in capsys.readouterr().err
