"""Publishing a day's reports: a per-day manifest (the day's ``_SUCCESS``) and the reports index.

``<reports_dir>/_published/<day>.json`` lists every experiment report of the day with its size and
SHA-256; it is written only after every report exists, so its presence means "this day is
complete". ``<reports_dir>/index.html`` is rebuilt from all manifests, newest day first. Both are
written to a temporary file and renamed, so readers never see half a file, and both depend only on
what is on disk: re-running a day, or an old day after newer ones, leaves the same index.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import tempfile
from pathlib import Path

PUBLISHED = "_published"


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


def render_index(manifests: list[dict]) -> str:
    """The reports index (pure): one section per published day, newest first."""
    rows = []
    for manifest in sorted(manifests, key=lambda m: m["day"], reverse=True):
        day = html.escape(manifest["day"])
        links = (
            ", ".join(
                f'<a href="{html.escape(r["html"]["path"])}">{html.escape(r["experiment"])}</a>'
                for r in manifest["reports"]
            )
            or "<em>no experiment running</em>"
        )
        rows.append(f"<tr><td>{day}</td><td>{links}</td></tr>")
    body = "\n".join(rows) or '<tr><td colspan="2">nothing published yet</td></tr>'
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>quicexp reports</title></head>\n'
        "<body><h1>quicexp daily experiment reports</h1>\n"
        f"<table><thead><tr><th>day</th><th>reports</th></tr></thead><tbody>\n{body}\n</tbody></table>\n"
        "</body></html>\n"
    )


def publish_day(reports_dir: Path, day: str, experiments: list[str], run_id: str) -> dict:
    """Write the day's manifest, then rebuild the index; returns the manifest."""
    manifest = day_manifest(reports_dir, day, experiments, run_id)
    _atomic_write(
        reports_dir / PUBLISHED / f"{day}.json",
        json.dumps(manifest, indent=2, sort_keys=True) + "\n",
    )
    manifests = [
        json.loads(p.read_text()) for p in sorted((reports_dir / PUBLISHED).glob("*.json"))
    ]
    _atomic_write(reports_dir / "index.html", render_index(manifests))
    return manifest
