"""What do the health checks cost a day?

``python bench/bench_checks.py [--clients 4000] [--days 3] [--reps 2] [--home DIR] [--keep]
[--skip-build]`` (``make bench-checks``) simulates the demo's fleet (the fhol scenario,
``--clients`` clients for ``--days`` days), runs those days through the daily pipeline, then reruns
the last day ``--reps`` times in each of two ways, alternating, each run a fresh process as a
scheduled day's run is: the day as it runs, health checks included, and the same day without them
(``run_day(checks=False)``: the checks' two models and their data tests left out of the dbt build,
no checks in the results step). A rerun does the day's whole work again (its ingest reads the
landing files and counts their rows as duplicates; every model and table replaces its slice). About
30 minutes with the defaults on a 2-core machine; each step of each run is a line on the console as
it ends. The checks' cost is the difference of the dbt build and results steps between the two, and
its share of the day that difference over the whole run with them (the process, JVM start
included). One row per pair of runs goes to bench/results/checks.csv (bench/results.py).
docs/stats.md ("Health checks", Cost) quotes it.

The lake goes to a temporary home (``--home`` to choose one, ``--keep`` to keep it,
``--skip-build`` to rerun the last day of a kept one); its Derby metastore server is stopped at
the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` importable when run as a script

#: the rerun's variants: the day as it runs, and without the health checks
VARIANTS = {"with": True, "without": False}


def _say(message: str) -> None:
    print(f"[bench_checks] {message}", flush=True)


def row(clients: int, days: int, with_run: dict, without_run: dict) -> dict[str, object]:
    """bench/results/checks.csv's measured fields from one run of each variant (the dicts
    :func:`_variant` prints: the process's wall time and the day's step times). The checks' cost
    is the difference of the two steps they are in, the dbt build and the results; the other
    steps do the same work in both runs, and their run-to-run spread (the ingest's, ±5-10 s on
    a 4,000-client day) would only add noise to a difference of the whole runs."""
    steps = ("dbt_build", "results")
    checks = sum(with_run["steps"][s] for s in steps) - sum(without_run["steps"][s] for s in steps)
    return {
        "clients": clients, "days": days,
        "with_s": with_run["wall_s"], "without_s": without_run["wall_s"],
        "dbt_with_s": with_run["steps"]["dbt_build"], "dbt_without_s": without_run["steps"]["dbt_build"],
        "results_with_s": with_run["steps"]["results"],
        "results_without_s": without_run["steps"]["results"],
        "checks_s": checks, "share": checks / with_run["wall_s"],
    }  # fmt: skip


def _variant(day: date, checks: bool) -> None:
    """A child process: the day's run with or without the checks; prints its times as JSON."""
    started = time.perf_counter()
    from quicexp.app.cli import configure_logging
    from quicexp.app.daily import run_day
    from quicexp.config import load_settings
    from quicexp.spark import build_spark

    configure_logging()
    settings = load_settings()
    spark = build_spark(settings, f"bench-checks-{'with' if checks else 'without'}")
    outcome = run_day(spark, settings, day, checks=checks)
    spark.stop()
    print(ANSWER + json.dumps({"wall_s": time.perf_counter() - started, "steps": outcome.seconds}), flush=True)


#: the daily run's step lines (quicexp.app.daily), echoed from the children as progress
STEP_LINE = " quicexp.app.daily: "
#: what starts a variant's answer line (its times as JSON), among whatever else it prints
ANSWER = "bench_checks answer: "


def _run(argv: list[str], env: dict[str, str], log: Path) -> str:
    """Run ``argv``; its stderr and stdout go to ``log`` and its step lines also to the console
    (each step of each day as it ends); returns its answer (:data:`ANSWER`), if it printed one."""
    with log.open("a") as out, subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        text=True,
    ) as child:  # fmt: skip
        last = ""
        for line in child.stdout:
            out.write(line)
            if STEP_LINE in line:
                _say("  " + line.split(STEP_LINE, 1)[1].rstrip())
            elif line.startswith(ANSWER):
                last = line[len(ANSWER):].strip()
    if child.returncode != 0:
        raise SystemExit(f"bench_checks: {' '.join(argv[1:4])} failed (exit {child.returncode}); see {log}")
    return last


