"""The health checks end to end over the run's shared pipeline lake (tests/pipeline_lake.py): the
daily run writes gold.experiment_health for every experiment and day, with the A/A placebo's
running tally, and report_srm's forced 60/40 split (against a registered 50/50) fails the
sample-ratio gate, so its verdict is invalid and names the check."""

from __future__ import annotations

import pytest

from stats.health import HEALTH_COLUMNS
from tests.pipeline_lake import FHOL

pytestmark = pytest.mark.e2e

EVERY_DAY = {"srm", "srm_platform", "crossover", "telemetry_completeness", "aa_placebo",
             "canary_coverage"}  # fmt: skip


def test_health_is_written_and_a_failed_gate_makes_the_verdict_invalid(spark, pipeline_lake):
    gold = pipeline_lake.settings.gold_schema
    health = spark.table(f"{gold}.experiment_health").toPandas()
    assert set(HEALTH_COLUMNS) <= set(health.columns)
    for day in pipeline_lake.days:
        for exp in (FHOL, "report_aa", "report_srm", "report_mp"):
            rows = health[(health["experiment_id"] == exp) & (health["as_of_date"] == day)]
            assert EVERY_DAY <= set(rows["check"]), (exp, day, set(rows["check"]))
            assert rows["detail"].str.len().gt(0).all()
    last = health[health["as_of_date"] == pipeline_lake.last_day]
    srm = last[(last["experiment_id"] == "report_srm") & (last["check"] == "srm")].iloc[0]
    assert srm["is_gate"] and not srm["passed"] and srm["p_value"] < srm["threshold"]
    assert srm["statistic"] < -0.1  # the 40% arm is short of a fifth of its units
    # the placebo ran every estimator of the real comparison on the control arm's re-splits
    placebo = last[(last["experiment_id"] == FHOL) & (last["check"] == "aa_placebo")]
    estimators = set(placebo["estimator"])
    assert {"delta_ratio", "delta_ratio+cuped", "welch_t", "z_proportion", "quantile_outer_ci"} <= {
        e.split("/")[0] for e in estimators}  # fmt: skip
    assert any(e.endswith("/sequential") for e in estimators)
    # the A/A experiment passes every gate
    aa = last[(last["experiment_id"] == "report_aa") & last["is_gate"].astype(bool)]
    assert aa["passed"].astype(bool).all(), aa.loc[~aa["passed"].astype(bool), ["check", "metric"]]
    verdicts = spark.table(f"{gold}.experiment_decisions").toPandas().set_index(
        ["experiment_id", "as_of_date"])  # fmt: skip
    v = verdicts.loc[("report_srm", pipeline_lake.last_day)]
    assert v["verdict"] == "invalid" and "gate_failed:srm" in list(v["reasons"])
    tally = spark.table(f"{gold}.experiment_placebo_tally").toPandas()
    assert set(tally["as_of_date"]) == set(pipeline_lake.days)
    assert (tally["hits"] <= tally["comparisons"]).all()
