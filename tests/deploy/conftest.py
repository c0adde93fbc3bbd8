"""Fixtures of the deployment tests: a Spark standalone cluster and a PostgreSQL server.

Each is started once per test run (one module uses it), on free loopback ports, and stopped
by its fixture when that module is done.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from _deploy_procs import (  # noqa: E402
    PostgresServer,
    StandaloneCluster,
    executor_python,
    start_postgres,
    start_standalone,
)


# Module scope: one module uses each server, and its JVMs/processes are freed when it is done.
@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark standalone master and two workers (1 core, 1 GiB each) on 127.0.0.1."""
    cluster = start_standalone(tmp_path_factory.mktemp("spark-standalone"), workers=2, cores=1, memory="1g")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def bare_executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter with the dependencies but not the project (see executor_python)."""
    python = executor_python(tmp_path_factory.mktemp("executor-python"))
    probe = subprocess.run([str(python), "-c", "import numpy, pyarrow, pyspark; import jobs"],
                           capture_output=True, text=True, cwd=python.parent)  # fmt: skip
    assert "No module named 'jobs'" in probe.stderr, probe.stderr
    return python


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server on 127.0.0.1 with a `quicexp_metastore` database."""
    server = start_postgres()
    yield server
    server.stop()
