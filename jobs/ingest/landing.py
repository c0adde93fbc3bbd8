"""The landing zone: where upload batches of one day are, and whether they can be read.

Layout: ``<landing>/upload_date=YYYY-MM-DD/<kind>/<batch>.jsonl.gz|.jsonl|.parquet``. Names
starting with ``_`` or ``.`` (manifests, markers, partial uploads) are not batches.

Every file is checked before Spark reads anything (exists, readable, gzip or Parquet magic,
Parquet footer), so an unreadable upload is a one-line error and nothing is written.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from quicexp.config import ConfigError

JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
PARQUET_SUFFIXES = (".parquet",)
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"


class LandingError(ConfigError):
    """The landing zone cannot be ingested as it is (missing day, unreadable file)."""


@dataclass(frozen=True)
class Batches:
    """The files of one event kind uploaded on one day: JSON lines, and Parquet grouped by schema."""

    kind: str
    json_files: tuple[str, ...]
    parquet_groups: tuple[tuple[object, tuple[str, ...]], ...] = field(default=())  # (pa.Schema, files)

    @property
    def empty(self) -> bool:
        return not self.json_files and not self.parquet_groups

    @property
    def files(self) -> int:
        return len(self.json_files) + sum(len(files) for _, files in self.parquet_groups)


def day_dir(landing_root: Path, day: date) -> Path:
    return landing_root / f"upload_date={day.isoformat()}"


def _check_readable(path: Path) -> None:
    """Raise :class:`LandingError` unless ``path`` opens and starts like its suffix says."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if path.name.endswith(PARQUET_SUFFIXES) and os.path.getsize(path) >= 8:
                fh.seek(-4, os.SEEK_END)
                tail = fh.read(4)
            else:
                tail = b""
    except OSError as exc:
        raise LandingError(f"cannot read landing file {path}: {exc.strerror}") from None
    if path.name.endswith(".gz") and head[:2] != GZIP_MAGIC:
        raise LandingError(f"cannot read landing file {path}: not gzip data")
    if path.name.endswith(PARQUET_SUFFIXES) and (head != PARQUET_MAGIC or tail != PARQUET_MAGIC):
        raise LandingError(f"cannot read landing file {path}: not a Parquet file")


def _parquet_groups(paths: list[Path]) -> tuple[tuple[object, tuple[str, ...]], ...]:
    """Group Parquet files by their (footer) schema, so each group is read with one schema."""
    import pyarrow.parquet as pq

    groups: dict[object, list[str]] = defaultdict(list)
    for path in paths:
        try:
            schema = pq.read_schema(path).remove_metadata()
        except Exception as exc:
            raise LandingError(f"cannot read landing file {path}: {str(exc).splitlines()[0]}") from None
        groups[schema].append(str(path))
    return tuple((schema, tuple(files)) for schema, files in groups.items())


def find_batches(landing_root: Path, day: date, kinds: tuple[str, ...]) -> list[Batches]:
    """List and check the day's upload batches per kind; a clear error when the day is absent.

    A missing landing root or day folder is an error (the data has not arrived); a day
    folder with no files is a real, empty day and empties the day's bronze slice.
    """
    if not landing_root.is_dir():
        raise LandingError(f"landing zone {landing_root} does not exist")
    folder = day_dir(landing_root, day)
    if not folder.is_dir():
        raise LandingError(f"no landing data for {day.isoformat()}: {folder} does not exist")
    found = []
    for kind in kinds:
        files = sorted(p for p in (folder / kind).glob("*") if p.is_file() and not p.name.startswith(("_", ".")))
        unknown = [p.name for p in files if not p.name.endswith(JSON_SUFFIXES + PARQUET_SUFFIXES)]
        if unknown:
            raise LandingError(f"unrecognised file in landing zone: {folder / kind / unknown[0]}")
        for path in files:
            _check_readable(path)
        found.append(
            Batches(
                kind=kind,
                json_files=tuple(str(p) for p in files if p.name.endswith(JSON_SUFFIXES)),
                parquet_groups=_parquet_groups([p for p in files if p.name.endswith(PARQUET_SUFFIXES)]),
            )
        )
    return found
