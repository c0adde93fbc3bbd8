"""The health checks' marts against independent computations: the assigned units per arm from the
raw bronze events, and the A/A placebo's pseudo-arms against the real control arm's statistics
(the two halves of every split add up to it; the canary is one half with every value times the
known factor)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from tests.models.conftest import EXPERIMENT_ID, EXPERIMENT_START, LAST_DAY

KINDS = ("http_transactions", "search_queries", "page_loads", "video_playbacks", "connections",
         "multipath_paths", "header_compression")  # fmt: skip
MOMENTS = ["n_units", "sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy", "sum_c", "sum_c2", "sum_yc",
           "sum_d", "sum_d2", "sum_cd", "sum_yd", "sum_xc", "sum_xd", "n_events"]  # fmt: skip
QUANTILE_SUMS = ["n_events", "sum_n", "sum_n2"]


def _value(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _close(a, b, rel=1e-9) -> bool:
    a, b = _value(a), _value(b)
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


@pytest.fixture(scope="module")
def marts(spark, full_lake):
    gold = full_lake.gold_schema
    counts = spark.table(f"{gold}.experiment_health_counts").toPandas()
    placebo = spark.table(f"{gold}.experiment_placebo_sufficient_stats").toPandas()
    stats = spark.sql(f"select * from {gold}.experiment_sufficient_stats where segment_type = 'overall'"
                      f" and is_control").toPandas()  # fmt: skip
    return counts, placebo, stats


def test_assigned_units_are_every_unit_seen_in_the_arm(spark, full_lake, marts):
    from pyspark.sql import functions as F

    counts, _, _ = marts
    arm = F.col("experiments").getItem(EXPERIMENT_ID)
    seen = None
    for kind in KINDS:
        part = (spark.table(f"{full_lake.bronze_schema}.{kind}")
                .where(arm.isNotNull() & F.col("event_date").between(F.lit(EXPERIMENT_START), F.lit(LAST_DAY)))
                .select("client_id", arm.alias("arm"), "platform"))  # fmt: skip
        seen = part if seen is None else seen.unionByName(part)
    units = seen.groupBy("client_id", "arm").agg(F.min("platform").alias("platform")).toPandas()
    last = counts[(counts["experiment_id"] == EXPERIMENT_ID) & (counts["as_of_date"] == LAST_DAY)]
    overall = last[last["segment_type"] == "overall"].set_index("arm")
    assert overall["units"].to_dict() == units.groupby("arm").size().to_dict()
    assert (overall["experiment_units"] == units["client_id"].nunique()).all()
    assert (overall["crossover_units"] == 0).all() and (overall["experiment_crossover_units"] == 0).all()
    platform = last[last["segment_type"] == "platform"].set_index(["segment_value", "arm"])["units"]
    assert platform.to_dict() == units.groupby(["platform", "arm"]).size().to_dict()
    # one row per arm, segment and day of the experiment
    days = sorted(counts.loc[counts["experiment_id"] == EXPERIMENT_ID, "as_of_date"].unique())
    assert days[0] == EXPERIMENT_START and days[-1] == LAST_DAY


def test_every_placebo_split_halves_the_control_arm(marts):
    _, placebo, control = marts
    halves = placebo[placebo["arm"].isin(["a", "b"])]
    key = ["experiment_id", "metric", "as_of_date", "quantile_p"]
    splits = halves["placebo_split"].nunique()
    assert splits == 16  # var placebo_splits
    moments = halves[halves["metric_kind"] != "quantile"]
    groups = moments.groupby([*key[:3], "placebo_split"])
    # a half without any pre-period event has null covariate sums: compare where both have them
    summed = groups[MOMENTS].sum(min_count=2).reset_index()
    want = control[control["metric_kind"] != "quantile"].set_index(key[:3])
    checked = 0
    for r in summed.itertuples(index=False):
        w = want.loc[(r.experiment_id, r.metric, r.as_of_date)]
        for col in MOMENTS:
            got = getattr(r, col)
            if _value(got) is None and col not in ("n_units", "sum_y", "sum_y2", "n_events"):
                continue
            assert _close(got, w[col]), (r.metric, r.as_of_date, r.placebo_split, col)
        checked += 1
    assert checked == splits * len(want)
    quantiles = halves[halves["metric_kind"] == "quantile"]
    q = quantiles.groupby([*key, "placebo_split"])[[*QUANTILE_SUMS, "n_units"]].sum().reset_index()
    qwant = control[control["metric_kind"] == "quantile"].set_index(key)
    for r in q.itertuples(index=False):
        w = qwant.loc[(r.experiment_id, r.metric, r.as_of_date, r.quantile_p)]
        for col in [*QUANTILE_SUMS, "n_units"]:
            assert _close(getattr(r, col), w[col]), (r.metric, r.quantile_p, r.placebo_split, col)
    # quantile metrics on the first placebo_quantile_splits (4) splits
    assert sorted(quantiles["placebo_split"].unique()) == list(range(4))
    assert len(q) == 4 * len(qwant)


def test_the_pseudo_arms_split_the_units_at_random(marts):
    _, placebo, control = marts
    metric = placebo[(placebo["metric"] == "request_latency") & (placebo["arm"] == "a")]
    for day, g in metric.groupby("as_of_date"):
        sizes = control[(control["metric"] == "request_latency") & (control["as_of_date"] == day)]["n_units"]
        assert sizes.nunique() == 1, (day, sizes)
        n = float(sizes.iloc[0])
        a = g["n_units"].to_numpy(float)
        # each unit in a with probability 1/2: the 16 splits' sizes are Binomial(n, 1/2)
        chi2 = np.sum((a - n / 2) ** 2 / (n / 4))
        assert sps.chi2.sf(chi2, len(a)) > 1e-4 and sps.chi2.cdf(chi2, len(a)) > 1e-4, (day, a)
    # every look is split afresh: a split's pseudo-arm a does not keep its units from day to day
    by_day = metric.pivot(index="placebo_split", columns="as_of_date", values="n_units")
    growth = by_day.diff(axis=1).iloc[:, 1:]
    assert (growth < 0).to_numpy().any()


def test_the_canary_is_one_half_times_the_known_factor(marts):
    _, placebo, _ = marts
    canary = placebo[placebo["arm"] == "b_canary"]
    factor = (1.001) ** 30
    assert set(canary["placebo_split"]) == {0} and np.allclose(canary["canary_factor"], factor)
    assert "proportion" not in set(canary["metric_kind"]) and len(canary)
    key = ["metric", "as_of_date", "quantile_p"]
    half = placebo[(placebo["arm"] == "b") & (placebo["placebo_split"] == 0)].set_index(key)
    scale = {"sum_y": 1, "sum_y2": 2, "sum_xy": 1, "sum_yc": 1, "sum_yd": 1, "sum_x": 0, "sum_x2": 0,
             "sum_c": 0, "sum_d": 0, "n_units": 0, "n_events": 0}  # fmt: skip
    for r in canary.itertuples(index=False):
        b = half.loc[(r.metric, r.as_of_date, r.quantile_p)]
        if r.metric_kind == "quantile":
            assert _close(r.quantile_value, b["quantile_value"] * factor), r.metric
            assert np.allclose(r.grid_value, np.asarray(b["grid_value"]) * factor, rtol=1e-9)
            for col in ("sum_s", "sum_s2", "sum_sn", "sum_n", "n_units"):
                assert _close(getattr(r, col), b[col]), (r.metric, col)
            continue
        for col, power in scale.items():
            want = _value(b[col])
            assert _close(getattr(r, col), None if want is None else want * factor**power), (
                r.metric, r.as_of_date, col)  # fmt: skip


def _binned_value(b: int) -> float:
    return 0.0 if b == -1_000_000_000 else math.exp((b + 0.5) * math.log(1.001))


def test_the_pseudo_arms_quantiles_are_their_units_empirical_quantiles(spark, full_lake, marts):
    """Every quantile row of the placebo (the mart's own quantile search, macro quantile_ctes)
    against a computation from the units' value bins: the pseudo-arms drawn by the placebo's hash
    (its definition, macros/placebo.sql), the type-1 quantile of the pooled bins and of every grid
    point, and the outer-CI unit sums."""
    from quicexp.metrics import load_metrics

    _, placebo, _ = marts
    silver = full_lake.silver_schema
    quantiles = placebo[(placebo["metric_kind"] == "quantile") & (placebo["experiment_id"] == EXPERIMENT_ID)]
    assert len(quantiles), "no quantile rows in the placebo"
    histogram_of = {m.name: m.histogram_of or m.name for m in load_metrics().metrics}
    # the control arm's units' bins to each look, with the placebo's pseudo-arm of every split
    bins = spark.sql(f"""
        select u.as_of_date, b.metric, b.client_id, b.value_bin, sum(b.n_events) as n_events
        from (select binned.*, assignment.key as experiment_id, assignment.value as arm
              from {silver}.int_quantile_values_binned_to_client_days binned
              lateral view inline(binned.assignments) assignment) b
        inner join {silver}.int_experiment_units_segmented_to_dates u
            on u.experiment_id = '{EXPERIMENT_ID}' and b.experiment_id = u.experiment_id
            and b.arm = u.arm and b.client_id = u.client_id and b.event_date between date'{EXPERIMENT_START}' and u.as_of_date
        inner join {silver}.stg_registry__experiment_arms a
            on a.experiment_id = u.experiment_id and a.arm = u.arm and a.is_control
        group by 1, 2, 3, 4
    """).toPandas()  # fmt: skip
    arms = spark.sql(f"""
        select u.as_of_date, u.client_id, s.placebo_split,
            case when pmod(xxhash64('quicexp-placebo', u.experiment_id, u.client_id,
                                    cast(u.as_of_date as string), s.placebo_split), 2) = 0
                then 'a' else 'b' end as arm
        from {silver}.int_experiment_units_segmented_to_dates u
        inner join {silver}.stg_registry__experiment_arms a
            on a.experiment_id = u.experiment_id and a.arm = u.arm and a.is_control
        lateral view explode(sequence(0, 3)) s as placebo_split
        where u.experiment_id = '{EXPERIMENT_ID}'
    """).toPandas()  # fmt: skip
    checked = 0
    for r in quantiles[quantiles["arm"].isin(["a", "b"])].itertuples(index=False):
        units = arms[(arms["as_of_date"] == r.as_of_date) & (arms["placebo_split"] == r.placebo_split)
                     & (arms["arm"] == r.arm)]["client_id"]  # fmt: skip
        cells = bins[(bins["as_of_date"] == r.as_of_date) & (bins["metric"] == histogram_of[r.metric])
                     & bins["client_id"].isin(units)]  # fmt: skip
        hist = cells.groupby("value_bin")["n_events"].sum().sort_index()
        cumulative, total = hist.cumsum(), int(hist.sum())

        def bin_at(g: float) -> int:
            rank = min(max(math.ceil(total * g), 1), total)
            return int(cumulative.index[np.searchsorted(cumulative.to_numpy(), rank)])

        q = bin_at(r.quantile_p)
        assert _close(r.quantile_value, _binned_value(q)), (r.metric, r.as_of_date, r.placebo_split, r.arm)
        n_i = cells.groupby("client_id")["n_events"].sum().astype(float)
        s_i = cells[cells["value_bin"] <= q].groupby("client_id")["n_events"].sum().reindex(n_i.index, fill_value=0)
        want = {"n_units": len(n_i), "n_events": total, "sum_n": n_i.sum(), "sum_n2": (n_i**2).sum(),
                "sum_s": s_i.sum(), "sum_s2": (s_i**2).sum(), "sum_sn": (s_i * n_i).sum()}  # fmt: skip
        for col, value in want.items():
            assert _close(getattr(r, col), value), (r.metric, r.as_of_date, r.placebo_split, r.arm, col)
        for g, v in zip(r.grid_p, r.grid_value, strict=True):
            assert 0 < g < 1 and _close(v, _binned_value(bin_at(g))), (r.metric, g)
        checked += 1
    assert checked >= 2 * 4 * quantiles["as_of_date"].nunique()
