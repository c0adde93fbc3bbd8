"""The stats.study at reduced size: the engine's calibration, with the numbers printed.

The full study (``python -m stats.study --full``, 10,000 tests per check, numbers in
docs/stats.md) holds the tight bands of the acceptance criteria. Here the bands are
+-3.5 binomial standard errors at the reduced size, wide enough not to flake yet far tighter
than the failures they guard against (ignoring clustering gives false-positive rates of
15-30% on these data; peeking without a sequential test gives ~25%).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats import study


@pytest.fixture(scope="module")
def numbers() -> dict[str, float]:
    out = study.run_study(study.FAST, seed=20260102)
    for name, value in out.items():
        print(f"{name:45s} {value:.5f}")
    return out


def _band(p: float, n: int) -> float:
    return 3.5 * math.sqrt(p * (1 - p) / n)


METRICS = ("mean", "mean_cuped", "ratio", "ratio_cuped", "latency_p50", "latency_p95")


@pytest.mark.parametrize("metric", METRICS)
def test_aa_false_positive_rate(numbers, metric):
    assert abs(numbers[f"fpr_{metric}"] - 0.05) <= _band(0.05, study.FAST.sims)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("scale", ["abs", "rel"])
def test_coverage_with_known_effect(numbers, metric, scale):
    assert abs(numbers[f"coverage_{scale}_{metric}"] - 0.95) <= _band(0.05, study.FAST.sims)


def test_cuped_variance_reduction_is_one_minus_rho_squared(numbers):
    for kind in ("mean", "ratio"):
        target = numbers[f"cuped_{kind}_one_minus_rho2"]
        assert target < 0.6  # the covariate is informative in this model
        assert numbers[f"cuped_{kind}_estimated_variance_ratio"] == pytest.approx(target, rel=0.05)
        assert numbers[f"cuped_{kind}_mc_variance_ratio"] == pytest.approx(target, rel=0.10)


def test_sequential_interval_controls_peeking(numbers):
    n = study.FAST.seq_sims
    assert numbers["sequential_ever_significant"] <= 0.05 + _band(0.05, n) / 3.5 * 2
    assert numbers["fixed_horizon_ever_significant"] > 0.15


def test_srm_gate(numbers):
    assert numbers["srm_exact_size_aa"] <= 0.001
    assert numbers["srm_alarm_rate_aa"] <= 0.001 + _band(0.001, study.FAST.srm_sims)
    assert numbers["srm_p_505_495_exact_counts"] < 0.001


def test_quantile_reduction_matches_per_unit_reference():
    """The study's vectorised 'warehouse' reduction equals a plain per-unit computation."""
    rng = np.random.default_rng(3)
    n = np.array([7, 9])
    arm = study._draw_arm(rng, n, 9, 0.0)
    rows = study.quantile_rows(np.random.default_rng(4), arm, np.arange(2), 0, 0.0)
    # regenerate the same event values in the same order
    counts = arm.x.astype(int)
    unit = np.repeat(np.arange(counts.size), counts.ravel())
    eps = np.random.default_rng(4).standard_normal(unit.size)
    values = np.exp(study.LAT_MU + arm.u.ravel()[unit] + study.SIGMA_E * eps)
    values = study.bin_values(values)  # the mart's bins
    for row in rows:
        p = row["quantile_p"]
        for sim in range(2):
            v = values[unit // 9 == sim]
            by_unit = [values[unit == u] for u in range(sim * 9, sim * 9 + 9)]
            q = np.sort(v)[math.ceil(v.size * p) - 1]
            s = np.array([(b <= q).sum() for b in by_unit], float)
            k = np.array([b.size for b in by_unit], float)
            assert row["quantile_value"][sim] == q
            assert row["n_events"][sim] == v.size
            assert row["sum_s"][sim] == s.sum() and row["sum_s2"][sim] == (s * s).sum()
            assert row["sum_sn"][sim] == (s * k).sum() and row["sum_n2"][sim] == (k * k).sum()
            assert row["grid_value"][sim][len(study.GRID_C) // 2] == q


def test_bin_values_match_the_mart_macro():
    v = np.array([80.0, 80.05, 1234.5])
    b = study.bin_values(v, 0.001)
    assert np.all(np.abs(b / v - 1) <= np.sqrt(1.001) - 1 + 1e-12)
    assert b[0] == b[1]  # same 0.1% bin
    k = np.floor(np.log(1234.5) / np.log(1.001))
    assert b[2] == pytest.approx(1.001 ** (k + 0.5), rel=1e-12)


def test_acceptance_checks_report_failures(numbers):
    checks = study.acceptance(numbers)
    assert (
        len(checks) == 6 * 3 + 2 + 3
    )  # metrics x (fpr, abs, rel), CUPED x 2, sequential + SRM x 2
    broken = {**numbers, "fpr_ratio": 0.09, "sequential_ever_significant": 0.2}
    failed = {name for name, _, _, ok in study.acceptance(broken) if not ok}
    assert {"fpr_ratio", "sequential_ever_significant"} <= failed
