"""The whole daily pipeline against a DuckDB reference doing the same work (issue #15).

``python bench/bench_pipeline.py --events N --format parquet|jsonl`` (``make bench-pipeline``):

1. simulates one upload day of the FHOL fleet of about N events (cached in var/bench/);
2. runs the pipeline on it as the DAG does, each stage a fresh ``quicexp`` process with the
   default settings and the daily step's command (``quicexp.app.daily.STEPS``): ``quicexp ingest``,
   ``quicexp dbt build`` (models and data tests), ``quicexp results`` (logs to files in the work dir);
3. runs the DuckDB reference (bench/reference/) on the same landing files;
4. exports the pipeline's outputs (untimed) and compares them with the reference's
   (bench/reference/compare.py) — a difference fails the bench before any time is printed;
5. prints seconds and events/s per stage for both, and last ``pipeline/reference: X.XXx``;
6. appends the run's row to bench/results/pipeline.csv (bench/results.py; ``BENCH_RECORD=0`` not to).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EVENTS_PER_CLIENT_DAY = 23.5  # the fhol scenario, all kinds, one day (bench/bench_ingest.py)
DAY = "2026-06-15"
QUICEXP = REPO / ".venvs" / "pipeline" / "bin" / "quicexp"


def row(events: int, fmt: str, pipeline: dict[str, float], reference: dict[str, float]) -> dict[str, object]:
    """The run's measured fields of bench/results/pipeline.csv (the columns in bench/results.py)."""
    p_total, r_total = sum(pipeline.values()), sum(reference.values())
    return {"events": events, "format": fmt, "ingest_s": pipeline["ingest"], "dbt_build_s": pipeline["dbt build"],
            "results_s": pipeline["results"], "pipeline_s": p_total, "reference_ingest_s": reference["ingest"],
            "reference_gold_s": reference["gold"], "reference_s": r_total, "ratio": p_total / r_total}  # fmt: skip


