"""The landing zone: where upload batches of one day are, and whether they can be read.

Layout: ``<landing>/upload_date=YYYY-MM-DD/<kind>/<batch>.jsonl.gz|.jsonl|.parquet``, and the
qlog job's ``qlog/`` folder (jobs/qlog). Names starting with ``_`` or ``.`` (manifests, markers,
partial uploads) are not batches.

Every entry of a day's folder is accounted for before anything is read (:func:`refuse_unaccounted`):
a file directly in a kind folder is a batch (or set aside, below), a ``_``/``.`` name a marker,
``qlog/`` the qlog job's, ``lab/`` a lab run's records (:data:`OTHER_FOLDERS`); anything else — a folder that is no kind (a misspelt kind), a subfolder
of a kind folder, a file at the day's root, a symbolic link anywhere (never followed, never
read), a FIFO or device — refuses the day with one line naming it, before anything is read or
written: move or delete it and run again.

Every file is checked before Spark reads anything (exists, readable, gzip or Parquet magic,
Parquet footer). A file that fails (or has a name no reader knows) is set aside by name
(``Batches.unreadable``): the job quarantines it as one ``unreadable_file`` record with the
reason as its text, and the rest of the day loads; in strict mode the job fails instead,
naming the file, and writes nothing. File names are literal paths: no character in a name
(``*``, ``?``, ``[``, ``{``, ``\\``, ``:``) is ever interpreted as a pattern or a URI part.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from quicexp.errors import InputDataError

JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
PARQUET_SUFFIXES = (".parquet",)
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"


#: the qlog job's folder of a day (jobs/qlog lists and accounts for everything under it)
QLOG_FOLDER = "qlog"
#: folders of a day that hold no event batches, and whose they are
OTHER_FOLDERS = {
    QLOG_FOLDER: "the qlog job's (jobs/qlog): traces and sidecars",
    "lab": "a real-stack lab run's records (lab/runner.py): relay counters and manifest, read by no job",
}
#: how many refused entries the error line names before "and N more"
NAMED_ENTRIES = 3


class LandingError(InputDataError):
    """The landing zone cannot be ingested as it is (missing day, unreadable file)."""


def _marker(name: str) -> bool:
    """Manifests, markers and partial uploads: not batches, skipped by name."""
    return name.startswith(("_", "."))


def _why_not_a_file(entry: os.DirEntry) -> str | None:
    """Why ``entry`` is no plain file a job may open (None when it is one); never follows a link."""
    if entry.is_symlink():
        return "a symbolic link (links are never followed)"
    if entry.is_dir(follow_symlinks=False):
        return None
    if not entry.is_file(follow_symlinks=False):
        return "not a regular file (a FIFO, socket or device)"
    return None


def unaccounted(folder: Path, kinds: tuple[str, ...], *, qlog: bool = False) -> list[tuple[Path, str]]:
    """The entries of a day folder no job accounts for, with why, in name order.

    ``kinds``: the event kinds (their folders hold batches, directly). The ``qlog/`` folder is the
    qlog job's; with ``qlog=True`` (that job's own check) its symbolic links and special files at
    any depth are reported, and the rest of the day is not looked at.
    """
    found: list[tuple[Path, str]] = []
    if qlog:
        root = folder / QLOG_FOLDER
        if root.is_symlink():
            return [(root, "a symbolic link (links are never followed)")]
        for dirpath, dirnames, _ in os.walk(root):
            with os.scandir(dirpath) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if why := _why_not_a_file(entry):
                        found.append((Path(entry.path), why))
            dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        return found
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            path = Path(entry.path)
            if why := _why_not_a_file(entry):
                found.append((path, why))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in kinds:
                    found += _unaccounted_in_kind(path)
                elif entry.name not in OTHER_FOLDERS and not _marker(entry.name):
                    found.append((path, f"a folder that is no event kind (the kinds: {', '.join(kinds)})"))
            elif not _marker(entry.name):
                found.append((path, "a file at the day's root (batches go in <kind>/)"))
    return found


def _unaccounted_in_kind(directory: Path) -> list[tuple[Path, str]]:
    found = []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if why := _why_not_a_file(entry):
                found.append((Path(entry.path), why))
            elif entry.is_dir(follow_symlinks=False) and not _marker(entry.name):
                found.append((Path(entry.path), "a subfolder of a kind folder (batches are read only directly in it)"))
    return found


def refuse_unaccounted(folder: Path, day: date, kinds: tuple[str, ...], *, qlog: bool = False) -> None:
    """Raise :class:`LandingError` (one line: the first entries and why) when the day folder
    holds anything no job accounts for (:func:`unaccounted`); nothing has been read then."""
    found = unaccounted(folder, kinds, qlog=qlog)
    if not found:
        return
    named = "; ".join(f"{path} ({why})" for path, why in found[:NAMED_ENTRIES])
    more = f"; and {len(found) - NAMED_ENTRIES} more" if len(found) > NAMED_ENTRIES else ""
    raise LandingError(
        f"landing day {day.isoformat()} refused, nothing was read or written: {named}{more}; "
        "move or delete what is not a batch and run again"
    )


@dataclass(frozen=True)
class Batches:
    """The files of one event kind uploaded on one day: JSON lines, and Parquet grouped by schema."""

    kind: str
    json_files: tuple[str, ...]
    parquet_groups: tuple[tuple[object, tuple[str, ...]], ...] = field(default=())  # (pa.Schema, files)
    unreadable: tuple[tuple[str, str], ...] = field(default=())  # (path, why)

    @property
    def empty(self) -> bool:
        return not self.json_files and not self.parquet_groups and not self.unreadable

    @property
    def files(self) -> int:
        return len(self.json_files) + sum(len(files) for _, files in self.parquet_groups) + len(self.unreadable)


def day_dir(landing_root: Path, day: date) -> Path:
    return landing_root / f"upload_date={day.isoformat()}"


def day_bytes(landing_root: Path | None, day: date) -> int | None:
    """The bytes of every file uploaded on ``day`` (telemetry, qlog, markers); None when the
    landing zone or the day's folder is absent, or a file cannot be stat'ed."""
    folder = None if landing_root is None else day_dir(landing_root, day)
    if folder is None or not folder.is_dir():
        return None
    try:
        return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    except OSError:
        return None


def open_no_follow(path: str | Path):
    """``path`` opened for reading in binary mode, refusing a symbolic link (ELOOP) instead of
    following it: a link put into the landing zone after it was listed is still never read."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def _check_readable(path: Path) -> str | None:
    """Why ``path`` cannot be read as its suffix says (None when it opens and starts right)."""
    try:
        with open_no_follow(path) as fh:
            head = fh.read(4)
            if path.name.endswith(PARQUET_SUFFIXES) and os.path.getsize(path) >= 8:
                fh.seek(-4, os.SEEK_END)
                tail = fh.read(4)
            else:
                tail = b""
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not path.name.endswith(JSON_SUFFIXES + PARQUET_SUFFIXES):
        return "unrecognised file type (expected " + ", ".join(JSON_SUFFIXES + PARQUET_SUFFIXES) + ")"
    if path.name.endswith(".gz") and head[:2] != GZIP_MAGIC:
        return "not gzip data"
    if path.name.endswith(PARQUET_SUFFIXES) and (head != PARQUET_MAGIC or tail != PARQUET_MAGIC):
        return "not a Parquet file"
    return None


