"""Benchmark results as data: every bench appends one row per run to ``bench/results/<bench>.csv``.

:data:`COLUMNS` is the one definition of each file's columns: the benches write their rows through
:func:`append`, which refuses a row whose fields differ from it, and ``tests/bench/test_results.py``
checks the committed files' headers against it. ``make bench-report`` (bench/report.py) renders
the files. Every row starts with the run's context (:data:`CONTEXT`): the UTC date, the commit (with
``+dirty`` when tracked code differs from it), the machine (architecture and memory), its cores,
the 5-minute load average at the end of the run (how idle the machine was), and a note that
records the Spark/JVM settings given by environment (``QUICEXP_SPARK__*``, ``JAVA_TOOL_OPTIONS``,
``SPARK_MASTER``) besides anything the bench adds. ``BENCH_RECORD=0`` runs a bench without
recording it.
"""

from __future__ import annotations

import csv
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"

#: the run's context, first in every file
CONTEXT = ("date", "commit", "machine", "cores", "load5")

#: each bench's columns after the context; ``note`` is last everywhere. Seconds end in ``_s``.
COLUMNS: dict[str, tuple[str, ...]] = {
    # bench/bench_pipeline.py: the daily steps as fresh processes against the DuckDB reference
    "pipeline": (*CONTEXT, "events", "format", "ingest_s", "dbt_build_s", "results_s", "pipeline_s",
                 "reference_ingest_s", "reference_gold_s", "reference_s", "ratio", "note"),
    # bench/bench_scale.py: one fresh process per size, with the shuffle of each stage
    "scale": (*CONTEXT, "events", "clients", "landing_mb", "registry_s", "ingest_s", "dbt_s", "results_s",
              "total_s", "us_per_event", "ingest_shuffle_mb", "dbt_shuffle_mb", "note"),
    # bench/bench_ingest.py: the ingest job twice against a DuckDB read-dedup-write of the same files
    "ingest": (*CONTEXT, "events", "format", "spark_first_s", "spark_rerun_s", "duckdb_s", "ratio", "note"),
    # bench/bench_dbt.py: `dbt run --full-refresh` of one day
    "dbt": (*CONTEXT, "events", "dbt_run_s", "note"),
    # bench/bench_stats.py: the statistics engine on a synthetic table
    "stats": (*CONTEXT, "comparisons", "wall_best_s", "wall_median_s", "cpu_best_s", "kernel_s", "note"),
    # bench/bench_simulate.py: the simulator writing Parquet
    "simulate": (*CONTEXT, "scenario", "clients", "days", "events", "wall_s", "cpu_s", "note"),
    # bench/bench_checks.py: a day's rerun with and without the health checks, fresh processes
    "checks": (*CONTEXT, "clients", "days", "with_s", "without_s", "dbt_with_s", "dbt_without_s",
               "results_with_s", "results_without_s", "checks_s", "share", "note"),
    # python -m bench (bench/thin_path.py): the thin path in one session, dbt against DuckDB
    "thin": (*CONTEXT, "events", "simulate_s", "session_s", "ingest_s", "dbt_build_s", "results_s", "duckdb_s",
             "ratio", "note"),
}  # fmt: skip

#: environment variables that change how a run's JVMs behave, recorded in its note
SETTINGS_ENV = ("JAVA_TOOL_OPTIONS", "SPARK_MASTER")
SETTINGS_PREFIX = "QUICEXP_SPARK__"


class ResultsError(ValueError):
    """A row that does not fit its file (a bench and :data:`COLUMNS` disagree)."""


def path(bench: str) -> Path:
    return RESULTS / f"{bench}.csv"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit() -> str:
    """HEAD's short hash, ``+dirty`` when a tracked file outside docs/ and bench/results/ differs."""
    head = _git("rev-parse", "--short", "HEAD")
    changed = [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()]
    dirty = any(not p.startswith(("docs/", "bench/results/", "bench/report/")) for p in changed)
    return f"{head}+dirty" if head and dirty else head


def machine() -> str:
    """Architecture and memory, e.g. ``x86_64 24 GiB`` (coarse on purpose: comparable across runs)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.machine()} {round(memory)} GiB"


def settings_note() -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(SETTINGS_PREFIX) or k in SETTINGS_ENV)
    return " ".join(f"{k}={v}" for k, v in env)


def context() -> dict[str, object]:
    return {"date": datetime.now(UTC).date().isoformat(), "commit": commit(), "machine": machine(),
            "cores": os.cpu_count(), "load5": round(os.getloadavg()[1], 1)}  # fmt: skip


def complete(bench: str, measured: dict[str, object], note: str = "") -> dict[str, object]:
    """The full row: the context, the bench's ``measured`` fields and the note, checked against
    :data:`COLUMNS` (a field too many or too few is a :class:`ResultsError`)."""
    if bench not in COLUMNS:
        raise ResultsError(f"unknown bench {bench!r} (known: {', '.join(COLUMNS)})")
    row = {**context(), **measured, "note": " ".join(s for s in (note, settings_note()) if s)}
    extra = [c for c in row if c not in COLUMNS[bench]]
    missing = [c for c in COLUMNS[bench] if c not in row]
    if extra or missing:
        raise ResultsError(f"{bench} row does not match bench/results.py COLUMNS: extra {extra}, missing {missing}")
    return {c: row[c] for c in COLUMNS[bench]}


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):  # two decimals, three significant digits below 1
        if value != value:
            return ""
        text = f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"
        return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text
    return str(value)


def append(bench: str, measured: dict[str, object], note: str = "", to: Path | None = None) -> Path | None:
    """Append one run's row to the bench's CSV (header first when the file is new); returns its
    path, or None when ``BENCH_RECORD=0``. A file whose header differs is not touched."""
    row = complete(bench, measured, note)
    if os.environ.get("BENCH_RECORD", "1") == "0":
        return None
    target = to or path(bench)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and target.stat().st_size:
        header = tuple(next(csv.reader(target.open(newline=""))))
        if header != COLUMNS[bench]:
            raise ResultsError(f"{target} has columns {header}, bench/results.py says {COLUMNS[bench]}")
        new = False
    else:
        new = True
    with target.open("a", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        if new:
            writer.writerow(COLUMNS[bench])
        writer.writerow([_fmt(row[c]) for c in COLUMNS[bench]])
    print(f"recorded in {target.relative_to(REPO) if target.is_relative_to(REPO) else target}", flush=True)
    return target


def read(bench: str, source: Path | None = None) -> list[dict[str, str]]:
    """The rows of a bench's CSV as dicts of strings (empty cells are ``""``)."""
    with (source or path(bench)).open(newline="") as fh:
        return list(csv.DictReader(fh))
