"""Shared fixtures: one metastore server and one Spark session (Delta on) per test run.

Tests that touch the lake ask for ``lake("name")``: a Settings object with its own home
(landing zone, reports, dbt target) and its own schema names (``name_bronze``…), so tests
share the Spark session but never each other's tables.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from quicexp.catalog import NO_JVM_VARIABLE
from quicexp.config import Settings, load_settings

#: Fixtures that start a JVM (Spark, the Derby metastore): a test using any of them, directly or
#: through another fixture, is marked ``spark``.
JVM_FIXTURES = {"spark"}
#: Fixtures that start a service (Airflow, Thrift, Superset, Chromium, a cluster, PostgreSQL):
#: a test using any of them is marked ``e2e``.
SERVICE_FIXTURES = {
    "airflow_env", "serving", "thrift", "thrift_cursor", "superset", "browser",
    "standalone_cluster", "postgres_server", "pipeline_lake", "small_lake",
}  # fmt: skip


#: The worker groups of ``make test`` (pytest-xdist, two workers): the tests that use one of these
#: session fixtures (directly or through another) run on the worker that built it, so each lake
#: and service is built once per run. Listed longest first; the suite runs them first, so the two
#: workers finish together. Every other test file is a group of its own (module fixtures once).
WORKER_GROUPS = {
    "shared_lake": {"pipeline_lake", "serving", "thrift", "thrift_cursor", "superset"},
    "small_lake": {"small_lake", "airflow_env"},
    "models_lake": {"full_lake", "incremental_lake"},
}
#: The files in each group. The scheduler (in xdist's controller, which collects no test) has only
#: node ids, so the files are named here; every collection checks them against the fixtures.
GROUP_FILES = {
    "shared_lake": (
        "tests/bench/test_bench_reference.py", "tests/e2e/test_health_gates.py", "tests/e2e/test_thin_path.py",
        "tests/report/test_report_pipeline.py", "tests/serving/test_dashboards_browser.py",
        "tests/serving/test_notebook.py", "tests/serving/test_superset.py", "tests/serving/test_thrift.py",
        "tests/serving/test_thrift_guard.py",
    ),
    "small_lake": ("tests/dags/test_airflow_script.py", "tests/dags/test_dag_runs.py", "tests/deploy/test_deploy_cluster.py"),
    "models_lake": (
        "tests/models/test_golden.py", "tests/models/test_health_marts.py", "tests/models/test_incremental.py",
        "tests/models/test_marts.py", "tests/models/test_sufficient_stats.py",
    ),
}  # fmt: skip
_GROUP_OF_FILE = {path: group for group, paths in GROUP_FILES.items() for path in paths}
#: Files that take minutes on their own, longest first (the durations of a CI run): they start
#: right after the groups, so that no long file is left for one worker at the end while the other
#: idles. Only the order depends on this list.
LONG_FILES = (
    "tests/test_readme.py", "tests/stats/test_stats_cli.py", "tests/e2e/test_decisions.py",
    "tests/simulation/test_health_faults.py", "tests/jobs/test_ingest_reconcile.py", "tests/jobs/test_ingest_kill.py",
    "tests/lab/test_lab.py", "tests/jobs/test_qlog_ingest.py", "tests/simulation/test_seeds.py",
    "tests/deploy/test_deploy_pg_metastore.py",
)  # fmt: skip


def worker_group(nodeid: str) -> str:
    """The worker group of a test (by its node id): its file's entry in GROUP_FILES, else the file."""
    path = nodeid.split("::")[0]
    return _GROUP_OF_FILE.get(path, path)


