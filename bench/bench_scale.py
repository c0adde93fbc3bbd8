"""Daily cost against events per day: does the cost per event stay flat?

``python bench/bench_scale.py [--events 1000000 10000000 50000000] [--dir DIR]``

For each size it simulates one day of the FHOL fleet as Parquet (cached in ``DIR``, so a rerun
skips the simulation), then runs the day's pipeline in a *fresh* process and Spark session
(local[2] unless ``QUICEXP_SPARK__*``/``SPARK_MASTER`` say otherwise): registry, ingest, dbt
build, results: what ``quicexp run-day`` does before the reports. It prints, per size and
stage, seconds, µs per event and the ratio of that cost to the smallest size's, plus where the
shuffle is (bytes written per stage, read from Spark's own REST API of the run) and the file
layout the day leaves in bronze, and appends a row per size to bench/results/scale.csv
(bench/results.py). docs/deploy.md's sizing section is written from its output.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EVENTS_PER_CLIENT_DAY = 23.5  # fhol scenario, all kinds, one day (bench/bench_ingest.py)
STAGES = ("registry", "ingest", "dbt", "results")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def simulate(landing: Path, events: int) -> dict:
    """One day of parquet landing data of about ``events`` events (cached)."""
    from simulation.runner import run_scenario

    manifest_path = landing / "_manifest.json"
    if manifest_path.exists():
        return json.loads(manifest_path.read_text())
    clients = max(100, int(events / EVENTS_PER_CLIENT_DAY))
    started = time.perf_counter()
    manifest = run_scenario(
        REPO / "simulation/scenarios/fhol.yaml", landing, days=1, clients=clients, seed=11,
        fmt="parquet", start_date="2026-06-15", progress=True,
    )  # fmt: skip
    print(f"  simulated {manifest['events_total']:,} events ({clients:,} clients) in "
          f"{time.perf_counter() - started:.0f}s", flush=True)  # fmt: skip
    return manifest


# ----------------------------------------------------------------------------------- child side


def _spark_api(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}", timeout=60) as response:
        return json.load(response)


def shuffle_by_stage(port: int, windows: dict[str, tuple[float, float]]) -> dict[str, dict[str, int]]:
    """Shuffle/input bytes of the Spark jobs submitted during each pipeline stage's time window."""
    from datetime import datetime

    app = _spark_api(port, "applications")[0]["id"]
    stages = {s["stageId"]: s for s in _spark_api(port, f"applications/{app}/stages?status=complete")}
    totals = {name: {"jobs": 0, "input": 0, "shuffle_write": 0, "shuffle_read": 0, "output": 0} for name in windows}
    for job in _spark_api(port, f"applications/{app}/jobs"):
        submitted = datetime.strptime(job["submissionTime"], "%Y-%m-%dT%H:%M:%S.%f%Z").timestamp()
        name = next((n for n, (a, b) in windows.items() if a <= submitted <= b), None)
        if name is None:
            continue
        totals[name]["jobs"] += 1
        for sid in job["stageIds"]:
            stage = stages.get(sid)
            if stage:
                totals[name]["input"] += stage.get("inputBytes", 0)
                totals[name]["shuffle_write"] += stage.get("shuffleWriteBytes", 0)
                totals[name]["shuffle_read"] += stage.get("shuffleReadBytes", 0)
                totals[name]["output"] += stage.get("outputBytes", 0)
    return totals


def table_files(root: Path) -> dict[str, dict[str, int]]:
    """Data files and bytes per table directory under a schema directory."""
    out = {}
    for table in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        files = [f for f in table.rglob("*.parquet") if "_delta_log" not in f.parts]
        out[table.name] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}
    return out


def child(landing: Path, home: Path, day: str) -> dict:
    """Run the day's pipeline once and return timings, shuffle and file layout (JSON-able)."""
    import jobs.experiment_results
    import jobs.ingest
    import jobs.registry
    from quicexp.app.dbt import run_dbt
    from quicexp.catalog import stop_derby
    from quicexp.config import load_settings, parse_day
    from quicexp.registry import load_registry
    from quicexp.spark import build_spark

    ui_port = _free_port()
    os.environ.setdefault("QUICEXP_SPARK__DRIVER_MEMORY", "8g")
    settings = load_settings(
        home=home, landing_root=landing, catalog={"port": _free_port()},
        spark={"ui_enabled": True, "driver_memory": os.environ["QUICEXP_SPARK__DRIVER_MEMORY"],
               "master": os.environ.get("SPARK_MASTER", "local[2]"),
               "shuffle_partitions": int(os.environ.get("QUICEXP_SPARK__SHUFFLE_PARTITIONS", "4")),
               "extra_conf": {"spark.ui.port": str(ui_port), "spark.ui.retainedJobs": "100000",
                              "spark.ui.retainedStages": "100000", "spark.ui.retainedTasks": "1000000"}},
    )  # fmt: skip
    d = parse_day(day)
    registry = load_registry()
    started = time.time()
    spark = build_spark(settings, "quicexp-bench-scale")
    result: dict = {"session_s": time.time() - started, "seconds": {}, "master": settings.spark.master}
    windows: dict[str, tuple[float, float]] = {}
    steps = {
        "registry": lambda: jobs.registry.run(spark, settings, d, registry),
        "ingest": lambda: jobs.ingest.run(spark, settings, d),
        "dbt": lambda: run_dbt("build", settings, d),
        "results": lambda: jobs.experiment_results.run(spark, settings, d, registry),
    }
    try:
        for name, step in steps.items():
            t0 = time.time()
            value = step()
            t1 = time.time()
            windows[name], result["seconds"][name] = (t0, t1), t1 - t0
            print(f"    {name}: {t1 - t0:.1f}s", file=sys.stderr, flush=True)
            if name == "ingest":
                result["rows"] = {k: value.total(k) for k in ("rows_read", "rows_loaded", "rows_quarantined", "rows_duplicate")}
            if name == "results":
                result["comparisons"] = value
        result["shuffle"] = shuffle_by_stage(ui_port, windows)
        result["bronze_files"] = table_files(settings.warehouse_dir / f"{settings.bronze_schema}.db")
        result["silver_files"] = table_files(settings.warehouse_dir / f"{settings.silver_schema}.db")
        result["gold_files"] = table_files(settings.warehouse_dir / f"{settings.gold_schema}.db")
    finally:
        spark.stop()
        stop_derby(settings)
    return result