def _child(args: list[str], env: dict[str, str], log: Path) -> str:
    """Run this file with ``args`` in a fresh process; its answer."""
    answer = _run([sys.executable, __file__, *args], env, log)
    if not answer:
        raise SystemExit(f"bench_checks: {' '.join(args)} printed no answer; see {log}")
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4000)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--skip-build", action="store_true", help="reuse the lake of --home (its days already run)")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--day", type=date.fromisoformat, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        _variant(args.day, VARIANTS[args.variant])
        return
    if args.clients < 100 or args.days < 1 or args.reps < 1:
        parser.error("--clients must be at least 100, --days and --reps at least 1")
    if args.skip_build and args.home is None:
        parser.error("--skip-build needs --home (the lake to reuse)")

    from quicexp.catalog import stop_derby
    from quicexp.config import load_settings

    home = args.home or Path(tempfile.mkdtemp(prefix="quicexp-bench-checks-"))
    settings = load_settings(home=home)
    env = {**os.environ, "QUICEXP_HOME": str(home)}
    log = home / "bench_checks.log"
    home.mkdir(parents=True, exist_ok=True)
    _say(f"home {home}; the runs' output goes to {log} (their step lines here), Spark's and dbt's to {home / 'logs'}")
    try:
        started = time.perf_counter()
        if args.skip_build:
            manifest = _manifest(settings)
            first = date.fromisoformat(manifest["start_date"])
            args.clients, args.days = manifest["clients"], manifest["days"]
            _say(f"reusing the lake of {home}: {args.days} days of {args.clients:,} clients")
        else:
            first = _build(settings, args.days, args.clients, env, log)
            _say(f"{args.days} days of {args.clients:,} clients simulated and run: {time.perf_counter() - started:,.0f} s")
        day = first + timedelta(days=args.days - 1)
        from bench import results

        for rep in range(args.reps):
            runs = {}
            for name in ("without", "with") if rep % 2 == 0 else ("with", "without"):
                runs[name] = json.loads(_child(["--variant", name, "--day", day.isoformat()], env, log))
                _say(f"rerun {rep + 1}/{args.reps} of {day} {name} the checks: {runs[name]['wall_s']:,.1f} s "
                     f"(dbt build {runs[name]['steps']['dbt_build']:,.1f} s, "
                     f"results {runs[name]['steps']['results']:,.1f} s)")  # fmt: skip
            measured = row(args.clients, args.days, runs["with"], runs["without"])
            _say(f"RESULT checks {measured['checks_s']:,.1f} s of a {measured['with_s']:,.1f} s day: "
                 f"{measured['share']:.1%}")  # fmt: skip
            results.append("checks", measured)
    finally:
        stop_derby(settings)
        if not args.keep and args.home is None:
            shutil.rmtree(home, ignore_errors=True)


def _build(settings, days: int, clients: int, env: dict[str, str], log: Path) -> date:
    """``quicexp demo`` of the days in a fresh process; the first day (the simulator's manifest)."""
    _say(f"quicexp demo --days {days} --clients {clients:,} (about 3 minutes a day at 4,000 clients)")
    _run([str(Path(sys.executable).with_name("quicexp")), "demo", "--days", str(days), "--clients", str(clients)],
         env, log)  # fmt: skip
    return date.fromisoformat(_manifest(settings)["start_date"])


def _manifest(settings) -> dict:
    """The simulator's manifest of the home's landing zone (start date, days, clients)."""
    return json.loads((settings.landing_root / "_manifest.json").read_text())


if __name__ == "__main__":
    main()
