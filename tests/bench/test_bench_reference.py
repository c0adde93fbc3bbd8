"""The DuckDB yardstick (bench/reference/) does the pipeline's work: on the run's shared pipeline
lake (tests/pipeline_lake.py: two upload days of JSON lines with every kind of bad input, four
experiments) its ingest counts and gold sufficient statistics equal the pipeline's, so the speed
ratio of ``make bench-pipeline`` compares like with like and cannot rot when the models change."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_reference_equals_pipeline(spark, pipeline_lake, tmp_path):
    from bench.bench_pipeline import export_tables
    from bench.reference.compare import compare
    from bench.reference.driver import dbt_vars, run_reference

    settings = pipeline_lake.settings
    export_tables(spark, settings, tmp_path / "pipeline")
    seconds = run_reference(settings.landing_root, pipeline_lake.days, pipeline_lake.registry_file,
                            tmp_path / "reference", threads=2, progress=lambda _: None)
    result = compare(tmp_path / "pipeline", tmp_path / "reference", dbt_vars()["quantile_bin_width"])
    assert result.ok, "\n".join(result.lines())
    assert set(seconds) == {"ingest", "gold"}
    # the comparison saw real work: every kind of quarantine reason the simulator injects, and
    # quantile rows of every segment type
    notes = "\n".join(result.notes)
    assert "ingest audit" in notes and "quarantine" in notes and "sufficient_stats" in notes


def test_compare_catches_a_difference(tmp_path):
    """A changed count and a changed statistic both fail the comparison (it cannot pass vacuously)."""
    import duckdb

    from bench.reference.compare import compare

    con = duckdb.connect()
    for side in ("p", "r"):
        d = tmp_path / side
        d.mkdir()
        bump = 1 if side == "p" else 0
        con.execute(f"""copy (select 'http_transactions' as kind, date '2026-06-15' as upload_date, 'a.jsonl.gz' as file,
            {10 + bump}::bigint as rows_read, {8 + bump}::bigint as rows_loaded, 1::bigint as rows_quarantined,
            1::bigint as rows_duplicate, 0::bigint as rows_late) to '{d}/audit.parquet'""")
        con.execute(f"copy (select 'http_transactions' as kind, date '2026-06-15' as upload_date, "
                    f"'malformed_json' as reason, 1::bigint as n) to '{d}/quarantine.parquet'")
        con.execute(f"""copy (select 'c1' as client_id, date '2026-06-15' as event_date,
            [{{'key': 'e', 'value': 'a'}}] as assignments, 'request_latency_p' as metric, 5 as value_bin,
            3::bigint as n_events) to '{d}/binned.parquet'""")
        con.execute(f"""copy (select 'e' as experiment_id, 'request_latency' as metric, 'ratio' as metric_kind,
            true as is_guardrail, 'overall' as segment_type, 'all' as segment_value, 'a' as arm, true as is_control,
            date '2026-06-15' as as_of_date, 10::bigint as n_units, {1.0 + bump * 1e-6}::double as sum_y,
            2.0::double as sum_y2, 3.0::double as sum_x, 4.0::double as sum_x2, 5.0::double as sum_xy,
            {', '.join(f'null::double as {c}' for c in ('sum_c', 'sum_c2', 'sum_yc', 'sum_d', 'sum_d2', 'sum_cd', 'sum_yd', 'sum_xc', 'sum_xd', 'quantile_p', 'quantile_value'))},
            7.0::double as n_events,
            {', '.join(f'null::double as {c}' for c in ('sum_s', 'sum_s2', 'sum_n', 'sum_n2', 'sum_sn'))},
            null::double[] as grid_p, null::double[] as grid_value) to '{d}/sufficient_stats.parquet'""")
    result = compare(tmp_path / "p", tmp_path / "r", 0.001)
    assert not result.ok
    text = "\n".join(result.failures)
    assert "ingest audit" in text and "sum_y" in text
    assert compare(tmp_path / "r", tmp_path / "r", 0.001).ok
