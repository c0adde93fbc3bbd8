"""Write the project's one Spark configuration as a spark-submit ``--properties-file``.

    python deploy/spark_properties.py OUT_FILE [--app-name NAME] [--thrift-server]

Servers started with ``spark-submit`` (the Thrift server in docker-compose.yml and in
tests/deploy) take their configuration from ``quicexp.spark.spark_conf(load_settings())``, like
every pipeline session. A properties file rather than ``--conf`` flags keeps the metastore
password (and Spark's RPC secret) out of the process list: the file is created with mode 0600.
``--thrift-server`` adds what only the Thrift server has (``quicexp.app.serve.server_conf``: the
project jar with its password check and SQL guard, the guard among the session extensions).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quicexp.config import ConfigError, load_settings
from quicexp.spark import spark_conf, write_properties

# Meaningless for a JVM-only server (and a path of the machine that wrote the file).
SKIPPED = {"spark.pyspark.python"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="properties file to write (mode 0600)")
    parser.add_argument("--app-name", default="quicexp-thrift-server")
    parser.add_argument("--thrift-server", action="store_true", help="add the Thrift server's jar and SQL guard")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        if args.thrift_server:
            from quicexp.app.serve import server_conf

            conf = server_conf(settings)
            conf["spark.app.name"] = args.app_name
        else:
            conf = spark_conf(settings, args.app_name)
        write_properties(args.out, {k: v for k, v in conf.items() if k not in SKIPPED})
    except ConfigError as exc:
        print(f"spark_properties: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
