"""Verdicts end to end: seed 003's fleet simulated (two of its experiments registered with their
declared metrics), the pipeline run over its first day, and gold.experiment_decisions read back: Reno
cuts retransmissions without touching the guardrails (ship), turning pacing off floods them past
the guardrail's margin (rollback)."""

from __future__ import annotations

import pytest

from quicexp.config import REPO_ROOT
from quicexp.registry import Registry

pytestmark = pytest.mark.e2e

CLIENTS = 1500


def decision_registry(start) -> Registry:
    arms = lambda control, treatment: [  # noqa: E731
        {"name": control, "share": 0.5, "is_control": True},
        {"name": treatment, "share": 0.5},
    ]
    plan = {"start_date": start, "planned_units_per_arm": 700, "planned_days": 14}
    return Registry.model_validate({"experiments": [
        {"id": "reno_vs_cubic", "title": "Reno vs Cubic", **plan, "arms": arms("cubic", "reno"),
         "metrics": {
             "success": [{"metric": "retransmit_rate", "minimum_effect": 0.10}],
             # margins sized to a 1,500-client test fleet (a real fleet affords 1-2 %)
             "guardrails": [{"metric": "request_latency_p", "quantile": 0.5, "margin": 0.15},
                            {"metric": "time_to_first_frame", "margin": 0.15}],
         }},
        {"id": "pacing", "title": "Pacing off vs on", **plan, "arms": arms("paced", "unpaced"),
         "metrics": {
             "success": [{"metric": "request_latency", "minimum_effect": 0.02}],
             "guardrails": [{"metric": "retransmit_rate", "margin": 0.10}],
         }},
    ]})  # fmt: skip


@pytest.fixture(scope="module")
def decision_lake(spark, lake):
    from simulation.scenario import load_scenario
    from tests import pipeline_lake as shared

    scenario = load_scenario(REPO_ROOT / "simulation" / "scenarios" / "cc_loss_recovery.yaml")
    start = scenario.start_date
    return shared.build(spark, lake("decisions"), scenario=scenario,
                        registry=decision_registry(start), clients=CLIENTS, days=1,
                        skip=("reports",))  # fmt: skip


def _verdicts(spark, lake):
    table = f"{lake.settings.gold_schema}.experiment_decisions"
    return spark.table(table).toPandas().set_index(["experiment_id", "as_of_date"])


def test_a_clear_win_with_flat_guardrails_ships_and_a_guardrail_regression_rolls_back(
    spark, decision_lake
):
    v = _verdicts(spark, decision_lake)
    day = decision_lake.last_day
    reno = v.loc[("reno_vs_cubic", day)]
    assert reno["verdict"] == "ship", list(reno["reasons"])
    assert list(reno["reasons"])[:1] == ["success_better:retransmit_rate"]
    pacing = v.loc[("pacing", day)]
    assert pacing["verdict"] == "rollback", list(pacing["reasons"])
    assert list(pacing["reasons"])[:1] == ["guardrail_inferior:retransmit_rate"]
    # every day of each experiment has its verdict, with the tests behind it
    assert len(v) == 2 * len(decision_lake.days)
    assert list(reno["reasons"]) == ["success_better:retransmit_rate",
                                     "guardrail_noninferior:request_latency_p@p50",
                                     "guardrail_noninferior:time_to_first_frame"]  # fmt: skip
    tests = spark.table(f"{decision_lake.settings.gold_schema}.experiment_decision_tests").toPandas()
    inferior = tests[(tests.experiment_id == "pacing") & (tests.test == "inferiority")
                     & (tests.as_of_date == day)].iloc[0]  # fmt: skip
    assert inferior["passed"] and inferior["bound"] > inferior["threshold"] == pytest.approx(0.10)
