"""One Spark application of the PostgreSQL-metastore test.

    python tests/deploy/_deploy_pg_app.py SCHEMA NAME ROWS OUT RELEASE TABLE...

Builds the pipeline's session (the catalog comes from QUICEXP_CATALOG__* in the environment),
creates the Delta table SCHEMA.NAME with ROWS rows, waits until every TABLE exists in the shared
metastore, writes their row counts to OUT (JSON) and then stays up until the file RELEASE
appears, so that the other application and the Thrift server work at the same time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from quicexp.config import load_settings, validate_identifier
from quicexp.spark import build_spark

TIMEOUT_S = 900


def main(schema: str, name: str, rows: int, out: Path, release: Path, tables: list[str]) -> int:
    schema, name = validate_identifier(schema), validate_identifier(name)
    spark = build_spark(load_settings(), f"quicexp-pg-{name}")
    spark.range(rows).write.format("delta").mode("overwrite").saveAsTable(f"{schema}.{name}")
    deadline = time.monotonic() + TIMEOUT_S
    wanted = [f"{schema}.{validate_identifier(t)}" for t in tables]
    while not all(spark.catalog.tableExists(t) for t in wanted):
        if time.monotonic() > deadline:
            return 3
        time.sleep(1)
    counts = {t: spark.table(t).count() for t in wanted}
    partial = out.with_suffix(".part")
    partial.write_text(json.dumps({"app": name, "counts": counts}))
    partial.replace(out)
    while not release.exists():
        if time.monotonic() > deadline:
            return 4
        time.sleep(0.5)
    spark.stop()
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], a[1], int(a[2]), Path(a[3]), Path(a[4]), a[5:]))
