"""A fault-injected landing day reconciles exactly; reruns, back-fills in either order and emptied days.

Day P (2026-06-14) and day D (2026-06-15): HTTP transactions as gzip JSON lines with 1%
malformed, 1% schema-violating, 5% duplicate, 2% late and 1% clock-skewed lines (plus 1%
re-uploads of day P's events in D); connections as Parquet, one file with a new column and
nulls in a required field, one whose ``packets_sent`` column changed type to string.
"""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from datetime import date
from urllib.parse import urlparse

import pyarrow as pa
import pytest

import jobs.ingest
from jobs.ingest.tables import AUDIT, LEDGER, QUARANTINE
from tests.jobs.conftest import checksum, checksums
from tests.jobs.landing_factory import event, json_day, write_jsonl_gz, write_parquet

P, D = date(2026, 6, 14), date(2026, 6, 15)
HTTP, CONN = "http_transactions", "connections"
KINDS = (HTTP, CONN)
TABLES = [HTTP, CONN, QUARANTINE, AUDIT, LEDGER]


def _write_landing(root) -> dict:
    """Both days' files; returns what ingesting D must give."""
    p_lines, _ = json_day(HTTP, P, 400)
    write_jsonl_gz(root / f"upload_date={P}" / HTTP / "p-0.jsonl.gz", p_lines)
    write_parquet(root / f"upload_date={P}" / CONN / "p-0.parquet", CONN, [event(CONN, P, i) for i in range(100)])

    d_lines, exp = json_day(HTTP, D, 2000, previous=(P, 400))
    folder = root / f"upload_date={D}"
    write_jsonl_gz(folder / HTTP / "d-0.jsonl.gz", d_lines[0::2])
    write_jsonl_gz(folder / HTTP / "d-1.jsonl.gz", d_lines[1::2])
    rows = [event(CONN, D, i) for i in range(250)]
    for row in rows[:10]:
        row["srtt_ms"] = None
    write_parquet(folder / CONN / "d-0.parquet", CONN, rows[:200], extra={"new_field": list(range(200))})
    write_parquet(folder / CONN / "d-1.parquet", CONN, rows[200:], overrides={"packets_sent": pa.string()})
    exp.read[CONN], exp.loaded[CONN] = 250, 190
    exp.reasons[CONN] = Counter({"missing_field:srtt_ms": 10, "wrong_type:packets_sent": 50})
    return {"expected": exp, "lines": {str(p): _count_lines(p) for p in folder.rglob("*.jsonl.gz")}}


def _count_lines(path) -> int:
    with gzip.open(path, "rt") as fh:
        return sum(1 for _ in fh)


@pytest.fixture(scope="module")
def lake_a(ingest_spark, lake):
    settings = lake("ingest_a")
    facts = _write_landing(settings.landing_root)
    summaries = [jobs.ingest.run(ingest_spark, settings, day, KINDS) for day in (P, D)]
    return settings, facts, summaries