def _parquet_groups(paths: list[Path], unreadable: list[tuple[str, str]]) -> tuple[tuple[object, tuple[str, ...]], ...]:
    """Group Parquet files by their (footer) schema, so each group is read with one schema."""
    import pyarrow.parquet as pq

    groups: dict[object, list[str]] = defaultdict(list)
    for path in paths:
        try:
            schema = pq.read_schema(path).remove_metadata()
        except Exception as exc:
            unreadable.append((str(path), (str(exc).splitlines() or [type(exc).__name__])[0]))
            continue
        groups[schema].append(str(path))
    return tuple((schema, tuple(files)) for schema, files in groups.items())


def parquet_uri(path: str) -> str:
    """A landing path that Spark's file reader takes literally: ``file://`` + the absolute path, glob
    characters escaped with ``\\`` (Hadoop expands ``*?[]{}`` and escapes with ``\\``; it quotes what a
    URI cannot hold itself, so no percent-encoding here, and a ``:`` after the first ``/`` is no scheme)."""
    return "file://" + "".join("\\" + c if c in "*?[]{}\\" else c for c in str(Path(path).absolute()))


def find_batches(landing_root: Path, day: date, kinds: tuple[str, ...]) -> list[Batches]:
    """List and check the day's upload batches per kind; a clear error when the day is absent.

    A missing landing root or day folder is an error (the data has not arrived); a day
    folder with no files is a real, empty day and empties the day's bronze slice. A day folder
    holding anything no job accounts for is refused (:func:`refuse_unaccounted`), whatever
    ``kinds`` asks for.
    """
    from quicexp.telemetry import EVENT_KINDS

    if not landing_root.is_dir():
        raise LandingError(f"landing zone {landing_root} does not exist")
    folder = day_dir(landing_root, day)
    if not folder.is_dir():
        raise LandingError(f"no landing data for {day.isoformat()}: {folder} does not exist")
    refuse_unaccounted(folder, day, EVENT_KINDS)
    found = []
    for kind in kinds:
        directory = folder / kind
        names = sorted(os.listdir(directory)) if directory.is_dir() else []  # literal names, no globbing
        files = [directory / n for n in names if not n.startswith(("_", ".")) and (directory / n).is_file()]
        unreadable, good = [], []
        for path in files:
            why = _check_readable(path)
            if why is None:
                good.append(path)
            else:
                unreadable.append((str(path), why))
        found.append(
            Batches(
                kind=kind,
                json_files=tuple(str(p) for p in good if p.name.endswith(JSON_SUFFIXES)),
                parquet_groups=_parquet_groups([p for p in good if p.name.endswith(PARQUET_SUFFIXES)], unreadable),
                unreadable=tuple(sorted(unreadable)),
            )
        )
    return found
