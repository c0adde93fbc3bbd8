"""Over 30 simulated clean days the A/A placebo's running tally of every estimator stays in its
band around alpha, and the known-effect canary's coverage in its band around 95%
(stats/health_study.py: the mart's re-splits and canary, the engine on every look, the checks)."""

from __future__ import annotations

from scipy import stats as sps

from stats.health import HealthSettings
from stats.health_study import placebo_study

METHODS = {"welch_t", "welch_t+cuped", "z_proportion", "z_proportion+cuped", "delta_ratio",
           "delta_ratio+cuped", "quantile_outer_ci"}  # fmt: skip


def test_thirty_clean_days_keep_every_tally_in_its_band():
    s = HealthSettings()
    study = placebo_study(20260601, days=30)
    checks = study.checks.set_index("estimator")
    aa = checks[checks["check"] == "aa_placebo"]
    assert set(aa.index) == METHODS | {f"{m}/sequential" for m in METHODS}
    canary = checks[checks["check"] == "canary_coverage"]
    relative = METHODS - {"z_proportion", "z_proportion+cuped"}  # 0/1 values have no canary
    assert set(canary.index) == {f"{m}/{k}" for m in relative for k in ("relative", "sequential_relative")}
    assert checks["passed"].astype(bool).all(), checks.loc[~checks["passed"].astype(bool), "detail"]
    tally = study.tally.groupby(["kind", "estimator"])[["hits", "comparisons"]].sum()
    for estimator in METHODS:
        hits, n = tally.loc[("aa", estimator)]
        assert n == 30 * 32 * (2 if "quantile" in estimator else 1)  # every split of every day
        # within the plain binomial band too: fresh splits make the days independent trials
        lo, hi = sps.binom.ppf([0.0005, 0.9995], n, s.placebo_alpha)
        assert lo <= hits <= hi, (estimator, hits, n)
    for estimator in (f"{m}/relative" for m in relative):
        hits, n = tally.loc[("canary", estimator)]
        lo, hi = sps.binom.ppf([0.0005, 0.9995], n, 1 - s.placebo_alpha)
        assert lo <= hits <= hi, (estimator, hits, n)
    # the always-valid interval of a single look rejects far less often than alpha
    sequential = tally.loc["aa"].filter(like="/sequential", axis=0)
    assert (sequential["hits"] / sequential["comparisons"]).max() < s.placebo_alpha
