"""Fixtures for the DAG tests: a real Airflow (metadata DB under the run's state dir). The DAG
runs on the run's small pipeline lake (tests/conftest.py: ``small_lake``): its landing zone,
registry and tables.

Airflow runs in its own environment (.venvs/airflow) as a subprocess; pytest runs in the pipeline
environment and reads the lake through the session's one Spark session.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from quicexp.config import Settings
from tests.dags.airflow_helpers import AIRFLOW_SCRIPT, TEST_TIMING, free_port, parse_exports


@pytest.fixture(scope="session")
def airflow_env(base_settings: Settings) -> dict[str, str]:
    """Environment of every Airflow subprocess: the run's QUICEXP_* plus what scripts/airflow.sh
    derives (AIRFLOW_HOME under the state dir, generated secrets); the metadata DB is migrated."""
    env = {**os.environ, **TEST_TIMING, "QUICEXP_SERVICES__AIRFLOW_PORT": str(free_port())}
    init = subprocess.run(
        ["bash", str(AIRFLOW_SCRIPT), "init"], env=env, capture_output=True, text=True, timeout=900
    )
    assert init.returncode == 0, init.stderr[-3000:]
    exported = subprocess.run(
        ["bash", str(AIRFLOW_SCRIPT), "env"], env=env, capture_output=True, text=True, timeout=120
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    env.update(parse_exports(exported.stdout))
    assert env["AIRFLOW_HOME"].startswith(str(base_settings.state_dir))
    return env

