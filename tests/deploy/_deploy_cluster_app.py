"""Driver of the cluster test: ``quicexp run-day --skip reports`` against SPARK_MASTER (the test
compares results; reports are read from them), then a probe of the executors.

    python tests/deploy/_deploy_cluster_app.py YYYY-MM-DD

Runs in its own process (the test process keeps its local[2] session). The last stdout line is
a JSON object: the CLI's exit code, the master the session used, and for each executor the file
``jobs`` was imported from and the interpreter that imported it.
"""

from __future__ import annotations

import json
import sys


def _where(_rows):
    import os
    import socket
    import sys

    import jobs

    yield json.dumps(
        {"jobs_file": jobs.__file__, "python": sys.executable, "cwd": os.getcwd(), "host": socket.gethostname()}
    )


def main(day: str) -> int:
    from pyspark.sql import SparkSession

    from quicexp.app.cli import main as cli_main

    code = cli_main(["run-day", "--date", day, "--skip", "reports"])
    spark = SparkSession.getActiveSession()
    report: dict = {"exit_code": code}
    if spark is not None:
        sc = spark.sparkContext
        report["master"] = sc.master
        report["py_files"] = sc.getConf().get("spark.submit.pyFiles", "")
        n = max(2, sc.defaultParallelism) * 2
        report["executors"] = sorted(set(sc.parallelize(range(n), n).mapPartitions(_where).collect()))
        spark.stop()
    print(json.dumps(report), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
