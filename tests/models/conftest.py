"""A small simulated lake for the dbt model tests, built once per run.

The fleet simulator (tests/models/scenario_models.yaml: 3 pre-period days, then the
fhol_2026_06 experiment of registry/experiments.yml) lands telemetry, which is loaded into bronze (``load_bronze``); the kinds the simulator does not
emit yet (page_loads, multipath_paths, header_compression) are derived from the connections with
plain PySpark. ``full_lake``: one ``dbt build --full-refresh`` (models, data tests, unit tests)
of the last day. ``incremental_lake``: the same bronze built by incremental runs with overlapping
late-data windows, as the daily pipeline does, into other schemas (compared in test_incremental.py).
"""

from __future__ import annotations

import itertools
import logging
from datetime import date, timedelta
from pathlib import Path

import pytest

from quicexp.config import Settings

SCENARIO = Path(__file__).parent / "scenario_models.yaml"
FIRST_DAY = date(2026, 6, 12)
LAST_DAY = date(2026, 6, 18)
EXPERIMENT_ID = "fhol_2026_06"
EXPERIMENT_START = date(2026, 6, 15)
DERIVED_FROM = "connections"
DERIVED_KINDS = ("page_loads", "multipath_paths", "header_compression")

log = logging.getLogger(__name__)


def load_bronze(spark, settings: Settings, last_day: date) -> None:
    """Write the landing zone's upload days up to ``last_day`` (Parquet) into bronze directly.

    The ingest job is tested on its own; here bronze only has to be what it produces for
    clean input: typed rows with event_date and upload_date, late events up to lookback_days
    back. One write per kind (Spark jobs are what costs on a busy 2-core machine).
    """
    from pyspark.sql import functions as F

    from jobs.delta_io import ensure_schema
    from jobs.ingest.tables import bronze_struct
    from quicexp import telemetry

    ensure_schema(spark, settings.bronze_schema)
    for kind in telemetry.EVENT_KINDS:
        struct = bronze_struct(kind)
        if kind in DERIVED_KINDS:
            continue
        files = sorted(str(p) for p in settings.landing_root.glob(f"upload_date=*/{kind}/*.parquet"))
        if files:
            df = (
                spark.read.option("basePath", str(settings.landing_root)).parquet(*files)
                .withColumn("event_date", F.to_date("event_time"))
                .withColumn("source_file", F.input_file_name())
                .where(F.col("upload_date") <= F.lit(last_day))
                .where(F.col("event_date") >= F.date_sub("upload_date", settings.ingest.lookback_days))
            )
        else:
            df = spark.createDataFrame([], struct)
        df = df.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in struct.fields]).cache()
        df.write.format("delta").partitionBy("event_date").mode("overwrite").saveAsTable(
            f"{settings.bronze_schema}.{kind}"
        )
        if kind == DERIVED_FROM:
            _derived_rows(spark, settings, df)


