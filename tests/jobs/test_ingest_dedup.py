"""Deduplication ranks valid copies only: a quarantined copy never hides a valid one."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import jobs.ingest
from jobs.ingest.tables import QUARANTINE
from tests.jobs.landing_factory import event, first_field, ts, write_jsonl_gz

D = date(2026, 6, 15)
HTTP = "http_transactions"


def test_an_earlier_quarantined_copy_does_not_make_the_valid_copy_a_duplicate(ingest_spark, lake):
    settings = lake("ingest_dedup")
    valid = [event(HTTP, D, i) for i in range(6)]
    broken = []
    long_field = first_field(HTTP, "long")
    for row in valid[:3]:  # the same event ids, uploaded a minute *earlier*, with a wrong-typed field
        copy = dict(row, upload_time=ts_minus_minute(row["upload_time"]))
        copy[long_field] = "not a number"
        broken.append(copy)
    lines = [json.dumps(r) for r in broken + valid]
    write_jsonl_gz(settings.landing_root / f"upload_date={D}" / HTTP / "b-0.jsonl.gz", lines)

    summary = jobs.ingest.run(ingest_spark, settings, D, (HTTP,))

    counts = summary.per_kind[HTTP]
    assert (counts["rows_read"], counts["rows_loaded"], counts["rows_quarantined"], counts["rows_duplicate"]) == (9, 6, 3, 0)
    loaded = {r.event_id for r in ingest_spark.table(f"{settings.bronze_schema}.{HTTP}").select("event_id").collect()}
    assert loaded == {r["event_id"] for r in valid}
    reasons = [r.reason for r in ingest_spark.table(f"{settings.bronze_schema}.{QUARANTINE}").collect()]
    assert reasons == [f"wrong_type:{long_field}"] * 3


def ts_minus_minute(text: str) -> str:
    return ts(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ") - timedelta(minutes=1))


def test_a_bronze_table_made_before_a_field_existed_gets_the_field(ingest_spark, lake):
    """A lake from before page_size_class: the ingest adds the column, nullable, and loads."""
    from pyspark.sql.types import StructType

    from jobs.delta_io import ensure_schema, ensure_table, qualified
    from jobs.ingest.tables import BRONZE_PARTITIONS, bronze_struct

    settings = lake("ingest_new_field")
    kind = "page_loads"
    old = StructType([f for f in bronze_struct(kind).fields if f.name != "page_size_class"])
    ensure_schema(ingest_spark, settings.bronze_schema)
    ensure_table(ingest_spark, qualified(settings.bronze_schema, kind), old, BRONZE_PARTITIONS)
    rows = [dict(event(kind, D, i), page_size_class="large") for i in range(4)]
    write_jsonl_gz(settings.landing_root / f"upload_date={D}" / kind / "b-0.jsonl.gz",
                   [json.dumps(r) for r in rows])  # fmt: skip
    summary = jobs.ingest.run(ingest_spark, settings, D, (kind,))
    assert summary.per_kind[kind]["rows_loaded"] == 4
    table = ingest_spark.table(f"{settings.bronze_schema}.{kind}")
    assert {r.page_size_class for r in table.select("page_size_class").collect()} == {"large"}
