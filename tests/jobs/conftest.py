"""Fixtures of the ingestion tests: small-data Delta settings and order-independent table checksums."""

from __future__ import annotations

import pytest

# Delta reconstructs a table's state with 50 tasks by default; on tables of a few files that is
# most of the cost of every read and commit (see docs/ingestion.md, "Performance").
SMALL_DATA_CONF = {"spark.databricks.delta.snapshotPartitions": "2"}


@pytest.fixture(scope="session")
def ingest_spark(spark):
    """The run's Spark session with the small-data Delta settings, restored afterwards."""
    saved = {key: spark.conf.get(key, None) for key in SMALL_DATA_CONF}
    for key, value in SMALL_DATA_CONF.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def checksum(spark, table: str, where: str = "true") -> tuple[int, int]:
    """(rows, sum of row hashes): equal for equal multisets of rows, whatever their order or files."""
    row = spark.sql(
        f"SELECT count(*) AS n, coalesce(sum(cast(xxhash64(to_json(struct(*))) AS decimal(38, 0))), 0) AS h "
        f"FROM {table} WHERE {where}"
    ).first()
    return int(row.n), int(row.h)


def checksums(spark, schema: str, tables: list[str]) -> dict[str, tuple[int, int]]:
    return {t: checksum(spark, f"{schema}.{t}") for t in tables}


def cli_env(settings) -> dict[str, str]:
    """Environment for a ``quicexp`` subprocess that sees the same lake namespace as ``settings``."""
    import os

    env = dict(os.environ)
    env.update({
        "QUICEXP_HOME": str(settings.home), "QUICEXP_LAKE_ROOT": str(settings.lake_root),
        "QUICEXP_LANDING_ROOT": str(settings.landing_root), "QUICEXP_METASTORE_DIR": str(settings.metastore_dir),
        "QUICEXP_BRONZE_SCHEMA": settings.bronze_schema, "QUICEXP_SILVER_SCHEMA": settings.silver_schema,
        "QUICEXP_GOLD_SCHEMA": settings.gold_schema,
        "QUICEXP_SPARK__EXTRA_CONF": '{"spark.databricks.delta.snapshotPartitions": "2"}',
    })
    return env
