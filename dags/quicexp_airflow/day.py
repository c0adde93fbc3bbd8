"""``python -m quicexp_airflow.day YYYY-MM-DD``: one run of quicexp_daily for a logical day, now
(``make airflow-day``, through ``scripts/airflow.sh day``). Runs in the Airflow environment.

It is Airflow's own ``dag.test()`` (what ``airflow dags test`` runs) with two differences:

- the run is named after its day, ``manual__D T00:00:00+00:00`` (``run_after`` = D); ``airflow
  dags test`` names it after the moment it starts, which says nothing about the day it processed;
- its tasks run on the installation's executor (``use_executor``): each is a supervised process
  that writes its log file under ``[logging] base_log_folder``, where the api-server reads it for
  the UI. ``airflow dags test`` runs them inside its own process, which writes no log file: the UI
  then looks for a log server and answers "Could not read served logs".

The tasks' log lines are printed here as they are written (time, task, level, message); what
Airflow itself prints (the scheduling loop, the executor) goes to ``$AIRFLOW_HOME/airflow-day.log``.
The executor's tasks report to the api-server (the execution API): scripts/airflow.sh starts it
first. As with ``airflow dags test``, an earlier run of the same logical day is replaced (and
its task logs removed).

Airflow 3.1's ``dag.test(use_executor=True)`` can take the exit of a reschedule-mode sensor's
previous poke for the end of the current one when pokes come faster than a task process exits
(seconds, more under load), and then stops ("Callback sink is not ready") or waits for a try
that never comes; the landing sensor pokes every 5 minutes, and the tests run a day without
landing data with a landing timeout of 0 (one poke, no reschedule).

A running scheduler would schedule this run's tasks too once the DAG is unpaused, so the command
refuses an unpaused DAG while a scheduler is alive (re-run the day from the UI instead).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import threading
import traceback
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import quote

DAG_ID = "quicexp_daily"
USAGE_EXIT = 2


def run_id_of(day: date) -> str:
    """The run id ``dag.test`` gives a run whose ``run_after`` is the day's midnight (UTC)."""
    return f"manual__{datetime(day.year, day.month, day.day, tzinfo=UTC).isoformat()}"


def render(task_id: str, raw: str) -> str | None:
    """One line of a task's log file (Airflow's JSON lines) as ``HH:MM:SS task LEVEL message``."""
    try:
        record = json.loads(raw)
    except ValueError:
        return f"{task_id} {raw.rstrip()}" if raw.strip() else None
    if not isinstance(record, dict) or not record.get("event"):
        return None
    stamp = str(record.get("timestamp", ""))[11:19]
    return f"{stamp} {task_id} {str(record.get('level', 'info')).upper()} {record['event']}"


class LogFollower(threading.Thread):
    """Prints the new lines of every task log file of one run to ``out``, until stopped."""

    def __init__(self, run_dir: Path, out, interval: float = 1.0) -> None:
        super().__init__(daemon=True, name="log-follower")
        self.run_dir, self.out, self.interval = run_dir, out, interval
        self.offsets: dict[Path, int] = {}
        self.done = threading.Event()

    def drain(self) -> None:
        for path in sorted(self.run_dir.glob("task_id=*/**/*.log")):
            task_id = next(p.name for p in path.parents if p.name.startswith("task_id="))
            with path.open("rb") as fh:
                fh.seek(self.offsets.get(path, 0))
                chunk = fh.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
            self.offsets[path] = self.offsets.get(path, 0) + len(complete)
            for raw in complete.decode("utf-8", "replace").splitlines():
                line = render(task_id.removeprefix("task_id="), raw)
                if line:
                    print(line, file=self.out, flush=True)

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.drain()

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.drain()


def _refusal(dag_id: str) -> str | None:
    """Why the run must not start here, or None."""
    from airflow.jobs.job import most_recent_job
    from airflow.models.dag import DagModel

    model = DagModel.get_dagmodel(dag_id)
    scheduler = most_recent_job("SchedulerJob")
    if model is not None and not model.is_paused and scheduler is not None and scheduler.is_alive():
        return (
            f"{dag_id} is unpaused and a scheduler runs: it would schedule this run's tasks too; "
            "re-run the day from the UI (its run, Clear) or pause the DAG first"
        )
    return None


def _console_apart(log_path: Path):
    """This process's stdout and stderr go to ``log_path`` (Airflow prints there, also from the
    executor's forked workers); returns streams on the original stdout and stderr, for this
    command's own lines."""
    console, errors = os.fdopen(os.dup(1), "w", buffering=1), os.fdopen(os.dup(2), "w", buffering=1)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return console, errors


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m quicexp_airflow.day YYYY-MM-DD", file=sys.stderr)
        return USAGE_EXIT
    try:
        day = date.fromisoformat(argv[0])
    except ValueError:
        print(f"airflow-day: error: bad day {argv[0]!r} (YYYY-MM-DD)", file=sys.stderr)
        return USAGE_EXIT
    airflow_log = Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow") / "airflow-day.log"
    console, errors = _console_apart(airflow_log)
    try:
        return _run(day, console, errors, airflow_log)
    except Exception as exc:  # the traceback to Airflow's log, one line here
        traceback.print_exc()
        print(f"airflow-day: error: {type(exc).__name__}: {exc} (log: {airflow_log})", file=errors)
        # an error inside dag.test leaves the executor's worker processes waiting for work, and
        # the interpreter would wait for them at exit
        for worker in multiprocessing.active_children():
            worker.terminate()
        return 1


def _run(day: date, console, errors, airflow_log: Path) -> int:
    from airflow.configuration import conf
    from airflow.utils.cli import get_bagged_dag
    from airflow.utils.state import DagRunState

    if (why := _refusal(DAG_ID)) is not None:
        print(f"airflow-day: error: {why}", file=errors)
        return USAGE_EXIT
    dag = get_bagged_dag(None, DAG_ID)
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    run_id = run_id_of(day)
    run_dir = Path(conf.get("logging", "base_log_folder")) / f"dag_id={DAG_ID}" / f"run_id={run_id}"
    print(f"airflow-day: {DAG_ID} for {day} as run {run_id} (Airflow's own log: {airflow_log})",
          file=console, flush=True)  # fmt: skip
    shutil.rmtree(run_dir, ignore_errors=True)  # the run it replaces: its tries' logs would mix in
    follower = LogFollower(run_dir, console)
    follower.start()
    try:
        run = dag.test(logical_date=midnight, run_after=midnight, use_executor=True)
    finally:
        follower.stop()
    base = conf.get("api", "base_url", fallback="").rstrip("/")
    where = f"{base}/dags/{DAG_ID}/runs/{quote(run.run_id, safe='')}" if base else run.run_id
    print(f"airflow-day: run {run.run_id}: {run.state} ({where})", file=console, flush=True)
    return 0 if run.state == DagRunState.SUCCESS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
