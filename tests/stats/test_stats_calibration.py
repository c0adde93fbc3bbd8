"""Small-sample calibration at reduced size: FPR and coverage within binomial bands.

The full grid (100 to 4,000 units per arm, 5,000 experiments per cell) is in docs/stats.md
(``python -m stats.study --calibration 5000``). Here the two smallest sizes run with fewer
experiments; each band is +-3.5 binomial standard errors of the number of simulated
experiments (seeded, so the numbers are deterministic). The large-sample reference the engine
used before falls outside these bands at 100 units per arm (5,000 experiments): relative
coverage 93.0% (mean, z + delta method), 93.8% (ratio), and p95 A/A rejection 3.4% with the
uncapped quantile window.
"""

from __future__ import annotations

import math

import pytest

from stats import study

SIZES = {100: 4_000, 200: 2_000}  # units per arm -> simulated experiments per check


@pytest.fixture(scope="module")
def grid() -> dict[int, dict[str, float]]:
    out = {n: study.calibration(20260105, sims, n) for n, sims in SIZES.items()}
    for n, numbers in out.items():
        for name, value in numbers.items():
            if not name.endswith("_delta"):
                print(f"{n:5d} {name:40s} {value:.4f}")
    return out


def _within(value: float, target: float, sims: int) -> bool:
    return abs(value - target) <= 3.5 * math.sqrt(target * (1 - target) / sims)


@pytest.mark.parametrize("n", list(SIZES))
@pytest.mark.parametrize("metric", study.CALIBRATION_METRICS)
def test_aa_false_positive_rate(grid, n, metric):
    assert _within(grid[n][f"fpr_{metric}"], 0.05, SIZES[n])


@pytest.mark.parametrize("n", list(SIZES))
@pytest.mark.parametrize("metric", study.CALIBRATION_METRICS)
@pytest.mark.parametrize("scale", ["abs", "rel"])
def test_coverage_of_the_true_delta(grid, n, metric, scale):
    assert _within(grid[n][f"coverage_{scale}_{metric}"], 0.95, SIZES[n])


def test_fieller_improves_on_the_delta_method_at_100_units(grid):
    """Paired on the same experiments: the default (t + Fieller) covers more than t + delta."""
    for metric in ("mean", "ratio"):
        new, old = (grid[100][f"coverage_rel_{metric}{s}"] for s in ("", "_t_delta"))
        assert new > old + 0.005
