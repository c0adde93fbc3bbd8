"""scripts/airflow.sh: the DAG's plan, the environment it gives Airflow, the generated secrets."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from quicexp.config import REPO_ROOT
from tests.dags.airflow_helpers import AIRFLOW_SCRIPT, parse_exports


def _script(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(AIRFLOW_SCRIPT), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_plan_names_the_days_landing_folder_and_running_experiments(base_settings):
    running = _script("plan", "2026-06-16")
    before = _script("plan", "2026-06-01")

    assert running.returncode == 0, running.stderr
    plan = json.loads(running.stdout)
    assert plan == {
        "day": "2026-06-16",
        "landing_dir": str(base_settings.landing_root / "upload_date=2026-06-16"),
        "reports_dir": str(base_settings.reports_dir),
        "experiments": plan["experiments"],
        "steps": plan["steps"],
    }
    assert [step["name"] for step in plan["steps"]] == ["ingest", "ingest_qlog", "dbt_build", "results", "reports"]
    assert plan["steps"][0]["argv"] == ["ingest", "--date", "2026-06-16"]
    assert "fhol_2026_06" in plan["experiments"]
    assert json.loads(before.stdout)["experiments"] == []


def test_plan_errors_are_one_line(tmp_path):
    bad_day = _script("plan", "2026-13-01")
    bad_config = _script("plan", "2026-06-16", QUICEXP_CONFIG=str(tmp_path / "missing.yml"))

    for done in (bad_day, bad_config):
        assert done.returncode == 2
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "bad day '2026-13-01'" in bad_day.stderr
    assert "missing.yml" in bad_config.stderr


def test_airflow_state_lives_under_the_state_dir_with_private_secrets(airflow_env, base_settings):
    home = Path(airflow_env["AIRFLOW_HOME"])
    assert home == base_settings.state_dir / "airflow"
    assert not home.is_relative_to(REPO_ROOT)
    assert airflow_env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert airflow_env["AIRFLOW__CORE__DAGS_FOLDER"] == str(REPO_ROOT / "dags")
    assert (home / "airflow.db").exists()
    for name in ("secrets.env", "admin-password.json"):
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    password = json.loads((home / "admin-password.json").read_text())["admin"]
    assert len(password) >= 32
    assert (
        airflow_env["AIRFLOW__API_AUTH__JWT_SECRET"]
        not in (REPO_ROOT / "scripts" / "airflow.sh").read_text()
    )

    again = _script("env", **{k: v for k, v in airflow_env.items() if k.startswith("QUICEXP_")})
    assert (
        parse_exports(again.stdout)["AIRFLOW__API_AUTH__JWT_SECRET"]
        == airflow_env["AIRFLOW__API_AUTH__JWT_SECRET"]
    )


def test_the_generated_password_is_never_printed_only_where_it_is(tmp_path):
    done = _script("secrets", QUICEXP_STATE_DIR=str(tmp_path / "state"))

    assert done.returncode == 0, done.stderr
    password_file = tmp_path / "state" / "airflow" / "admin-password.json"
    password = json.loads(password_file.read_text())["admin"]
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert password not in done.stdout + done.stderr
    assert f"into {password_file} (mode 0600)" in done.stderr
    assert "\x1b" not in done.stderr  # not a terminal: no colour codes


def test_airflow_day_refuses_a_bad_day_in_one_line(tmp_path):
    done = _script("day", "2026-13-01", QUICEXP_STATE_DIR=str(tmp_path / "state"))

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["airflow: error: bad day '2026-13-01' (YYYY-MM-DD)"]
    assert not (tmp_path / "state" / "airflow").exists()  # refused before anything is set up
