"""Turning raw telemetry rows into typed rows, or into a quarantine reason.

The rules (docs/ingestion.md):

* a line that is not JSON is ``malformed_json``; JSON that is not an object, ``not_an_object``;
* a required field that is absent or null is ``missing_field:<name>``;
* a present field of the wrong type is ``wrong_type:<name>`` (no silent casts: the JSON
  string ``"123"`` is not a long; a Parquet column of an incompatible type flags every row
  that carries a value in it). Unknown extra fields are ignored, so newer clients that add
  fields keep loading (schema evolution is additive, by a new schema version);
* ``schema_version`` other than the supported one is ``unsupported_schema_version``;
  an ``event_type`` that does not match the folder is ``wrong_event_type``;
* clock skew and lateness, on the window ``[upload day − lookback days, upload time +
  tolerance]``: an event time after its upload time plus the tolerance is
  ``clock_skew_future``; an event date more than ``lookback_days`` before its upload day is
  ``too_late``. Neither is corrected: a skewed client clock cannot be told from a real
  time, so the row is kept with its raw text for inspection instead of being guessed at;
* ``upload_time`` outside the folder's day (± the tolerance) is ``upload_time_outside_day``;
* a numeric value outside the bounds the telemetry schema declares (``minimum``/``maximum``;
  NaN is outside) is ``out_of_range:<name>``.

JSON lines are parsed and checked in Python, one pass per line (jobs/ingest/jsonlines.py);
Parquet columns are checked once per file group from the footer's types.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from quicexp import telemetry

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

SPARK_TYPES = {
    "string": "string",
    "long": "bigint",
    "double": "double",
    "boolean": "boolean",
    "timestamp": "timestamp",
    "map<string,string>": "map<string,string>",
}

def spark_schema(kind: str):
    """The typed Spark schema of ``kind``'s event fields (bronze adds its own columns)."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    return StructType(
        [StructField(f.name, _parse_datatype_string(SPARK_TYPES[f.type]), True) for f in telemetry.fields(kind)]
    )


def parsed_struct(kind: str):
    """The parse stage's rows: ``raw_text``, ``source_file``, the typed fields, ``reason``."""
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType(
        [StructField("raw_text", StringType()), StructField("source_file", StringType()),
         *spark_schema(kind).fields, StructField("reason", StringType())]
    )


def parse_json_files(spark: SparkSession, files: tuple[str, ...], kind: str) -> DataFrame:
    """JSON-lines ``files`` → typed event columns + ``raw_text`` + ``source_file`` + ``reason`` (parse stage).

    One task per file (gzip cannot be split anyway) runs ``jsonlines.arrow_batches``: the file is
    opened by its literal path (no glob expansion, any character in the name), read whole, and
    every record checked in Python (see jobs/ingest/jsonlines.py for the rules).
    """
    out = parsed_struct(kind)

    def parse(batches):
        from jobs.ingest.jsonlines import arrow_batches

        for batch in batches:
            yield from arrow_batches(batch.column(0).to_pylist(), kind)

    # one partition (task) per file, no shuffle
    rdd = spark.sparkContext.parallelize([(str(f),) for f in files], max(1, len(files)))
    return spark.createDataFrame(rdd, "path string").mapInArrow(parse, out)


def arrow_compatible(expected: str, actual: pa.DataType) -> bool:
    """Whether a Parquet column of Arrow type ``actual`` may hold a field of vocabulary type ``expected``.

    Only lossless conversions: integers widen to double, any timestamp unit is a timestamp.
    """
    import pyarrow as pa

    t = pa.types
    if t.is_dictionary(actual):
        actual = actual.value_type
    checks = {
        "string": lambda: t.is_string(actual) or t.is_large_string(actual),
        "long": lambda: t.is_integer(actual),
        "double": lambda: t.is_floating(actual) or t.is_integer(actual),
        "boolean": lambda: t.is_boolean(actual),
        "timestamp": lambda: t.is_timestamp(actual),
        "map<string,string>": lambda: t.is_map(actual)
        and arrow_compatible("string", actual.key_type)
        and arrow_compatible("string", actual.item_type),
    }
    return t.is_null(actual) or checks[expected]()


