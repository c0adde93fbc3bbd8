"""
### quicexp_daily: one day of every running experiment

For its **logical day D** (`{{ ds }}`, the start of the run's one-day data interval) the run:

1. **plan**: `quicexp plan --date D --json` in the pipeline environment: the day's landing
   folder, the reports folder, the experiments of `registry/experiments.yml` that run on D (a new
   experiment needs no DAG change) and the command of each step below, from the pipeline's one
   step list (`quicexp.app.daily.STEPS`, which `quicexp run-day` runs in-process);
2. **wait_for_landing**: waits (reschedule mode) for batch files in
   `<landing_root>/upload_date=D/`; without them it fails after its timeout with a clear message
   and nothing is written;
3. **ingest**: `quicexp ingest --date D` (landing → bronze, replace-where on `upload_date = D`);
   then **ingest_qlog**: `quicexp ingest-qlog --date D` (the day's qlog traces →
   bronze.qlog_connections; a day without qlog writes nothing);
4. **dbt_build**: `quicexp dbt build --date D` (staging → intermediate → marts, with their data
   tests, in the pipeline's Spark session; dbt unit tests run in CI, not daily);
5. **results**: `quicexp results --date D` (gold.experiment_sufficient_stats → stats engine →
   gold.experiment_results);
6. **reports**: `quicexp report --date D --experiment X --experiment Y …`, every running experiment
   in one Spark session (one report failing does not stop the others; the task then fails naming
   it, and its retry rewrites them all, which is idempotent);
7. **publish**: writes the day's manifest (`<reports_dir>/_published/D.json`) and rebuilds
   `<reports_dir>/index.html` (every day with reports, and the run that published it).

**Schedule.** Cron data intervals: the run for D starts after D ends (00:00 UTC on D+1) and
processes event and upload date D; nothing reads "now" or "latest". `catchup=False`: past days
are back-filled on purpose, in order,
`airflow backfill create --dag-id quicexp_daily --from-date A --to-date B --max-active-runs 1`
(add `--reprocess-behavior completed` to re-run days that already ran).
Every step replaces exactly its day's slice, so re-running any day (or an old day after newer
ones) is safe. Results for D are experiment-to-date: after re-ingesting an old day, re-run the
days after it too (clear with *Future*).

**Operations.** Spark steps share the `quicexp_lake` pool (one slot: one Spark job at a time on
the single-machine lake) and `max_active_runs=1`. Every task retries (exponential back-off);
failures and retries are recorded as JSON lines in `$AIRFLOW_HOME/quicexp-task-failures.jsonl`.
Timings come from `QUICEXP_AIRFLOW_*` variables (see `dags/quicexp_airflow/config.py`).
See docs/orchestration.md.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task
from airflow.timetables.interval import CronDataIntervalTimetable

from quicexp_airflow.callbacks import record_failure, record_retry
from quicexp_airflow.config import DagTiming
from quicexp_airflow.landing import LandingSensor

TIMING = DagTiming.from_env()
LAKE_POOL = "quicexp_lake"

default_args = {
    "owner": "quicexp",
    "retries": TIMING.retries,
    "retry_delay": TIMING.retry_delay,
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(hours=1),
    "execution_timeout": timedelta(minutes=10),
    "on_failure_callback": record_failure,
    "on_retry_callback": record_retry,
}

with DAG(
    dag_id="quicexp_daily",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 6, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=24),
    default_args=default_args,
    tags=["quicexp", "daily", "spark", "dbt"],
    doc_md=__doc__,
) as dag:

    @task(multiple_outputs=True)
    def plan(ds: str | None = None) -> dict:
        """The day's landing folder, reports folder and running experiments (pipeline env)."""
        from quicexp_airflow.pipeline import plan_day

        return plan_day(ds)

    # depends_on_past: day D's ingest waits for D-1's to have succeeded (the ingest also refuses to
    # run after an unfinished day, see docs/ingestion.md); no other task waits on the past
    @task(pool=LAKE_POOL, execution_timeout=TIMING.spark_timeout, depends_on_past=True)
    def ingest(steps: list[dict]) -> str | None:
        """Landing → bronze for upload day D (one Spark job)."""
        from quicexp_airflow.pipeline import run_step

        return run_step(steps, "ingest")

    @task(pool=LAKE_POOL, execution_timeout=TIMING.spark_timeout)
    def dbt_build(steps: list[dict]) -> str | None:
        """dbt build (models and their data tests) for day D in the pipeline's Spark session."""
        from quicexp_airflow.pipeline import run_step

        return run_step(steps, "dbt_build")

    @task(pool=LAKE_POOL, execution_timeout=TIMING.spark_timeout)
    def ingest_qlog(steps: list[dict]) -> str | None:
        """The day's qlog traces → bronze.qlog_connections (nothing written without qlog)."""
        from quicexp_airflow.pipeline import run_step

        return run_step(steps, "ingest_qlog")

    @task(pool=LAKE_POOL, execution_timeout=TIMING.spark_timeout)
    def results(steps: list[dict]) -> str | None:
        """Sufficient statistics → statistics engine → gold.experiment_results for day D."""
        from quicexp_airflow.pipeline import run_step

        return run_step(steps, "results")

    @task(pool=LAKE_POOL, execution_timeout=TIMING.spark_timeout)
    def reports(steps: list[dict]) -> str | None:
        """The HTML and Markdown reports of the experiments running on D, in one Spark session."""
        from quicexp_airflow.pipeline import run_step

        return run_step(steps, "reports")

    @task(multiple_outputs=False, trigger_rule="none_failed")
    def publish(
        reports_dir: str, day: str, experiments: list[str], run_id: str | None = None
    ) -> dict:
        """Day manifest (`_published/D.json`) and the reports index, written atomically."""
        from pathlib import Path

        from quicexp_airflow.publish import publish_day

        manifest = publish_day(Path(reports_dir), day, list(experiments), run_id or "")
        return {"day": manifest["day"], "reports": len(manifest["reports"])}

    day = plan()
    landing = LandingSensor(
        task_id="wait_for_landing",
        landing_dir=day["landing_dir"],
        day="{{ ds }}",
        poke_interval=TIMING.poke_interval,
        timeout=TIMING.landing_timeout,
        mode="reschedule",
    )
    (
        landing
        >> ingest(day["steps"])
        >> ingest_qlog(day["steps"])
        >> dbt_build(day["steps"])
        >> results(day["steps"])
        >> reports(day["steps"])
        >> publish(day["reports_dir"], day["day"], day["experiments"])
    )
