"""jobs/experiment_results.py through Spark + Delta: the plan reaches the engine and the power
columns reach gold.experiment_results, also when the table was written before they existed."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
from _stats_tables import mean_rows

import jobs.experiment_results as job
from jobs.delta_io import ensure_schema
from quicexp.registry import Registry
from stats.schema import OUTPUT_COLUMNS

NEW = ["mde_relative", "mde_relative_planned", "target_relative_effect", "is_underpowered",
       "sequential_width_ratio"]  # fmt: skip


def test_power_columns_land_in_an_older_results_table(spark, lake):
    settings = lake("stats_results_job")
    registry = Registry.model_validate({"experiments": [{
        "id": "e1", "title": "t", "start_date": "2026-01-01", "planned_units_per_arm": 4000,
        "planned_days": 30, "target_relative_effect": 0.03,
        "arms": [{"name": "A", "share": 0.5, "is_control": True}, {"name": "B", "share": 0.5}],
    }]})  # fmt: skip
    rng = np.random.default_rng(3)
    days = [date(2026, 1, 4), date(2026, 1, 5)]
    rows = pd.DataFrame([r for d in days for r in mean_rows(rng, n=400, day=d.isoformat())])
    rows["as_of_date"] = pd.to_datetime(rows["as_of_date"]).dt.date
    ensure_schema(spark, settings.gold_schema)
    spark.createDataFrame(rows).write.format("delta").saveAsTable(
        f"{settings.gold_schema}.experiment_sufficient_stats"
    )
    # a results table written before the power columns existed (day 4 only)
    old = job.compute(rows[rows["as_of_date"] == days[0]], registry).drop(columns=NEW)
    spark.createDataFrame(old).write.format("delta").partitionBy("as_of_date").saveAsTable(
        f"{settings.gold_schema}.experiment_results"
    )
    assert job.run(spark, settings, days[1], registry) == 2
    out = spark.table(f"{settings.gold_schema}.experiment_results").toPandas()
    assert set(OUTPUT_COLUMNS) <= set(out.columns) and len(out) == 2
    assert out["mde_relative"].notna().all() and out["mde_relative_planned"].notna().all()
    assert (out["mde_relative_planned"] < out["mde_relative"]).all()  # 4,000 planned > 400 now
    assert (out["target_relative_effect"] == 0.03).all()
    assert (out["sequential_width_ratio"] > 1).all()


def test_verdicts_and_their_tests_land_in_gold_from_every_look_so_far(spark, lake):
    settings = lake("stats_decisions_job")
    registry = Registry.model_validate({"experiments": [{
        "id": "e1", "title": "t", "start_date": "2026-01-01", "planned_units_per_arm": 4000,
        "planned_days": 30,
        "metrics": {"success": [{"metric": "request_latency_per_client", "minimum_effect": 0.05}],
                    "guardrails": [{"metric": "mtbr"}]},
        "arms": [{"name": "A", "share": 0.5, "is_control": True}, {"name": "B", "share": 0.5}],
    }]})  # fmt: skip
    rng = np.random.default_rng(5)
    days = [date(2026, 1, d) for d in range(1, 6)]
    rows = pd.DataFrame([r for d in days for m, shift in (("request_latency_per_client", -0.6),
                                                          ("mtbr", 0.0))
                         for r in mean_rows(rng, metric=m, n=3000, day=d.isoformat(),
                                            shift=shift)])  # fmt: skip
    rows["as_of_date"] = pd.to_datetime(rows["as_of_date"]).dt.date
    ensure_schema(spark, settings.gold_schema)
    spark.createDataFrame(rows).write.format("delta").saveAsTable(
        f"{settings.gold_schema}.experiment_sufficient_stats"
    )
    # day 1's look, then the run of day 5 (its window: days 2-5, lookback 3)
    job.run(spark, settings, days[0], registry)
    job.run(spark, settings, days[-1], registry)
    verdicts = spark.table(f"{settings.gold_schema}.experiment_decisions").toPandas()
    tests = spark.table(f"{settings.gold_schema}.experiment_decision_tests").toPandas()
    assert sorted(verdicts["as_of_date"]) == days
    last = verdicts.sort_values("as_of_date").iloc[-1]
    assert last["verdict"] == "ship", last["reasons"]
    assert list(last["reasons"]) == ["success_better:request_latency_per_client",
                                     "guardrail_noninferior:mtbr"]  # fmt: skip
    assert set(tests["test"]) == {"superiority", "deterioration", "non_inferiority", "inferiority"}
    assert len(tests) == 4 * len(days)
    # rerunning the day changes nothing
    job.run(spark, settings, days[-1], registry)
    again = spark.table(f"{settings.gold_schema}.experiment_decisions").toPandas()
    assert len(again) == len(verdicts)
