"""Real runs of quicexp_daily: `airflow dags test` per day, and a back-fill through a real scheduler.

Fewest runs that prove each property (every day-run starts four Spark JVMs):

- a day without landing data: the sensor fails after its (short) timeout, nothing is written;
- namespace ``dags_seq``: three days in order (`airflow dags test`), then the oldest day again:
  it is written (a new Delta version) and every gold table is unchanged (same logical day twice);
- namespace ``dags_bf``: the same three days as one `airflow backfill create` run by the scheduler
  of `scripts/airflow.sh start` (what `make airflow` starts), with the dbt step of the middle day
  failing once after doing its work: the gold tables equal those of the sequential runs.
"""

from __future__ import annotations

import json
import stat
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from quicexp.config import REPO_ROOT
from tests.dags.airflow_helpers import (
    AIRFLOW,
    AIRFLOW_SCRIPT,
    DAG_ID,
    DAYS,
    failure_records,
    namespace_env,
    run_dag,
    table_fingerprints,
)

pytestmark = pytest.mark.e2e

GOLD_TABLES = {"experiment_sufficient_stats", "experiment_results"}


def _delta_version(spark, table: str) -> int:
    return int(spark.sql(f"describe history {table}").agg({"version": "max"}).collect()[0][0])


def test_day_without_landing_data_fails_the_sensor_and_writes_nothing(
    airflow_env, shared_landing, lake, spark, tmp_path
):
    settings = lake("dags_empty")
    env = namespace_env(airflow_env, settings, shared_landing)
    day = "2026-06-25"
    assert not (shared_landing / f"upload_date={day}").exists()

    run = run_dag(env, day, tmp_path)

    assert run.returncode != 0, run.tail()
    assert (
        f"no landing data for {day}: {shared_landing}/upload_date={day} holds no batch files"
        in run.output
    )
    failed = [r for r in failure_records(env) if r["logical_date"].startswith(day)]
    assert [(r["task_id"], r["event"]) for r in failed] == [("wait_for_landing", "failure")]
    assert "[DAG TEST] starting task_id=ingest" not in run.output
    for schema in (settings.bronze_schema, settings.silver_schema, settings.gold_schema):
        assert not spark.catalog.databaseExists(schema)
    assert not settings.reports_dir.exists()
    assert not (shared_landing / f"upload_date={day}").exists()


@pytest.fixture(scope="module")
def sequential(airflow_env, shared_landing, lake, spark, tmp_path_factory):
    """Three days run one after the other with `airflow dags test`."""
    settings = lake("dags_seq")
    env = namespace_env(airflow_env, settings, shared_landing)
    logs = tmp_path_factory.mktemp("dags-seq-logs")
    for day in DAYS:
        run = run_dag(env, day, logs)
        assert run.returncode == 0, run.tail()
        assert f"plan for {day}: landing {shared_landing}/upload_date={day}" in run.output
    return SimpleNamespace(
        settings=settings,
        env=env,
        logs=logs,
        prints=table_fingerprints(spark, settings.gold_schema),
    )


def test_sequential_days_fill_gold_and_publish(sequential, spark):
    settings = sequential.settings
    assert GOLD_TABLES <= set(sequential.prints)
    assert all(rows > 0 for rows, _ in sequential.prints.values())
    uploads = {
        r[0].isoformat()
        for r in spark.table(f"{settings.bronze_schema}.ingest_audit")
        .select("upload_date")
        .distinct()
        .collect()
    }
    assert uploads == set(DAYS), "each run must ingest exactly its logical day"
    as_of = {
        r[0].isoformat()
        for r in spark.table(f"{settings.gold_schema}.experiment_results")
        .select("as_of_date")
        .distinct()
        .collect()
    }
    assert set(DAYS) <= as_of
    for day in DAYS:
        manifest = json.loads((settings.reports_dir / "_published" / f"{day}.json").read_text())
        assert [r["experiment"] for r in manifest["reports"]] == ["fhol_2026_06"]
        assert (settings.reports_dir / manifest["reports"][0]["html"]["path"]).stat().st_size > 0
    index = (settings.reports_dir / "index.html").read_text()
    assert [index.index(day) for day in reversed(DAYS)] == sorted(index.index(day) for day in DAYS)


