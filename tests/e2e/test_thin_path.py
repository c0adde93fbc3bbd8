"""The walking skeleton end to end: simulator → landing → ingest → bronze → dbt → stats →
gold.experiment_results → HTML report, over the run's shared two-day pipeline lake
(tests/pipeline_lake.py). Reruns are the DAG tests' part (tests/dags/test_dag_runs.py)."""

from __future__ import annotations

import re

import pytest

from tests.pipeline_lake import FHOL

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def thin_path(pipeline_lake):
    return pipeline_lake.settings, pipeline_lake.last_day, pipeline_lake.outcomes


def test_every_input_row_is_accounted_for(spark, thin_path):
    settings, _, outcomes = thin_path
    for outcome in outcomes:
        summary = outcome.ingest
        assert summary.total("rows_read") > 10_000
        assert summary.total("rows_read") == (
            summary.total("rows_loaded")
            + summary.total("rows_quarantined")
            + summary.total("rows_duplicate")
        )
        assert summary.total("rows_quarantined") > 0  # the simulator injects bad rows on purpose
    unexplained = spark.sql(
        f"select count(*) from {settings.bronze_schema}.quarantine where reason is null or reason = ''"
    ).first()[0]
    assert unexplained == 0


def test_results_have_welch_and_delta_method_intervals(spark, thin_path):
    settings, day, _ = thin_path
    results = spark.sql(
        f"select * from {settings.gold_schema}.experiment_results"
        f" where as_of_date = date'{day}' and experiment_id = '{FHOL}'"
    ).toPandas()
    platforms = set(results.loc[results.segment_type == "platform", "segment_value"])
    assert {"Windows", "Android"} <= platforms
    for metric, method in (
        ("request_latency_per_client", "welch"),
        ("rebuffers_per_playback", "delta"),
    ):
        rows = results[results.metric == metric]
        assert len(rows) >= 1 + len(platforms) - 1, metric
        assert rows["method"].str.contains(method).all(), rows["method"].unique()
        assert (rows.ci_abs_lower <= rows.delta_abs).all() and (
            rows.delta_abs <= rows.ci_abs_upper
        ).all()
        assert (
            rows[["value_control", "value_treatment", "ci_abs_lower", "ci_abs_upper"]]
            .notna()
            .all()
            .all()
        )
        overall = rows[rows.segment_type == "overall"].iloc[0]
        by_platform = rows[rows.segment_type == "platform"]
        assert overall.n_control == by_platform.n_control.sum()
        assert overall.n_treatment == by_platform.n_treatment.sum()


def test_report_is_written_with_the_scorecard(thin_path):
    _, day, outcomes = thin_path
    [report] = [p for p in outcomes[-1].reports if p.parent.name == FHOL]
    html = report.read_text()
    assert report.name == f"{day}.html"
    for needle in (
        "request_latency_per_client",
        "rebuffers_per_playback",
        "Windows",
        "Android",
        "95% CI",
    ):
        assert needle in html
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)  # base64 may spell "nan"
    assert not re.search(r"\bnan\b", text, re.IGNORECASE)


def test_lake_tables_keep_row_counts_without_column_statistics(spark, thin_path):
    """Every table is read by date partitions only, so its files carry Delta's row count and no
    per-column min/max (docs/decisions.md): a bronze, a silver and a gold table of the lake."""
    import json
    from pathlib import Path
    from urllib.parse import urlparse

    settings, _, _ = thin_path
    for table in (f"{settings.bronze_schema}.http_transactions",
                  f"{settings.silver_schema}.int_quantile_values_binned_to_client_days",
                  f"{settings.gold_schema}.experiment_sufficient_stats"):
        detail = spark.sql(f"describe detail {table}").first()
        assert detail.properties.get("delta.dataSkippingNumIndexedCols") == "0", table
        log = Path(urlparse(detail.location).path) / "_delta_log"
        stats = [json.loads(action["add"]["stats"])
                 for commit in sorted(log.glob("*.json"))
                 for action in map(json.loads, commit.read_text().splitlines()) if "add" in action]
        assert stats and all(set(s) == {"numRecords"} for s in stats), table
        assert sum(s["numRecords"] for s in stats if s) >= spark.table(table).count() > 0, table


def test_fhol_has_a_verdict_with_reasons_and_days_to_its_planned_power(spark, thin_path):
    """FHOL declares its metrics (registry/experiments.yml): two days of 2,000 clients cannot
    show its guardrails within their margins, so it keeps running, saying why and for how long."""
    settings, day, _ = thin_path
    v = spark.sql(
        f"select * from {settings.gold_schema}.experiment_decisions"
        f" where experiment_id = '{FHOL}' and as_of_date = date'{day}'"
    ).toPandas()
    assert len(v) == 1
    row = v.iloc[0]
    assert row["verdict"] == "keep_running", list(row["reasons"])
    reasons = list(row["reasons"])
    assert any(r.startswith("guardrail_not_shown_noninferior:") for r in reasons)
    assert "treatment_active:hol_blocked_time_per_request" in reasons
    assert row["days_to_planned_power"] > 0 and row["n_guardrails"] == 6
    tests = spark.sql(
        f"select * from {settings.gold_schema}.experiment_decision_tests"
        f" where experiment_id = '{FHOL}' and as_of_date = date'{day}'"
    ).toPandas()
    assert set(tests["role"]) == {"success", "guardrail", "mechanism"}
    assert len(tests) == 2 * 1 + 2 * 6 + 1
