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
  time, so the row is kept with its raw text for inspection instead of being guessed at.

JSON validation uses Spark 4's VARIANT functions, so each line is parsed once and every
field's JSON type is inspected without a second parser.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from quicexp import telemetry

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

SPARK_TYPES = {
    "string": "string",
    "long": "bigint",
    "double": "double",
    "boolean": "boolean",
    "timestamp": "timestamp",
    "map<string,string>": "map<string,string>",
}

# schema_of_variant() names of the JSON values accepted for each vocabulary type.
_JSON_TYPE_OK = {
    "string": "{t} = 'STRING'",
    "long": "{t} = 'BIGINT'",
    "double": "({t} IN ('BIGINT', 'DOUBLE', 'FLOAT') OR {t} LIKE 'DECIMAL(%')",
    "boolean": "{t} = 'BOOLEAN'",
    "timestamp": "{t} = 'STRING'",
    "map<string,string>": "{t} LIKE 'OBJECT<%'",
}


def spark_schema(kind: str):
    """The typed Spark schema of ``kind``'s event fields (bronze adds its own columns)."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    return StructType(
        [StructField(f.name, _parse_datatype_string(SPARK_TYPES[f.type]), True) for f in telemetry.fields(kind)]
    )


def parse_json_lines(raw: DataFrame, kind: str) -> DataFrame:
    """``raw(value, source_file)`` → typed event columns + ``raw_text`` + ``reason`` (parse stage)."""
    from pyspark.sql import functions as F

    fields = telemetry.fields(kind)
    parsed = raw.select(
        F.col("value").alias("raw_text"), "source_file", F.expr("try_parse_json(value)").alias("v")
    )
    reasons: list[Column] = [
        F.when(F.col("v").isNull(), F.lit("malformed_json")),
        F.when(~F.expr("schema_of_variant(v) LIKE 'OBJECT<%'"), F.lit("not_an_object")),
    ]
    typed = []
    for f in fields:
        path = f"'$.{f.name}'"
        raw_val = f"variant_get(v, {path}, 'variant')"
        json_type = f"schema_of_variant({raw_val})"
        absent = F.expr(f"{raw_val} IS NULL OR is_variant_null({raw_val})")
        value = F.expr(f"try_variant_get(v, {path}, '{SPARK_TYPES[f.type]}')")
        bad_type = ~absent & (~F.expr(_JSON_TYPE_OK[f.type].format(t=json_type)) | value.isNull())
        if not f.nullable:
            reasons.append(F.when(absent, F.lit(f"missing_field:{f.name}")))
        reasons.append(F.when(bad_type, F.lit(f"wrong_type:{f.name}")))
        typed.append(F.when(~absent, value).alias(f.name))
    return parsed.select("raw_text", "source_file", *typed, F.coalesce(*reasons).alias("reason"))


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


def parse_parquet(df: DataFrame, kind: str, file_schema: pa.Schema) -> DataFrame:
    """Conform Parquet files that share ``file_schema`` to ``kind``; keep a JSON rendering for quarantine.

    An absent required column is ``missing_field``; a column of an incompatible type is
    ``wrong_type`` for every row that has a value there (its value is not cast).
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
    return df.select(
        F.to_json(F.struct(*payload)).alias("raw_text"),
        "source_file",
        *typed,
        F.coalesce(*reasons, F.lit(None).cast("string")).alias("reason"),
    )


def semantic_reason(kind: str, day: date, lookback_days: int, future_tolerance_minutes: int) -> Column:
    """Checks on typed rows: version, event type, clock skew and lateness (first failing wins)."""
    from pyspark.sql import functions as F

    oldest = F.date_sub(F.lit(day), lookback_days)
    return F.coalesce(
        F.when(F.col("schema_version") != telemetry.SCHEMA_VERSION, F.lit("unsupported_schema_version")),
        F.when(F.col("event_type") != telemetry.event_type(kind), F.lit("wrong_event_type")),
        F.when(
            F.col("event_time") > F.col("upload_time") + F.expr(f"INTERVAL {future_tolerance_minutes} MINUTES"),
            F.lit("clock_skew_future"),
        ),
        F.when(F.to_date("event_time") < oldest, F.lit("too_late")),
    )
