"""Which running experiments have results on a day, and why one has none (for the daily run).

A registered experiment without results on its running day is not a failure of the pipeline:
no unit of it reached the metrics. The reason is in the data, and :func:`why_no_results` names
it in one line: what carried the experiment's id from its start to the day (events, qlog traces
and how many of those are marked invalid), and which experiment ids the data carried instead
(an id that differs by a letter between the clients, the lab config and the registry shows
there).
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from jobs.delta_io import qualified
from quicexp.config import Settings
from quicexp.registry import Experiment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: the per-client-day metric sums (silver): every event kind and valid qlog trace with its assignments
CLIENT_DAYS = "int_metric_sums_aggregated_to_client_days"
#: how many other experiment ids the message names
SHOWN = 5


def experiments_with_results(spark: SparkSession, settings: Settings, day: date) -> set[str]:
    """Experiment ids with rows in gold.experiment_results as of ``day`` (empty without the table)."""
    from pyspark.sql import functions as F

    table = qualified(settings.gold_schema, "experiment_results")
    if not spark.catalog.tableExists(table):
        return set()
    rows = spark.table(table).where(F.col("as_of_date") == F.lit(day)).select("experiment_id").distinct().collect()
    return {r.experiment_id for r in rows}


def why_no_results(spark: SparkSession, settings: Settings, experiment: Experiment, day: date) -> str:
    """One line: the experiment runs on ``day`` but has no results, and what the data hold instead."""
    from pyspark.sql import functions as F

    span = F.col("event_date").between(F.lit(experiment.start_date), F.lit(day))
    head = f"experiment {experiment.id} runs on {day} (registry, since {experiment.start_date}) but has no results: "
    sums = qualified(settings.silver_schema, CLIENT_DAYS)
    carried: list[tuple[str, int]] = []
    units = 0
    if spark.catalog.tableExists(sums):
        ids = (spark.table(sums).where(span).select("client_id", F.explode("assignments").alias("a"))
               .groupBy(F.col("a.key").alias("experiment_id")).agg(F.countDistinct("client_id").alias("clients"))
               .collect())
        carried = sorted(((r.experiment_id, int(r.clients)) for r in ids), key=lambda item: (-item[1], item[0]))
        units = next((n for e, n in carried if e == experiment.id), 0)
    if units:
        return head + f"{units} clients carry it: run `quicexp results --date {day}` and the reports again"
    traces = qualified(settings.bronze_schema, "qlog_connections")
    invalid: list[tuple[str, int]] = []
    if spark.catalog.tableExists(traces) and "invalid_reason" in spark.table(traces).columns:
        rows = (spark.table(traces).where(span & F.col("experiments").getItem(experiment.id).isNotNull())
                .groupBy("invalid_reason").count().collect())
        invalid = sorted((r.invalid_reason, int(r["count"])) for r in rows if r.invalid_reason is not None)
    reason = f"no event and no valid qlog trace from {experiment.start_date} to {day} carries it in its experiments map"
    if invalid:
        reason += " (its qlog traces marked invalid: " + ", ".join(f"{n} {why}" for why, n in invalid) + ")"
    others = [f"{e} ({n} clients)" for e, n in carried if e != experiment.id]
    shown = ", ".join(others[:SHOWN]) + (" …" if len(others) > SHOWN else "") if others else "no experiment id"
    return (head + reason + f"; the data carry {shown}: check the experiment id the clients (or the lab "
            "config) send and the registry's start_date")
