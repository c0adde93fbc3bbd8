"""Publishing a day's reports: a per-day manifest (the day's ``_SUCCESS``) and the reports index.

``<reports_dir>/_published/<day>.json`` lists every experiment report of the day with its size and
SHA-256; it is written only after every report exists, so its presence means "this day is
complete". ``<reports_dir>/index.html`` is rebuilt from what the folder holds, newest day first:
every day with a report (``<experiment>/<day>.html``, whoever wrote it: a DAG run, ``quicexp
run-day``, ``quicexp demo``) and every published day, each with the run that published it or
"not published by the DAG". Both are written to a temporary file and renamed, so readers never
see half a file, and both depend only on what is on disk: running days in any order leaves the
same index.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import tempfile
from pathlib import Path

PUBLISHED = "_published"
_DAY = re.compile(r"^\d{4}-\d\d-\d\d$")


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def day_manifest(reports_dir: Path, day: str, experiments: list[str], run_id: str) -> dict:
    """The manifest of one day; raises FileNotFoundError naming the first missing report."""
    reports = []
    for experiment in sorted(experiments):
        entry = {"experiment": experiment}
        for kind, suffix in (("html", ".html"), ("markdown", ".md")):
            path = reports_dir / experiment / f"{day}{suffix}"
            if not path.is_file() or path.stat().st_size == 0:
                raise FileNotFoundError(
                    f"report of {experiment} for {day} is missing or empty: {path}"
                )
            entry[kind] = {
                "path": str(path.relative_to(reports_dir)),
                "bytes": path.stat().st_size,
                "sha256": _digest(path),
            }
        reports.append(entry)
    return {"day": day, "run_id": run_id, "reports": reports}


def index_entries(reports_dir: Path) -> list[dict]:
    """Every day of the reports folder, newest first: ``{"day", "run_id", "reports"}`` where
    ``reports`` maps each experiment to its HTML report's path (relative to the folder) and
    ``run_id`` is the run that published the day, or None (reports written outside the DAG)."""
    days: dict[str, dict] = {}
    for path in sorted((reports_dir / PUBLISHED).glob("*.json")):
        manifest = json.loads(path.read_text())
        days[manifest["day"]] = {
            "day": manifest["day"],
            "run_id": manifest.get("run_id") or None,
            "reports": {r["experiment"]: r["html"]["path"] for r in manifest["reports"]},
        }
    for report in sorted(reports_dir.glob("*/*.html")):
        experiment, day = report.parent.name, report.stem
        if experiment.startswith(("_", ".")) or not _DAY.match(day):
            continue
        entry = days.setdefault(day, {"day": day, "run_id": None, "reports": {}})
        entry["reports"].setdefault(experiment, str(report.relative_to(reports_dir)))
    return sorted(days.values(), key=lambda e: e["day"], reverse=True)


def render_index(entries: list[dict]) -> str:
    """The reports index (pure): one row per day processed, newest first."""
    rows = []
    for entry in sorted(entries, key=lambda e: e["day"], reverse=True):
        links = (
            ", ".join(
                f'<a href="{html.escape(path)}">{html.escape(experiment)}</a>'
                for experiment, path in sorted(entry["reports"].items())
            )
            or "<em>no experiment running</em>"
        )
        run = (
            f"<code>{html.escape(entry['run_id'])}</code>"
            if entry["run_id"]
            else "<em>not published by the DAG</em>"
        )
        rows.append(f"<tr><td>{html.escape(entry['day'])}</td><td>{links}</td><td>{run}</td></tr>")
    body = "\n".join(rows) or '<tr><td colspan="3">nothing published yet</td></tr>'
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>quicexp reports</title></head>\n'
        "<body><h1>quicexp daily experiment reports</h1>\n"
        "<table><thead><tr><th>day processed</th><th>reports</th><th>published by run</th></tr></thead>"
        f"<tbody>\n{body}\n</tbody></table>\n"
        "</body></html>\n"
    )


def publish_day(reports_dir: Path, day: str, experiments: list[str], run_id: str) -> dict:
    """Write the day's manifest, then rebuild the index; returns the manifest."""
    manifest = day_manifest(reports_dir, day, experiments, run_id)
    _atomic_write(
        reports_dir / PUBLISHED / f"{day}.json",
        json.dumps(manifest, indent=2, sort_keys=True) + "\n",
    )
    _atomic_write(reports_dir / "index.html", render_index(index_entries(reports_dir)))
    return manifest
