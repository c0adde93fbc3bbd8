"""The sufficient-statistics mart against an independent computation from bronze with PySpark.

The metric definitions below are written again by hand over the *bronze* columns (not read
from the registry), the units, segments and CUPED pre-period are derived again from the raw
events, and the quantile statistics are recomputed from the raw values with the binning
documented in docs/metrics.md. Sums must agree to floating-point precision.
"""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from tests.models.conftest import EXPERIMENT_ID, EXPERIMENT_START, LAST_DAY

# metric -> (bronze table, kind, numerator, denominator, filter)
MOMENT_METRICS = {
    "request_latency": ("http_transactions", "ratio", "latency_ms", "1", "true"),
    "request_latency_per_client": ("http_transactions", "mean", "latency_ms", "1", "true"),
    "hol_blocked_time_per_request": ("http_transactions", "ratio", "hol_blocked_ms", "1", "true"),
    "search_latency": ("search_queries", "ratio", "latency_ms", "1", "not abandoned"),
    "search_abandonment_rate": ("search_queries", "ratio", "cast(abandoned as int)", "1", "true"),
    "search_abandoning_clients": ("search_queries", "proportion", "cast(abandoned as int)", None, "true"),
    "mtbr": ("video_playbacks", "ratio", "watch_time_ms / 1000.0", "rebuffer_count", "true"),
    "rebuffers_per_playback": ("video_playbacks", "ratio", "rebuffer_count", "1", "true"),
    "rebuffer_time_ratio": ("video_playbacks", "ratio", "rebuffer_time_ms", "rebuffer_time_ms + watch_time_ms", "true"),
    "mean_client_bandwidth": ("video_playbacks", "ratio", "mean_bandwidth_kbps", "1", "true"),
    "time_to_first_frame": ("video_playbacks", "ratio", "time_to_first_frame_ms", "1", "true"),
    "page_load_time": ("page_loads", "ratio", "page_load_time_ms", "1", "true"),
    "speed_index": ("page_loads", "ratio", "speed_index_ms", "1", "true"),
    "retransmit_rate": ("connections", "ratio", "packets_retransmitted", "packets_sent", "true"),
    "close_delay": ("connections", "ratio", "close_delay_ms", "1", "true"),
    "zero_rtt_share": ("connections", "ratio", "cast(is_zero_rtt as int)", "1", "true"),
    "reinjection_overhead": ("multipath_paths", "ratio", "reinjected_bytes", "bytes", "true"),
    "header_compression_ratio": ("header_compression", "ratio", "header_bytes_compressed", "header_bytes_raw", "true"),
    "header_hol_delay": ("header_compression", "ratio", "header_hol_delay_ms", "requests", "true"),
}
# metric -> (bronze table, value, filter, quantiles)
QUANTILE_METRICS = {
    "request_latency_p": ("http_transactions", "latency_ms", "true", (0.5, 0.9, 0.95, 0.99)),
    "srtt_p": ("connections", "srtt_ms", "true", (0.5, 0.9, 0.95, 0.99)),
    "search_latency_p": ("search_queries", "latency_ms", "not abandoned", (0.5, 0.95)),
}
KINDS = ("http_transactions", "search_queries", "page_loads", "video_playbacks", "connections",
         "multipath_paths", "header_compression")  # fmt: skip
BIN_WIDTH = 0.001
PRE_PERIOD_DAYS = 7
AS_OF = [EXPERIMENT_START + timedelta(days=i) for i in range((LAST_DAY - EXPERIMENT_START).days + 1)]
SEGMENTS = ("overall", "platform", "network_type")
REL = 1e-9


