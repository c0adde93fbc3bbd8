"""JSON-lines landing files → typed rows or a quarantine reason, in plain Python (no JVM).

Spark runs :func:`arrow_batches` once per landing file (``mapInArrow`` over the list of
paths, see ``validate.parse_json_files``); everything here is pure Python, so each rule has a
unit test that needs no Spark.

Why not Spark's own JSON functions: the VARIANT version (``try_parse_json`` + per-field
``variant_get`` / ``schema_of_variant``) cost about 2 ms per line (docs/ingestion.md,
"Performance"), and ``from_json`` cannot tell the rules apart (it casts a number to a string,
stringifies a nested object inside a ``map<string,string>`` and stops at the first object of
``{A}{B}``). The standard library's C decoder, one pass per line, tells every rule apart.

Records and the audit's ``rows_read`` (what the uploader sent): a record is a line ended by
``\\n`` (a ``\\r`` right before it belongs to the line ending, as in NDJSON); the last line needs
no ``\\n``. A bare ``\\r`` elsewhere does not end a record: it is part of the record's text
(JSON takes it as whitespace between values, so ``{A}\\r{B}`` is ``trailing_data``). An empty
line is a record, and ``malformed_json``. Bytes that are not UTF-8 are ``malformed_json``.

Reasons, first failing wins (docs/ingestion.md):
``malformed_json``, ``trailing_data`` (a second value or other text after the first value:
``{A}{B}``, ``{C} garbage``), ``not_an_object``, then per field in schema order
``missing_field:<f>`` and ``wrong_type:<f>``. A file that cannot be read at all (truncated
gzip, permissions, …) is one quarantined record ``unreadable_file`` whose raw text is the
error (in strict mode the job then fails, naming the file, before it writes anything).
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from quicexp import telemetry

BATCH_ROWS = 8192
UNREADABLE = "unreadable_file"
_JSON_WS = " \t\n\r"
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class _Malformed(ValueError):
    pass


def _reject_constant(name: str) -> float:  # NaN, Infinity, -Infinity are not JSON
    raise _Malformed(name)


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # {"a": 1, "a": 2}: which one the client meant is unknowable
        raise _Malformed("duplicate key")
    return obj


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_reject_duplicates)


def _string(v: object) -> tuple[bool, object]:
    return type(v) is str, v


def _long(v: object) -> tuple[bool, object]:
    return type(v) is int and _LONG_MIN <= v <= _LONG_MAX, v


def _double(v: object) -> tuple[bool, object]:
    if type(v) is float:
        return math.isfinite(v), v
    if type(v) is int:
        try:
            return True, float(v)
        except OverflowError:
            return False, None
    return False, None


def _boolean(v: object) -> tuple[bool, object]:
    return type(v) is bool, v


def _timestamp(v: object) -> tuple[bool, object]:
    if type(v) is not str:
        return False, None
    try:
        moment = datetime.fromisoformat(v)
    except ValueError:
        return False, None
    if moment.tzinfo is None:  # no offset: UTC, the session time zone of every job
        moment = moment.replace(tzinfo=UTC)
    return True, moment


def _string_map(v: object) -> tuple[bool, object]:
    # a map of strings: every value a JSON string (a number, null or nested object is not)
    if type(v) is not dict or not all(type(x) is str for x in v.values()):
        return False, None
    return True, list(v.items())


CHECKS: dict[str, Callable[[object], tuple[bool, object]]] = {
    "string": _string, "long": _long, "double": _double, "boolean": _boolean,
    "timestamp": _timestamp, "map<string,string>": _string_map,
}


def check_record(text: str, fields: list[telemetry.Field]) -> tuple[list[object], str | None]:
    """One record's typed values (None where absent or invalid) and its reason (None when valid)."""
    values: list[object] = [None] * len(fields)
    body = text.lstrip(_JSON_WS)
    try:
        obj, end = _DECODER.raw_decode(body)
    except (ValueError, RecursionError):  # JSONDecodeError and _Malformed are ValueErrors
        return values, "malformed_json"
    if body[end:].strip(_JSON_WS):
        return values, "trailing_data"
    if type(obj) is not dict:
        return values, "not_an_object"
    reason = None
    for i, f in enumerate(fields):
        raw = obj.get(f.name)
        if raw is None:
            if not f.nullable and reason is None:
                reason = f"missing_field:{f.name}"
            continue
        ok, value = CHECKS[f.type](raw)
        if ok:
            values[i] = value
        elif reason is None:
            reason = f"wrong_type:{f.name}"
    return values, reason


@contextmanager
def _open(path: str) -> Iterator[BinaryIO]:
    """The file's bytes (gunzipped for ``.gz``); a symbolic link is refused, never followed."""
    from jobs.ingest.landing import open_no_follow

    with open_no_follow(path) as raw:
        if path.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                yield fh
        else:
            yield raw


def read_records(path: str) -> list[bytes]:
    """Every record of the file (see the module docstring); raises OSError/EOFError/zlib.error if unreadable.

    The whole file is read before any record is returned, so an unreadable file yields no rows.
    """
    with _open(path) as fh:
        data = fh.read()
    if not data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":  # the final line ending ends the last record; it does not start another
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def file_uri(path: str) -> str:
    return Path(path).absolute().as_uri()


def rows_of_file(path: str, kind: str) -> Iterator[tuple]:
    """``(raw_text, source_file, *typed values, reason)`` for every record of one landing file."""
    fields = telemetry.fields(kind)
    uri = file_uri(path)
    try:
        records = read_records(path)
    except (OSError, EOFError, zlib.error) as exc:
        yield (_describe(exc), uri, *([None] * len(fields)), UNREADABLE)
        return
    for record in records:
        try:
            text = record.decode("utf-8")
        except UnicodeDecodeError:
            yield (record.decode("utf-8", "replace"), uri, *([None] * len(fields)), "malformed_json")
            continue
        values, reason = check_record(text, fields)
        yield (text, uri, *values, reason)


def arrow_schema(kind: str):
    """The Arrow schema of :func:`rows_of_file`'s rows (timestamps as Spark reads them: µs, UTC)."""
    import pyarrow as pa

    types = {"timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema(
        [pa.field("raw_text", pa.string()), pa.field("source_file", pa.string()),
         *(pa.field(f.name, types.get(f.type) or telemetry.arrow_type(f.type)) for f in telemetry.fields(kind)),
         pa.field("reason", pa.string())]
    )


def arrow_batches(paths: Iterable[str], kind: str) -> Iterator[object]:
    """Record batches of :func:`rows_of_file` over ``paths``, ``BATCH_ROWS`` rows at most each.

    Python's cyclic garbage collector is off while the batches are made: the rows hold no
    reference cycles (their memory is freed by reference counting), and the collector's passes
    over the millions of young tuples and dicts cost about a fifth of a line's time.
    """
    import pyarrow as pa

    schema = arrow_schema(kind)
    width = len(schema)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for path in paths:
            rows: list[tuple] = []
            for row in rows_of_file(path, kind):
                rows.append(row)
                if len(rows) == BATCH_ROWS:
                    yield _batch(rows, schema, width, pa)
                    rows = []
            if rows:
                yield _batch(rows, schema, width, pa)
    finally:
        if collecting:
            gc.enable()


def _batch(rows: list[tuple], schema, width: int, pa):
    columns = list(zip(*rows, strict=True)) if rows else [()] * width
    return pa.RecordBatch.from_arrays(
        [pa.array(col, type=schema.field(i).type) for i, col in enumerate(columns)], schema=schema
    )
