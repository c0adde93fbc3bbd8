"""`python -m bench --size N`: the thin path's stages, with events/s and the Spark/DuckDB ratio."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quicexp.config import REPO_ROOT


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
