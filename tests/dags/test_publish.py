"""The publish step's pure parts (dags/quicexp_airflow/publish.py: standard library only)."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from quicexp.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "dags"))
from quicexp_airflow.publish import PUBLISHED, publish_day


def _report(reports_dir, experiment, day, body="<html>ok</html>"):
    folder = reports_dir / experiment
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{day}.html").write_text(body)
    (folder / f"{day}.md").write_text(f"# {experiment} {day}\n")


def test_manifest_lists_each_report_with_its_digest(tmp_path):
    _report(tmp_path, "exp_b", "2026-06-15")
    _report(tmp_path, "exp_a", "2026-06-15", body="<html>a</html>")

    manifest = publish_day(tmp_path, "2026-06-15", ["exp_b", "exp_a"], "run-1")

    assert [r["experiment"] for r in manifest["reports"]] == ["exp_a", "exp_b"]
    html = manifest["reports"][0]["html"]
    assert html == {
        "path": "exp_a/2026-06-15.html",
        "bytes": len("<html>a</html>"),
        "sha256": hashlib.sha256(b"<html>a</html>").hexdigest(),
    }
    assert json.loads((tmp_path / PUBLISHED / "2026-06-15.json").read_text()) == manifest
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()], "temporary files left behind"


def test_missing_report_fails_and_publishes_nothing(tmp_path):
    _report(tmp_path, "exp_a", "2026-06-15")
    with pytest.raises(FileNotFoundError, match=r"report of exp_b for 2026-06-15 is missing"):
        publish_day(tmp_path, "2026-06-15", ["exp_a", "exp_b"], "run-1")
    assert not (tmp_path / PUBLISHED).exists()
    assert not (tmp_path / "index.html").exists()


def test_index_is_newest_first_and_independent_of_run_order(tmp_path):
    days = ["2026-06-15", "2026-06-16", "2026-06-17"]
    in_order, reversed_order = tmp_path / "in-order", tmp_path / "reversed"
    for folder, sequence in ((in_order, days), (reversed_order, days[::-1])):
        for day in days:
            _report(folder, "exp_a", day)
        for day in sequence:
            publish_day(folder, day, ["exp_a"], f"scheduled__{day}T00:00:00+00:00")
    index = (in_order / "index.html").read_text()

    publish_day(in_order, days[0], ["exp_a"], f"scheduled__{days[0]}T00:00:00+00:00")  # an old day again

    assert (in_order / "index.html").read_text() == index == (reversed_order / "index.html").read_text()
    assert [index.index(d) for d in reversed(days)] == sorted(index.index(d) for d in days)


def test_index_lists_every_day_with_reports_and_the_run_that_published_it(tmp_path):
    """Days whose reports were written outside the DAG (quicexp run-day, demo) are listed too."""
    _report(tmp_path, "exp_a", "2026-06-15")  # run-day: reports, no manifest
    _report(tmp_path, "exp_b", "2026-06-15")
    _report(tmp_path, "exp_a", "2026-06-16")
    (tmp_path / "exp_a" / "notes.html").write_text("not a day")
    publish_day(tmp_path, "2026-06-16", ["exp_a"], "manual__2026-06-16T00:00:00+00:00")

    index = (tmp_path / "index.html").read_text()
    rows = {row.split("</td>")[0]: row for row in index.split("<tr><td>")[1:]}
    assert list(rows) == ["2026-06-16", "2026-06-15"]
    assert "manual__2026-06-16T00:00:00+00:00" in rows["2026-06-16"]
    assert 'href="exp_a/2026-06-15.html"' in rows["2026-06-15"]
    assert 'href="exp_b/2026-06-15.html"' in rows["2026-06-15"]
    assert "not published by the DAG" in rows["2026-06-15"]
    assert "notes" not in index


def test_day_without_running_experiments_is_still_published(tmp_path):
    manifest = publish_day(tmp_path, "2026-06-14", [], "run")
    assert manifest["reports"] == []
    assert "no experiment running" in (tmp_path / "index.html").read_text()
