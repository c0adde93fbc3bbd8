"""The health checks (stats.health) on hand-built counts and sums, each against an independent
computation (scipy, statsmodels or per-unit data), and the decision's gate."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from stats.decision import decide
from stats.health import (
    HEALTH_COLUMNS,
    HealthSettings,
    balance_checks,
    clustered_binomial_test,
    completeness_checks,
    crossover_checks,
    failed_gates,
    placebo_checks,
    placebo_tally,
    srm_checks,
    treatment_active_checks,
)
from stats.settings import DecisionPlan, DecisionSettings, MetricRole
from stats.srm import srm_p_value

DAY = date(2026, 6, 17)
S = HealthSettings()


def units(counts: dict[tuple[str, str], dict[str, int]], crossover: int = 0) -> pd.DataFrame:
    """Health-count rows: {(segment_type, segment_value): {arm: units}}."""
    rows = []
    for (st, sv), arms in counts.items():
        for arm, n in arms.items():
            rows.append({"experiment_id": "e", "arm": arm, "is_control": arm == "control",
                         "as_of_date": DAY, "segment_type": st, "segment_value": sv, "units": n,
                         "crossover_units": crossover, "experiment_units": sum(arms.values()) - crossover,
                         "experiment_crossover_units": crossover})  # fmt: skip
    return pd.DataFrame(rows)


SPLIT = {"e": {"control": 0.5, "treatment": 0.5}}


def test_srm_passes_a_fair_split_and_fails_a_skewed_one_overall_and_per_platform():
    u = units({("overall", "all"): {"control": 5000, "treatment": 4990},
               ("platform", "Windows"): {"control": 3000, "treatment": 2700},
               ("platform", "Android"): {"control": 2000, "treatment": 2290}})  # fmt: skip
    out = srm_checks(u, SPLIT, S).set_index("segment")
    assert list(out.columns) == [c for c in HEALTH_COLUMNS if c != "segment"]
    overall = out.loc["overall"]
    assert overall["check"] == "srm" and overall["passed"] and overall["is_gate"]
    assert overall["p_value"] == pytest.approx(srm_p_value([[5000, 4990]], [[1, 1]])[0])
    assert overall["threshold"] == S.srm_alpha
    windows = out.loc["platform=Windows"]
    assert windows["check"] == "srm_platform" and not windows["passed"]
    # Bonferroni over the two platforms
    assert windows["threshold"] == pytest.approx(S.srm_platform_alpha / 2)
    assert windows["statistic"] == pytest.approx(2700 / 2850 - 1)  # the arm short of units
    assert "control 3,000" in windows["detail"]


def test_srm_uses_the_registry_split_and_counts_a_missing_arm_as_zero():
    u = units({("overall", "all"): {"control": 6000, "treatment": 4000},
               ("platform", "Linux"): {"control": 40}})  # fmt: skip
    out = srm_checks(u, {"e": {"control": 0.6, "treatment": 0.4}}, S).set_index("segment")
    assert out.loc["overall", "passed"]
    linux = out.loc["platform=Linux"]
    assert not linux["passed"] and linux["statistic"] == pytest.approx(-1.0)
    assert linux["p_value"] == pytest.approx(srm_p_value([[40, 0]], [[0.6, 0.4]])[0])


def test_crossover_is_a_gate_above_its_share():
    ok = crossover_checks(units({("overall", "all"): {"control": 1000, "treatment": 1000}}, 5), S)
    bad = crossover_checks(units({("overall", "all"): {"control": 1000, "treatment": 1000}}, 40), S)
    assert ok["passed"].iloc[0] and ok["statistic"].iloc[0] == pytest.approx(5 / 1995)
    assert not bad["passed"].iloc[0] and bad["is_gate"].iloc[0]
    assert bad["threshold"].iloc[0] == S.crossover_max_share


def stats_rows(metric: str, kind: str, arms: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    """Overall sufficient-statistic rows from per-unit arrays (y, and c, d for the covariate)."""
    rows = []
    for arm, v in arms.items():
        c, d = v["c"], v.get("d")
        row = {"experiment_id": "e", "metric": metric, "metric_kind": kind, "segment_type": "overall",
               "segment_value": "all", "arm": arm, "is_control": arm == "control", "as_of_date": DAY,
               "quantile_p": np.nan, "n_units": float(c.size), "n_events": float(v.get("events", c.size)),
               "sum_c": c.sum(), "sum_c2": (c * c).sum()}  # fmt: skip
        if d is not None:
            row |= {"sum_d": d.sum(), "sum_d2": (d * d).sum(), "sum_cd": (c * d).sum()}
        rows.append(row)
    return pd.DataFrame(rows)


def test_balance_of_a_mean_covariate_is_welchs_test_and_reports_the_standardised_difference(rng):
    c0, c1 = rng.gamma(2.0, 50.0, 3000), rng.gamma(2.0, 50.0, 2500) * 1.15
    out = balance_checks(stats_rows("lat", "mean", {"control": {"c": c0}, "treatment": {"c": c1}}),
                         {"e": {"lat"}}, S).iloc[0]  # fmt: skip
    z = (c1.mean() - c0.mean()) / np.sqrt(c1.var(ddof=1) / c1.size + c0.var(ddof=1) / c0.size)
    assert out["p_value"] == pytest.approx(2 * sps.norm.sf(abs(z)), rel=1e-9)
    smd = (c1.mean() - c0.mean()) / np.sqrt((c1.var(ddof=1) + c0.var(ddof=1)) / 2)
    assert out["statistic"] == pytest.approx(smd, rel=1e-9)
    assert out["is_gate"] and not out["passed"] and out["treatment_arm"] == "treatment"


def test_balance_of_a_ratio_covariate_uses_the_delta_method(rng):
    d0, d1 = 1.0 + rng.poisson(4, 4000), 1.0 + rng.poisson(4, 4000)
    c0, c1 = rng.gamma(2 * d0, 40.0), rng.gamma(2 * d1, 40.0)
    out = balance_checks(stats_rows("r", "ratio", {"control": {"c": c0, "d": d0},
                                                   "treatment": {"c": c1, "d": d1}}), {}, S).iloc[0]  # fmt: skip

    def ratio_and_var(c, d):  # the influence values' variance, computed from the units
        r = c.sum() / d.sum()
        return r, ((c - r * d) / d.mean()).var(ddof=1) / c.size

    (r0, v0), (r1, v1) = ratio_and_var(c0, d0), ratio_and_var(c1, d1)
    assert out["p_value"] == pytest.approx(2 * sps.norm.sf(abs(r1 - r0) / np.sqrt(v0 + v1)), rel=1e-6)
    assert out["passed"] and not out["is_gate"] and out["threshold"] == S.balance_alpha


def test_balance_of_three_arms_is_one_chi_square_with_two_df(rng):
    arms = {a: {"c": rng.normal(10.0 + s, 3.0, 2000)} for a, s in
            (("control", 0.0), ("t1", 0.0), ("t2", 0.4))}  # fmt: skip
    out = balance_checks(stats_rows("m", "mean", arms), {"e": {"m"}}, S).iloc[0]
    m = np.array([v["c"].mean() for v in arms.values()])
    w = np.array([v["c"].size / v["c"].var(ddof=1) for v in arms.values()])
    chi2 = np.sum(w * (m - np.sum(w * m) / w.sum()) ** 2)
    assert out["p_value"] == pytest.approx(sps.chi2.sf(chi2, 2), rel=1e-9)
    assert out["treatment_arm"] == "t2" and not out["passed"]


def test_a_covariate_few_units_have_is_no_covariate(rng):
    sparse = np.zeros(2000)
    sparse[:3] = rng.gamma(2.0, 50.0, 3)  # three units with a pre-period (clock-skewed uploads)
    rows = stats_rows("lat", "mean", {"control": {"c": sparse}, "treatment": {"c": rng.permutation(sparse)}})
    assert balance_checks(rows, {"e": {"lat"}}, S).empty


def _completeness(observed: dict[str, int], assigned: dict[str, int], gated=None, metric="lat"):
    st = pd.DataFrame([{"experiment_id": "e", "metric": metric, "metric_kind": "ratio",
                        "segment_type": "overall", "segment_value": "all", "arm": a,
                        "is_control": a == "control", "as_of_date": DAY, "n_units": float(n),
                        "n_events": 4.0 * n, "quantile_p": np.nan} for a, n in observed.items()])  # fmt: skip
    u = units({("overall", "all"): assigned})
    return completeness_checks(st, u, gated or {"e": {metric}}, S).iloc[0]


def test_completeness_tests_equal_shares_with_pearsons_chi_square():
    out = _completeness({"control": 610, "treatment": 540}, {"control": 1000, "treatment": 990})
    table = np.array([[610, 390], [540, 450]])
    assert out["p_value"] == pytest.approx(sps.chi2_contingency(table, correction=False).pvalue)
    assert out["statistic"] == pytest.approx(540 / 990 - 0.61)
    assert out["is_gate"] and out["passed"] == (out["p_value"] >= S.completeness_alpha)
    assert "control 61.0% of 1,000 units (4 per unit)" in out["detail"]


def test_an_arm_without_any_observation_of_a_metric_fails_it():
    out = _completeness({"control": 600}, {"control": 1000, "treatment": 1000})
    assert out["statistic"] == pytest.approx(-0.6) and not out["passed"]


def test_gates_are_bonferroni_over_the_declared_metrics_and_others_are_warnings():
    st = pd.concat([
        pd.DataFrame([{"experiment_id": "e", "metric": m, "metric_kind": "ratio", "segment_type": "overall",
                       "segment_value": "all", "arm": a, "is_control": a == "control", "as_of_date": DAY,
                       "n_units": n, "n_events": n, "quantile_p": np.nan}
                      for a, n in (("control", 600.0), ("treatment", 560.0))])
        for m in ("a", "b", "c")])  # fmt: skip
    out = completeness_checks(st, units({("overall", "all"): {"control": 1000, "treatment": 1000}}),
                              {"e": {"a", "b"}}, S).set_index("metric")  # fmt: skip
    assert out.loc["a", "threshold"] == out.loc["b", "threshold"] == S.completeness_alpha / 2
    assert not out.loc["c", "is_gate"] and out.loc["c", "threshold"] == S.completeness_alpha


def test_clustered_binomial_test_widens_the_band_by_the_design_effect(rng):
    # 40 clusters of 20 perfectly correlated trials (4 all hits): the design effect is the
    # cluster size, times J / (J - 1)
    hits = np.r_[np.full(4, 20), np.zeros(36)]
    share, deff, _ = clustered_binomial_test(hits, np.full(40, 20), 0.05, 5)
    assert share == 0.1 and deff == pytest.approx(20.0 * 40 / 39)
    # independent trials: the design effect is about 1, and the test holds its level
    z = []
    for _ in range(4000):
        x = rng.binomial(20, 0.05, 32)
        z.append(clustered_binomial_test(x, np.full(32, 20), 0.05, 5)[2])
    rejected = np.mean(2 * sps.norm.sf(np.abs(z)) < 0.01)
    assert rejected < 0.02
    # fewer clusters than min_clusters: every cluster counts as one trial
    assert clustered_binomial_test(np.array([3, 1]), np.array([50, 50]), 0.05, 5)[1] == 50.0


def _placebo_results(p_values: list[float], seq: list[bool], covered: list[bool], day=DAY):
    rows = []
    for i, (p, s) in enumerate(zip(p_values, seq, strict=True)):
        rows.append({"experiment_id": "e", "segment_type": "placebo", "segment_value": f"{day}#{i:02d}",
                     "as_of_date": day, "treatment_arm": "b", "method": "delta_ratio", "p_value": p,
                     "seq_ci_abs_lower": -1.0, "is_seq_significant": s,
                     "ci_rel_lower": np.nan, "ci_rel_upper": np.nan,
                     "seq_ci_rel_lower": np.nan, "seq_ci_rel_upper": np.nan})  # fmt: skip
    for i, c in enumerate(covered):
        lo, hi = (0.0, 0.05) if c else (0.04, 0.06)
        rows.append({"experiment_id": "e", "segment_type": "placebo", "segment_value": f"{day}#{i:02d}",
                     "as_of_date": day, "treatment_arm": "b_canary", "method": "delta_ratio+cuped",
                     "p_value": 0.0, "seq_ci_abs_lower": np.nan, "is_seq_significant": False,
                     "ci_rel_lower": lo, "ci_rel_upper": hi, "seq_ci_rel_lower": np.nan,
                     "seq_ci_rel_upper": np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def test_placebo_tally_counts_significant_aa_comparisons_and_covered_canaries():
    res = _placebo_results([0.01, 0.5, 0.3], [True, False, False], [True, False])
    tally = placebo_tally(res, 1.03, 0.05).set_index(["estimator", "placebo_split"])
    assert tally.loc[("delta_ratio", 0), "hits"] == 1 and tally.loc[("delta_ratio", 1), "hits"] == 0
    assert tally.loc[("delta_ratio/sequential", 0), "hits"] == 1
    assert tally.loc[("delta_ratio+cuped/relative", 0), "hits"] == 1
    assert tally.loc[("delta_ratio+cuped/relative", 1), "hits"] == 0
    assert ("delta_ratio+cuped/sequential_relative", 0) not in tally.index  # unbounded: not counted


def test_placebo_check_passes_near_alpha_and_fails_far_from_it(rng):
    good = pd.DataFrame({"experiment_id": "e", "as_of_date": pd.Timestamp(DAY), "kind": "aa",
                         "estimator": "welch_t", "placebo_split": np.arange(32), "comparisons": 20,
                         "hits": rng.binomial(20, 0.05, 32)})  # fmt: skip
    bad = good.assign(estimator="broken", hits=rng.binomial(20, 0.15, 32))
    out = placebo_checks(pd.concat([good, bad]), [DAY], S).set_index("estimator")
    assert out.loc["welch_t", "passed"] and not out.loc["broken", "passed"]
    assert out.loc["broken", "check"] == "aa_placebo" and not out.loc["broken", "is_gate"]
    assert "band" in out.loc["welch_t", "detail"]


def test_treatment_active_rows_come_from_the_decisions_tests():
    tests = pd.DataFrame([{"experiment_id": "e", "as_of_date": DAY, "treatment_arm": "t",
                           "test": "treatment_active", "label": "hol", "better": "increase",
                           "statistic": 1.0, "critical": 2.4, "passed": False}])  # fmt: skip
    out = treatment_active_checks(tests).iloc[0]
    assert out["check"] == "treatment_active" and not out["passed"] and not out["is_gate"]
    assert out["threshold"] == 2.4 and "not shown to move" in out["detail"]


def _decision_row(**extra):
    return {"experiment_id": "e", "metric": "latency", "segment_type": "overall", "segment_value": "all",
            "as_of_date": DAY, "quantile_p": None, "control_arm": "control", "treatment_arm": "treatment",
            "n_control": 10_000, "n_treatment": 10_000, "value_control": 100.0, "value_treatment": 90.0,
            "se_control": 0.1, "se_treatment": 0.1, "effective_events": 1e6, "sequential_tuning_n": 2e4,
            "sequential_calibrated": True, "srm_p_value": 0.5, **extra}  # fmt: skip


def test_a_failed_gate_makes_the_verdict_invalid_and_names_the_check():
    plan = DecisionPlan(roles=(MetricRole(role="success", metric="latency", better="decrease",
                                          minimum_effect=0.02),), start_date=date(2026, 6, 15))  # fmt: skip
    s = DecisionSettings(experiments={"e": plan})
    results = pd.DataFrame([_decision_row()])
    assert decide(results, s).verdicts["verdict"].iloc[0] == "ship"
    health = pd.DataFrame([
        {"experiment_id": "e", "as_of_date": DAY, "check": "crossover", "passed": False, "is_gate": True},
        {"experiment_id": "e", "as_of_date": DAY, "check": "aa_placebo", "passed": False, "is_gate": False},
        {"experiment_id": "e", "as_of_date": DAY, "check": "srm", "passed": True, "is_gate": True},
    ])  # fmt: skip
    v = decide(results, s, health).verdicts.iloc[0]
    assert v["verdict"] == "invalid" and v["reasons"][0] == "gate_failed:crossover"
    assert not any("aa_placebo" in r for r in v["reasons"])
    # the results' own SRM and the health table's name the check once
    health.loc[2, "passed"] = False
    v = decide(pd.DataFrame([_decision_row(srm_p_value=1e-6)]), s, health).verdicts.iloc[0]
    assert v["reasons"][:2] == ["gate_failed:srm", "gate_failed:crossover"]
    assert list(failed_gates(health)["check"]) == ["crossover", "srm"]
