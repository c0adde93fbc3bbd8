"""TEST STAND-INS for contract marts the pipeline does not build yet (tests only, never product).

The dashboards are built on the mart contract (gold.metric_values_daily, gold.metric_values_to_date,
gold.experiment_results). While models/ does not yet produce a contract table, the serving tests
derive it here from the pipeline's *real* bronze output (SQL in stand_ins/), in the test
namespace only, and print which items were derived, so a missing mart is visible in every run.
As soon as the pipeline builds a table, its stand-in switches off by itself.
"""

from __future__ import annotations

from pathlib import Path

from quicexp.config import Settings, validate_identifier

SQL_DIR = Path(__file__).parent / "stand_ins"


def _exists(spark, table: str) -> bool:
    return spark.catalog.tableExists(table)


def _sql(name: str, settings: Settings) -> str:
    return (
        (SQL_DIR / name)
        .read_text()
        .format(
            bronze=validate_identifier(settings.bronze_schema),
            gold=validate_identifier(settings.gold_schema),
        )
    )


def ensure_contract(spark, settings: Settings) -> list[str]:
    """Create the missing contract tables from bronze; return the names of those derived here."""
    gold = settings.gold_schema
    missing = [
        t
        for t in ("metric_values_daily", "metric_values_to_date")
        if not _exists(spark, f"{gold}.{t}")
    ]
    if not missing:
        return []
    spark.sql(_sql("metric_values_events.sql", settings)).createOrReplaceTempView("stand_in_events")
    for table in missing:
        frame = spark.sql(_sql(f"{table}.sql", settings))
        frame.write.format("delta").mode("overwrite").saveAsTable(f"{gold}.{table}")
    spark.catalog.dropTempView("stand_in_events")
    return [f"{gold}.{t} (stand-in from bronze)" for t in missing]


def missing_result_rows(spark, settings: Settings) -> list[str]:
    """Kinds of experiment_results rows the dashboards use that the pipeline has not produced."""
    table = f"{settings.gold_schema}.experiment_results"
    checks = {
        "quantile metrics (metric_kind = 'quantile')": "metric_kind = 'quantile'",
        "request_latency_curve": "metric = 'request_latency_curve'",
        "rtt/loss/bandwidth bucket segments": "segment_type in ('rtt_bucket', 'loss_bucket', 'bandwidth_bucket')",
    }
    return [
        name
        for name, where in checks.items()
        if spark.table(table).where(where).limit(1).count() == 0
    ]


def explained_by_missing(adhoc_filters: list[dict], missing: list[str]) -> str | None:
    """The missing result rows a chart's filters ask for (so its emptiness is explained), if any.

    A chart filtering on ``metric = 'request_latency_curve'`` is empty while the pipeline does not
    produce that metric; that is reported as an expected failure naming the missing mart rows,
    never hidden. Charts asking for rows that exist must have data.
    """
    for item in adhoc_filters:
        if item.get("expressionType") == "SQL":
            continue
        subject, value = item.get("subject"), item.get("comparator")
        values = value if isinstance(value, list) else [value]
        for name in missing:
            if name.startswith("quantile") and subject == "metric_kind" and "quantile" in values:
                return name
            if name == "request_latency_curve" and subject == "metric" and name in values:
                return name
            if name.startswith("rtt/") and subject == "segment_type" and {
                "rtt_bucket", "loss_bucket", "bandwidth_bucket"
            } & set(values):  # fmt: skip
                return name
    return None
