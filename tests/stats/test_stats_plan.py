"""Statistics sized to the experiment's plan: sequential N* and looks, MDE, power flag.

Without a plan, the always-valid interval is tuned to N* = 100,000 units whatever the
experiment's size (at 8,000 units it is 2.08x as wide as the fixed-horizon interval), and no
output column showed the MDE.
"""

from __future__ import annotations

import math
from datetime import date

import numpy as np
import pandas as pd
import pytest
from _stats_tables import mean_rows, table
from scipy import stats as sps

from quicexp.config import ConfigError
from quicexp.registry import load_registry
from stats import study
from stats.engine import analyze
from stats.power import sequential_power
from stats.schema import OUTPUT_COLUMNS
from stats.sequential import brownian_boundary, calibrated_alpha, confidence_sequence
from stats.settings import AnalysisSettings, ExperimentPlan

NEW_COLUMNS = ["mde_relative", "mde_relative_planned", "target_relative_effect",
               "is_underpowered", "sequential_width_ratio"]  # fmt: skip


def _registry(tmp_path, extra: str):
    path = tmp_path / "experiments.yml"
    path.write_text(
        "experiments:\n"
        "  - id: e1\n    title: t\n    start_date: '2026-01-01'\n" + extra +
        "    arms:\n"
        "      - {name: A, share: 0.5, is_control: true}\n"
        "      - {name: B, share: 0.5}\n"
    )  # fmt: skip
    return load_registry(path)


def test_registry_plan_fields_are_optional_and_parsed(tmp_path):
    assert _registry(tmp_path, "").plans() == {}
    reg = _registry(
        tmp_path,
        "    planned_units_per_arm: 4000\n    planned_days: 30\n    target_relative_effect: 0.03\n",
    )
    assert reg.plans()["e1"] == {"start_date": date(2026, 1, 1), "planned_units_per_arm": 4000,
                                 "planned_days": 30, "target_relative_effect": 0.03}  # fmt: skip
    AnalysisSettings(plans=reg.plans())  # the job's hand-over validates


@pytest.mark.parametrize("bad", ["planned_days: 0", "planned_units_per_arm: -5",
                                 "target_relative_effect: 0", "planned_days: soon"])  # fmt: skip
def test_registry_rejects_impossible_plans(tmp_path, bad):
    with pytest.raises(ConfigError, match="experiment registry"):
        _registry(tmp_path, f"    {bad}\n")


def test_repo_registry_plan_reaches_the_engine():
    from jobs.experiment_results import analysis_settings

    plan = analysis_settings(load_registry()).plans["fhol_2026_06"]
    assert plan.planned_units_per_arm == 100_000 and plan.planned_days == 14


def _one(rng, settings: AnalysisSettings, day: str = "2026-01-10") -> pd.Series:
    res = analyze(table(mean_rows(rng, n=1000, day=day)), settings)
    assert list(res.columns) == OUTPUT_COLUMNS and OUTPUT_COLUMNS[-10:-5] == NEW_COLUMNS
    return res.iloc[0]


def test_power_columns_without_plan(rng):
    r = _one(rng, AnalysisSettings())
    mult = sps.t.ppf(0.975, r["df"]) + sps.t.ppf(0.8, r["df"])
    assert r["mde_relative"] == pytest.approx(mult * r["se_rel"], rel=1e-12)
    assert pd.isna(r["mde_relative_planned"]) and pd.isna(r["target_relative_effect"])
    assert not r["is_underpowered"]  # nothing to check it against: not flagged
    width = (r["seq_ci_abs_upper"] - r["seq_ci_abs_lower"]) / (
        r["ci_abs_upper"] - r["ci_abs_lower"]
    )
    assert r["sequential_width_ratio"] == pytest.approx(width, rel=1e-12)


def test_power_columns_with_planned_units(rng):
    plan = ExperimentPlan(start_date=date(2026, 1, 1), planned_units_per_arm=4000,
                          target_relative_effect=0.05)  # fmt: skip
    r = _one(rng, AnalysisSettings(plans={"e1": plan}))
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    # 4x the units: half the standard error
    assert r["mde_relative_planned"] == pytest.approx(z * r["se_rel"] / 2, rel=1e-12)
    assert r["target_relative_effect"] == 0.05
    assert bool(r["is_underpowered"]) == (r["mde_relative_planned"] > 0.05)
    tight = _one(rng, AnalysisSettings(plans={"e1": plan.model_copy(
        update={"target_relative_effect": 10.0})}))  # fmt: skip
    loose = _one(rng, AnalysisSettings(plans={"e1": plan.model_copy(
        update={"target_relative_effect": 1e-4})}))  # fmt: skip
    assert not tight["is_underpowered"] and loose["is_underpowered"]


def test_planned_days_alone_extrapolates_the_size(rng):
    """Day 10 of 30 with 1,000 units per arm: planned 3,000 per arm (counts only)."""
    plan = ExperimentPlan(start_date=date(2026, 1, 1), planned_days=30)
    r = _one(rng, AnalysisSettings(plans={"e1": plan}), day="2026-01-10")
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert r["mde_relative_planned"] == pytest.approx(z * r["se_rel"] / math.sqrt(3), rel=1e-12)
    units = AnalysisSettings(plans={"e1": ExperimentPlan(
        start_date=date(2026, 1, 1), planned_units_per_arm=3000, planned_days=30)})  # fmt: skip
    same = _one(rng, units, day="2026-01-10")
    assert same["mde_relative_planned"] == pytest.approx(
        z * same["se_rel"] / math.sqrt(3), rel=1e-12
    )


