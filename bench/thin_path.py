"""The thin path at a chosen size: simulate → ingest → dbt → results, seconds and events/s per
stage, and the Spark mart stage against a DuckDB reference over the same bronze files.

One day of the FHOL scenario in Parquet; the number of clients is chosen to give about
``size`` events. The DuckDB query (bench/duckdb_reference.sql) computes the same per-arm
sufficient statistics; its numbers must match Spark's, and the ratio of the two times is
printed. DuckDB is a yardstick here, never part of the pipeline.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from quicexp.config import REPO_ROOT, Settings, load_settings

SCENARIO = REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml"
EVENTS_PER_CLIENT_DAY = 23.0  # measured on the fhol scenario (all kinds, one day)


@dataclass
class Stage:
    name: str
    seconds: float
    events: int

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("nan")


def _timed(name: str, events: int, fn):
    started = time.perf_counter()
    value = fn()
    return Stage(name, time.perf_counter() - started, events), value


def duckdb_reference(spark, settings: Settings) -> tuple[float, object]:
    """Run the DuckDB reference over the current snapshot's files of the two bronze tables."""
    import duckdb
    from delta.tables import DeltaTable

    def files(table: str) -> str:
        paths = DeltaTable.forName(spark, f"{settings.bronze_schema}.{table}").toDF().inputFiles()
        return "[" + ", ".join(f"'{p.removeprefix('file:')}'" for p in paths) + "]"

    sql = (REPO_ROOT / "bench" / "duckdb_reference.sql").read_text()
    sql = sql.replace("{http_files}", files("http_transactions")).replace("{video_files}", files("video_playbacks"))
    con = duckdb.connect()
    con.execute("SET threads = 2")
    started = time.perf_counter()
    frame = con.execute(sql).df()
    return time.perf_counter() - started, frame


def compare(spark_frame, duck_frame) -> float:
    """Largest relative difference between the two engines' sufficient statistics."""
    keys = ["experiment_id", "metric", "segment_type", "segment_value", "arm"]
    merged = spark_frame.merge(duck_frame, on=keys, suffixes=("_spark", "_duck"), how="outer", indicator=True)
    if (merged["_merge"] != "both").any():
        raise AssertionError("Spark and DuckDB disagree on which groups exist")
    worst = 0.0
    for column in ("n_units", "sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy"):
        a, b = merged[f"{column}_spark"].astype(float), merged[f"{column}_duck"].astype(float)
        both = a.notna() & b.notna()
        scale = b[both].abs().clip(lower=1e-12)
        worst = max(worst, float(((a[both] - b[both]).abs() / scale).max() if both.any() else 0.0))
    return worst


def run(size: int, home: Path) -> list[Stage]:
    import jobs.experiment_results
    import jobs.ingest
    import jobs.registry
    from quicexp.app.dbt import run_dbt
    from quicexp.spark import build_spark
    from simulation.runner import run_scenario

    if home.exists():
        shutil.rmtree(home)
    settings = load_settings(home=home)
    clients = max(200, int(size / EVENTS_PER_CLIENT_DAY))
    # simulate before the JVM starts (worker processes must not inherit the gateway)
    sim, manifest = _timed(
        "simulate (parquet)", 0, lambda: run_scenario(SCENARIO, settings.landing_root, days=1, clients=clients, fmt="parquet")
    )
    day = date.fromisoformat(manifest["start_date"])
    events = int(manifest["events_total"])
    sim.events = events
    stages = [sim]
    boot, spark = _timed("spark session", 0, lambda: build_spark(settings, "quicexp-bench"))
    stages.append(boot)
    jobs.registry.run(spark, settings, day)
    stage, _ = _timed("ingest (spark)", events, lambda: jobs.ingest.run(spark, settings, day))
    stages.append(stage)
    stage, _ = _timed("dbt build (spark)", events, lambda: run_dbt("build", settings, day))
    stages.append(stage)
    stage, _ = _timed("stats + results", events, lambda: jobs.experiment_results.run(spark, settings, day))
    stages.append(stage)
    seconds, duck = duckdb_reference(spark, settings)
    stages.append(Stage("sufficient stats (duckdb)", seconds, events))
    mart = spark.table(f"{settings.gold_schema}.experiment_sufficient_stats").where(f"as_of_date = date'{day}'")
    mismatch = compare(mart.toPandas(), duck)
    print(f"sufficient statistics, Spark vs DuckDB: largest relative difference {mismatch:.2e}")
    return stages