def _daily_command(step: str, day: date) -> list[str]:
    """The ``quicexp`` arguments of the daily step ``step`` for ``day``, as the DAG runs it."""
    from quicexp.app.daily import STEPS

    return next(s for s in STEPS if s.name == step).command(day, [])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def simulate(landing: Path, events: int, fmt: str) -> None:
    from simulation.runner import run_scenario

    if (landing / "_manifest.json").exists():
        print(f"landing zone cached in {landing}", flush=True)
        return
    clients = max(100, int(events / EVENTS_PER_CLIENT_DAY))
    print(f"simulating {clients} clients ({fmt}) into {landing} ...", flush=True)
    started = time.perf_counter()
    tmp = landing.with_name(landing.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    run_scenario(REPO / "simulation/scenarios/fhol.yaml", tmp, days=1, clients=clients, seed=11, fmt=fmt,
                 start_date=DAY)
    tmp.rename(landing)
    print(f"simulated in {time.perf_counter() - started:.0f}s", flush=True)


def run_stage(name: str, args: list[str], env: dict, log_dir: Path) -> float:
    log = log_dir / f"{name}.log"
    print(f"pipeline {name}: {' '.join(args)} (log {log}) ...", flush=True)
    started = time.perf_counter()
    with open(log, "w") as fh:
        code = subprocess.call([str(QUICEXP), *args], env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
    seconds = time.perf_counter() - started
    if code != 0:
        tail = log.read_text().splitlines()[-5:]
        sys.exit(f"bench-pipeline: pipeline {name} failed (exit {code}), see {log}: " + " | ".join(tail))
    print(f"pipeline {name}: {seconds:.1f}s", flush=True)
    return seconds


def export(out: Path) -> None:
    """(Subprocess, untimed) the pipeline's outputs the comparison reads, as Parquet."""
    from pyspark.sql import functions as F

    from quicexp.catalog import stop_derby
    from quicexp.config import load_settings
    from quicexp.spark import build_spark

    settings = load_settings()
    spark = build_spark(settings, "bench-export")
    try:
        export_tables(spark, settings, out, F)
    finally:
        spark.stop()
        stop_derby(settings)


def export_tables(spark, settings, out: Path, F=None) -> None:
    from pyspark.sql import functions as F

    b, s, g = settings.bronze_schema, settings.silver_schema, settings.gold_schema
    frames = {
        "audit": spark.table(f"{b}.ingest_audit").select(
            "kind", "upload_date", F.regexp_extract("source_file", r"([^/]+)$", 1).alias("file"),
            "rows_read", "rows_loaded", "rows_quarantined", "rows_duplicate", "rows_late"),
        "quarantine": spark.table(f"{b}.quarantine").groupBy("kind", "upload_date", "reason")
        .agg(F.count(F.lit(1)).alias("n")),
        "sufficient_stats": spark.table(f"{g}.experiment_sufficient_stats"),
        "binned": spark.table(f"{s}.int_quantile_values_binned_to_client_days"),
    }
    for name, df in frames.items():
        df.coalesce(1).write.mode("overwrite").parquet(str(out / name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    parser.add_argument("--export", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export:
        export(args.export)
        return

    from bench.reference.compare import compare
    from bench.reference.driver import dbt_vars, run_reference

    work = REPO / "var" / "bench" / f"pipeline-{args.events}-{args.format}"
    landing = work / "landing"
    simulate(landing, args.events, args.format)
    # The day's own upload day. The simulator also writes the few events uploaded late on the next
    # days; the pipeline would take those in on those days' runs, so neither side reads them here.
    days = [date.fromisoformat(DAY)]
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)  # a fresh lake: the pipeline's first run of the day
    for d in ("out-pipeline", "out-reference"):
        shutil.rmtree(work / d, ignore_errors=True)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "QUICEXP_HOME": str(home), "QUICEXP_LANDING_ROOT": str(landing),
           "QUICEXP_CATALOG__PORT": str(_free_port())}
    registry = REPO / "registry" / "experiments.yml"

    pipeline: dict[str, float] = {}
    try:
        run_day = max(days)
        for stage, label in (("ingest", "ingest"), ("dbt_build", "dbt build"), ("results", "results")):
            pipeline[label] = run_stage(stage, _daily_command(stage, run_day), env, logs)
        print("exporting the pipeline's outputs for the comparison (untimed) ...", flush=True)
        with open(logs / "export.log", "w") as fh:
            code = subprocess.call([sys.executable, __file__, "--export", str(work / "out-pipeline")], env=env,
                                   stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
        if code:
            sys.exit(f"bench-pipeline: export failed, see {logs / 'export.log'}")
    finally:
        subprocess.call([str(QUICEXP), "catalog", "stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    print("reference (DuckDB) on the same files ...", flush=True)
    reference = run_reference(landing, days, registry, work / "out-reference",
                              progress=lambda line: print(line, flush=True))

    result = compare(work / "out-pipeline", work / "out-reference", dbt_vars()["quantile_bin_width"])
    print("\n".join(result.lines()))
    if not result.ok:
        sys.exit("bench-pipeline: the pipeline and the reference disagree; no time is reported")

    events = _events(work)
    print(f"\nupload day {DAY}: {events:,} landing rows ({args.format}); {_load()}")
    print(f"{'stage':<28}{'seconds':>10}{'events/s':>14}")
    for label, sec in [*(("pipeline " + k, v) for k, v in pipeline.items()),
                       *(("reference " + k, v) for k, v in reference.items())]:
        print(f"{label:<28}{sec:>10.1f}{events / sec:>14,.0f}")
    p_total, r_total = sum(pipeline.values()), sum(reference.values())
    print(f"{'pipeline total':<28}{p_total:>10.1f}{events / p_total:>14,.0f}")
    print(f"{'reference total':<28}{r_total:>10.1f}{events / r_total:>14,.0f}")
    print(f"pipeline/reference: {p_total / r_total:.2f}x")
    from bench import results

    results.append("pipeline", row(events, args.format, pipeline, reference))


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores at the end"


def _events(work: Path) -> int:
    import duckdb

    return duckdb.sql(f"select sum(rows_read) from '{work / 'out-reference' / 'audit.parquet'}'").fetchall()[0][0]


if __name__ == "__main__":
    main()
