"""The driver JVM's class-data archive: made once by a representative run, mapped by every session.

A fresh Spark JVM spends seconds finding, reading and verifying the classes of Spark, Hive,
DataNucleus and Delta in their jars. JDK 17's application class-data sharing writes the classes a
JVM loaded to an archive when it exits (``-XX:ArchiveClassesAtExit``); a later JVM with the same
java and class path maps them from that file (``-XX:SharedArchiveFile``, added by
``quicexp.spark.spark_conf`` when the archive exists). ``quicexp setup-jars`` makes it here: a
child process starts a session against a throw-away home and metastore, runs what the pipeline's
first steps run (metastore calls, a Delta write, a partition replace, reads, an aggregate, a join
and a window, a pandas conversion), stops, and waits for its JVM to write the archive. The
archive's name carries a hash of the java, the PySpark version and the jars, so a change of any
makes a new one; a JVM that still cannot use an archive ignores it silently.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from quicexp.config import Settings, load_settings
from quicexp.spark import class_archive

#: a representative run takes 20-40 s on two cores, plus the archive's writing at exit
TRAINING_TIMEOUT_S = 600


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ensure_class_archive(settings: Settings, log: Callable[[str], object] = print) -> Path | None:
    """Make :func:`quicexp.spark.class_archive` if it is missing; its path, or None if it could not be made.

    Never fatal: without the archive every JVM starts as before, a few seconds slower. The child's
    output goes to ``<jar_cache>/spark-classes.log``.
    """
    archive = class_archive(settings)
    if archive.is_file():
        return archive
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.part")
    log_file = settings.jar_cache / "spark-classes.log"
    log(f"making the JVM class-data archive {archive.name} (once; log: {log_file})")
    with tempfile.TemporaryDirectory(prefix="quicexp-class-archive-") as home, log_file.open("w") as out:
        command = [sys.executable, "-m", "quicexp.class_archive", str(partial), home,
                   str(_free_port()), str(settings.jar_cache)]  # fmt: skip
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=TRAINING_TIMEOUT_S, check=False)  # fmt: skip
            failed = done.returncode != 0 or not partial.is_file()
        except subprocess.TimeoutExpired:
            failed = True
    if failed:
        partial.unlink(missing_ok=True)
        log(f"the JVM class-data archive was not made (see {log_file}); Spark starts without it")
        return None
    partial.replace(archive)
    return archive


def _train(partial: Path, home: Path, port: int, jar_cache: Path) -> None:
    """Run the representative work in a session whose JVM writes ``partial`` when it exits."""
    from pyspark import SparkContext
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from quicexp.catalog import ensure_catalog, stop_derby
    from quicexp.spark import build_spark

    settings = load_settings(home=home, state_dir=home / "state", jar_cache=jar_cache,
                             catalog={"kind": "derby-server", "port": port},
                             spark={"master": "local[2]", "shuffle_partitions": 2})  # fmt: skip
    ensure_catalog(settings)
    jvm = None
    try:
        spark = build_spark(settings, "quicexp-class-archive", dump_classes_to=partial)
        jvm = SparkContext._gateway.proc  # the driver JVM: it writes the archive as it exits
        spark.sql("create database if not exists warm_up")
        rows = spark.range(3000).selectExpr(
            "id", "cast(id % 7 as string) as k", "cast(id as double) / 3 as v",
            "date_add(date'2026-06-15', cast(id % 3 as int)) as d", "map('e', 'arm') as experiments",
        )  # fmt: skip
        rows.write.format("delta").partitionBy("d").saveAsTable("warm_up.events")
        rows.where("k = '1' and d = date'2026-06-15'").write.format("delta").mode("overwrite").option(
            "replaceWhere", "d = date'2026-06-15'"
        ).saveAsTable("warm_up.events")
        events = spark.table("warm_up.events")
        per_key = events.groupBy("k").agg(F.sum("v").alias("total"), F.percentile_approx("v", 0.5).alias("p50"))
        ranked = events.join(per_key, "k").withColumn(
            "rank", F.row_number().over(Window.partitionBy("k").orderBy("v"))
        )
        ranked.where("rank <= 3").toPandas()
        spark.sql("select d, count(*) from warm_up.events lateral view explode(experiments) as e, a group by d").collect()
        spark.sql("describe history warm_up.events").collect()
        spark.stop()
        jvm.stdin.close()  # the gateway JVM exits at the end of its input, writing the archive
        jvm.wait(timeout=TRAINING_TIMEOUT_S)
    except BaseException:
        if jvm is not None:
            jvm.kill()  # a failed run leaves no archive behind (a killed JVM writes none)
        raise
    finally:
        stop_derby(settings)


if __name__ == "__main__":
    _train(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
