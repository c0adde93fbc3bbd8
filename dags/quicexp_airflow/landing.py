"""Waiting for a day's landing data: ``<landing_root>/upload_date=<day>/<kind>/<batch>``.

A day is there when at least one batch file is: a regular file inside a kind folder whose name
does not start with ``_`` or ``.`` (manifests, markers and partial uploads, which ingestion skips
too; see jobs/ingest/landing.py). The sensor writes nothing; on timeout it fails with a message
that names the day and the folder, and the run stops before ingestion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.exceptions import AirflowSensorTimeout
from airflow.sdk import BaseSensorOperator


def landing_batches(day_dir: Path) -> list[Path]:
    """The batch files of one upload day (empty when the folder is missing or holds none)."""
    if not day_dir.is_dir():
        return []
    return sorted(
        path
        for kind in day_dir.iterdir()
        if kind.is_dir() and not kind.name.startswith(("_", "."))
        for path in kind.iterdir()
        if path.is_file() and not path.name.startswith(("_", "."))
    )


class LandingSensor(BaseSensorOperator):
    """Succeeds once ``landing_dir`` holds at least one batch file; returns how many."""

    template_fields = ("landing_dir", "day")
    ui_color = "#fdf1d8"

    def __init__(self, *, landing_dir: str, day: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.landing_dir = landing_dir
        self.day = day
        self._found = 0

    def poke(self, context: Any) -> bool:
        batches = landing_batches(Path(self.landing_dir))
        if not batches:
            self.log.info("no landing data for %s yet in %s", self.day, self.landing_dir)
            return False
        kinds = sorted({p.parent.name for p in batches})
        self.log.info(
            "%d batch files for %s in %s (%s)",
            len(batches),
            self.day,
            self.landing_dir,
            ", ".join(kinds),
        )
        self._found = len(batches)
        return True

    def execute(self, context: Any) -> int:
        try:
            super().execute(context)
        except AirflowSensorTimeout as exc:
            raise AirflowSensorTimeout(
                f"no landing data for {self.day}: {self.landing_dir} holds no batch files after "
                f"waiting {self.timeout:.0f}s; nothing was ingested or written"
            ) from exc
        return self._found
