"""The decision layer (stats.decision): each test, the verdict logic, planning.

Results frames are built by hand (the columns decide() reads), so every case is exact.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from stats.decision import (
    DECISION_COLUMNS,
    TEST_COLUMNS,
    decide,
    levels,
    plan_units,
    planned_test_power,
    relative_bound,
    required_noncentrality,
    required_units,
)
from stats.power import sequential_power
from stats.settings import DecisionPlan, DecisionSettings, MetricRole

START = date(2026, 6, 1)
SUCCESS = MetricRole(role="success", metric="latency", better="decrease", minimum_effect=0.02)
GUARD = MetricRole(role="guardrail", metric="mtbr", better="increase", margin=0.02)
P95 = MetricRole(role="guardrail", metric="latency_p", quantile=0.95, better="decrease",
                 margin=0.03)  # fmt: skip
MECH = MetricRole(role="mechanism", metric="hol", better="increase")


def row(metric, control, treatment, se=0.1, day=1, arm="B", quantile=None, n=10_000, **extra):
    """One overall result row: arm estimates and their standard errors."""
    return {
        "experiment_id": "e", "metric": metric, "segment_type": "overall",
        "segment_value": "all", "as_of_date": START + timedelta(days=day - 1),
        "quantile_p": quantile, "control_arm": "A", "treatment_arm": arm,
        "n_control": n, "n_treatment": n, "value_control": control,
        "value_treatment": treatment, "se_control": se, "se_treatment": se,
        "effective_events": 1e6, "sequential_tuning_n": 2.0 * n,
        "sequential_calibrated": True, "srm_p_value": 0.5, **extra,
    }  # fmt: skip


def settings(*roles, planned_days=14, analysis="sequential") -> DecisionSettings:
    plan = DecisionPlan(roles=roles, start_date=START, planned_days=planned_days,
                        analysis=analysis)  # fmt: skip
    return DecisionSettings(experiments={"e": plan})


def verdict(rows, s) -> pd.Series:
    out = decide(pd.DataFrame(rows), s)
    assert list(out.verdicts.columns)[: len(DECISION_COLUMNS)] == DECISION_COLUMNS
    assert list(out.tests.columns)[: len(TEST_COLUMNS)] == TEST_COLUMNS
    return out.verdicts.sort_values("as_of_date").iloc[-1]


def test_a_clear_win_with_guardrails_inside_their_margins_ships():
    v = verdict([row("latency", 100, 90), row("mtbr", 60, 60.2)], settings(SUCCESS, GUARD))
    assert v["verdict"] == "ship"
    assert v["reasons"] == ["success_better:latency", "guardrail_noninferior:mtbr"]


def test_a_guardrail_not_yet_shown_within_its_margin_keeps_it_running_with_days():
    # mtbr's standard error (1.0 on 60) cannot rule out a 2% loss yet
    v = verdict([row("latency", 100, 90), row("mtbr", 60, 60, se=1.0)], settings(SUCCESS, GUARD))
    assert v["verdict"] == "keep_running"
    assert "guardrail_not_shown_noninferior:mtbr" in v["reasons"]
    assert "success_better:latency" in v["reasons"]
    # the guardrail needs theta* / theta_now squared times the units (days) seen so far
    lv = levels(1, 1, 1, 0.05)
    theta = required_noncentrality(lv["guardrail"], planned_test_power(0.8, 1), 14)
    theta_now = 0.02 * 60 / np.sqrt(1.0 + 0.98**2 * 1.0)
    assert v["days_to_planned_power"] == np.ceil((theta / theta_now) ** 2 - 1)


def test_a_success_metric_significantly_worse_rolls_back():
    v = verdict([row("latency", 100, 110), row("mtbr", 60, 60)], settings(SUCCESS, GUARD))
    assert v["verdict"] == "rollback" and v["reasons"][0] == "success_worse:latency"


def test_a_guardrail_worse_beyond_its_margin_rolls_back_but_within_it_does_not():
    beyond = verdict([row("latency", 100, 100), row("mtbr", 60, 55)], settings(SUCCESS, GUARD))
    assert beyond["verdict"] == "rollback"
    assert beyond["reasons"][0] == "guardrail_inferior:mtbr"
    # 1% worse, well measured: inside the 2% margin, so no rollback (and not shown better)
    within = verdict([row("latency", 100, 100), row("mtbr", 60, 59.4)], settings(SUCCESS, GUARD))
    assert within["verdict"] == "keep_running"


def test_a_failed_sample_ratio_gate_makes_the_verdict_invalid_whatever_the_metrics():
    v = verdict([row("latency", 100, 90, srm_p_value=1e-6), row("mtbr", 60, 60.2,
                 srm_p_value=1e-6)], settings(SUCCESS, GUARD))  # fmt: skip
    assert v["verdict"] == "invalid" and v["reasons"][0] == "gate_failed:srm"


def test_a_declared_metric_without_results_blocks_ship_and_is_named():
    v = verdict([row("latency", 100, 90)], settings(SUCCESS, GUARD))
    assert v["verdict"] == "keep_running" and "metric_missing:mtbr" in v["reasons"]


def test_at_the_planned_end_an_unproven_experiment_is_no_ship_not_keep_running():
    rows = [row("latency", 100, 100, day=14), row("mtbr", 60, 60, day=14)]
    v = verdict(rows, settings(SUCCESS, GUARD))
    assert v["verdict"] == "no_ship" and np.isnan(v["days_to_planned_power"])
    assert v["day_of_experiment"] == 14
    assert v["reasons"][0] == "success_not_shown:latency"


def test_a_sequential_pass_stays_passed_at_later_looks():
    rows = [row("latency", 100, 90, day=1), row("mtbr", 60, 60.2, day=1),
            row("latency", 100, 99.9, day=2), row("mtbr", 60, 60.2, day=2)]  # fmt: skip
    out = decide(pd.DataFrame(rows), settings(SUCCESS, GUARD))
    assert out.verdicts["verdict"].tolist() == ["ship", "ship"]
    sup = out.tests[out.tests["test"] == "superiority"].sort_values("as_of_date")
    assert sup["passed_at_look"].tolist() == [True, False]
    assert sup["passed"].tolist() == [True, True]
    # the bound shown is the running one (latency: decrease is better, the upper bound)
    assert sup["bound"].iloc[1] == sup["bound"].iloc[0] < 0


def test_fixed_horizon_tests_decide_only_at_the_planned_end_and_harm_is_watched_daily():
    s = settings(SUCCESS, GUARD, analysis="fixed_horizon")
    early = verdict([row("latency", 100, 90, day=3), row("mtbr", 60, 60.2, day=3)], s)
    assert early["verdict"] == "keep_running"
    end = verdict([row("latency", 100, 90, day=14), row("mtbr", 60, 60.2, day=14)], s)
    assert end["verdict"] == "ship"
    harm = verdict([row("latency", 100, 110, day=3), row("mtbr", 60, 60, day=3)], s)
    assert harm["verdict"] == "rollback"


def test_fixed_horizon_critical_value_is_the_one_sided_normal_quantile():
    s = settings(SUCCESS, GUARD, analysis="fixed_horizon")
    out = decide(pd.DataFrame([row("latency", 100, 90, day=14), row("mtbr", 60, 60, day=14)]), s)
    t = out.tests.set_index("test")
    assert t.loc["superiority", "critical"] == pytest.approx(sps.norm.isf(0.05))
    assert t.loc["non_inferiority", "critical"] == pytest.approx(sps.norm.isf(0.05))
    # deterioration: alpha / (S + G), watched with the always-valid boundary
    assert t.loc["deterioration", "level"] == pytest.approx(0.025) and t.loc["deterioration",
                                                                            "sequential"]  # fmt: skip


def test_each_treatment_arm_is_decided_against_control_at_alpha_over_the_arms():
    rows = [row("latency", 100, 90, arm="B"), row("mtbr", 60, 60.2, arm="B"),
            row("latency", 100, 100, arm="C"), row("mtbr", 60, 60.2, arm="C")]  # fmt: skip
    out = decide(pd.DataFrame(rows), settings(SUCCESS, GUARD))
    v = out.verdicts.set_index("treatment_arm")
    assert v.loc["B", "verdict"] == "ship" and v.loc["C", "verdict"] == "keep_running"
    assert v.loc["B", "success_alpha"] == pytest.approx(0.025)
    assert v.loc["B", "guardrail_alpha"] == pytest.approx(0.025)


def test_a_mechanism_metric_zero_in_control_is_read_on_the_absolute_scale():
    rows = [row("latency", 100, 100), row("mtbr", 60, 60),
            row("hol", 0.0, 5.0, se=0.0, effective_events=0.0)]  # fmt: skip
    rows[-1]["se_treatment"] = 0.5
    out = decide(pd.DataFrame(rows), settings(SUCCESS, GUARD, MECH))
    assert "treatment_active:hol" in out.verdicts.iloc[0]["reasons"]
    t = out.tests[out.tests["metric"] == "hol"].iloc[0]
    assert t["threshold_scale"] == "absolute" and t["passed"]


def test_a_quantile_guardrail_is_matched_by_its_quantile():
    s = settings(SUCCESS, P95)
    v = verdict([row("latency", 100, 90), row("latency_p", 800, 801, se=1.0, quantile=0.95),
                 row("latency_p", 200, 260, se=1.0, quantile=0.5)], s)  # fmt: skip
    assert v["verdict"] == "ship" and "guardrail_noninferior:latency_p@p95" in v["reasons"]


def test_a_look_with_too_few_events_never_passes_a_test():
    rows = [row("latency", 100, 90, effective_events=3.0), row("mtbr", 60, 60.2)]
    v = verdict(rows, settings(SUCCESS, GUARD))
    assert v["verdict"] == "keep_running"


@pytest.mark.parametrize("side", [1.0, -1.0])
def test_the_relative_bound_agrees_with_the_test_it_reports(side):
    rng = np.random.default_rng(3)
    mc, mt = rng.uniform(50, 150, 200), rng.uniform(50, 150, 200)
    vc, vt = rng.uniform(0.5, 20, 200), rng.uniform(0.5, 20, 200)
    crit = np.full(200, 2.2)
    bound = relative_bound(mc, vc, mt, vt, crit, np.full(200, side))
    for r in (-0.1, 0.0, 0.05):
        z = side * (mt - (1 + r) * mc) / np.sqrt(vt + (1 + r) ** 2 * vc)
        ok = np.isfinite(bound)
        assert ((side * (bound[ok] - r) > 0) == (z[ok] >= crit[ok])).all()


def test_one_sided_sequential_tests_spend_alpha_on_one_side_only():
    # no effect: the one-sided always-valid test crosses at most alpha over 30 looks
    size = sequential_power(0.0, 30, 0.05, sides=1)
    assert 0.025 < size <= 0.05
    assert sequential_power(3.0, 30, 0.05, sides=1) > sequential_power(3.0, 30, 0.05, sides=2)


def test_planned_units_give_each_test_its_required_noncentrality():
    var = {"latency": 400.0, "mtbr": 900.0}
    mean = {"latency": 100.0, "mtbr": 60.0}
    plan = plan_units((SUCCESS, GUARD), var, mean, looks=None).set_index("metric")
    tp = planned_test_power(0.8, 1)
    assert tp == pytest.approx(0.9)
    n = plan.loc["latency", "units_per_arm"]
    theta = 0.02 * 100 / np.sqrt(2 * 400 / n)
    assert theta == pytest.approx(sps.norm.isf(0.05) + sps.norm.ppf(tp), rel=1e-3)
    n = plan.loc["mtbr", "units_per_arm"]
    theta = 0.02 * 60 / np.sqrt(900 * (1 + 0.98**2) / n)
    assert theta == pytest.approx(sps.norm.isf(0.05) + sps.norm.ppf(tp), rel=1e-3)
    assert required_units(plan.reset_index()) == plan["units_per_arm"].max()
    # the always-valid tests need more units than one fixed look
    seq = plan_units((SUCCESS, GUARD), var, mean, looks=30).set_index("metric")
    assert (seq["units_per_arm"] > plan["units_per_arm"]).all()
