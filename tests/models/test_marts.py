"""Coverage and contract of the marts: every registry metric, segment type and day is there,
and the sufficient-statistics mart is exactly the stats engine's input."""

from __future__ import annotations

from datetime import timedelta

import yaml

from quicexp.config import REPO_ROOT
from stats.schema import ARRAY_COLUMNS, REQUIRED_COLUMNS, SUM_COLUMNS
from tests.models.conftest import EXPERIMENT_ID, EXPERIMENT_START, LAST_DAY

SEGMENT_TYPES = {"overall", "platform", "network_type", "rtt_bucket", "loss_bucket", "bandwidth_bucket",
                 "platform×network_type", "platform×rtt_bucket"}  # fmt: skip
DAYS = {EXPERIMENT_START + timedelta(days=i) for i in range((LAST_DAY - EXPERIMENT_START).days + 1)}


def _registry() -> list[dict]:
    """The registry's metrics of the simulated telemetry. The simulated fleet writes no qlog
    traces, so the qlog metrics (source qlog_connections) have no rows in this lake; they reach
    gold in tests/lab/test_lab.py, from traces real QUIC stacks write."""
    metrics = yaml.safe_load((REPO_ROOT / "registry" / "metrics.yml").read_text())["metrics"]
    return [m for m in metrics if m.get("source") != "qlog_connections"]


def _expected_keys() -> set[tuple]:
    keys = set()
    for m in _registry():
        segments = set(m.get("segments") or SEGMENT_TYPES)
        ps = m.get("quantiles", [0.5, 0.9, 0.95, 0.99]) if m["kind"] == "quantile" else [None]
        keys |= {(m["name"], s, p) for s in segments for p in ps}
    return keys


def test_sufficient_stats_columns_are_the_engine_input(spark, full_lake):
    cols = spark.table(f"{full_lake.gold_schema}.experiment_sufficient_stats").columns
    expected = list(dict.fromkeys([*REQUIRED_COLUMNS[:3], "is_guardrail", *REQUIRED_COLUMNS[3:]]))
    assert set(cols) == set(expected + SUM_COLUMNS + ARRAY_COLUMNS)


def test_every_metric_segment_and_day_is_in_the_marts(spark, full_lake):
    from pyspark.sql import functions as F

    gold = full_lake.gold_schema
    expected = _expected_keys()
    for table, day_col in (("experiment_sufficient_stats", "as_of_date"), ("metric_values_to_date", "as_of_date"),
                           ("metric_values_daily", "event_date")):  # fmt: skip
        rows = (
            spark.table(f"{gold}.{table}")
            .where(F.col("experiment_id") == EXPERIMENT_ID)
            .groupBy("metric", "segment_type", "quantile_p")
            .agg(F.collect_set(day_col).alias("days"), F.collect_set("arm").alias("arms"))
            .collect()
        )
        got = {(r["metric"], r["segment_type"], r["quantile_p"]): r for r in rows}
        missing = expected - set(got)
        assert not missing, f"{table}: missing {sorted(missing, key=str)[:5]} (+{max(len(missing) - 5, 0)})"
        assert set(got) == expected, f"{table}: unexpected {sorted(set(got) - expected, key=str)[:5]}"
        for key, r in got.items():
            assert set(r["days"]) == DAYS, f"{table} {key}: days {sorted(r['days'])}"
            assert set(r["arms"]) == {"control", "fhol"}, f"{table} {key}: arms {r['arms']}"


def test_stats_engine_accepts_the_mart(spark, full_lake):
    """The engine analyses every comparison of the last day without a bad-row message."""
    from pyspark.sql import functions as F

    from stats.engine import analyze_table

    pdf = (
        spark.table(f"{full_lake.gold_schema}.experiment_sufficient_stats")
        .where((F.col("as_of_date") == F.lit(LAST_DAY)) & F.col("segment_type").isin("overall", "platform"))
        .toPandas()
    )
    out = analyze_table(pdf)
    # tiny segments of the small test fleet may have one unit (and so no comparison), or no
    # rebuffer at all (mtbr = watch time / 0 rebuffers is undefined there)
    bad = [m for m in out.issues if not m.endswith(("n_units < 2", "arm for this comparison", "sum_x = 0"))]
    assert not bad, bad[:5]
    assert set(out.results["metric"]) == {m["name"] for m in _registry()}
    overall = out.results[out.results["segment_type"] == "overall"]
    assert overall["p_value"].notna().all()
    assert overall[overall["metric_kind"] != "quantile"]["flags"].str.contains("cuped").all()


def test_metric_values_agree_with_sufficient_stats(spark, full_lake):
    from pyspark.sql import functions as F

    gold = full_lake.gold_schema
    ss = spark.table(f"{gold}.experiment_sufficient_stats")
    tv = spark.table(f"{gold}.metric_values_to_date")
    joined = ss.join(tv, ["experiment_id", "arm", "metric", "segment_type", "segment_value", "as_of_date"]).where(
        ss["quantile_p"].eqNullSafe(tv["quantile_p"])
    )
    ratio = joined.where(ss["metric_kind"] == "ratio").select("value", (F.col("sum_y") / F.col("sum_x")).alias("r"))
    assert ratio.count() > 0
    assert ratio.where(F.abs(F.col("value") - F.col("r")) > 1e-12 * F.abs("r")).count() == 0
    # the first day's daily value is the to-date value of that day
    daily = spark.table(f"{gold}.metric_values_daily").where(F.col("event_date") == F.lit(EXPERIMENT_START))
    first = tv.where(F.col("as_of_date") == F.lit(EXPERIMENT_START)).withColumnRenamed("value", "to_date")
    keys = ["experiment_id", "arm", "metric", "segment_type", "segment_value"]
    both = daily.join(first, keys).where(daily["quantile_p"].eqNullSafe(first["quantile_p"]))
    assert both.count() > 0
    assert both.where(F.abs(F.col("value") - F.col("to_date")) > 1e-9 * F.abs(F.col("to_date")) + 1e-9).count() == 0
