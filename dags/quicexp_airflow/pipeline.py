"""The bridge from Airflow tasks to the pipeline environment: its CLI and scripts/airflow.sh.

Each Spark step is one ``quicexp <command> --date <day>`` process (its own JVM). Its output is
streamed into the task log line by line as it comes (the child runs unbuffered): a line of the
CLI's log (``<time> <LEVEL> <logger>: <message>``, quicexp.app.cli.LOG_FORMAT off a terminal) is
logged at its level without its time, as Airflow stamps every line; an error line at ERROR; colour
codes are taken out. When the task is killed or times out, the whole process group (the CLI and
its JVM) is ended, so no orphan Spark job keeps writing after Airflow gave up.

``QUICEXP_BIN`` overrides the CLI's path and ``QUICEXP_REPO`` the project root (deployments where
the DAG folder is copied elsewhere).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
from collections import deque
from pathlib import Path

log = logging.getLogger(__name__)

ERROR_PREFIX = "quicexp: error:"
#: a record of the CLI's log: its time (dropped), level and the rest (``logger: message``)
_LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$"
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class PipelineCommandError(RuntimeError):
    """A pipeline command exited non-zero; the message is its one-line error."""


def repo_root() -> Path:
    return Path(os.environ.get("QUICEXP_REPO") or Path(__file__).resolve().parents[2])


def quicexp_bin() -> str:
    return os.environ.get("QUICEXP_BIN") or str(
        repo_root() / ".venvs" / "pipeline" / "bin" / "quicexp"
    )


def _end_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """Terminate the child's process group (CLI + JVM), then kill what is left after ``grace``."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _error_line(lines: deque[str], returncode: int) -> str:
    for line in reversed(lines):
        if line.startswith(ERROR_PREFIX):
            return line[len(ERROR_PREFIX) :].strip()
    tail = [line for line in lines if line.strip()]
    return f"exit code {returncode}; last output: {tail[-1].strip() if tail else '(none)'}"


def task_log_line(line: str) -> tuple[int, str]:
    """The level and text of one output line of the CLI in the task log (pure)."""
    record = _LOG_LINE.match(line)
    if record is not None:
        return logging.getLevelName(record[1]), record[2]
    return (logging.ERROR if line.startswith(ERROR_PREFIX) else logging.INFO), line


def run_quicexp(args: list[str]) -> str | None:
    """Run ``quicexp <args>``, stream its output, return its summary line (the last line that
    starts with the command name, e.g. ``ingest 2026-06-15: read …``) or None."""
    command = [quicexp_bin(), *args]
    log.info("running %s", " ".join(command))
    lines: deque[str] = deque(maxlen=200)
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        bufsize=1,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},  # its stdout lines as they are printed
    )
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = _ANSI.sub("", raw.rstrip("\n"))
            lines.append(line)
            level, text = task_log_line(line)
            log.log(level, "%s", text)
        returncode = proc.wait()
    finally:
        if proc.poll() is None:
            log.warning("ending %s (task stopped)", " ".join(command))
            _end_group(proc)
    if returncode != 0:
        raise PipelineCommandError(f"quicexp {args[0]} failed: {_error_line(lines, returncode)}")
    name = args[0]
    return next((line.strip() for line in reversed(lines) if line.startswith(name)), None)


def run_step(steps: list[dict], name: str) -> str | None:
    """Run the step ``name`` of the day's plan (its command comes from ``quicexp plan``)."""
    (step,) = [s for s in steps if s["name"] == name]
    if step["argv"] is None:
        log.info("%s: nothing to do this day", name)
        return None
    return run_quicexp(list(step["argv"]))


def plan_day(day: str) -> dict:
    """What a run needs to know about its day, from ``quicexp plan --json`` (through
    scripts/airflow.sh): ``{"day", "landing_dir", "reports_dir", "experiments", "steps"}``."""
    script = repo_root() / "scripts" / "airflow.sh"
    done = subprocess.run(
        ["bash", str(script), "plan", day], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise PipelineCommandError(
            f"cannot plan {day}: {message.removeprefix(ERROR_PREFIX).strip()}"
        )
    plan = json.loads(done.stdout.strip().splitlines()[-1])
    log.info(
        "plan for %s: landing %s, experiments %s", day, plan["landing_dir"], plan["experiments"]
    )
    return plan