def _check_group_files(items: list[pytest.Item]) -> None:
    """Fail the collection when GROUP_FILES and the fixtures the files' tests use disagree."""
    uses: dict[str, str] = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        names = set(getattr(item, "fixturenames", ()))
        group = next((g for g, fixtures in WORKER_GROUPS.items() if names & fixtures), None)
        if group is not None and path not in uses:
            uses[path] = group
    for path in {item.nodeid.split("::")[0] for item in items}:
        want, have = uses.get(path, path), _GROUP_OF_FILE.get(path, path)
        if want != have:
            raise pytest.UsageError(
                f"tests/conftest.py GROUP_FILES: {path} belongs to group {want!r} (by its fixtures), not {have!r}"
            )


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadscope`` with WORKER_GROUPS as the scopes (``make test``, scripts/test.sh)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkerGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return WorkerGroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put every test that uses Spark or a service under its marker, from the fixtures it uses
    (transitively), so the fast layer (``make test-fast``: ``-m "not spark and not e2e and not
    slow"``) cannot drift. What the fixtures do not show (a subprocess that starts Spark) is
    caught at run time: ``make test-fast`` sets QUICEXP_NO_JVM, and any JVM start then fails.

    The heavy worker groups run first, in WORKER_GROUPS' order, then LONG_FILES; everything else
    keeps its order."""
    _check_group_files(items)
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & JVM_FIXTURES:
            item.add_marker(pytest.mark.spark)
        if names & SERVICE_FIXTURES:
            item.add_marker(pytest.mark.e2e)
    rank = {group: i for i, group in enumerate((*WORKER_GROUPS, *LONG_FILES))}
    items.sort(key=lambda item: rank.get(worker_group(item.nodeid), len(rank)))


def pytest_configure(config: pytest.Config) -> None:
    markexpr = config.getoption("markexpr", "") or ""
    if "not spark" in markexpr:
        os.environ[NO_JVM_VARIABLE] = "1"  # inherited by the CLI subprocesses tests start


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def base_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Settings of this test run; exported as QUICEXP_* so subprocesses (CLI, Airflow) agree."""
    home = tmp_path_factory.mktemp("quicexp-home")
    env = {
        "QUICEXP_HOME": str(home),
        "QUICEXP_STATE_DIR": str(home / "state"),
        "QUICEXP_CATALOG__PORT": str(free_port()),
        "QUICEXP_SPARK__SHUFFLE_PARTITIONS": "2",
        "QUICEXP_SPARK__DRIVER_MEMORY": "3g",
        "QUICEXP_SPARK__MASTER": "local[2]",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    settings = load_settings()
    yield settings
    from quicexp.catalog import stop_derby

    stop_derby(settings)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def spark(base_settings: Settings):
    """The run's one Spark session, with Delta and the shared Derby-server metastore."""
    from quicexp.spark import build_spark

    session = build_spark(base_settings, "quicexp-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def lake(base_settings: Settings) -> Callable[[str], Settings]:
    """Factory: an isolated namespace (home folder + schema names) inside the run's lake."""
    used: set[str] = set()

    def make(name: str) -> Settings:
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", name) or name in used:
            raise ValueError(f"lake namespace {name!r} is invalid or already used in this run")
        used.add(name)
        home = Path(base_settings.home) / "ns" / name
        return load_settings(
            home=home,
            lake_root=base_settings.lake_root,
            metastore_dir=base_settings.metastore_dir,
            bronze_schema=f"{name}_bronze",
            silver_schema=f"{name}_silver",
            gold_schema=f"{name}_gold",
        )

    return make


@pytest.fixture(scope="session")
def pipeline_lake(spark, lake):
    """The run's one simulated pipeline lake (tests/pipeline_lake.py): two days, four
    experiments, run once and read by the e2e, report, serving and bench tests."""
    from tests import pipeline_lake as shared

    return shared.build(spark, lake(shared.NAMESPACE))


#: Tests that prove mechanics (orchestration, a cluster), not statistics, run a fleet as small as
#: the README's with one experiment (one report a day).
SMALL_LAKE_CLIENTS = 300


@pytest.fixture(scope="session")
def small_lake(spark, lake):
    """The run's small pipeline lake: the FHOL fleet at 300 clients, two days run in-process
    (``run_day``, tests/pipeline_lake.py's builder) in namespace ``small``. The DAG tests re-run
    its first day through Airflow in this namespace and check that no table changed; the
    standalone-cluster test compares its own run of the first day with that day's Delta versions
    (time travel), so it does not matter which of the two runs first."""
    from quicexp.config import REPO_ROOT
    from quicexp.registry import Registry, load_registry
    from simulation.scenario import load_scenario
    from tests import pipeline_lake as shared

    fhol = load_registry(REPO_ROOT / "registry" / "experiments.yml").get(shared.FHOL)
    scenario = load_scenario(REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml")
    return shared.build(spark, lake("small"), scenario=scenario, registry=Registry(experiments=[fhol]),
                        clients=SMALL_LAKE_CLIENTS)  # fmt: skip
