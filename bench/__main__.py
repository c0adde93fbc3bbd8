"""`python -m bench --size N`: the thin path's stages, with events/s and the Spark/DuckDB ratio; the
run's row goes to bench/results/thin.csv (bench/results.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quicexp.config import REPO_ROOT


def row(stages: list) -> dict[str, object]:
    """The run's measured fields of bench/results/thin.csv from :func:`bench.thin_path.run`'s stages."""
    by_name = {s.name: s.seconds for s in stages}
    return {"events": stages[0].events, "simulate_s": by_name["simulate (parquet)"],
            "session_s": by_name["spark session"], "ingest_s": by_name["ingest (spark)"],
            "dbt_build_s": by_name["dbt build (spark)"], "results_s": by_name["stats + results"],
            "duckdb_s": by_name["sufficient stats (duckdb)"],
            "ratio": by_name["dbt build (spark)"] / by_name["sufficient stats (duckdb)"]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--size", type=int, default=1_000_000, help="events to simulate (default 1M)")
    parser.add_argument("--home", type=Path, default=REPO_ROOT / "var" / "bench", help="scratch folder (wiped)")
    args = parser.parse_args(argv)
    if args.size < 1000:
        parser.error("--size must be at least 1000")

    from rich.console import Console
    from rich.table import Table

    from bench.thin_path import run

    stages = run(args.size, args.home)
    table = Table(title=f"thin path, {stages[0].events:,} events, one simulated day")
    for column in ("stage", "seconds", "events/s"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for stage in stages:
        rate = f"{stage.rate:,.0f}" if stage.events else "–"
        table.add_row(stage.name, f"{stage.seconds:.1f}", rate)
    Console().print(table)
    by_name = {s.name: s for s in stages}
    ratio = by_name["dbt build (spark)"].seconds / by_name["sufficient stats (duckdb)"].seconds
    print(f"ratio Spark dbt stage / DuckDB reference: {ratio:.1f}x (same bronze files, same statistics)")
    from bench import results

    results.append("thin", row(stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
