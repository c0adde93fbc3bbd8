"""Helpers of the DAG tests: run the DAG in the Airflow environment, point it at a test namespace,
read the failure records."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from quicexp.config import REPO_ROOT, Settings

AIRFLOW = REPO_ROOT / ".venvs" / "airflow" / "bin" / "airflow"
AIRFLOW_SCRIPT = REPO_ROOT / "scripts" / "airflow.sh"
DAG_ID = "quicexp_daily"

#: short timings for tests (production defaults are in dags/quicexp_airflow/config.py)
TEST_TIMING = {
    "QUICEXP_AIRFLOW_LANDING_TIMEOUT": "4",
    "QUICEXP_AIRFLOW_POKE_INTERVAL": "2",
    "QUICEXP_AIRFLOW_RETRY_DELAY": "2",
    "QUICEXP_AIRFLOW_SPARK_TIMEOUT": "2400",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parse_exports(text: str) -> dict[str, str]:
    env = {}
    for line in text.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export ") :].partition("=")
            env[name] = shlex.split(value)[0] if value else ""
    return env


def namespace_env(
    airflow_env: dict[str, str], settings: Settings, landing_root: Path, registry_file: Path
) -> dict[str, str]:
    """``airflow_env`` pointed at one test namespace (its own home and schemas, the shared lake,
    the shared pipeline lake's landing zone and experiment registry)."""
    return {
        **airflow_env,
        "QUICEXP_HOME": str(settings.home),
        "QUICEXP_LAKE_ROOT": str(settings.lake_root),
        "QUICEXP_METASTORE_DIR": str(settings.metastore_dir),
        "QUICEXP_LANDING_ROOT": str(landing_root),
        "QUICEXP_REGISTRY_FILE": str(registry_file),
        "QUICEXP_BRONZE_SCHEMA": settings.bronze_schema,
        "QUICEXP_SILVER_SCHEMA": settings.silver_schema,
        "QUICEXP_GOLD_SCHEMA": settings.gold_schema,
    }


@dataclass
class DagRunResult:
    day: str
    returncode: int
    seconds: float
    log: Path

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def run_dag(env: dict[str, str], day: str, log_dir: Path, timeout: float = 3600) -> DagRunResult:
    """``airflow dags test quicexp_daily <day>`` as a subprocess of the Airflow environment."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"dags-test-{day}-{time.monotonic_ns()}.log"
    started = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            [str(AIRFLOW), "dags", "test", DAG_ID, day],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    result = DagRunResult(day, done.returncode, time.monotonic() - started, log)
    print(f"airflow dags test {DAG_ID} {day}: exit {done.returncode} in {result.seconds:.0f}s")
    return result


def failure_records(env: dict[str, str]) -> list[dict]:
    path = Path(env["AIRFLOW_HOME"]) / "quicexp-task-failures.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
