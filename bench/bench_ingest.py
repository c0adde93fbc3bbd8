"""How fast does one upload day go from the landing zone to bronze Delta?

``python bench/bench_ingest.py [--events 10000000] [--format jsonl|parquet] [--dir DIR]``
simulates one day of the FHOL fleet sized to about ``--events`` events (cached in ``DIR``, so
a second run skips the simulation), then times:

* ``jobs.ingest.run`` on the upload day in a fresh Spark session (local[2] by default;
  ``QUICEXP_SPARK__*`` applies), twice: the first run creates the tables, the second is the
  idempotent rerun a retry or back-fill does;
* a DuckDB reference reading *the same files*: parse every line, drop malformed ones,
  deduplicate by ``event_id`` and write Parquet, per kind.

It prints events/s for each and the Spark/DuckDB time ratio side by side. The DuckDB side does
less (no per-field reasons, no quarantine, no audit, no transaction log), so the ratio is an
upper bound on what the validation and Delta bookkeeping cost. Each run appends a row to
bench/results/ingest.csv (bench/results.py).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EVENTS_PER_CLIENT_DAY = 23.5  # measured on the fhol scenario (all kinds, one day)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def simulate(landing: Path, events: int, fmt: str) -> tuple[str, dict]:
    from simulation.runner import run_scenario

    manifest_path = landing / "_manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        print(f"landing zone cached in {landing}")
    else:
        clients = max(100, int(events / EVENTS_PER_CLIENT_DAY))
        started = time.perf_counter()
        manifest = run_scenario(
            REPO / "simulation/scenarios/fhol.yaml", landing, days=1, clients=clients, seed=11,
            fmt=fmt, start_date="2026-06-15",
        )
        print(f"simulated {clients} clients in {time.perf_counter() - started:.0f}s into {landing}")
    return manifest["start_date"], manifest


def day_files(landing: Path, day: str) -> dict[str, list[str]]:
    root = landing / f"upload_date={day}"
    return {
        kind.name: sorted(str(p) for p in kind.iterdir() if not p.name.startswith(("_", ".")))
        for kind in sorted(root.iterdir()) if kind.is_dir()
    }


def bench_spark(home: Path, day: str) -> list[tuple[str, float, int]]:
    os.environ.setdefault("QUICEXP_HOME", str(home))
    os.environ.setdefault("QUICEXP_CATALOG__PORT", str(_free_port()))
    import jobs.ingest
    from quicexp.catalog import stop_derby
    from quicexp.config import load_settings, parse_day
    from quicexp.spark import build_spark

    settings = load_settings(landing_root=home / "landing")
    spark = build_spark(settings, "bench-ingest")
    timings = []
    try:
        for label in ("spark first run", "spark rerun"):
            started = time.perf_counter()
            summary = jobs.ingest.run(spark, settings, parse_day(day))
            timings.append((label, time.perf_counter() - started, summary.total("rows_read")))
    finally:
        spark.stop()
        stop_derby(settings)
    return timings


def bench_duckdb(files: dict[str, list[str]], out: Path) -> tuple[float, int]:
    import duckdb

    from quicexp import telemetry

    duck_types = {"string": "VARCHAR", "long": "BIGINT", "double": "DOUBLE", "boolean": "BOOLEAN",
                  "timestamp": "TIMESTAMPTZ", "map<string,string>": "MAP(VARCHAR, VARCHAR)"}
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET threads = 2")
    rows = 0
    started = time.perf_counter()
    for kind, paths in files.items():
        if kind not in telemetry.EVENT_KINDS or not paths:
            continue
        if paths[0].endswith(".parquet"):
            source = f"read_parquet({paths!r})"
        else:
            cols = "{" + ", ".join(f"'{f.name}': '{duck_types[f.type]}'" for f in telemetry.fields(kind)) + "}"
            source = f"read_json({paths!r}, format='newline_delimited', ignore_errors=true, columns={cols})"
        rows += con.execute(f"SELECT count(*) FROM {source}").fetchone()[0]
        con.execute(
            f"COPY (SELECT * FROM {source} WHERE event_id IS NOT NULL "
            f"QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY upload_time) = 1) "
            f"TO '{out / kind}.parquet' (FORMAT parquet)"
        )
    return time.perf_counter() - started, rows


def row(events: int, fmt: str, duck_s: float, spark: list[tuple[str, float, int]]) -> dict[str, object]:
    """The run's measured fields of bench/results/ingest.csv; ``spark`` is empty with --skip-spark."""
    first, rerun = (spark[0][1], spark[1][1]) if spark else (None, None)
    return {"events": events, "format": fmt, "spark_first_s": first, "spark_rerun_s": rerun, "duckdb_s": duck_s,
            "ratio": first / duck_s if first else None}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="events in the simulated day")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--dir", type=Path, default=None, help="work dir (default var/bench/ingest-<events>-<fmt>)")
    parser.add_argument("--skip-spark", action="store_true", help="only the DuckDB reference")
    args = parser.parse_args()
    from quicexp.app.cli import configure_logging

    configure_logging()  # the jobs' per-stage progress lines
    home = (args.dir or REPO / "var" / "bench" / f"ingest-{args.events}-{args.format}").resolve()
    landing = home / "landing"
    day, _ = simulate(landing, args.events, args.format)
    files = day_files(landing, day)
    n_files = sum(len(v) for v in files.values())
    size_mb = sum(os.path.getsize(p) for v in files.values() for p in v) / 1e6
    print(f"upload day {day}: {n_files} files, {size_mb:.0f} MB ({args.format})")

    duck_s, duck_rows = bench_duckdb(files, home / "duckdb")
    print(f"{'duckdb reference':<18} {duck_s:8.1f}s  {duck_rows:>11,d} rows   {duck_rows / duck_s:>10,.0f} rows/s (JSON it could parse)")
    spark = [] if args.skip_spark else bench_spark(home, day)
    for label, seconds, rows in spark:
        print(f"{label:<18} {seconds:8.1f}s  {rows:>11,d} rows   {rows / seconds:>10,.0f} rows/s"
              f"   x{seconds / duck_s:.1f} DuckDB time")
    from bench import results

    results.append("ingest", row(duck_rows, args.format, duck_s, spark))


if __name__ == "__main__":
    main()
