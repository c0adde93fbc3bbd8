"""Building a Spark session (or the flags of a spark-submit) with Delta and the shared catalog.

One function computes the Spark configuration; the session builder, the Thrift-server
launcher and the notebooks all use it, so every JVM sees the same tables.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from quicexp.config import Settings
from quicexp.jars import cached_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Jars each Spark JVM needs: Delta, and the Derby client for the shared metastore.
SPARK_JARS = ("delta-spark_2.13", "delta-storage", "derbyclient", "postgresql")


def spark_conf(settings: Settings, app_name: str = "quicexp") -> dict[str, str]:
    """The full Spark configuration for ``settings`` (no side effects)."""
    jars = [str(p) for p in cached_jars(settings.jar_cache, SPARK_JARS)]
    catalog = settings.catalog
    conf = {
        "spark.app.name": app_name,
        "spark.master": settings.spark.master,
        "spark.driver.memory": settings.spark.driver_memory,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": str(settings.spark.ui_enabled).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(settings.spark.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(settings.warehouse_dir),
        "spark.jars": ",".join(jars),
        "spark.driver.extraClassPath": os.pathsep.join(jars),
        "spark.hadoop.javax.jdo.option.ConnectionURL": catalog.connection_url(settings.metastore_dir),
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": catalog.driver_class(),
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.pyspark.python": sys.executable,
    }
    if catalog.user:
        conf["spark.hadoop.javax.jdo.option.ConnectionUserName"] = catalog.user
    if catalog.password:
        conf["spark.hadoop.javax.jdo.option.ConnectionPassword"] = catalog.password
    conf.update(settings.spark.extra_conf)
    return conf


def build_spark(settings: Settings, app_name: str = "quicexp") -> SparkSession:
    """Return the process's Spark session, creating it with the project's configuration."""
    from pyspark.sql import SparkSession

    from quicexp.catalog import ensure_catalog

    ensure_catalog(settings)
    builder = SparkSession.builder
    for key, value in spark_conf(settings, app_name).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