def _derived_rows(spark, settings: Settings, conns) -> None:
    """page_loads, multipath_paths and header_compression rows derived from the connections."""
    from pyspark.sql import functions as F

    from jobs.ingest.tables import bronze_columns, bronze_struct
    from quicexp import telemetry


    def u(salt: str):  # a deterministic uniform(0, 1) per source row
        return (F.abs(F.xxhash64("event_id", F.lit(salt))) % 1_000_000) / 1_000_000.0

    base = conns.select(
        "client_id", "session_id", "event_time", "upload_time", "platform", "network_type", "app",
        "app_version", "experiments", "connection_id", "event_date", "upload_date", "source_file",
        "event_id", "min_rtt_ms",
    )
    fhol = F.coalesce(F.col("experiments")[EXPERIMENT_ID], F.lit("")) == "fhol"
    kinds = {
        "page_loads": base.where(u("p") < 0.5).select(
            "*",
            (F.col("min_rtt_ms") * 8 + 2000 * u("plt") + F.when(fhol, 30).otherwise(0)).alias("page_load_time_ms"),
            (F.col("min_rtt_ms") * 5 + 1200 * u("si")).alias("speed_index_ms"),
            (F.floor(u("hb") * 5000)).cast("long").alias("hol_blocked_bytes"),
            (1 + F.floor(u("rc") * 40)).cast("long").alias("resource_count"),
            (10_000 + F.floor(u("pb") * 2_000_000)).cast("long").alias("page_bytes"),
            F.lit("sequential").alias("prioritization"),
            F.lit(None).cast("string").alias("page_size_class"),
        ),
        "header_compression": base.select(
            "*",
            F.lit("qpack").alias("scheme"),
            (1 + F.floor(u("rq") * 20)).cast("long").alias("requests"),
            (2000 + F.floor(u("raw") * 8000)).cast("long").alias("header_bytes_raw"),
            (300 + F.floor(u("cmp") * 1500)).cast("long").alias("header_bytes_compressed"),
            (u("hol") * F.when(fhol, 200).otherwise(150)).alias("header_hol_delay_ms"),
            (u("hol") * 80).alias("max_header_hol_ms"),
        ),
        "multipath_paths": base.where(u("mp") < 0.3)
        .select("*", F.explode(F.array(F.lit(0), F.lit(1))).alias("path_id"))
        .select(
            "*",
            F.when(F.col("path_id") == 0, "wifi").otherwise("cellular").alias("path_network_type"),
            (F.col("min_rtt_ms") * (1 + F.col("path_id")) + 5).alias("srtt_ms"),
            (100_000 + F.floor(u("by") * 900_000)).cast("long").alias("bytes"),
            F.floor(u("ri") * 50_000 * F.col("path_id")).cast("long").alias("reinjected_bytes"),
            F.floor(u("pl") * 4).cast("long").alias("packets_lost"),
        ),
    }
    for kind, df in kinds.items():
        struct = bronze_struct(kind)
        out = df.withColumn(
            "event_id", F.md5(F.concat_ws("/", "event_id", F.lit(kind), *(["path_id"] if kind == "multipath_paths" else [])))
        ).withColumn("event_type", F.lit(telemetry.event_type(kind)))
        out = out.withColumn("schema_version", F.lit(1).cast("long"))
        out = out.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in struct.fields if f.name in bronze_columns(kind)])
        out.write.format("delta").partitionBy("event_date").mode("overwrite").saveAsTable(
            f"{settings.bronze_schema}.{kind}"
        )


@pytest.fixture(scope="session")
def full_lake(spark, lake) -> Settings:
    """Simulated bronze, then ``dbt build --full-refresh`` (models, data and unit tests) of LAST_DAY."""
    import jobs.registry
    from quicexp.app.dbt import run_dbt
    from simulation.runner import run_scenario

    settings = lake("models_full")
    run_scenario(SCENARIO, settings.landing_root, fmt="parquet")
    jobs.registry.run(spark, settings, EXPERIMENT_START)
    load_bronze(spark, settings, LAST_DAY)
    run_dbt("build", settings, LAST_DAY, ["--full-refresh"])
    return settings


#: incremental runs every other day: each run rebuilds its day and the lookback_days (3) before
#: it, so the windows overlap (each day is rebuilt once or twice, as late data makes the daily
#: pipeline do) and every day from FIRST_DAY on is covered. Each dbt run costs about a minute.
INCREMENTAL_DAYS = (FIRST_DAY + timedelta(days=2), FIRST_DAY + timedelta(days=4), LAST_DAY)


@pytest.fixture(scope="session")
def incremental_lake(spark, full_lake) -> Settings:
    """The same bronze, built by incremental ``dbt run``s (INCREMENTAL_DAYS) into other schemas."""
    from quicexp.app.dbt import run_dbt

    settings = full_lake.model_copy(
        update={"silver_schema": "models_inc_silver", "gold_schema": "models_inc_gold",
                "home": full_lake.home.parent / "models_inc"}
    )  # fmt: skip
    assert INCREMENTAL_DAYS[0] - timedelta(days=settings.ingest.lookback_days) <= FIRST_DAY
    assert all(b - a <= timedelta(days=settings.ingest.lookback_days)
               for a, b in itertools.pairwise(INCREMENTAL_DAYS))  # fmt: skip
    for day in INCREMENTAL_DAYS:
        log.info("dbt run (incremental) for %s", day)
        run_dbt("run", settings, day)
    return settings
