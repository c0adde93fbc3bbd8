"""Benchmark of the fleet simulator writing Parquet: events/s and where the time goes.

    .venvs/pipeline/bin/python bench/bench_simulate.py [--scenario fhol] [--clients 100000] [--days 2]

Prints (1) end-to-end events/s of ``run_scenario(..., fmt="parquet")`` with all cores (wall clock and
CPU), and (2) a CPU profile of one (day, block) task in this process, grouped by stage: population
and sessions, transport model and apps, Arrow table building, fault planning, Parquet encoding and
writing. Wall-clock numbers depend on what else runs on the machine; CPU seconds less so. The
end-to-end run's row goes to bench/results/simulate.csv (bench/results.py).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` importable when run as a script

STAGES = {
    "population+sessions": ("simulation/population.py", "simulation/sessions.py", "simulation/network.py", "simulation/treatment.py", "simulation/assignment.py"),
    "transport+apps": ("simulation/transport.py", "simulation/variates.py", "simulation/multipath.py", "simulation/apps/"),
    "arrow tables": ("simulation/events.py", "simulation/hashing.py"),
    "faults": ("simulation/faults.py",),
    "parquet write": ("pyarrow/parquet", "simulation/writer.py"),
}


def end_to_end(scenario: str, clients: int, days: int, workers: int | None) -> dict:
    from simulation.runner import run_scenario

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        m = run_scenario(scenario, tmp, days=days, clients=clients, fmt="parquet", workers=workers)
        wall, cpu = time.perf_counter() - t0, m["cpu_seconds"]
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*.parquet"))
    rows = sum(sum(v.values()) for v in m["rows_by_upload_date"].values())
    return {"rows": rows, "wall_s": wall, "cpu_s": cpu, "rows_per_s_wall": rows / wall, "rows_per_cpu_s": rows / cpu, "bytes": size}


def profile_one_task(scenario: str, clients: int) -> dict[str, float]:
    from simulation.runner import run_task
    from simulation.scenario import load_scenario

    sc = load_scenario(scenario).with_overrides(clients=min(clients, 50_000), days=1)
    prof = cProfile.Profile(time.process_time)
    with tempfile.TemporaryDirectory() as tmp:
        prof.enable()
        result = run_task(sc, 0, 0, tmp, "parquet")
        prof.disable()
    stats = pstats.Stats(prof)
    own: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    own["other"] = 0.0
    # attribute each function's own time (tottime) to the stage of its caller chain's file
    for (filename, _, _), (_, _, tottime, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        stage = _stage(filename) or _caller_stage(callers)
        own[stage or "other"] += tottime
    own["events"] = float(sum(k["events"] for k in result["kinds"].values()))
    return own


def _stage(filename: str) -> str | None:
    for stage, needles in STAGES.items():
        if any(n in filename for n in needles):
            return stage
    return None


def _caller_stage(callers: dict) -> str | None:
    best, weight = None, 0.0
    for (filename, _, _), (_, _, _, cumtime) in callers.items():
        stage = _stage(filename)
        if stage and cumtime >= weight:
            best, weight = stage, cumtime
    return best


def row(scenario: str, clients: int, days: int, e2e: dict) -> dict[str, object]:
    """The run's measured fields of bench/results/simulate.csv (the columns in bench/results.py)."""
    return {"scenario": scenario, "clients": clients, "days": days, "events": e2e["rows"], "wall_s": e2e["wall_s"],
            "cpu_s": e2e["cpu_s"]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="fhol")
    ap.add_argument("--clients", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    e2e = end_to_end(args.scenario, args.clients, args.days, args.workers)
    print(f"scenario {args.scenario}: {args.clients:,} clients x {args.days} days, Parquet")
    print(f"  rows written        {e2e['rows']:,} ({e2e['bytes'] / 2**20:.0f} MiB)")
    print(f"  wall                {e2e['wall_s']:.1f} s -> {e2e['rows_per_s_wall']:,.0f} events/s")
    print(f"  cpu (all tasks)     {e2e['cpu_s']:.1f} s -> {e2e['rows_per_cpu_s']:,.0f} events per CPU-second")
    cores = os.cpu_count() or 1
    print(f"  on {cores} idle cores   ~{cores * e2e['rows_per_cpu_s']:,.0f} events/s (CPU-bound, tasks in parallel)")
    from bench import results

    results.append("simulate", row(args.scenario, args.clients, args.days, e2e))
    prof = profile_one_task(args.scenario, args.clients)
    n = prof.pop("events")
    total = sum(prof.values())
    print(f"one task profiled: {n:,.0f} events, {total:.2f} CPU s ({n / total:,.0f} events/CPU-s incl. profiler overhead)")
    for stage, sec in sorted(prof.items(), key=lambda kv: -kv[1]):
        print(f"  {stage:22s} {sec:6.2f} s  {100 * sec / total:5.1f}%")


if __name__ == "__main__":
    main()
