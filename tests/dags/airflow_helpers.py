"""Helpers of the DAG tests: the Airflow environment, a test namespace's variables, the failure records."""

from __future__ import annotations

import json
import shlex
import socket
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


def failure_records(env: dict[str, str]) -> list[dict]:
    path = Path(env["AIRFLOW_HOME"]) / "quicexp-task-failures.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
