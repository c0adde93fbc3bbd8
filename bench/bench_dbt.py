"""How long does the dbt build take for one day of ~10M events?

``python bench/bench_dbt.py [--clients N] [--home DIR] [--keep]`` simulates one day of the fhol
scenario in Parquet (about 24 events per client-day, so the default 425,000 clients give ~10M
events), ingests it with the ingest job, publishes the registry, then times
``dbt run --full-refresh`` of every model for that day in the pipeline's own Spark session
(local mode, the configured cores) and prints seconds, events/s and the per-model times from
dbt's run results. Each stage logs its counts and rate; the run's row goes to
bench/results/dbt.csv (bench/results.py).

The lake goes to a temporary home (``--home`` to choose, ``--keep`` to keep it); the Derby
metastore server of that home is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from quicexp.config import REPO_ROOT, load_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` importable when run as a script

DAY = date(2026, 6, 15)


def _stage(name: str, start: float, count: int | None = None, what: str = "events") -> None:
    took = time.perf_counter() - start
    rate = f", {count / took:,.0f} {what}/s" if count else ""
    print(f"[bench_dbt] {name}: {took:,.1f} s{f' ({count:,} {what}{rate})' if count else ''}", flush=True)


def row(events: int, dbt_run_s: float) -> dict[str, object]:
    """The run's measured fields of bench/results/dbt.csv (the columns in bench/results.py)."""
    return {"events": events, "dbt_run_s": dbt_run_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=425_000)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true", help="reuse the home's bronze")
    args = parser.parse_args()
    from quicexp.app.cli import configure_logging

    configure_logging()  # the jobs' per-stage progress lines

    home = args.home or Path(tempfile.mkdtemp(prefix="quicexp-bench-dbt-"))
    settings = load_settings(home=home)
    import jobs.ingest
    import jobs.registry
    from quicexp.app.dbt import run_dbt
    from quicexp.catalog import stop_derby
    from quicexp.spark import build_spark
    from simulation.runner import run_scenario

    try:
        if not args.skip_ingest:
            start = time.perf_counter()
            manifest = run_scenario(
                REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml", settings.landing_root,
                days=1, clients=args.clients, fmt="parquet", start_date=DAY,
            )  # fmt: skip
            events = int(manifest["events_total"])
            _stage("simulate", start, events)
        spark = build_spark(settings, "bench-dbt")
        if not args.skip_ingest:
            jobs.registry.run(spark, settings, DAY)
            start = time.perf_counter()
            summary = jobs.ingest.run(spark, settings, DAY)
            _stage("ingest", start, summary.total("rows_loaded"))
        events = sum(
            spark.table(f"{settings.bronze_schema}.{kind}").count()
            for kind in ("http_transactions", "search_queries", "video_playbacks", "connections",
                         "page_loads", "multipath_paths", "header_compression")
        )  # fmt: skip
        start = time.perf_counter()
        run_dbt("run", settings, DAY, ["--full-refresh"])
        took = time.perf_counter() - start
        _stage("dbt run (all models, one day)", start, events)
        results = json.loads((settings.home / "dbt" / "target" / "run_results.json").read_text())
        print("[bench_dbt] per model:")
        for r in sorted(results["results"], key=lambda r: -r["execution_time"]):
            print(f"    {r['unique_id'].split('.')[-1]:<52} {r['execution_time']:8.1f} s")
        print(f"[bench_dbt] RESULT events={events:,} dbt_seconds={took:.1f} events_per_s={events / took:,.0f}")
        from bench import results

        results.append("dbt", row(events, took))
    finally:
        stop_derby(settings)
        if not args.keep and args.home is None:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
