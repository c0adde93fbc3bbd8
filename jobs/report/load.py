"""Read one report's inputs from the lake into a :class:`ReportData` (the only Spark in the report).

gold.experiment_results is required; gold.metric_values_daily, bronze.ingest_audit,
gold.experiment_decisions / gold.experiment_decision_tests (the verdict), gold.experiment_health
(the trust checks) and gold.experiment_report_published (what earlier reports published) are
optional: a missing table or column is recorded in ``ReportData.missing`` and the section says
"not available" (an experiment that declares no metrics has no verdict; without the health table
the sample-ratio check comes from the results; without a publication there is nothing revised).
Every read is filtered to the one experiment and to as-of dates <= the report's day, so the
report never shows the future of a back-filled day.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import TYPE_CHECKING

from jobs.delta_io import qualified
from quicexp.config import ConfigError, Settings
from quicexp.errors import InputDataError
from quicexp.registry import Arm, Experiment, Registry, load_registry
from reports.data import SCORECARD_SEGMENTS, IngestQuality, ReportData

#: what each report published (reports.revision), compared by every later report
PUBLISHED_TABLE = "experiment_report_published"

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("quicexp.report")

VALUE_COLUMNS = ["experiment_id", "arm", "metric", "metric_kind", "segment_type", "segment_value", "quantile_p",
                 "value", "n_units", "n_events"]  # fmt: skip


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _optional(
    spark: SparkSession, name: str, build, missing: dict[str, str], key: str
) -> pd.DataFrame | None:
    """``build(spark.table(name))`` as pandas, or None (reason in ``missing``) if it cannot be read."""
    from pyspark.errors import PySparkException

    if not spark.catalog.tableExists(name):
        missing[key] = f"{name} does not exist yet"
        return None
    try:
        return build(spark.table(name)).toPandas()
    except PySparkException as exc:
        missing[key] = f"{name}: {_first_line(exc)}"
        log.warning("report: %s unreadable: %s", name, missing[key])
        return None


def load_experiment(spark: SparkSession, settings: Settings, experiment_id: str,
                    registry: Registry | None = None) -> Experiment:  # fmt: skip
    experiment = _published_experiment(spark, settings, experiment_id, registry)
    # one arm order whatever the source (the table's rows come in file order): control first
    arms = sorted(experiment.arms, key=lambda a: (not a.is_control, a.name))
    return experiment.model_copy(update={"arms": arms})


def _published_experiment(spark: SparkSession, settings: Settings, experiment_id: str,
                          registry: Registry | None) -> Experiment:  # fmt: skip
    """The experiment as the pipeline published it (bronze.experiment_arms), else the registry file.

    Reading the published table means the report shows the arms and split the day's run
    analysed with, even when the registry file has changed since. ``registry`` wins if given.
    """
    from pyspark.sql import functions as F

    if registry is not None:
        return registry.get(experiment_id)
    table = qualified(settings.bronze_schema, "experiment_arms")
    if spark.catalog.tableExists(table):
        rows = spark.table(table).where(F.col("experiment_id") == experiment_id).collect()
        if rows:
            # the description, plan and declared metrics are the registry file's (the table
            # holds the arms): the cards draw the minimum effects declared there
            declared = {e.id: e for e in _registry_or_empty(settings).experiments}.get(experiment_id)
            first = rows[0]
            extra = {} if declared is None else declared.model_dump(
                include={"description", "planned_units_per_arm", "planned_days", "target_relative_effect",
                         "metrics", "analysis"})  # fmt: skip
            return Experiment(
                id=experiment_id,
                title=first["title"],
                start_date=first["start_date"],
                end_date=first["end_date"],
                arms=[
                    Arm(name=r["arm"], share=r["share"], is_control=r["is_control"]) for r in rows
                ],
                **extra,
            )
    return load_registry(settings.registry_file).get(experiment_id)


def _registry_or_empty(settings: Settings) -> Registry:
    try:
        return load_registry(settings.registry_file)
    except ConfigError:
        return Registry(experiments=[])


def load_results(
    spark: SparkSession, settings: Settings, day: date, experiment_id: str
) -> pd.DataFrame:
    """All results of the experiment with as_of_date <= day (the history feeds the cumulative chart)."""
    from pyspark.sql import functions as F

    table = qualified(settings.gold_schema, "experiment_results")
    if not spark.catalog.tableExists(table):
        raise InputDataError(f"{table} does not exist yet: run the pipeline for {day} first")
    results = (
        spark.table(table)
        .where((F.col("experiment_id") == experiment_id) & (F.col("as_of_date") <= F.lit(day)))
        .toPandas()
    )
    if results.empty or not (results["as_of_date"].astype(str) == day.isoformat()).any():
        raise InputDataError(
            f"no results for experiment {experiment_id} on {day}: run the pipeline for that day first"
        )
    return results


def _quality(spark: SparkSession, settings: Settings, experiment: Experiment, day: date,
             missing: dict[str, str]) -> IngestQuality | None:  # fmt: skip
    from pyspark.sql import functions as F

    counts = ("rows_read", "rows_quarantined", "rows_duplicate", "rows_late")

    def build(df: DataFrame) -> DataFrame:
        window = F.col("upload_date").between(F.lit(experiment.start_date), F.lit(day))
        return df.where(window).agg(*[F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in counts])

    frame = _optional(
        spark, qualified(settings.bronze_schema, "ingest_audit"), build, missing, "ingest_audit"
    )
    if frame is None:
        return None
    row = frame.iloc[0]
    return IngestQuality(experiment.start_date, day, *(int(row[c]) for c in counts))


def load_report_data(
    spark: SparkSession, settings: Settings, day: date, experiment: Experiment
) -> ReportData:
    """Every input of one report; raises ConfigError only when the results themselves are missing."""
    from pyspark.sql import functions as F

    results = load_results(spark, settings, day, experiment.id)
    missing: dict[str, str] = {}
    this = F.col("experiment_id") == experiment.id
    main_segments = F.col("segment_type").isin(*SCORECARD_SEGMENTS)
    daily = _optional(
        spark,
        qualified(settings.gold_schema, "metric_values_daily"),
        lambda df: df.where(this & main_segments & (F.col("event_date") <= F.lit(day))).select(
            *VALUE_COLUMNS, "event_date"
        ),
        missing,
        "metric_values_daily",
    )
    quality = _quality(spark, settings, experiment, day, missing)
    upto = this & (F.col("as_of_date") <= F.lit(day))

    def gold(table: str, where) -> pd.DataFrame | None:
        # not there (yet) is a normal state of each of these, not worth the footer: no declared
        # metrics, no trust checks yet, nothing published before
        return _optional(spark, qualified(settings.gold_schema, table), lambda df: df.where(where), {}, table)

    return ReportData(
        experiment, day, results, daily, quality, missing,
        decisions=gold("experiment_decisions", upto),
        decision_tests=gold("experiment_decision_tests", upto),
        health=gold("experiment_health", this & (F.col("as_of_date") == F.lit(day))),
        published=gold(PUBLISHED_TABLE, upto),
    )  # fmt: skip
