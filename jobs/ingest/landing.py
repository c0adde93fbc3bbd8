"""The landing zone: where upload batches of one day are, and what they are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from quicexp.config import ConfigError

JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
PARQUET_SUFFIXES = (".parquet",)


@dataclass(frozen=True)
class Batches:
    """The files of one event kind uploaded on one day, split by format."""

    kind: str
    json_files: tuple[str, ...]
    parquet_files: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.json_files and not self.parquet_files


def day_dir(landing_root: Path, day: date) -> Path:
    return landing_root / f"upload_date={day.isoformat()}"


def find_batches(landing_root: Path, day: date, kinds: tuple[str, ...]) -> list[Batches]:
    """List the day's upload batches per kind; a clear error when the day is absent.

    A missing landing root or day folder is an error (the data has not arrived); a day
    folder with no files is a real, empty day and empties the day's bronze slice.
    """
    if not landing_root.is_dir():
        raise ConfigError(f"landing zone {landing_root} does not exist")
    folder = day_dir(landing_root, day)
    if not folder.is_dir():
        raise ConfigError(f"no landing data for {day.isoformat()}: {folder} does not exist")
    found = []
    for kind in kinds:
        files = sorted(p for p in (folder / kind).glob("*") if p.is_file() and not p.name.startswith(("_", ".")))
        unknown = [p.name for p in files if not p.name.endswith(JSON_SUFFIXES + PARQUET_SUFFIXES)]
        if unknown:
            raise ConfigError(f"unrecognised file in landing zone: {folder / kind / unknown[0]}")
        found.append(
            Batches(
                kind=kind,
                json_files=tuple(str(p) for p in files if p.name.endswith(JSON_SUFFIXES)),
                parquet_files=tuple(str(p) for p in files if p.name.endswith(PARQUET_SUFFIXES)),
            )
        )
    return found