# ---------------------------------------------------------------------------------- parent side


def row(events: int, clients: int, landing_bytes: int, res: dict) -> dict[str, object]:
    """One size's measured fields of bench/results/scale.csv (the columns in bench/results.py)."""
    seconds, shuffle = res["seconds"], res["shuffle"]
    total = sum(seconds[s] for s in STAGES)
    return {"events": events, "clients": clients, "landing_mb": landing_bytes / 1e6,
            **{f"{s}_s": seconds[s] for s in STAGES}, "total_s": total, "us_per_event": total / events * 1e6,
            "ingest_shuffle_mb": shuffle["ingest"]["shuffle_write"] / 1e6,
            "dbt_shuffle_mb": shuffle["dbt"]["shuffle_write"] / 1e6}  # fmt: skip


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def report(rows: list[tuple[int, dict, dict]]) -> None:
    base_events, _, base = rows[0]
    print("\n== daily cost against events (fresh process and session per size) ==")
    head = f"{'events':>12} {'stage':>9} {'seconds':>9} {'µs/event':>9} {'x cost/event vs first':>22}"
    print(head)
    for events, _manifest, res in rows:
        total = sum(res["seconds"].values())
        base_total = sum(base["seconds"].values())
        for stage in (*STAGES, "total"):
            sec = total if stage == "total" else res["seconds"][stage]
            ref = base_total if stage == "total" else base["seconds"][stage]
            ratio = (sec / events) / (ref / base_events)
            print(f"{events:>12,} {stage:>9} {sec:>9.1f} {sec / events * 1e6:>9.2f} {ratio:>22.2f}")
    print("\n== where the shuffle is (bytes written by the Spark jobs of each stage) ==")
    for events, _manifest, res in rows:
        parts = ", ".join(
            f"{stage}: in {_mb(s['input'])}, shuffle {_mb(s['shuffle_write'])}, {s['jobs']} jobs"
            for stage, s in res["shuffle"].items()
        )
        print(f"{events:>12,}  {parts}")
    print("\n== file layout the day leaves ==")
    for events, _manifest, res in rows:
        for layer in ("bronze_files", "silver_files", "gold_files"):
            for table, f in res[layer].items():
                if f["files"]:
                    print(f"{events:>12,}  {layer[:-6]}.{table}: {f['files']} files, {_mb(f['bytes'])}, "
                          f"{f['bytes'] / max(f['files'], 1) / 1e6:.1f} MB/file")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000, 50_000_000])
    parser.add_argument("--dir", type=Path, default=REPO / "var" / "bench-scale")
    parser.add_argument("--child", nargs=3, metavar=("LANDING", "HOME", "DAY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        landing, home, day = args.child
        print(json.dumps(child(Path(landing), Path(home), day)), flush=True)
        return 0
    rows, recorded = [], []
    for events in args.events:
        print(f"\n-- {events:,} events", flush=True)
        landing = args.dir / f"landing-{events}"
        manifest = simulate(landing, events)
        home = args.dir / f"home-{events}-{int(time.time())}"
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(landing), str(home), manifest["start_date"]],
            stdout=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            print(f"  run failed with exit code {proc.returncode}", flush=True)
            break
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        wall = time.perf_counter() - started
        print(f"  {manifest['events_total']:,} events: pipeline {sum(res['seconds'].values()):.0f}s "
              f"(process {wall:.0f}s, session start {res['session_s']:.0f}s), {res.get('rows')}", flush=True)  # fmt: skip
        rows.append((manifest["events_total"], manifest, res))
        (args.dir / f"result-{events}.json").write_text(json.dumps(res, indent=1))
        landing_bytes = sum(f.stat().st_size for f in landing.rglob("*.parquet"))
        recorded.append(row(manifest["events_total"], manifest["clients"], landing_bytes, res))
    if rows:
        report(rows)
    from bench import results

    note = (f"master {rows[0][2]['master'] if rows else ''}, driver memory "
            f"{os.environ.get('QUICEXP_SPARK__DRIVER_MEMORY', '8g')}, shuffle partitions "
            f"{os.environ.get('QUICEXP_SPARK__SHUFFLE_PARTITIONS', '4')}")  # fmt: skip
    for measured in recorded:
        results.append("scale", measured, note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