def test_rerunning_an_old_day_writes_it_and_changes_nothing(sequential, spark):
    settings = sequential.settings
    results = f"{settings.gold_schema}.experiment_results"
    before = _delta_version(spark, results)

    run = run_dag(sequential.env, DAYS[0], sequential.logs)

    assert run.returncode == 0, run.tail()
    assert _delta_version(spark, results) > before, "the old day's results were not rewritten"
    assert table_fingerprints(spark, settings.gold_schema) == sequential.prints


def _airflow(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(AIRFLOW), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


class AirflowApi:
    """The REST API of the api-server, logged in as the generated admin user."""

    def __init__(self, env: dict) -> None:
        self.base = env["AIRFLOW__API__BASE_URL"]
        password_file = Path(env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
        password = json.loads(password_file.read_text())["admin"]
        token = requests.post(
            f"{self.base}/auth/token", json={"username": "admin", "password": password}, timeout=30
        )
        token.raise_for_status()
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def get(self, path: str, **params) -> requests.Response:
        return self.session.get(f"{self.base}/api/v2/{path}", params=params, timeout=30)

    def wait_for_dag(self, dag_id: str, timeout: float = 300) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.get(f"dags/{dag_id}")
            if found.status_code == 200:
                return found.json()
            time.sleep(3)
        raise AssertionError(f"{dag_id} did not show up in the API within {timeout:.0f}s")

    def backfill_runs(self, dag_id: str) -> list[dict]:
        runs = self.get(f"dags/{dag_id}/dagRuns", limit=100).json()["dag_runs"]
        return [r for r in runs if r["run_type"] == "backfill"]


def test_backfill_through_the_scheduler_with_a_retry_equals_sequential_runs(
    sequential, airflow_env, shared_landing, lake, spark, tmp_path
):
    settings = lake("dags_bf")
    flag = tmp_path / "fail-once"
    flag.write_text(f"dbt build --date {DAYS[1]}")
    env = {
        **namespace_env(airflow_env, settings, shared_landing),
        "QUICEXP_BIN": str(Path(__file__).with_name("flaky_quicexp.sh")),
        "QUICEXP_TEST_REAL_BIN": str(REPO_ROOT / ".venvs" / "pipeline" / "bin" / "quicexp"),
        "QUICEXP_TEST_FAIL_ONCE": str(flag),
    }
    started = subprocess.run(
        ["bash", str(AIRFLOW_SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=900
    )
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        api = AirflowApi(env)
        dag = api.wait_for_dag(DAG_ID)
        assert any(t["name"] == "quicexp" for t in dag["tags"])
        assert _airflow(env, "dags", "unpause", DAG_ID).returncode == 0
        created = _airflow(
            env, "backfill", "create", "--dag-id", DAG_ID, "--from-date", DAYS[0], "--to-date", DAYS[-1],
            "--max-active-runs", "1", "--reprocess-behavior", "completed",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr[-3000:]

        deadline = time.monotonic() + 3000
        while time.monotonic() < deadline:
            runs = api.backfill_runs(DAG_ID)
            if len(runs) == len(DAYS) and all(r["state"] in ("success", "failed") for r in runs):
                break
            time.sleep(10)
        states = {r["logical_date"][:10]: r["state"] for r in api.backfill_runs(DAG_ID)}
        assert states == dict.fromkeys(DAYS, "success"), states
    finally:
        subprocess.run(
            ["bash", str(AIRFLOW_SCRIPT), "stop"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    assert not flag.exists(), "the injected failure did not happen"
    retried = [r for r in failure_records(env) if r["event"] == "retry"]
    assert [(r["task_id"], r["logical_date"][:10]) for r in retried] == [("dbt_build", DAYS[1])]
    assert "injected failure" in retried[0]["error"]
    assert table_fingerprints(spark, settings.gold_schema) == sequential.prints
