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
