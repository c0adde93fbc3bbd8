"""Benchmark history as data (bench/results.py, bench/report.py): the committed CSVs, the rows the
benches write and the report rendered from them agree on one column list per bench. No JVM."""

from __future__ import annotations

import csv
import os

import pytest

from bench import results
from bench.report import BEGIN, END, current, histories, main, render_readme, splice
from bench.results import COLUMNS, ResultsError


def _header(path) -> tuple[str, ...]:
    with path.open(newline="") as fh:
        return tuple(next(csv.reader(fh)))


def _rows_the_benches_write() -> dict[str, dict[str, object]]:
    """Each bench's own row function on made-up measurements (the code path a run takes)."""
    from bench import __main__ as thin
    from bench import (
        bench_checks,
        bench_dbt,
        bench_ingest,
        bench_pipeline,
        bench_scale,
        bench_simulate,
        bench_stats,
    )
    from bench.thin_path import Stage

    shuffle = {s: {"jobs": 1, "input": 0, "shuffle_write": 2e6, "shuffle_read": 0, "output": 0} for s in bench_scale.STAGES}
    stages = [Stage(name, 2.0, 1000) for name in ("simulate (parquet)", "spark session", "ingest (spark)",
                                                  "dbt build (spark)", "stats + results", "sufficient stats (duckdb)")]
    return {
        "pipeline": bench_pipeline.row(1000, "parquet", {"ingest": 10.0, "dbt build": 20.0, "results": 6.0},
                                       {"ingest": 2.0, "gold": 4.0}),
        "scale": bench_scale.row(1000, 40, 5_000_000, {"seconds": dict.fromkeys(bench_scale.STAGES, 1.0), "shuffle": shuffle}),
        "ingest": bench_ingest.row(1000, "jsonl", 2.0, [("spark first run", 6.0, 1000), ("spark rerun", 5.0, 1000)]),
        "dbt": bench_dbt.row(1000, 30.0),
        "stats": bench_stats.row(10_000, [0.5, 0.4, 0.6], [0.45, 0.4], 0.01),
        "simulate": bench_simulate.row("fhol", 100, 2, {"rows": 4700, "wall_s": 3.0, "cpu_s": 5.0}),
        "thin": thin.row(stages),
        "checks": bench_checks.row(4000, 3, {"wall_s": 300.0, "steps": {"dbt_build": 180.0, "results": 20.0}},
                                   {"wall_s": 270.0, "steps": {"dbt_build": 155.0, "results": 16.0}}),
    }  # fmt: skip


def test_the_committed_csvs_have_the_columns_the_benches_write():
    committed = sorted(p.stem for p in results.RESULTS.glob("*.csv"))
    assert {"pipeline", "scale"} <= set(committed), committed
    assert set(committed) <= set(COLUMNS), f"a CSV without a column list in bench/results.py: {committed}"
    written = _rows_the_benches_write()
    assert set(written) == set(COLUMNS)
    for bench in committed:
        row = results.complete(bench, written[bench])
        assert tuple(row) == _header(results.path(bench)) == COLUMNS[bench], bench
        for line in results.read(bench):
            assert None not in line and None not in line.values(), f"{bench}.csv: a row with more or fewer cells"


def test_every_bench_row_fits_its_column_list():
    for bench, measured in _rows_the_benches_write().items():
        assert tuple(results.complete(bench, measured)) == COLUMNS[bench]
    with pytest.raises(ResultsError, match="missing"):
        results.complete("pipeline", {"events": 1})
    with pytest.raises(ResultsError, match="extra"):
        results.complete("dbt", {"events": 1, "dbt_run_s": 2.0, "threads": 2})


def test_the_pipeline_row_sums_the_stages_and_divides():
    row = _rows_the_benches_write()["pipeline"]
    assert (row["pipeline_s"], row["reference_s"], row["ratio"]) == (36.0, 6.0, 6.0)


def test_the_checks_row_is_the_difference_over_the_day_with_them():
    row = _rows_the_benches_write()["checks"]
    assert (row["checks_s"], row["share"]) == (29.0, 29.0 / 300.0)  # the dbt build's and results' difference
    assert (row["dbt_with_s"], row["dbt_without_s"], row["results_without_s"]) == (180.0, 155.0, 16.0)


def test_append_writes_the_header_once_and_refuses_another(tmp_path, monkeypatch):
    for name in [n for n in os.environ if n.startswith("QUICEXP_SPARK__") or n == "JAVA_TOOL_OPTIONS"]:
        monkeypatch.delenv(name)  # the test session's own Spark settings (tests/conftest.py)
    monkeypatch.setenv("QUICEXP_SPARK__GC", "g1")
    target = tmp_path / "dbt.csv"
    results.append("dbt", {"events": 10, "dbt_run_s": 1.234}, "first", to=target)
    results.append("dbt", {"events": 20, "dbt_run_s": 2.0}, to=target)
    rows = results.read("dbt", target)
    assert _header(target) == COLUMNS["dbt"]
    assert [r["events"] for r in rows] == ["10", "20"] and rows[0]["dbt_run_s"] == "1.23"
    assert rows[0]["note"] == "first QUICEXP_SPARK__GC=g1" and rows[1]["cores"].isdigit()
    monkeypatch.setenv("BENCH_RECORD", "0")
    assert results.append("dbt", {"events": 30, "dbt_run_s": 3.0}, to=target) is None
    assert len(results.read("dbt", target)) == 2
    monkeypatch.delenv("BENCH_RECORD")
    with pytest.raises(ResultsError, match="has columns"):
        results.append("stats", {"comparisons": 1, "wall_best_s": 1, "wall_median_s": 1, "cpu_best_s": 1,
                                 "kernel_s": 1}, to=target)  # fmt: skip


def test_bench_report_renders_the_committed_csvs(tmp_path):
    deploy = tmp_path / "deploy.md"
    deploy.write_text(f"before\n{BEGIN}\nold\n{END}\nafter\n")
    assert main(["--out", str(tmp_path / "report"), "--deploy", str(deploy)]) == 0
    png = (tmp_path / "report" / "pipeline.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    data = histories()
    table = deploy.read_text()
    assert table.startswith(f"before\n{BEGIN}\n| events |") and table.endswith(f"{END}\nafter\n")
    for row in current(data["pipeline"]):
        assert f"{int(row['events']):,}" in table and f"`{row['commit']}`" in table
    assert (tmp_path / "report" / "README.md").read_text() == render_readme(data)


def test_the_committed_report_and_deploy_table_are_up_to_date():
    assert main(["--check"]) == 0, "run `make bench-report` and commit bench/report/ and docs/deploy.md"


def test_current_prefers_default_settings_and_a_reference():
    base = dict.fromkeys(COLUMNS["pipeline"], "")
    rows = [
        {**base, "date": "2026-01-01", "events": "10", "format": "parquet", "pipeline_s": "9", "reference_s": "1", "note": ""},
        {**base, "date": "2026-01-02", "events": "10", "format": "parquet", "pipeline_s": "8", "reference_s": "",
         "note": "reference not recorded"},
        {**base, "date": "2026-01-03", "events": "10", "format": "parquet", "pipeline_s": "7", "reference_s": "1",
         "note": "QUICEXP_SPARK__GC=g1"},
        {**base, "date": "2026-01-01", "events": "50", "format": "parquet", "pipeline_s": "30", "note": ""},
    ]  # fmt: skip
    assert [r["pipeline_s"] for r in current(rows)] == ["9", "30"]
    with pytest.raises(ValueError, match="markers"):
        splice("no markers here", "table")
