"""Run by the *Airflow* interpreter (tests/dags/test_dag_integrity.py): load the DAG folder the way
the dag-processor does (a bundle DagBag) and print what the tests check, as one JSON object.

Kept out of pytest's collection (leading underscore): pytest runs in the pipeline environment,
which has no Airflow, and the Airflow environment has no pytest.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _first_run(dag) -> dict:
    """The first scheduled run the timetable creates from the DAG's start date."""
    from airflow.timetables.base import TimeRestriction

    info = dag.timetable.next_dagrun_info(
        last_automated_data_interval=None,
        restriction=TimeRestriction(earliest=dag.start_date, latest=None, catchup=True),
    )
    return {
        "logical_date": info.logical_date.isoformat(),
        "run_after": info.run_after.isoformat(),
        "data_interval_start": info.data_interval.start.isoformat(),
        "data_interval_end": info.data_interval.end.isoformat(),
    }


def main(dags_dir: str) -> None:
    from airflow.models.dagbag import BundleDagBag

    started = time.perf_counter()
    bag = BundleDagBag(dag_folder=dags_dir, bundle_path=dags_dir, include_examples=False)
    seconds = time.perf_counter() - started
    heavy = sorted(
        m
        for m in ("pyspark", "pandas", "numpy", "jobs", "stats", "simulation", "quicexp", "dbt")
        if m in sys.modules
    )
    facts = {
        "import_errors": {str(k): v for k, v in bag.import_errors.items()},
        "load_seconds": seconds,
        "file_seconds": {Path(s.file).name: s.duration.total_seconds() for s in bag.dagbag_stats},
        "heavy_modules_loaded": heavy,
        "dags": {},
    }
    for dag_id, dag in bag.dags.items():
        facts["dags"][dag_id] = {
            "first_run": _first_run(dag),
            "fileloc": dag.fileloc,
            "tags": sorted(dag.tags),
            "doc_md": bool(dag.doc_md and dag.doc_md.strip()),
            "catchup": dag.catchup,
            "max_active_runs": dag.max_active_runs,
            "timetable": type(dag.timetable).__name__,
            "timetable_summary": dag.timetable.summary,
            "tasks": {
                t.task_id: {
                    "retries": t.retries,
                    "execution_timeout": t.execution_timeout.total_seconds()
                    if t.execution_timeout
                    else None,
                    "timeout": getattr(t, "timeout", None),
                    "mode": getattr(t, "mode", None),
                    "pool": t.pool,
                    "depends_on_past": t.depends_on_past,
                    "has_failure_callback": bool(t.on_failure_callback),
                    "has_retry_callback": bool(t.on_retry_callback),
                    "downstream": sorted(t.downstream_task_ids),
                    "is_mapped": bool(getattr(t, "is_mapped", False)),
                }
                for t in dag.tasks
            },
        }
    print("\n" + json.dumps(facts))


if __name__ == "__main__":
    main(sys.argv[1])
