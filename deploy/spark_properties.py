"""Write the project's one Spark configuration as a spark-submit ``--properties-file``.

    python deploy/spark_properties.py OUT_FILE [--app-name NAME]

Servers started with ``spark-submit`` (the Thrift server in docker-compose.yml and in
tests/deploy) take their configuration from ``quicexp.spark.spark_conf(load_settings())``, like
every pipeline session. A properties file rather than ``--conf`` flags keeps the metastore
password out of the process list: the file is created with mode 0600.
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
    args = parser.parse_args(argv)
    try:
        conf = spark_conf(load_settings(), args.app_name)
        write_properties(args.out, {k: v for k, v in conf.items() if k not in SKIPPED})
    except ConfigError as exc:
        print(f"spark_properties: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
