"""Each ingest rule on its own, on a few hand-made records: JSON-lines checks in pure Python, the
semantic checks, the Parquet conformance and the dedup ranking on tiny in-memory DataFrames (chispa).

Every test names the rule it pins; removing the rule makes that test fail.
"""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, date, datetime

import pytest

from jobs.ingest import jsonlines
from quicexp import telemetry
from tests.jobs.landing_factory import event

D = date(2026, 6, 15)
HTTP = "http_transactions"
FIELDS = telemetry.fields(HTTP)


def _line(**changes) -> str:
    row = event(HTTP, D, 7)
    for key, value in changes.items():
        if value is _DROP:
            row.pop(key)
        else:
            row[key] = value
    return json.dumps(row)


_DROP = object()
VALID = _line()


def reason(text: str) -> str | None:
    return jsonlines.check_record(text, FIELDS)[1]


# -- JSON lines (pure Python) -----------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    (VALID, None),
    ("", "malformed_json"),
    ('{"event_id": "truncated', "malformed_json"),
    ('{"a": 1, "a": 2}', "malformed_json"),  # duplicate key: which one was meant is unknowable
    (VALID.replace('"latency_ms": 10.5', '"latency_ms": NaN'), "malformed_json"),  # not JSON
    (VALID + VALID, "trailing_data"),  # {A}{B} on one line: B must not vanish
    (VALID + " garbage", "trailing_data"),
    (VALID + "\r" + VALID, "trailing_data"),  # a bare CR does not end a record
    ("[1, 2]", "not_an_object"),
    ("null", "not_an_object"),
    ('"text"', "not_an_object"),
    (_line(event_id=_DROP), "missing_field:event_id"),
    (_line(event_id=None), "missing_field:event_id"),
    (_line(stream_id="7"), "wrong_type:stream_id"),  # no silent casts
    (_line(stream_id=7.0), "wrong_type:stream_id"),
    (_line(stream_id=2**63), "wrong_type:stream_id"),  # beyond a long
    (_line(new_connection=1), "wrong_type:new_connection"),
    (_line(latency_ms="3"), "wrong_type:latency_ms"),
    (_line(latency_ms=True), "wrong_type:latency_ms"),
    (_line(event_time="yesterday"), "wrong_type:event_time"),
    (_line(client_id=12), "wrong_type:client_id"),
    (_line(experiments={"exp1": {"arm": "control"}}), "wrong_type:experiments"),  # nested, not a string
    (_line(experiments={"exp1": 1}), "wrong_type:experiments"),
    (_line(experiments=["exp1"]), "wrong_type:experiments"),
    # first failing wins, in schema order
    (_line(event_id=_DROP, stream_id="x"), "missing_field:event_id"),
])
def test_json_record_reasons(text, expected):
    assert reason(text) == expected


def test_valid_record_values_are_typed():
    values, why = jsonlines.check_record(_line(latency_ms=3, experiments={"e": "a"}), FIELDS)
    got = dict(zip([f.name for f in FIELDS], values, strict=True))
    assert why is None
    assert got["latency_ms"] == 3.0 and type(got["latency_ms"]) is float  # an integer is a valid double
    assert got["experiments"] == [("e", "a")]
    assert got["event_time"] == datetime(2026, 6, 15, 0, 2, 20, tzinfo=UTC)


