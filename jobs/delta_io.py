"""Idempotent Delta writes shared by the jobs: create-if-missing and atomic replace-where."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quicexp.config import validate_identifier

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType


def qualified(schema: str, table: str) -> str:
    """``schema.table`` after validating both parts as SQL identifiers."""
    return f"{validate_identifier(schema, 'schema name')}.{validate_identifier(table, 'table name')}"


def ensure_schema(spark: SparkSession, schema: str) -> None:
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {validate_identifier(schema, 'schema name')}")


def ensure_table(spark: SparkSession, name: str, struct: StructType, partition_by: list[str]) -> None:
    """Create the Delta table ``name`` with ``struct`` unless it exists."""
    from delta.tables import DeltaTable

    (
        DeltaTable.createIfNotExists(spark)
        .tableName(name)
        .addColumns(struct)
        .partitionedBy(*partition_by)
        .execute()
    )


def add_missing_columns(spark: SparkSession, name: str, struct: StructType) -> list[str]:
    """Add to the existing table ``name`` the fields of ``struct`` it lacks, as nullable columns
    (a table made before a field existed: older rows read it as null). Returns their names."""
    have = {f.name.lower() for f in spark.table(name).schema.fields}
    missing = [f for f in struct.fields if f.name.lower() not in have]
    if missing:
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({columns})")
    return [f.name for f in missing]


def replace_where(df: DataFrame, name: str, condition: Column) -> None:
    """Atomically replace the rows of ``name`` matching ``condition`` with ``df``.

    One Delta commit: readers see the old rows or the new ones, never a mix, and an
    empty ``df`` empties the slice. Rerunning with the same input gives the same table.
    """
    df.writeTo(name).overwrite(condition)
