"""DAG integrity: the DAG folder parses fast and cleanly, and every DAG follows the house rules.

The folder is loaded by the Airflow environment's own DagBag (a subprocess; pytest runs in the
pipeline environment); `_dag_facts.py` prints what is checked here.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest

from quicexp.app.daily import STEPS
from quicexp.config import REPO_ROOT

DAGS = REPO_ROOT / "dags"
AIRFLOW_PY = REPO_ROOT / ".venvs" / "airflow" / "bin" / "python"
RUFF = REPO_ROOT / ".venvs" / "pipeline" / "bin" / "ruff"
SPARK_TASKS = {step.name for step in STEPS}


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict:
    home = tmp_path_factory.mktemp("airflow-parse-home")
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    done = subprocess.run(
        [str(AIRFLOW_PY), str(Path(__file__).with_name("_dag_facts.py")), str(DAGS)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_dag_folder_imports_without_errors(facts):
    assert facts["import_errors"] == {}
    assert "quicexp_daily" in facts["dags"]


def test_dag_id_is_the_file_name(facts):
    for dag_id, dag in facts["dags"].items():
        assert Path(dag["fileloc"]).stem == dag_id


def test_parsing_is_fast_and_loads_no_heavy_module(facts):
    assert facts["file_seconds"], "no DAG file was parsed"
    for name, seconds in facts["file_seconds"].items():
        assert seconds < 2.0, f"{name} took {seconds:.2f}s to parse"
    assert facts["heavy_modules_loaded"] == []


def test_tags_docs_and_schedule(facts):
    dag = facts["dags"]["quicexp_daily"]
    assert dag["tags"] and "quicexp" in dag["tags"]
    assert dag["doc_md"]
    assert dag["catchup"] is False
    assert dag["max_active_runs"] == 1
    assert dag["timetable"] == "CronDataIntervalTimetable"


def test_days_run_in_order(facts):
    """Day D's ingest waits for D-1's (the experiment-to-date results of D read every earlier day);
    the DAG's real runs (test_dag_runs.py) back-fill one day, so the order is this configuration."""
    tasks = facts["dags"]["quicexp_daily"]["tasks"]
    assert {t for t, v in tasks.items() if v["depends_on_past"]} == {"ingest"}


def test_run_for_logical_day_starts_after_that_day(facts):
    """Cron data intervals: the scheduled run of day L covers [L, L+1), starts at L+1 00:00 UTC,
    and its logical date (ds, what every task processes) is L."""
    first = facts["dags"]["quicexp_daily"]["first_run"]
    assert first["logical_date"] == first["data_interval_start"] == "2026-06-01T00:00:00+00:00"
    assert first["data_interval_end"] == first["run_after"] == "2026-06-02T00:00:00+00:00"


def test_every_task_retries_and_records_failures(facts):
    for task_id, task in facts["dags"]["quicexp_daily"]["tasks"].items():
        assert task["retries"] >= 2, task_id
        assert task["has_failure_callback"] and task["has_retry_callback"], task_id
        assert task["execution_timeout"], task_id


def test_spark_steps_share_the_lake_pool(facts):
    tasks = facts["dags"]["quicexp_daily"]["tasks"]
    assert {t for t, v in tasks.items() if v["pool"] == "quicexp_lake"} == SPARK_TASKS
    # every report of the day in one task: one Spark session instead of one per experiment
    assert not any(v["is_mapped"] for v in tasks.values())


def test_landing_sensor_reschedules_and_times_out(facts):
    sensor = facts["dags"]["quicexp_daily"]["tasks"]["wait_for_landing"]
    assert sensor["mode"] == "reschedule"
    assert 0 < sensor["timeout"] <= 24 * 3600


def test_task_order(facts):
    downstream = {t: v["downstream"] for t, v in facts["dags"]["quicexp_daily"]["tasks"].items()}
    assert downstream == {
        "plan": ["dbt_build", "ingest", "ingest_qlog", "publish", "reports", "results", "wait_for_landing"],
        "wait_for_landing": ["ingest"],
        "ingest": ["ingest_qlog"],
        "ingest_qlog": ["dbt_build"],
        "dbt_build": ["results"],
        "results": ["reports"],
        "reports": ["publish"],
        "publish": [],
    }


def test_the_dag_runs_the_pipelines_step_list_in_its_order(facts):
    """One daily step list (quicexp.app.daily.STEPS): a task per step, chained in that order."""
    tasks = facts["dags"]["quicexp_daily"]["tasks"]
    names = [step.name for step in STEPS]
    assert set(names) <= set(tasks)
    for before, after in itertools.pairwise(names):
        assert after in tasks[before]["downstream"], (before, after)


def test_ruff_airflow_rules_and_banned_module_level_imports():
    clean = subprocess.run(
        [str(RUFF), "check", "--preview", str(DAGS)], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert clean.returncode == 0, clean.stdout
    probe = subprocess.run(
        [str(RUFF), "check", "--stdin-filename", str(DAGS / "probe_dag.py"), "-"],
        input="import pyspark\nimport quicexp.config\n", capture_output=True, text=True, cwd=REPO_ROOT,
    )  # fmt: skip
    assert probe.stdout.count("TID253") == 2, probe.stdout
