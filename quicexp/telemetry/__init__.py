"""Telemetry event schema: the single source of truth for event kinds and their fields.

The schema lives in ``schema_v1.json`` next to this module (documented in ``docs/telemetry.md``).
Producers (the fleet simulator, real clients) and consumers (the ingestion job, which builds its
Spark schemas from :func:`fields`) both read it from here.

Types come from a small vocabulary: ``string``, ``long``, ``double``, ``boolean``, ``timestamp``,
``map<string,string>``. Timestamps are RFC 3339 UTC strings with milliseconds in JSON and
``timestamp[ms, UTC]`` in Parquet.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import NamedTuple

import pyarrow as pa

SCHEMA_VERSION = 1
TYPES = ("string", "long", "double", "boolean", "timestamp", "map<string,string>")


class Field(NamedTuple):
    """One field of an event kind."""

    name: str
    type: str
    nullable: bool
    description: str
    #: inclusive bounds of a numeric field's values (None: unbounded); outside them a row is
    #: quarantined as ``out_of_range:<name>`` (a NaN is out of any declared range)
    minimum: float | None = None
    maximum: float | None = None


@cache
def _schema_doc() -> dict:
    text = resources.files(__name__).joinpath(f"schema_v{SCHEMA_VERSION}.json").read_text()
    doc = json.loads(text)
    if doc["schema_version"] != SCHEMA_VERSION:
        raise RuntimeError("schema_v1.json does not carry schema_version 1")
    return doc


def _kinds() -> dict:
    return _schema_doc()["kinds"]


EVENT_KINDS: tuple[str, ...] = tuple(_kinds())


def _check_kind(kind: str) -> None:
    if kind not in _kinds():
        raise KeyError(f"unknown event kind {kind!r}; known: {', '.join(EVENT_KINDS)}")


def event_type(kind: str) -> str:
    """The ``event_type`` value written on events of ``kind`` (singular, e.g. ``page_load``)."""
    _check_kind(kind)
    return _kinds()[kind]["event_type"]


def common_fields() -> list[Field]:
    """Fields present on every event kind, in order."""
    return [Field(**f) for f in _schema_doc()["common_fields"]]


def fields(kind: str) -> list[Field]:
    """All fields of ``kind``: the common fields followed by the kind's own, in column order."""
    _check_kind(kind)
    return common_fields() + [Field(**f) for f in _kinds()[kind]["fields"]]


def description(kind: str) -> str:
    """One-sentence description of what one event of ``kind`` is."""
    _check_kind(kind)
    return _kinds()[kind]["description"]


_ARROW_TYPES = {
    "string": pa.string(),
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("ms", tz="UTC"),
    "map<string,string>": pa.map_(pa.string(), pa.string()),
}


def arrow_type(type_name: str) -> pa.DataType:
    """The Arrow type of a vocabulary type name."""
    try:
        return _ARROW_TYPES[type_name]
    except KeyError:
        raise KeyError(f"unknown field type {type_name!r}; known: {', '.join(TYPES)}") from None


def arrow_schema(kind: str) -> pa.Schema:
    """The Arrow (and so Parquet) schema of ``kind``, nullability included."""
    return pa.schema(
        [
            pa.field(f.name, arrow_type(f.type), nullable=f.nullable, metadata={"description": f.description})
            for f in fields(kind)
        ],
        metadata={"schema_version": str(SCHEMA_VERSION), "event_kind": kind},
    )


__all__ = [
    "EVENT_KINDS",
    "SCHEMA_VERSION",
    "TYPES",
    "Field",
    "arrow_schema",
    "arrow_type",
    "common_fields",
    "description",
    "event_type",
    "fields",
]
