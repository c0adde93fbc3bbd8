"""One-shot start-up job of docker-compose.yml: create the metastore schema and the lake's schemas.

The first Spark JVM that talks to an empty PostgreSQL metastore creates Hive's tables in it
(``datanucleus.schema.autoCreateAll``). Doing that once, before the Thrift server and Airflow
start, keeps several JVMs from racing on the same DDL. Idempotent.
"""

from __future__ import annotations

import sys

from quicexp.config import ConfigError, load_settings
from quicexp.spark import build_spark


def main() -> int:
    try:
        settings = load_settings()
        if settings.catalog.kind != "jdbc":
            raise ConfigError("metastore_init is for a JDBC (PostgreSQL) metastore: set QUICEXP_CATALOG__KIND=jdbc")
        spark = build_spark(settings, "quicexp-metastore-init")
    except ConfigError as exc:
        print(f"metastore_init: error: {exc}", file=sys.stderr)
        return 2
    for schema in (settings.bronze_schema, settings.silver_schema, settings.gold_schema):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")  # validated identifiers (Settings)
    names = sorted(row[0] for row in spark.sql("SHOW DATABASES").collect())
    print(f"metastore ready at {settings.catalog.jdbc_url}: databases {', '.join(names)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