def test_records_are_lines_ended_by_newline(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_bytes(b"a\r\nb\rc\n\nd")  # CRLF ends a record; bare CR does not; an empty line is one
    assert jsonlines.read_records(str(path)) == [b"a", b"b\rc", b"", b"d"]
    path.write_bytes(b"")
    assert jsonlines.read_records(str(path)) == []


def test_unreadable_file_is_one_record_with_its_reason(tmp_path):
    data = gzip.compress(("\n".join([VALID] * 500) + "\n").encode())
    torn = tmp_path / "torn.jsonl.gz"
    torn.write_bytes(data[: len(data) // 2])
    rows = list(jsonlines.rows_of_file(str(torn), HTTP))
    assert len(rows) == 1 and rows[0][-1] == jsonlines.UNREADABLE
    assert "EOFError" in rows[0][0] or "Error" in rows[0][0]


def test_file_names_are_literal(tmp_path):
    odd = tmp_path / "c*[x]{y}\\:z.jsonl"
    odd.write_text(VALID + "\n")
    (tmp_path / "c1.jsonl").write_text(VALID + "\n" + VALID + "\n")  # a glob of the odd name would match this
    rows = list(jsonlines.rows_of_file(str(odd), HTTP))
    assert len(rows) == 1 and rows[0][-1] is None
    assert rows[0][1] == odd.as_uri()


# -- random corruptions: every record sent comes out once, valid or with a reason ---------------


def corrupt(line: str, rng: random.Random) -> str:
    """One random corruption of a valid line (or the line unchanged)."""
    row = json.loads(line)
    name = rng.choice([f.name for f in FIELDS])
    op = rng.randrange(10)
    if op == 0:
        return line[: rng.randrange(len(line))]
    if op == 1:
        at = rng.randrange(len(line))
        return line[:at] + rng.choice(['"', "}", "{", ",", "\r", "\x00", "é", "\\"]) + line[at:]
    if op == 2:
        return line + rng.choice([line, " x", "{}", "\r" + line, " ", "\t"])
    if op == 3:
        row[name] = rng.choice([None, "7", 7, 7.5, True, {"a": "b"}, {"a": {"b": 1}}, [], 2**70, -1e12])
    elif op == 4:
        row.pop(name)
    elif op == 5:
        return json.dumps(rng.choice([[row], row["event_id"], 1, None]))
    elif op == 6:
        row["experiments"] = {"e": rng.choice(["a", 1, None, {"x": "y"}, ["a"]])}
    return json.dumps(row)


def test_random_corruptions_each_record_exactly_once(tmp_path):
    rng = random.Random(20261124)
    lines = [corrupt(json.dumps(event(HTTP, D, i)), rng) for i in range(3000)]
    path = tmp_path / "fuzz.jsonl.gz"
    payload = "\n".join(lines).encode()
    path.write_bytes(gzip.compress(payload))
    sent = payload.count(b"\n") + 1  # what the uploader sent: \n-ended records, the last one unended
    rows = list(jsonlines.rows_of_file(str(path), HTTP))
    assert len(rows) == sent
    by_reason = {}
    for row in rows:
        why = row[-1]
        values = row[2:-1]
        if why is None:  # a valid row carries every required field, typed
            assert all(v is not None for v, f in zip(values, FIELDS, strict=True) if not f.nullable)
        by_reason[why.split(":")[0] if why else None] = by_reason.get(why.split(":")[0] if why else None, 0) + 1
    # the generator reaches every parse-stage reason
    assert {"malformed_json", "trailing_data", "not_an_object", "missing_field", "wrong_type", None} <= set(by_reason)


# -- semantic checks, Parquet conformance and dedup on tiny DataFrames (Spark, chispa) ----------


def _typed(spark, rows: list[dict], kind: str = HTTP):
    """Typed parse-stage rows of ``kind`` (``raw_text``/``source_file``/``reason`` included)."""
    from jobs.ingest.validate import parsed_struct

    full = []
    for i, changes in enumerate(rows):
        base = event(kind, D, i)
        values, why = jsonlines.check_record(json.dumps(base), telemetry.fields(kind))
        assert why is None
        named = dict(zip([f.name for f in telemetry.fields(kind)], values, strict=True))
        named["experiments"] = dict(named["experiments"])
        for key, value in changes.items():
            named[key] = value
        full.append((json.dumps(base), named.pop("source_file", "file:/b-0.jsonl"),
                     *[named[f.name] for f in telemetry.fields(kind)], named.get("reason")))
    return spark.createDataFrame(full, parsed_struct(kind))


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


SEMANTIC_CASES = [
    ({}, None),
    ({"schema_version": 2}, "unsupported_schema_version"),
    ({"event_type": "page_load"}, "wrong_event_type"),
    ({"upload_time": _at("2026-06-25T00:03:00"), "event_time": _at("2026-06-25T00:02:00")}, "upload_time_outside_day"),
    ({"upload_time": _at("2026-06-14T23:55:00"), "event_time": _at("2026-06-14T23:54:00")}, None),  # within tolerance
    ({"upload_time": _at("2026-06-14T23:45:00"), "event_time": _at("2026-06-14T23:44:00")}, "upload_time_outside_day"),
    ({"event_time": _at("2026-06-15T01:00:00")}, "clock_skew_future"),
    ({"event_time": _at("2026-06-15T00:10:00")}, None),  # 7 minutes ahead: within the tolerance
    ({"event_time": _at("2026-06-11T12:00:00")}, "too_late"),
    ({"event_time": _at("2026-06-12T00:00:00")}, None),  # exactly lookback days before: loaded
    ({"latency_ms": -1e12}, "out_of_range:latency_ms"),
    ({"latency_ms": float("nan")}, "out_of_range:latency_ms"),
    ({"latency_ms": 9e7}, "out_of_range:latency_ms"),
    ({"packets_lost": -1}, "out_of_range:packets_lost"),
    ({"status_code": 99}, "out_of_range:status_code"),
]


def test_semantic_reasons(ingest_spark):
    """One case per rule, all in one small DataFrame (one Spark job)."""
    from jobs.ingest.validate import semantic_reason

    df = _typed(ingest_spark, [dict(changes, event_id=f"case{i:02d}") for i, (changes, _) in enumerate(SEMANTIC_CASES)])
    got = df.select("event_id", semantic_reason(HTTP, D, 3, 10).alias("r")).orderBy("event_id").collect()
    assert [(r.event_id, r.r) for r in got] == [(f"case{i:02d}", want) for i, (_, want) in enumerate(SEMANTIC_CASES)]


def test_parquet_conformance_reasons(ingest_spark):
    import pyarrow as pa
    from chispa import assert_df_equality
    from pyspark.sql import functions as F

    from jobs.ingest.validate import parse_parquet

    schema = telemetry.arrow_schema(HTTP)
    rows = _typed(ingest_spark, [{"event_id": "a"}, {"event_id": "b"}, {"event_id": "c"}]).drop("raw_text", "reason")
    # stream_id arrives as a string column (a type change): a value there is wrong_type, a null missing_field
    rows = rows.withColumn("stream_id", F.when(F.col("event_id") == "b", F.lit("7")))
    rows = rows.withColumn("ttfb_ms", F.when(F.col("event_id") != "c", F.col("ttfb_ms")))  # c: a null
    changed = pa.schema([pa.field("stream_id", pa.string()) if f.name == "stream_id" else f for f in schema])
    got = parse_parquet(rows, HTTP, changed).select("event_id", "reason", "stream_id")
    expected = ingest_spark.createDataFrame(
        [("a", "missing_field:stream_id", None), ("b", "wrong_type:stream_id", None), ("c", "missing_field:stream_id", None)],
        "event_id string, reason string, stream_id bigint")
    assert_df_equality(got, expected, ignore_nullable=True, ignore_row_order=True)
    # a required column absent from the file: missing_field on every row
    without = pa.schema([f for f in schema if f.name != "ttfb_ms"])
    got = parse_parquet(rows.drop("ttfb_ms").withColumn("stream_id", F.lit(1).cast("bigint")), HTTP, without)
    assert {r.reason for r in got.collect()} == {"missing_field:ttfb_ms"}
    # the intact file: only c's null in a required column
    got = parse_parquet(rows.withColumn("stream_id", F.lit(1).cast("bigint")), HTTP, schema).select("event_id", "reason")
    assert sorted((r.event_id, r.reason) for r in got.collect()) == [("a", None), ("b", None), ("c", "missing_field:ttfb_ms")]


def test_parquet_rows_are_rendered_as_json_only_when_they_end_in_quarantine(ingest_spark):
    """A file's reason and a semantic one both quarantine the row with its JSON text; a loaded
    row carries none (rendering every row cost more than reading the files)."""
    from jobs.ingest.validate import parse_parquet, parsed_struct, semantic_reason

    rows = _typed(ingest_spark, [{"event_id": "ok"}, {"event_id": "v2", "schema_version": 2},
                                 {"event_id": "gap", "ttfb_ms": None}]).drop("raw_text", "reason")
    parsed = parse_parquet(rows, HTTP, telemetry.arrow_schema(HTTP), semantic_reason(HTTP, D, 3, 10))
    got = {r.event_id: r for r in parsed.collect()}
    assert (got["ok"].reason, got["ok"].raw_text) == (None, None)
    assert got["v2"].reason == "unsupported_schema_version"
    assert json.loads(got["v2"].raw_text)["schema_version"] == 2
    assert got["gap"].reason == "missing_field:ttfb_ms"
    assert json.loads(got["gap"].raw_text)["event_id"] == "gap"
    assert parsed.columns == parsed_struct(HTTP).fieldNames()  # the JSON-lines parse's columns


def _classify(spark, rows: list[dict], earlier: list[str] = ()):
    from jobs.ingest import dedup

    seen = spark.createDataFrame([(HTTP, e) for e in earlier], "kind string, event_id string")
    return dedup.classify(_typed(spark, rows), seen, HTTP, D)


def _status(df) -> list[tuple]:
    return sorted((r.event_id, r.source_file, r.status) for r in df.select("event_id", "source_file", "status").collect())


def test_dedup_earliest_upload_time_wins(ingest_spark):
    rows = [{"event_id": "e", "upload_time": _at("2026-06-15T10:00:00"), "source_file": "late"},
            {"event_id": "e", "upload_time": _at("2026-06-15T09:00:00"), "source_file": "early"}]
    assert _status(_classify(ingest_spark, rows)) == [("e", "early", "loaded"), ("e", "late", "duplicate")]


def test_dedup_tie_on_upload_time_goes_to_the_first_source_file(ingest_spark):
    at = _at("2026-06-15T10:00:00")
    rows = [{"event_id": "e", "upload_time": at, "source_file": "b"}, {"event_id": "e", "upload_time": at, "source_file": "a"}]
    assert _status(_classify(ingest_spark, rows)) == [("e", "a", "loaded"), ("e", "b", "duplicate")]


def test_dedup_full_tie_loads_exactly_one_copy(ingest_spark):
    at = _at("2026-06-15T10:00:00")
    rows = [{"event_id": "e", "upload_time": at, "source_file": "a", "latency_ms": v} for v in (1.0, 2.0, 1.0)]
    statuses = [s for _, _, s in _status(_classify(ingest_spark, rows))]
    assert sorted(statuses) == ["duplicate", "duplicate", "loaded"]


def test_dedup_id_seen_on_an_earlier_upload_day_is_a_duplicate(ingest_spark):
    rows = [{"event_id": "old"}, {"event_id": "new"}]
    assert _status(_classify(ingest_spark, rows, earlier=["old"])) == [
        ("new", "file:/b-0.jsonl", "loaded"), ("old", "file:/b-0.jsonl", "duplicate")]


def test_dedup_quarantined_copy_never_outranks_a_valid_one(ingest_spark):
    rows = [{"event_id": "e", "upload_time": _at("2026-06-15T08:00:00"), "source_file": "bad", "reason": "wrong_type:x"},
            {"event_id": "e", "upload_time": _at("2026-06-15T09:00:00"), "source_file": "good"}]
    assert _status(_classify(ingest_spark, rows)) == [("e", "bad", "quarantined"), ("e", "good", "loaded")]


def test_ledger_rows_are_each_valid_ids_first_copy(ingest_spark):
    from pyspark.sql import functions as F

    from jobs.ingest import dedup

    rows = [{"event_id": "e", "source_file": "a"}, {"event_id": "e", "source_file": "b"},
            {"event_id": "e", "source_file": "c", "reason": "wrong_type:x"},
            {"event_id": "q", "source_file": "a", "reason": "wrong_type:x"},
            {"event_id": "old", "source_file": "a"}, {"event_id": "new", "source_file": "a"}]
    classified = _classify(ingest_spark, rows, earlier=["old"])
    ledger = sorted(tuple(r) for r in dedup.ledger_rows(classified, HTTP).collect())
    assert ledger == [(HTTP, i, D) for i in ("e", "new", "old")]
    # the same as the distinct valid ids of the day, which it replaces
    distinct = classified.where(F.col("status") != dedup.QUARANTINED).select("event_id").distinct()
    assert sorted(i for _, i, _ in ledger) == sorted(r.event_id for r in distinct.collect())


def test_json_parse_runs_without_the_cyclic_collector_and_restores_it(tmp_path):
    import gc

    path = tmp_path / "b.jsonl"
    path.write_text((VALID + "\n") * 3)
    for enabled_before in (True, False):
        (gc.enable if enabled_before else gc.disable)()
        try:
            during = [gc.isenabled() for _ in jsonlines.arrow_batches([str(path)], HTTP)]
            assert during == [False] and gc.isenabled() is enabled_before
        finally:
            gc.enable()


def test_shuffle_partitions_follow_the_landing_size(tmp_path):
    from jobs.ingest.job import shuffle_partitions

    folder = tmp_path / f"upload_date={D}" / HTTP
    folder.mkdir(parents=True)
    (folder / "small.jsonl.gz").write_bytes(b"x" * 1000)
    assert shuffle_partitions(tmp_path, D, 4) == 4  # a tiny day keeps the configured number
    with open(folder / "big.jsonl.gz", "wb") as fh:  # 4.5 GB of gzip: a 50 M-event day (sparse file)
        fh.truncate(4_500_000_000)
    assert 100 <= shuffle_partitions(tmp_path, D, 4) <= 400
