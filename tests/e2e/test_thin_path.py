"""The walking skeleton end to end: simulator → landing → ingest → bronze → dbt → stats →
gold.experiment_results → HTML report, for the FHOL experiment over two days; then a rerun
of a day changes nothing."""

from __future__ import annotations

import re
from datetime import timedelta

import pandas as pd
import pytest

from quicexp.config import REPO_ROOT
from quicexp.pipeline import run_day
from simulation.runner import run_scenario
from tests.helpers import sorted_frame

EXPERIMENT = "fhol_2026_06"


@pytest.fixture(scope="module")
def thin_path(spark, lake):
    settings = lake("e2e")
    manifest = run_scenario(
        REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml", settings.landing_root, days=2, clients=1500, workers=2
    )
    first = pd.Timestamp(manifest["start_date"]).date()
    outcomes = [run_day(spark, settings, first + timedelta(days=i)) for i in range(2)]
    return settings, first, outcomes, manifest


def test_every_input_row_is_accounted_for(spark, thin_path):
    settings, _, outcomes, _ = thin_path
    for outcome in outcomes:
        summary = outcome.ingest
        assert summary.total("rows_read") > 10_000
        assert summary.total("rows_read") == (
            summary.total("rows_loaded") + summary.total("rows_quarantined") + summary.total("rows_duplicate")
        )
        assert summary.total("rows_quarantined") > 0  # the simulator injects bad rows on purpose
    unexplained = spark.sql(
        f"select count(*) from {settings.bronze_schema}.quarantine where reason is null or reason = ''"
    ).first()[0]
    assert unexplained == 0


def test_results_have_welch_and_delta_method_intervals(spark, thin_path):
    settings, first, _, _ = thin_path
    day = first + timedelta(days=1)
    results = spark.sql(
        f"select * from {settings.gold_schema}.experiment_results where as_of_date = date'{day}'"
    ).toPandas()
    platforms = set(results.loc[results.segment_type == "platform", "segment_value"])
    assert {"Windows", "Android"} <= platforms
    for metric, method in (("request_latency_per_client", "welch"), ("rebuffers_per_playback", "delta")):
        rows = results[results.metric == metric]
        assert len(rows) >= 1 + len(platforms) - 1, metric
        assert rows["method"].str.contains(method).all(), rows["method"].unique()
        assert (rows.ci_abs_lower <= rows.delta_abs).all() and (rows.delta_abs <= rows.ci_abs_upper).all()
        assert rows[["value_control", "value_treatment", "ci_abs_lower", "ci_abs_upper"]].notna().all().all()
        overall = rows[rows.segment_type == "overall"].iloc[0]
        by_platform = rows[rows.segment_type == "platform"]
        assert overall.n_control == by_platform.n_control.sum()
        assert overall.n_treatment == by_platform.n_treatment.sum()


def test_report_is_written_with_the_scorecard(thin_path):
    _, first, outcomes, _ = thin_path
    [report] = outcomes[-1].reports
    html = report.read_text()
    assert report.name == f"{first + timedelta(days=1)}.html"
    for needle in ("request_latency_per_client", "rebuffers_per_playback", "Windows", "Android", "95% CI"):
        assert needle in html
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)  # base64 may spell "nan"
    assert not re.search(r"\bnan\b", text, re.IGNORECASE)


def test_rerunning_a_day_changes_nothing(spark, thin_path):
    settings, first, _, _ = thin_path
    tables = [
        f"{settings.bronze_schema}.http_transactions",
        f"{settings.bronze_schema}.quarantine",
        f"{settings.bronze_schema}.ingest_audit",
        f"{settings.gold_schema}.experiment_sufficient_stats",
        f"{settings.gold_schema}.experiment_results",
    ]
    before = {t: sorted_frame(spark, t) for t in tables}
    run_day(spark, settings, first + timedelta(days=1))
    for table in tables:
        pd.testing.assert_frame_equal(sorted_frame(spark, table), before[table], check_exact=True, obj=table)
