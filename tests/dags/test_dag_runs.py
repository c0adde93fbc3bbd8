"""Real runs of quicexp_daily through a real scheduler.

Fewest runs that prove each property, on days as small as they need to be (every day-run starts
five Spark JVMs, for ingest, qlog, dbt, results and the reports, and takes minutes). The run's
small lake (tests/conftest.py: ``small_lake``, the FHOL fleet at 300 clients, two days run
in-process by the same job functions the DAG's tasks call) is the lake they run on:

- its first day again, as an `airflow backfill create` run by the scheduler of
  `scripts/airflow.sh start` (what `make airflow` starts), after the newer day: every step is
  re-run after it did its work, and every bronze and gold table must be unchanged (results and
  reports rewritten, a new Delta version; the old day's report re-rendered). The ``plan`` task
  fails once (tests/dags/flaky_quicexp.sh) and is retried by Airflow;
- a day without landing data, run the way `make airflow-day` runs a day (`scripts/airflow.sh day`,
  before the back-fill, while the DAG is paused): its sensor fails after its (short) timeout, no
  task after it starts, nothing is written; the run is named after its day and the api-server
  serves its task logs (no "Could not read served logs");
- the task logs, read through the REST API as the UI reads them: the back-fill's dbt_build log has
  a line per model start and result and dbt's summary, each line with one timestamp (Airflow's),
  no padding, no colour codes, and no log holds the admin password.

The small lake's gold tables as of each of its days stay readable by Delta time travel (the
cluster test compares with its first day). Back-fill order across several days is the DAG's
configuration (``max_active_runs=1``, ingest's ``depends_on_past``), checked by
test_dag_integrity.py: a second scheduled day would cost five more JVM starts and prove nothing
the in-process days do not.
"""

from __future__ import annotations

import json
import re
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
    failure_records,
    namespace_env,
)
from tests.pipeline_lake import assert_same_tables, table_snapshots

pytestmark = pytest.mark.e2e

GOLD_TABLES = {"experiment_sufficient_stats", "experiment_results", "experiment_reports"}
#: the A/A placebo's tables and the health checks read from them (formed by a day's own run)
PLACEBO_TABLES = ("experiment_placebo_sufficient_stats", "experiment_placebo_tally")
PLACEBO_CHECKS = ("aa_placebo", "canary_coverage")
#: a day without landing data in the small lake's landing zone (its late uploads end days earlier)
EMPTY_DAY = "2026-07-25"
#: what `make airflow-day` names the run of EMPTY_DAY (dags/quicexp_airflow/day.py)
EMPTY_RUN_ID = f"manual__{EMPTY_DAY}T00:00:00+00:00"
#: a clock time: a task log line's own timestamp is Airflow's, the message must not carry another
CLOCK = re.compile(r"\d\d:\d\d:\d\d")


def _delta_version(spark, table: str) -> int:
    return int(spark.sql(f"describe history {table}").agg({"version": "max"}).collect()[0][0])


def _env(airflow_env, settings, small_lake) -> dict[str, str]:
    return namespace_env(
        airflow_env, settings, small_lake.settings.landing_root, small_lake.registry_file
    )


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

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.get(f"dags/{dag_id}/dagRuns/{run_id}").json()["state"]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        found = self.get(f"dags/{dag_id}/dagRuns/{run_id}/taskInstances", limit=100).json()
        return {t["task_id"]: t["state"] for t in found["task_instances"]}

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> dict:
        """The last try's log as the UI reads it: ``{"events": [...], "sources": [...]}`` (each event
        a dict with its timestamp, level, logger and message; the sources the api-server read)."""
        task = f"dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        tries = self.get(task).json()["try_number"]
        found = self.get(f"{task}/logs/{tries}", full_content="true")
        assert found.status_code == 200, found.text[-2000:]
        content = found.json()["content"]
        sources = [s for entry in content for s in entry.get("sources") or []]
        return {"events": [e for e in content if not str(e.get("event", "")).startswith("::")],
                "sources": sources}  # fmt: skip



