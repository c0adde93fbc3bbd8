"""Normal-mixture confidence sequence: closed form, duality with its p-value, intersection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from stats.sequential import confidence_sequence, mixing_rho2, running_intersection


def test_halfwidth_matches_gbstats_closed_form():
    # gbstats sequential_interval_halfwidth: s sqrt(2 (n rho^2 + 1) / (n^2 rho^2) log(sqrt(n rho^2 + 1) / alpha))
    alpha, n_star, n, s2 = 0.05, 10_000, 4_000, 9.0
    rho2 = (-2 * np.log(alpha) + np.log(-2 * np.log(alpha) + 1)) / n_star
    expected = np.sqrt(s2) * np.sqrt(
        2 * (n * rho2 + 1) / (n**2 * rho2) * np.log(np.sqrt(n * rho2 + 1) / alpha)
    )
    cs = confidence_sequence(0.0, s2 / n, n, alpha, n_star)
    assert cs.ci_upper == pytest.approx(expected, rel=1e-12)
    assert mixing_rho2(alpha, n_star) == pytest.approx(rho2, rel=1e-12)


@pytest.mark.parametrize("estimate", [0.05, 0.2, 0.31, 1.0])
def test_p_value_below_alpha_iff_interval_excludes_zero(estimate):
    cs = confidence_sequence(estimate, 0.01, 5_000, 0.05, 10_000)
    assert (cs.p_value < 0.05) == (cs.ci_lower > 0)


def test_sequence_is_wider_than_fixed_horizon_interval():
    var = 0.01
    cs = confidence_sequence(0.0, var, 10_000, 0.05, 10_000)
    assert cs.ci_upper > sps.norm.ppf(0.975) * np.sqrt(var)


def test_running_intersection_per_comparison_in_time_order():
    group = np.array([0, 0, 0, 1, 1])
    day = np.array([2, 0, 1, 0, 1])
    lo = np.array([-1.0, -3.0, -2.5, 0.0, -1.0])
    hi = np.array([0.5, 3.0, 1.0, 2.0, 3.0])
    p = np.array([0.9, 0.5, 0.7, 0.2, 0.4])
    rlo, rhi, rp = running_intersection(group, day, lo, hi, p)
    np.testing.assert_allclose(rlo, [-1.0, -3.0, -2.5, 0.0, 0.0])
    np.testing.assert_allclose(rhi, [0.5, 3.0, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(rp, [0.5, 0.5, 0.5, 0.2, 0.2])


def _proportion_looks(events: list[tuple[int, int]], n_per_look: int = 2_000,
                      plan: dict | None = None) -> pd.DataFrame:  # fmt: skip
    """Cumulative rows of a rare-event proportion: (control, treatment) events per look."""
    from datetime import date

    from stats.engine import analyze
    from stats.settings import AnalysisSettings, ExperimentPlan

    rows, cum = [], [0, 0]
    for k, new in enumerate(events):
        for arm in (0, 1):
            cum[arm] += new[arm]
            rows.append({
                "experiment_id": "e1", "metric": "crash", "metric_kind": "proportion",
                "segment_type": "overall", "segment_value": "all", "arm": "AB"[arm],
                "is_control": arm == 0, "as_of_date": f"2026-01-{k + 1:02d}",
                "n_units": n_per_look * (k + 1), "sum_y": float(cum[arm]),
            })  # fmt: skip
    plans = {"e1": ExperimentPlan(start_date=date(2026, 1, 1), **(plan or {}))}
    res = analyze(pd.DataFrame(rows), AnalysisSettings(plans=plans))
    return res.sort_values("as_of_date").reset_index(drop=True)


def test_an_early_look_without_events_neither_collapses_nor_pins_the_relative_interval():
    # day 1: the treatment arm has no crash yet; the old delta-method sequence was [-100%, -100%]
    # there and, intersected, stayed so; later days are ordinary
    res = _proportion_looks([(2, 0)] + [(40, 41)] * 9, plan={"planned_units_per_arm": 20_000,
                                                            "planned_days": 10})  # fmt: skip
    first, last = res.iloc[0], res.iloc[-1]
    assert "sequential_insufficient_data" in first["flags"]
    assert np.isnan(first["seq_ci_rel_lower"]) and np.isnan(first["seq_ci_abs_lower"])
    assert last["seq_ci_rel_lower"] < 0 < last["seq_ci_rel_upper"]
    assert last["seq_ci_rel_lower"] > -1.0
    assert not last["is_seq_significant"]
    assert (res["seq_ci_rel_lower"].dropna() <= res["seq_ci_rel_upper"].dropna()).all()


def test_an_unbounded_relative_look_adds_no_constraint_and_is_flagged():
    # 11 events in control: enough for the rule, too few to bound Fieller's set at the boundary
    res = _proportion_looks([(11, 12)], plan={"planned_units_per_arm": 200_000})
    r = res.iloc[0]
    assert "sequential_rel_unbounded" in r["flags"] and np.isnan(r["seq_ci_rel_lower"])
    assert np.isfinite(r["seq_ci_abs_lower"])


def test_a_contradicted_intersection_reports_the_look_and_says_so():
    res = _proportion_looks([(400, 10), (10, 2_000)], plan={"planned_units_per_arm": 4_000})
    last = res.iloc[-1]
    assert "sequential_conflict" in last["flags"]
    assert last["seq_ci_abs_lower"] <= last["seq_ci_abs_upper"]
    assert last["seq_ci_rel_lower"] <= last["seq_ci_rel_upper"]


def test_a_plan_of_units_alone_is_calibrated_and_traffic_beyond_it_flagged():
    res = _proportion_looks([(40, 41)] * 3, plan={"planned_units_per_arm": 4_000})
    assert res["sequential_calibrated"].all()
    assert res["sequential_tuning_n"].eq(8_000).all()
    # 2,000 a look per arm: 4,000 at look 2 (on plan), 6,000 at look 3 (beyond it)
    beyond = res["flags"].str.contains("sequential_beyond_plan").tolist()
    assert beyond == [False, False, True]


def test_the_one_sided_level_is_calibrated_for_its_own_side():
    from stats.sequential import calibrated_alpha

    two, one = calibrated_alpha(0.05), calibrated_alpha(0.05, sides=1)
    assert one > two  # one side of the boundary may be crossed with the whole alpha
    assert calibrated_alpha(0.025, sides=1) == pytest.approx(two, abs=0.01)
    with pytest.raises(ValueError, match="sides"):
        calibrated_alpha(0.05, sides=3)
