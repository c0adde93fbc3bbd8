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
    for day in days:
        _report(tmp_path, "exp_a", day)
    for day in days:
        publish_day(tmp_path, day, ["exp_a"], f"run-{day}")
    in_order = (tmp_path / "index.html").read_text()

    publish_day(tmp_path, days[0], ["exp_a"], "rerun")  # an old day after newer ones

    assert (tmp_path / "index.html").read_text() == in_order
    assert [in_order.index(d) for d in reversed(days)] == sorted(in_order.index(d) for d in days)


def test_day_without_running_experiments_is_still_published(tmp_path):
    manifest = publish_day(tmp_path, "2026-06-14", [], "run")
    assert manifest["reports"] == []
    assert "no experiment running" in (tmp_path / "index.html").read_text()