def _create_backfill(env: dict, day: str, attempts: int = 5) -> None:
    """`airflow backfill create` while the DAG is still paused (its queued runs start at the
    unpause), so the scheduler is not writing this DAG's runs at the same time. Airflow's SQLite
    database refuses a write whose read snapshot a concurrent write made stale ("database is
    locked" at once, whatever the busy timeout; Airflow supports SQLite for development only):
    such an attempt leaves a backfill without runs, which the scheduler marks complete, and is
    tried again."""
    for _ in range(attempts):
        created = _airflow(
            env, "backfill", "create", "--dag-id", DAG_ID, "--from-date", day, "--to-date", day,
            "--max-active-runs", "1", "--reprocess-behavior", "completed",
        )  # fmt: skip
        if created.returncode == 0:
            return
        if not any(s in created.stderr for s in ("database is locked", "Another backfill is running")):
            break
        time.sleep(10)
    raise AssertionError(created.stderr[-3000:])


@pytest.fixture(scope="module")
def backfilled(airflow_env, small_lake, spark, tmp_path_factory):
    """The small lake's first day back-filled by a real scheduler after its second (its ``plan``
    task failing once), after a `make airflow-day` run of a day without landing data; every bronze
    and gold table of the lake before and after, and the task logs the api-server serves. The
    snapshots before are taken while Airflow starts."""
    settings = small_lake.settings
    first = small_lake.days[0].isoformat()
    work = tmp_path_factory.mktemp("dags-bf")
    flag, start_log = work / "fail-once", work / "airflow-start.log"
    flag.write_text(f"plan --date {first}")
    plain = _env(airflow_env, settings, small_lake)
    env = {
        **plain,
        "QUICEXP_BIN": str(Path(__file__).with_name("flaky_quicexp.sh")),
        "QUICEXP_TEST_REAL_BIN": str(REPO_ROOT / ".venvs" / "pipeline" / "bin" / "quicexp"),
        "QUICEXP_TEST_FAIL_ONCE": str(flag),
    }
    schemas = (settings.bronze_schema, settings.gold_schema)
    with start_log.open("w") as out:
        starting = subprocess.Popen(["bash", str(AIRFLOW_SCRIPT), "start"], env=env, stdout=out, stderr=out)
    try:
        before = {s: table_snapshots(spark, s) for s in schemas}
        results_version = _delta_version(spark, f"{settings.gold_schema}.experiment_results")
        assert starting.wait(timeout=900) == 0, start_log.read_text()[-3000:]
        api = AirflowApi(env)
        dag = api.wait_for_dag(DAG_ID)
        began = time.monotonic()
        # `make airflow-day` while the DAG is paused (it refuses an unpaused DAG beside a scheduler),
        # with a landing timeout of 0: one poke, then the timeout. A reschedule would race the poke's
        # process exit under `dag.test` (dags/quicexp_airflow/day.py): on a loaded CI machine a poke
        # took longer to exit than 6 s and the run hung until this call's timeout.
        by_hand = subprocess.run(["bash", str(AIRFLOW_SCRIPT), "day", EMPTY_DAY],
                                 env={**env, "QUICEXP_AIRFLOW_LANDING_TIMEOUT": "0"},
                                 capture_output=True, text=True, timeout=600)  # fmt: skip
        print(f"airflow-day of a day without landing data: {time.monotonic() - began:.0f}s")
        _create_backfill(env, first)
        assert _airflow(env, "dags", "unpause", DAG_ID).returncode == 0
        deadline = time.monotonic() + 3000
        while time.monotonic() < deadline:
            runs = api.backfill_runs(DAG_ID)
            if runs and all(r["state"] in ("success", "failed") for r in runs):
                break
            time.sleep(10)
        runs = api.backfill_runs(DAG_ID)
        states = {r["logical_date"][:10]: r["state"] for r in runs}
        empty = SimpleNamespace(state=api.run_state(DAG_ID, EMPTY_RUN_ID),
                                tasks=api.task_states(DAG_ID, EMPTY_RUN_ID), console=by_hand,
                                logs={t: api.task_log(DAG_ID, EMPTY_RUN_ID, t) for t in ("plan", "wait_for_landing")})
        backfill_run = next((r["dag_run_id"] for r in runs if r["logical_date"][:10] == first), None)
        logs = {t: api.task_log(DAG_ID, backfill_run, t) for t in ("plan", "ingest", "dbt_build")} if backfill_run else {}
        print(f"back-fill: {states}, empty day {empty.state}, in {time.monotonic() - began:.0f}s")
    finally:
        if starting.poll() is None:
            starting.wait(timeout=900)
        subprocess.run(
            ["bash", str(AIRFLOW_SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=300
        )  # fmt: skip
    after = {s: table_snapshots(spark, s) for s in schemas}
    password = json.loads(Path(env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]).read_text())["admin"]
    return SimpleNamespace(settings=settings, env=env, first=first, dag=dag, states=states, flag=flag,
                           empty=empty, before=before, after=after, results_version=results_version,
                           logs=logs, start_output=start_log.read_text(), password=password)  # fmt: skip


def test_day_without_landing_data_fails_the_sensor_and_writes_nothing(backfilled, small_lake, spark):
    settings, landing = backfilled.settings, small_lake.settings.landing_root
    assert not (landing / f"upload_date={EMPTY_DAY}").exists()
    assert backfilled.empty.state == "failed", backfilled.empty
    tasks = backfilled.empty.tasks
    assert tasks["plan"] == "success" and tasks["wait_for_landing"] == "failed", tasks
    assert {t: s for t, s in tasks.items() if t not in ("plan", "wait_for_landing")} == dict.fromkeys(
        ("ingest", "ingest_qlog", "dbt_build", "results", "reports", "publish"), "upstream_failed"
    ), tasks
    # Airflow 3.1's scheduler still retries a sensor that timed out (recorded as a retry without
    # an error); each retry times out at once, as the timeout counts from the first try's start.
    # The task's own failure callback carries the sensor's error; the scheduler may run the
    # callbacks once more for the same try when the executor reports it, with no error to pass.
    records = [r for r in failure_records(backfilled.env) if r["logical_date"].startswith(EMPTY_DAY)]
    assert {r["task_id"] for r in records} == {"wait_for_landing"}, records
    assert records and records[-1]["event"] == "failure", records
    last_try = max(r["try_number"] for r in records)
    message = f"no landing data for {EMPTY_DAY}: {landing}/upload_date={EMPTY_DAY} holds no batch files"
    with_error = [r for r in records if r["error"] is not None]
    assert all(r["error"].startswith(message) for r in with_error), with_error
    assert all(r["error_type"] == "AirflowSensorTimeout" for r in with_error), with_error
    assert any(r["event"] == "failure" and r["try_number"] == last_try for r in with_error), records
    # nothing written for the day: no run, audit or bronze row, no result, no report, no manifest
    bronze, gold = settings.bronze_schema, settings.gold_schema
    for table, column in ((f"{bronze}.ingest_runs", "upload_date"), (f"{bronze}.ingest_audit", "upload_date"),
                          (f"{gold}.experiment_results", "as_of_date"), (f"{gold}.experiment_reports", "as_of_date")):
        assert spark.table(table).where(f"{column} = date'{EMPTY_DAY}'").count() == 0, table
    assert not (settings.reports_dir / "_published" / f"{EMPTY_DAY}.json").exists()
    assert not (landing / f"upload_date={EMPTY_DAY}").exists()


def test_airflow_day_names_the_run_after_its_day_and_shows_its_task_logs(backfilled):
    """`make airflow-day`: the run is named after the day it processed, its tasks' log lines are
    printed as they run (Airflow's own chatter goes to a file), and the api-server serves every task
    log from the file the task wrote (the UI said "Could not read served logs" for such runs)."""
    console = backfilled.empty.console
    assert console.returncode == 1, console.stderr[-3000:]  # the day failed: no landing data
    out = console.stdout.splitlines()
    assert out[0].startswith(f"airflow-day: quicexp_daily for {EMPTY_DAY} as run {EMPTY_RUN_ID}"), out[:3]
    assert out[-1].startswith(f"airflow-day: run {EMPTY_RUN_ID}: failed"), out[-3:]
    assert any(re.match(r"\d\d:\d\d:\d\d plan INFO plan for " + EMPTY_DAY, line) for line in out), out
    assert any(re.match(r"\d\d:\d\d:\d\d wait_for_landing ", line) for line in out), out
    assert not [line for line in out if "No tasks to run" in line or "[info" in line], out
    for task, log in backfilled.empty.logs.items():
        assert log["events"], task
        assert not [s for s in log["sources"] if "Could not read served logs" in s], log["sources"]
        assert any(f"run_id={EMPTY_RUN_ID}" in s for s in log["sources"]), log["sources"]
    assert any(e["event"].startswith(f"plan for {EMPTY_DAY}") for e in backfilled.empty.logs["plan"]["events"])


def test_the_dbt_task_log_shows_every_model_and_the_summary_plainly(backfilled):
    """The on-call's view of dbt_build as the UI reads it: a START and an OK line per model as
    dbt runs them, a line per data test, dbt's summary; one timestamp per line (Airflow's), no
    padding, no colour codes."""
    events = backfilled.logs["dbt_build"]["events"]
    ours = [e for e in events if e.get("logger") == "quicexp_airflow.pipeline"]
    lines = [e["event"] for e in ours]
    started = [m[1] for line in lines if (m := re.fullmatch(r"quicexp\.dbt: \d+/\d+ START sql \w+ model (\S+)", line))]
    built = [m[1] for line in lines if (m := re.fullmatch(r"quicexp\.dbt: \d+/\d+ OK sql \w+ model (\S+) in \d+\.\ds", line))]
    assert len(started) >= 10 and sorted(started) == sorted(built), lines
    assert any(re.fullmatch(r"quicexp\.dbt: \d+/\d+ PASS test \w+ in \d+\.\ds", line) for line in lines), lines
    finished = [i for i, line in enumerate(lines) if line.startswith("quicexp.dbt: Finished running ")]
    done = [i for i, line in enumerate(lines) if re.match(r"quicexp\.dbt: Done\. PASS=\d+ WARN=0 ERROR=0 SKIP=0 ", line)]
    assert finished and done, lines
    last_model = max(i for i, line in enumerate(lines) if " OK sql " in line)
    assert last_model < finished[0] < done[0], lines
    for event in ours:
        text = event["event"]
        assert not CLOCK.search(text) and text == text.strip() and "\x1b" not in text, repr(text)
    assert {e["level"] for e in ours} <= {"info", "warning"}, {e["level"] for e in ours}


def test_no_password_on_the_console_or_in_a_task_log(backfilled):
    password, start = backfilled.password, backfilled.start_output
    assert password not in start
    assert f"password in {backfilled.env['AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE']}" in start
    assert password not in backfilled.empty.console.stdout + backfilled.empty.console.stderr
    for logs in (backfilled.logs, backfilled.empty.logs):
        for task, log in logs.items():
            text = json.dumps(log, ensure_ascii=False)
            assert password not in text and "\x1b" not in text, task


def test_backfill_runs_the_day_and_retries_the_injected_failure(backfilled):
    assert any(t["name"] == "quicexp" for t in backfilled.dag["tags"])
    assert backfilled.states == {backfilled.first: "success"}, backfilled.states
    assert not backfilled.flag.exists(), "the injected failure did not happen"
    # Unpausing also makes the scheduler start the latest interval (today): only the back-fill's
    # day is this test's concern.
    # The scheduler may run a try's callbacks a second time, with no error (see the empty day).
    records = [r for r in failure_records(backfilled.env) if r["logical_date"][:10] == backfilled.first]
    assert {(r["task_id"], r["event"], r["try_number"]) for r in records} == {("plan", "retry", 1)}, records
    told = [r for r in records if r["error"] is not None]
    assert len(told) == 1 and "injected failure" in told[0]["error"], records


def test_backfill_of_an_old_day_after_a_newer_day_writes_it_and_changes_nothing(backfilled, spark):
    """Every table is unchanged but the old day's reports: a day's report is rendered by that day's
    run from the data known then (docs/decisions.md), so re-running the day after a newer day
    re-renders it. The data the reports are drawn from (results, marts, bronze) is equal."""
    settings = backfilled.settings
    results = f"{settings.gold_schema}.experiment_results"
    assert _delta_version(spark, results) > backfilled.results_version, "the old day's results were not rewritten"
    before, after = backfilled.before, backfilled.after
    assert GOLD_TABLES <= set(after[settings.gold_schema])
    assert all(len(frame) > 0 for frame in after[settings.gold_schema].values())
    reports = {
        "before": before[settings.gold_schema]["experiment_reports"],
        "after": after[settings.gold_schema]["experiment_reports"],
    }
    # A rerun is a new run of the day: its id and times differ, not its state. The rows are put
    # back in order without them (the canonical order sorted on the finish time, which changed).
    runs = {k: snap[settings.bronze_schema]["ingest_runs"] for k, snap in (("before", before), ("after", after))}
    assert set(runs["after"]["run_id"]) != set(runs["before"]["run_id"]), "the day was not ingested again"
    apart = ("experiment_reports", "ingest_runs", *PLACEBO_TABLES, "experiment_health")
    for schema in before:
        assert_same_tables({n: f for n, f in after[schema].items() if n not in apart},
                           {n: f for n, f in before[schema].items() if n not in apart})  # fmt: skip
    # The A/A placebo of a look is formed by that day's run only (docs/stats.md, "Health checks"),
    # like its report: re-running the old day re-forms its placebo from what is known now, so the
    # placebo's rows of that day, and the health rows read from them, may differ; nothing else.
    gold = settings.gold_schema
    for name in PLACEBO_TABLES:
        assert_same_tables(*({name: _not_on(snap[gold][name], backfilled.first)} for snap in (after, before)))
    health = {k: snap[gold]["experiment_health"] for k, snap in (("after", after), ("before", before))}
    placebo = {k: h["check"].isin(PLACEBO_CHECKS) for k, h in health.items()}
    assert_same_tables(*({"experiment_health": health[k][~placebo[k]].reset_index(drop=True)}
                         for k in ("after", "before")))  # fmt: skip
    assert_same_tables(*({"experiment_health": _not_on(health[k][placebo[k]], backfilled.first)}
                         for k in ("after", "before")))  # fmt: skip
    old_checks = {k: h[placebo[k] & (h["as_of_date"].astype(str) == backfilled.first)][["experiment_id", "check", "estimator"]]
                  .sort_values(["experiment_id", "check", "estimator"]).reset_index(drop=True) for k, h in health.items()}  # fmt: skip
    assert len(old_checks["after"]) and old_checks["after"].equals(old_checks["before"])
    assert_same_tables({"ingest_runs": _without_run_identity(runs["after"])},
                       {"ingest_runs": _without_run_identity(runs["before"])})  # fmt: skip
    old_day = {
        k: f[f["as_of_date"].astype(str) == backfilled.first].reset_index(drop=True)
        for k, f in reports.items()
    }
    newer = {
        k: f[f["as_of_date"].astype(str) != backfilled.first].reset_index(drop=True)
        for k, f in reports.items()
    }
    assert_same_tables({"reports": newer["after"]}, {"reports": newer["before"]})
    assert sorted(old_day["after"]["experiment_id"]) == sorted(old_day["before"]["experiment_id"])
    # the same verdicts: the report's text is not compared (a number on a rounding boundary of
    # its display format may print differently)
    key = ["as_of_date", "experiment_id", "title", "is_trustworthy", "significant_rows"]
    assert old_day["after"][key].equals(old_day["before"][key])


def _not_on(frame, day: str):
    """The rows of ``frame`` of every as-of date but ``day``."""
    return frame[frame["as_of_date"].astype(str) != day].reset_index(drop=True)


def _without_run_identity(runs):
    return (
        runs.drop(columns=["run_id", "started_at", "finished_at"])
        .sort_values(["upload_date", "job"])
        .reset_index(drop=True)
    )


def test_backfill_ingests_its_logical_day_and_publishes(backfilled, small_lake, spark):
    settings = backfilled.settings
    uploads = {
        r[0].isoformat()
        for r in spark.table(f"{settings.bronze_schema}.ingest_audit")
        .select("upload_date")
        .distinct()
        .collect()
    }
    # the small lake's days and no other (the run ingests its own logical day)
    assert uploads == {d.isoformat() for d in small_lake.days}, "each run must ingest exactly its logical day"
    manifest = json.loads((settings.reports_dir / "_published" / f"{backfilled.first}.json").read_text())
    assert [r["experiment"] for r in manifest["reports"]]
    assert all((settings.reports_dir / r["html"]["path"]).stat().st_size > 0 for r in manifest["reports"])
    assert backfilled.first in (settings.reports_dir / "index.html").read_text()