def test_past_the_planned_days_is_flagged(rng):
    plan = ExperimentPlan(start_date=date(2026, 1, 1), planned_units_per_arm=1000, planned_days=5)
    r = _one(rng, AnalysisSettings(plans={"e1": plan}), day="2026-01-10")
    assert "sequential_past_plan" in r["flags"]


def test_width_at_the_planned_horizon():
    """At N = N* the calibrated sequence is at most 1.5x the fixed-horizon z interval; the
    unplanned default (N* = 100,000, Ville's level) is 2.08x at 8,000 units."""
    n_star = 8000.0
    z = sps.norm.ppf(0.975)
    new = confidence_sequence(0.0, 1.0, n_star, calibrated_alpha(0.05), n_star)
    old = confidence_sequence(0.0, 1.0, n_star, 0.05, 100_000.0)
    assert new.ci_upper / z <= 1.5
    assert old.ci_upper / z > 2.0
    print(f"width ratio {new.ci_upper / z:.3f} (unplanned {old.ci_upper / z:.3f})")


def test_calibrated_alpha_is_deterministic_and_between_ville_and_the_exact_looks():
    a = calibrated_alpha(0.05)
    assert a == calibrated_alpha(0.05)
    # any schedule up to N* costs more than exactly 30 looks, which cost more than 7
    assert 0.05 < a < calibrated_alpha(0.05, 30) < calibrated_alpha(0.05, 7) < 0.5


def _paths(looks: int, paths: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.abs(np.cumsum(rng.standard_normal((paths, looks)), axis=1) / np.sqrt(looks))


@pytest.mark.parametrize(
    ("schedule", "looks", "traffic"),
    [("daily", 30, 1.0), ("daily, traffic 1.5x the plan", 30, 1.5), ("4 looks a day", 120, 1.0)],
)
def test_gaussian_limit_crossing_for_other_schedules(schedule, looks, traffic):
    """Brownian paths (independent of the calibration's): the continuous calibration keeps
    looks below 5% (with margin) daily, when traffic overshoots the plan and at 4 looks a day; the replaced exact-30-looks level exceeds 5% in both departures from its plan."""
    sims = 100_000
    frac = np.arange(1, looks + 1) / looks * traffic
    w = _paths(looks, sims, seed=99) * np.sqrt(traffic)

    def rate(level: float) -> float:
        return float((w >= brownian_boundary(frac, level)).any(axis=1).mean())

    new, old = rate(calibrated_alpha(0.05)), rate(calibrated_alpha(0.05, 30))
    print(f"{schedule}: continuous calibration {new:.4f}, exact 30 looks {old:.4f}")
    assert _upper(new, sims) <= 0.05
    if schedule != "daily":
        assert _lower(old, sims) > 0.05


def _band(p: float, n: int) -> float:
    return 3.5 * math.sqrt(p * (1 - p) / n)


def _upper(p: float, n: int) -> float:
    """Upper end of the 95% Clopper-Pearson interval of a rate p over n trials."""
    return sps.binomtest(round(p * n), n).proportion_ci(0.95).high


def _lower(p: float, n: int) -> float:
    return sps.binomtest(round(p * n), n).proportion_ci(0.95).low


AA_SIMS, EFFECT_SIMS = 3_000, 400


@pytest.fixture(scope="module")
def aa() -> dict[str, float]:
    out = study.sequential_plan_study(20260107, AA_SIMS, 1_000, metrics=("mean", "ratio"))
    print(out)
    return out


@pytest.mark.parametrize("metric", ["mean", "ratio"])
def test_aa_ever_significant_over_30_daily_looks(aa, metric):
    """Through the engine on heavy-tailed clustered units: the 95% upper end of the
    ever-significant rate is at most 5% (the replaced exact-looks level scatters around 5%)."""
    rate = aa[f"seq_ever_significant_{metric}"]
    assert _upper(rate, AA_SIMS) <= 0.05, rate
    assert aa[f"seq_width_ratio_at_horizon_{metric}"] <= 1.5


def test_true_lift_detection_at_the_planned_horizon():
    """4,000 clients per arm, a true 3% lift, 30 daily looks, the ratio metric with CUPED: the
    engine's detection rate matches the Gaussian-limit power of the sequence, which is above
    one half at this size, and keeps most of the fixed-horizon power."""
    out = study.sequential_plan_study(20260108, EFFECT_SIMS, 4_000, effect=0.03,
                                      metrics=("ratio_cuped",))  # fmt: skip
    print(out)
    seq = out["seq_significant_at_horizon_ratio_cuped"]
    theta = out["true_delta_ratio_cuped"] / out["horizon_se_ratio_cuped"]
    model = sequential_power(theta, 30)
    assert model > 0.5
    assert abs(seq - model) <= _band(model, EFFECT_SIMS)
    assert seq >= 0.75 * out["fixed_significant_at_horizon_ratio_cuped"]