def test_fault_injected_day_reconciles_exactly(ingest_spark, lake_a):
    settings, facts, (_, summary) = lake_a
    spark, schema, exp = ingest_spark, settings.bronze_schema, facts["expected"]
    audit = spark.sql(f"SELECT * FROM {schema}.{AUDIT} WHERE upload_date = DATE'{D}'").collect()
    assert audit, "no audit rows"
    for row in audit:
        assert row.rows_read == row.rows_loaded + row.rows_quarantined + row.rows_duplicate, row
        path = urlparse(row.source_file).path
        if path in facts["lines"]:  # every line of the file was read, not one more or less
            assert row.rows_read == facts["lines"][path], path
    loaded_by_file = dict(spark.sql(
        f"SELECT source_file, count(*) FROM {schema}.{HTTP} WHERE upload_date = DATE'{D}' GROUP BY 1").collect()
        + spark.sql(f"SELECT source_file, count(*) FROM {schema}.{CONN} WHERE upload_date = DATE'{D}' GROUP BY 1").collect())
    quarantined_by_file = dict(spark.sql(
        f"SELECT source_file, count(*) FROM {schema}.{QUARANTINE} WHERE upload_date = DATE'{D}' GROUP BY 1").collect())
    for row in audit:
        assert loaded_by_file.get(row.source_file, 0) == row.rows_loaded
        assert quarantined_by_file.get(row.source_file, 0) == row.rows_quarantined

    for kind in (HTTP, CONN):
        counts = summary.per_kind[kind]
        assert counts["rows_read"] == exp.read[kind]
        assert counts["rows_loaded"] == exp.loaded[kind]
        assert counts["rows_duplicate"] == exp.duplicate[kind]
        assert counts["rows_late"] == exp.late[kind]
        reasons = Counter(dict(spark.sql(
            f"SELECT reason, count(*) FROM {schema}.{QUARANTINE} "
            f"WHERE upload_date = DATE'{D}' AND kind = '{kind}' GROUP BY 1").collect()))
        assert reasons == exp.reasons[kind]
    bad = spark.sql(f"SELECT count(*) FROM {schema}.{QUARANTINE} WHERE reason IS NULL OR raw_text IS NULL "
                    "OR source_file IS NULL").first()[0]
    assert bad == 0
    late_dates = spark.sql(f"SELECT DISTINCT event_date FROM {schema}.{HTTP} "
                           f"WHERE upload_date = DATE'{D}' AND event_date < DATE'{D}'").collect()
    assert [r.event_date for r in late_dates] == [date(2026, 6, 13)]  # late events land on their event date
    new_field = spark.table(f"{schema}.{CONN}").columns
    assert "new_field" not in new_field  # an added field is ignored (additive schema evolution)


def test_reruns_are_identical_and_backfill_order_does_not_matter(ingest_spark, lake_a, lake):
    settings, _, _ = lake_a
    spark = ingest_spark
    first = checksums(spark, settings.bronze_schema, TABLES)
    for _ in range(2):
        summary = jobs.ingest.run(spark, settings, D, KINDS)
        assert summary.cascaded == []
        assert checksums(spark, settings.bronze_schema, TABLES) == first

    backfill = lake("ingest_b").model_copy(update={"landing_root": settings.landing_root})
    jobs.ingest.run(spark, backfill, D, KINDS)
    late_first = checksum(spark, f"{backfill.bronze_schema}.{HTTP}", f"upload_date = DATE'{D}'")
    summary = jobs.ingest.run(spark, backfill, P, KINDS)  # back-fill the older day after the newer one
    assert summary.cascaded == [D]  # D's cross-day duplicates changed, so D was redone
    assert late_first[0] == checksum(spark, f"{settings.bronze_schema}.{HTTP}", f"upload_date = DATE'{D}'")[0] + 20
    assert checksums(spark, backfill.bronze_schema, TABLES) == first


def test_emptied_landing_day_empties_the_day(ingest_spark, lake_a, tmp_path):
    settings, _, _ = lake_a
    spark, schema = ingest_spark, settings.bronze_schema
    before_p = {t: checksum(spark, f"{schema}.{t}", f"upload_date = DATE'{P}'") for t in TABLES}
    folder = settings.landing_root / f"upload_date={D}"
    shutil.move(str(folder), str(tmp_path / "moved"))
    folder.mkdir()
    try:
        summary = jobs.ingest.run(spark, settings, D, KINDS)
        assert summary.total("rows_read") == 0
        for table in TABLES:
            assert checksum(spark, f"{schema}.{table}", f"upload_date = DATE'{D}'") == (0, 0), table
            assert checksum(spark, f"{schema}.{table}", f"upload_date = DATE'{P}'") == before_p[table], table
    finally:
        folder.rmdir()
        shutil.move(str(tmp_path / "moved"), str(folder))
