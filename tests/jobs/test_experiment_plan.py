"""jobs.experiment_plan.plan: the registry's declared metrics sized from results in the lake
(pure step; the Spark read is exercised by the pipeline tests' lake)."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pandas as pd
import pytest

from jobs.experiment_plan import plan
from quicexp.config import REPO_ROOT, load_settings
from quicexp.errors import InputDataError
from quicexp.registry import load_registry
from stats.decision import required_noncentrality

REGISTRY = load_registry(REPO_ROOT / "registry" / "experiments.yml")
FHOL = REGISTRY.get("fhol_2026_06")
LABELS = {  # (metric, quantile): control value
    ("request_latency", None): 800.0, ("request_latency_p", 0.95): 3000.0,
    ("search_latency", None): 400.0, ("search_abandonment_rate", None): 0.05,
    ("mtbr", None): 120.0, ("rebuffer_time_ratio", None): 0.01,
    ("mean_client_bandwidth", None): 5000.0,
}  # fmt: skip


def results(experiment: str, days: int, start: date = date(2026, 6, 15), per_day: int = 1000):
    rows = []
    for d in range(days):
        for (metric, q), value in LABELS.items():
            rows.append({"experiment_id": experiment, "metric": metric, "quantile_p": q,
                         "as_of_date": start + timedelta(days=d), "n_control": per_day * (d + 1),
                         "value_control": value,
                         "se_control": value / np.sqrt(per_day * (d + 1))})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_experiment_is_sized_from_its_own_latest_results():
    p = plan(results("fhol_2026_06", 3), FHOL, REGISTRY, load_settings())
    assert p.reference_id == "fhol_2026_06" and p.reference_date == "2026-06-17"
    assert p.units_per_arm_per_day == pytest.approx(1000)
    t = p.tests.set_index("metric")
    # per-unit variance = value^2 (se = value / sqrt(n)): the success test needs
    # 2 (theta / effect)^2 units per arm
    theta = required_noncentrality(0.05, 1 - 0.2 / 7, 14)
    assert t.loc["request_latency", "units_per_arm"] == pytest.approx(2 * (theta / 0.01) ** 2, rel=1e-4)
    assert p.units_per_arm == t["units_per_arm"].max()  # a guardrail binds (tighter margins)
    assert p.days == pytest.approx(p.units_per_arm / 1000)


def test_before_it_starts_another_experiment_with_the_same_metrics_is_the_reference():
    other = results("an_older_one", 2, start=date(2026, 5, 1), per_day=500)
    p = plan(other, FHOL, REGISTRY, load_settings())
    assert p.reference_id == "an_older_one" and p.units_per_arm_per_day == pytest.approx(500)


def test_metrics_without_results_are_named():
    partial = results("fhol_2026_06", 1)
    partial = partial[partial["metric"] != "mtbr"]
    with pytest.raises(InputDataError, match="no results of mtbr"):
        plan(partial, FHOL, REGISTRY, load_settings())
