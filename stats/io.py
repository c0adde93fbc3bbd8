"""Reading and writing the engine's tables (Parquet or CSV, chosen by file extension)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from stats.schema import ARRAY_COLUMNS

_PARQUET = (".parquet", ".pq")


class TableFormatError(ValueError):
    """Unsupported file extension or unreadable file."""


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in _PARQUET:
        return "parquet"
    if suffix == ".csv":
        return "csv"
    raise TableFormatError(
        f"unsupported file type '{path.suffix}' for {path} (use .parquet or .csv)"
    )


def read_table(path: Path) -> pd.DataFrame:
    """Read a sufficient-statistics table.

    In CSV, ``grid_p`` and ``grid_value`` are JSON lists (e.g. ``"[0.94, 0.95, 0.96]"``);
    they are parsed by the engine.

    Raises:
        FileNotFoundError: the file does not exist.
        TableFormatError: unsupported extension or unparsable content.
    """
    kind = _kind(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    try:
        if kind == "parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype={c: "string" for c in ARRAY_COLUMNS})
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableFormatError(f"cannot read {path}: {first}") from exc


def write_table(table: pd.DataFrame, path: Path) -> None:
    """Write a results table as Parquet or CSV (by extension); creates parent folders.

    Raises:
        TableFormatError: unsupported extension.
    """
    kind = _kind(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "parquet":
        table.to_parquet(path, index=False)
        return
    out = table.copy()
    for c in ARRAY_COLUMNS:
        if c in out:
            out[c] = out[c].map(lambda v: None if v is None else json.dumps(list(v)))
    out.to_csv(path, index=False)
