"""Randomisation: stable hashing, configured splits, independent experiments, and an A/A run."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simulation.assignment import assign
from simulation.hashing import hash2, str_key
from simulation.measure import collect

IDS = hash2(np.arange(200_000, dtype=np.uint64), str_key("test-clients"))


def test_split_follows_weights_and_is_stable():
    arms = assign(IDS, "exp-a", [1, 1, 2])
    counts = np.bincount(arms, minlength=3)
    assert stats.chisquare(counts, f_exp=np.array([0.25, 0.25, 0.5]) * len(IDS)).pvalue > 0.001
    assert np.array_equal(arms, assign(IDS, "exp-a", [1, 1, 2]))
    assert not np.array_equal(arms, assign(IDS, "exp-a", [1, 1, 2], salt="other"))


def test_enrolment_fraction():
    arms = assign(IDS, "exp-b", [1, 1], enrolled_fraction=0.3)
    assert abs((arms >= 0).mean() - 0.3) < 0.01
    assert abs((arms == 0).sum() / (arms >= 0).sum() - 0.5) < 0.01


def test_concurrent_experiments_are_independent():
    a = assign(IDS, "exp-a", [1, 1])
    b = assign(IDS, "exp-c", [1, 1])
    table = pd.crosstab(a, b).to_numpy()
    assert stats.chi2_contingency(table).pvalue > 0.001


@pytest.fixture(scope="module")
def aa():
    return collect("aa", clients=15_000, days=2)


def per_client(df, value, arm="aa_2026"):
    g = df.groupby(["client", arm])[value].agg(["sum", "count"]).reset_index()
    return {a: (x["sum"] / x["count"]).to_numpy() for a, x in g.groupby(arm)}


@pytest.mark.parametrize(
    "kind,value",
    [
        ("http_transactions", "latency_ms"),
        ("http_transactions", "ttfb_ms"),
        ("video_playbacks", "rebuffer_count"),
        ("video_playbacks", "mean_bandwidth_kbps"),
        ("search_queries", "abandoned"),
        ("connections", "packets_retransmitted"),
        ("page_loads", "speed_index_ms"),
        ("header_compression", "header_hol_delay_ms"),
    ],
)
def test_aa_no_difference_beyond_chance(aa, kind, value):
    x = per_client(aa[kind], value)
    t = stats.ttest_ind(x["a"], x["b"], equal_var=False)
    assert t.pvalue > 0.001, (kind, value, t)


def test_aa_sample_ratio(aa):
    clients = aa["http_transactions"].groupby("aa_2026").client.nunique()
    assert stats.chisquare(clients.to_numpy()).pvalue > 0.001


def test_pre_period_before_start_day():
    from simulation.scenario import load_scenario, validate_scenario

    data = load_scenario("aa").model_dump()
    data["experiments"][0]["start_day"] = 1
    sc = validate_scenario(data)
    f = collect(sc, clients=1_000, days=2, kinds=("http_transactions",))["http_transactions"]
    assert f[f.day == 0].aa_2026.isna().all()
    assert f[f.day == 1].aa_2026.notna().all()