def parse_parquet(df: DataFrame, kind: str, file_schema: pa.Schema, semantic: Column | None = None) -> DataFrame:
    """Conform Parquet files that share ``file_schema`` to ``kind``; keep a JSON rendering for quarantine.

    An absent required column is ``missing_field``; a column of an incompatible type is
    ``wrong_type`` for every row that has a value there (its value is not cast). ``semantic``:
    the checks of the typed row that follow the file's own (:func:`semantic_reason`), so that
    the row's final reason is known here and only a quarantined row is rendered as JSON: the
    rendering of every row (``to_json`` of the file's whole row) took more CPU than reading
    the files (docs/decisions.md).
    """
    from pyspark.sql import functions as F

    present = {f.name: f.type for f in file_schema}
    reasons: list[Column] = []
    typed = []
    for f in telemetry.fields(kind):
        spark_type = SPARK_TYPES[f.type]
        if f.name in present and arrow_compatible(f.type, present[f.name]):
            typed.append(F.col(f.name).cast(spark_type).alias(f.name))
            if not f.nullable:
                reasons.append(F.when(F.col(f.name).isNull(), F.lit(f"missing_field:{f.name}")))
        elif f.name in present:
            typed.append(F.lit(None).cast(spark_type).alias(f.name))
            reasons.append(F.when(F.col(f.name).isNotNull(), F.lit(f"wrong_type:{f.name}")))
            if not f.nullable:
                reasons.append(F.when(F.col(f.name).isNull(), F.lit(f"missing_field:{f.name}")))
        else:
            typed.append(F.lit(None).cast(spark_type).alias(f.name))
            if not f.nullable:
                reasons.append(F.lit(f"missing_field:{f.name}"))
    payload = [c for c in df.columns if c != "source_file"]
    conformed = df.select(
        F.struct(*payload).alias("_payload"),
        "source_file",
        *typed,
        F.coalesce(*reasons, F.lit(None).cast("string")).alias("reason"),
    )
    if semantic is not None:
        conformed = conformed.withColumn("reason", F.coalesce("reason", semantic))
    return conformed.select(
        F.when(F.col("reason").isNotNull(), F.to_json("_payload")).alias("raw_text"),
        "source_file",
        *[f.name for f in telemetry.fields(kind)],
        "reason",
    )


def range_reason(kind: str) -> Column:
    """``out_of_range:<f>`` for the first numeric field outside its declared bounds (NaN is outside)."""
    from pyspark.sql import functions as F

    checks = []
    for f in telemetry.fields(kind):
        if f.minimum is None and f.maximum is None:
            continue
        col = F.col(f.name)
        bad = F.isnan(col) if f.type == "double" else F.lit(False)
        if f.minimum is not None:
            bad = bad | (col < F.lit(f.minimum))
        if f.maximum is not None:
            bad = bad | (col > F.lit(f.maximum))
        checks.append(F.when(col.isNotNull() & bad, F.lit(f"out_of_range:{f.name}")))
    return F.coalesce(*checks, F.lit(None).cast("string"))


def semantic_reason(kind: str, day: date, lookback_days: int, future_tolerance_minutes: int) -> Column:
    """Checks on typed rows: version, event type, upload day, clock skew, lateness, ranges (first failing wins).

    ``upload_time`` must fall in the folder's day, widened by the tolerance on both sides (a
    collector's clock and its day boundary may disagree by that much): the row's own claim is
    checked against where it was delivered, so a row cannot move itself to another day.
    """
    from pyspark.sql import functions as F

    oldest = F.date_sub(F.lit(day), lookback_days)
    tolerance = F.expr(f"INTERVAL {future_tolerance_minutes} MINUTES")
    day_start = F.to_timestamp(F.lit(day.isoformat()))
    day_end = F.to_timestamp(F.lit((day + timedelta(days=1)).isoformat()))
    return F.coalesce(
        F.when(F.col("schema_version") != telemetry.SCHEMA_VERSION, F.lit("unsupported_schema_version")),
        F.when(F.col("event_type") != telemetry.event_type(kind), F.lit("wrong_event_type")),
        F.when(
            (F.col("upload_time") < day_start - tolerance) | (F.col("upload_time") >= day_end + tolerance),
            F.lit("upload_time_outside_day"),
        ),
        F.when(F.col("event_time") > F.col("upload_time") + tolerance, F.lit("clock_skew_future")),
        F.when(F.to_date("event_time") < oldest, F.lit("too_late")),
        range_reason(kind),
    )