def _close(a, b, rel=REL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


@pytest.fixture(scope="module")
def raw(spark, full_lake):
    """Experiment events of all kinds, the units' segments per as_of_date, and the mart."""
    from pyspark.sql import functions as F

    bronze = full_lake.bronze_schema
    arm = F.col("experiments").getItem(EXPERIMENT_ID)
    in_exp = {}
    for kind in KINDS:
        df = spark.table(f"{bronze}.{kind}")
        in_exp[kind] = df.where(arm.isNotNull() & (F.col("event_date") >= F.lit(EXPERIMENT_START))).withColumn("arm", arm)
    attrs = None
    for kind in KINDS:
        part = in_exp[kind].select("client_id", "arm", "event_date", "platform", "network_type")
        attrs = part if attrs is None else attrs.unionByName(part)
    as_of = spark.createDataFrame([(d,) for d in AS_OF], "as_of_date date")
    units = (
        attrs.join(as_of, F.col("event_date") <= F.col("as_of_date"))
        .groupBy("client_id", "arm", "as_of_date")
        .agg(F.min("platform").alias("platform"), F.min("network_type").alias("network_type"))
        .withColumn("overall", F.lit("all"))
    )
    mart = spark.table(f"{full_lake.gold_schema}.experiment_sufficient_stats").where(
        F.col("experiment_id") == EXPERIMENT_ID
    )
    return {"bronze": bronze, "in_exp": in_exp, "units": units, "as_of": as_of, "mart": mart}


def _moments_expected(spark, raw, metric):
    from pyspark.sql import functions as F

    kind_table, kind, num, den, flt = MOMENT_METRICS[metric]
    events = raw["in_exp"][kind_table].where(F.expr(flt))
    per_unit = (
        events.join(raw["as_of"], F.col("event_date") <= F.col("as_of_date"))
        .groupBy("client_id", "arm", "as_of_date")
        .agg(
            F.sum(F.expr(f"cast({num} as double)")).alias("num"),
            F.sum(F.expr(f"cast({den or 'null'} as double)")).alias("den"),
            F.count(F.lit(1)).alias("n_events"),
        )
    )
    pre_start = EXPERIMENT_START - timedelta(days=PRE_PERIOD_DAYS)
    pre = (
        spark.table(f"{raw['bronze']}.{kind_table}")
        .where(F.col("event_date").between(F.lit(pre_start), F.lit(EXPERIMENT_START - timedelta(days=1))))
        .where(F.expr(flt))
        .groupBy("client_id")
        .agg(
            F.sum(F.expr(f"cast({num} as double)")).alias("pre_num"),
            F.sum(F.expr(f"cast({den or 'null'} as double)")).alias("pre_den"),
            F.count(F.lit(1)).alias("pre_n"),
        )
    )
    u = per_unit.join(pre, "client_id", "left").join(raw["units"], ["client_id", "arm", "as_of_date"])
    pre_n = F.coalesce("pre_n", F.lit(0))
    if kind == "ratio":
        y, x = F.col("num"), F.col("den")
        c = F.when(pre_n > 0, F.col("pre_num")).otherwise(0.0)
        d = F.when(pre_n > 0, F.col("pre_den")).otherwise(0.0)
    elif kind == "mean":
        y, x = F.col("num") / F.col("den"), F.lit(None).cast("double")
        c, d = F.when(pre_n > 0, F.col("pre_num") / F.col("pre_den")).otherwise(0.0), F.lit(None).cast("double")
    else:
        y, x = F.when(F.col("num") > 0, 1.0).otherwise(0.0), F.lit(None).cast("double")
        c, d = F.when((pre_n > 0) & (F.col("pre_num") > 0), 1.0).otherwise(0.0), F.lit(None).cast("double")
    u = u.select("*", y.alias("y"), x.alias("x"), c.alias("c"), d.alias("d"), pre_n.alias("pre_events"))
    rows = []
    for seg in SEGMENTS:
        rows.append(
            u.groupBy("arm", "as_of_date", F.col(seg).alias("segment_value"))
            .agg(
                F.count(F.lit(1)).alias("n_units"),
                F.sum("y").alias("sum_y"), F.sum(F.col("y") * F.col("y")).alias("sum_y2"),
                F.sum("x").alias("sum_x"), F.sum(F.col("x") * F.col("x")).alias("sum_x2"),
                F.sum(F.col("x") * F.col("y")).alias("sum_xy"),
                F.sum("c").alias("sum_c"), F.sum(F.col("c") * F.col("c")).alias("sum_c2"),
                F.sum(F.col("y") * F.col("c")).alias("sum_yc"),
                F.sum("d").alias("sum_d"), F.sum(F.col("d") * F.col("d")).alias("sum_d2"),
                F.sum(F.col("c") * F.col("d")).alias("sum_cd"), F.sum(F.col("y") * F.col("d")).alias("sum_yd"),
                F.sum(F.col("x") * F.col("c")).alias("sum_xc"), F.sum(F.col("x") * F.col("d")).alias("sum_xd"),
                F.sum("n_events").cast("double").alias("n_events"),
            )
            .withColumn("segment_type", F.lit(seg))
        )  # fmt: skip
    out = rows[0]
    for r in rows[1:]:
        out = out.unionByName(r)
    return out


COLUMNS = ["n_units", "sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy", "sum_c", "sum_c2", "sum_yc",
           "sum_d", "sum_d2", "sum_cd", "sum_yd", "sum_xc", "sum_xd", "n_events"]  # fmt: skip


@pytest.mark.parametrize("metric", sorted(MOMENT_METRICS))
def test_moment_statistics_match_pyspark(spark, raw, metric):
    from pyspark.sql import functions as F

    expected = {
        (r["arm"], r["as_of_date"], r["segment_type"], r["segment_value"]): r
        for r in _moments_expected(spark, raw, metric).collect()
    }
    got = {
        (r["arm"], r["as_of_date"], r["segment_type"], r["segment_value"]): r
        for r in raw["mart"].where((F.col("metric") == metric) & F.col("segment_type").isin(*SEGMENTS)).collect()
    }
    assert expected, f"no expected rows for {metric}"
    assert set(got) == set(expected), f"{metric}: groups differ: {set(got) ^ set(expected)}"
    for key, e in expected.items():
        g = got[key]
        for col in COLUMNS:
            assert _close(g[col], e[col]), f"{metric} {key} {col}: mart {g[col]} vs pyspark {e[col]}"


def _binned(col):
    from pyspark.sql import functions as F

    b = F.when(col > 0, F.floor(F.log(col) / F.log(F.lit(1.0 + BIN_WIDTH))).cast("int")).otherwise(-1_000_000_000)
    return b


def _bin_value(b):
    from pyspark.sql import functions as F

    return F.when(b == -1_000_000_000, 0.0).otherwise(F.exp((b + 0.5) * F.log(F.lit(1.0 + BIN_WIDTH))))


@pytest.mark.parametrize("metric", sorted(QUANTILE_METRICS))
def test_quantile_statistics_match_pyspark(spark, raw, metric):
    """q, the grid, and the per-unit count sums, from raw values; q within tolerance of exact."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    table, value, flt, ps = QUANTILE_METRICS[metric]
    ev = (
        raw["in_exp"][table].where(F.expr(flt) & F.col(value).isNotNull())
        .drop("platform", "network_type")  # the unit's segment comes from raw["units"]
        .join(raw["as_of"], F.col("event_date") <= F.col("as_of_date"))
        .join(raw["units"], ["client_id", "arm", "as_of_date"])
        .withColumn("bin", _binned(F.col(value)))
        .withColumn("v", F.col(value))
    )
    tolerance = math.sqrt(1 + BIN_WIDTH) - 1
    got = raw["mart"].where(F.col("metric") == metric)
    checked = 0
    for seg in ("overall", "platform"):
        group = ["arm", "as_of_date", seg]
        w = Window.partitionBy(*group).orderBy("bin", "v")
        ranked = ev.select(*group, "client_id", "bin", "v",
                           F.row_number().over(w).alias("rank"),
                           F.count(F.lit(1)).over(Window.partitionBy(*group)).alias("n"))  # fmt: skip
        for p in ps:
            target = ranked.where(F.col("rank") == F.least(F.greatest(F.ceil(F.col("n") * p), F.lit(1)), F.col("n")))
            exact_w = Window.partitionBy(*group).orderBy("v")
            exact = (ev.select(*group, "v", F.row_number().over(exact_w).alias("r"),
                               F.count(F.lit(1)).over(Window.partitionBy(*group)).alias("n"))
                     .where(F.col("r") == F.least(F.greatest(F.ceil(F.col("n") * p), F.lit(1)), F.col("n")))
                     .select(*group, F.col("v").alias("exact")))  # fmt: skip
            q = target.select(*group, F.col("bin").alias("qbin"), F.col("n").alias("n_events")).join(exact, group)
            units = (
                ev.join(q, group)
                .groupBy(*group, "client_id", "qbin", "n_events", "exact")
                .agg(F.count(F.lit(1)).cast("double").alias("n_i"),
                     F.sum(F.when(F.col("bin") <= F.col("qbin"), 1).otherwise(0)).cast("double").alias("s_i"))
                .groupBy(*group, "qbin", "n_events", "exact")
                .agg(F.count(F.lit(1)).alias("n_units"), F.sum("s_i").alias("sum_s"),
                     F.sum(F.col("s_i") ** 2).alias("sum_s2"), F.sum("n_i").alias("sum_n"),
                     F.sum(F.col("n_i") ** 2).alias("sum_n2"), F.sum(F.col("s_i") * F.col("n_i")).alias("sum_sn"))
                .withColumn("quantile_value", _bin_value(F.col("qbin")))
            )  # fmt: skip
            mart = {
                (r["arm"], r["as_of_date"], r["segment_value"]): r
                for r in got.where((F.col("segment_type") == seg) & (F.col("quantile_p") == p)).collect()
            }
            for e in units.collect():
                key = (e["arm"], e["as_of_date"], e[seg] if seg != "overall" else "all")
                g = mart.pop(key)
                assert _close(g["quantile_value"], e["quantile_value"]), (metric, p, key)
                assert abs(g["quantile_value"] / e["exact"] - 1) <= tolerance * (1 + 1e-9), (
                    f"{metric} p={p} {key}: binned {g['quantile_value']} vs exact {e['exact']}"
                )
                for col in ("n_units", "sum_s", "sum_s2", "sum_n", "sum_n2", "sum_sn"):
                    assert _close(g[col], e[col]), f"{metric} p={p} {key} {col}: {g[col]} vs {e[col]}"
                assert _close(g["n_events"], float(e["n_events"]))
                assert p in g["grid_p"] and g["grid_value"][g["grid_p"].index(p)] == g["quantile_value"]
                checked += 1
            assert not mart, f"{metric} p={p}: mart has groups pyspark does not: {list(mart)[:3]}"
    assert checked > 0
