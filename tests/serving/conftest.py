"""Serving fixtures: one pipeline day in the ``serving`` namespace, then the Thrift server and
Superset, each started once per test run on free ports (session scope) and stopped at the end.

Order matters only once: the run's Spark session (the ``spark`` fixture) creates the metastore
schema before the Thrift server's JVM connects to the same Derby server.
"""

from __future__ import annotations

import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, timedelta

import pandas as pd
import pytest

from quicexp.config import REPO_ROOT, Settings
from tests.conftest import free_port

log = logging.getLogger("tests.serving")
EXPERIMENT = "fhol_2026_06"


@dataclass(frozen=True)
class ServingLake:
    settings: Settings
    background: dict  # name -> Future of the services set up while the pipeline ran
    first_day: date
    stand_ins: tuple[str, ...]  # contract tables derived by the test fixture (stand_ins.py)
    missing_rows: tuple[str, ...]  # experiment_results rows the pipeline does not produce yet

    @property
    def next_day(self) -> date:
        return self.first_day + timedelta(days=1)


def _timed(fn, *args, **kwargs):
    started = time.monotonic()
    return fn(*args, **kwargs), time.monotonic() - started


def _pipeline_day(spark, settings: Settings, day: date) -> None:
    """quicexp.pipeline.run_day's data stages (registry → ingest → dbt build → results), without
    the HTML reports, which serving does not read."""
    import jobs.experiment_results
    import jobs.ingest
    import jobs.registry
    from quicexp.dbt import run_dbt
    from quicexp.registry import load_registry

    registry = load_registry()
    jobs.registry.run(spark, settings, day, registry)
    jobs.ingest.run(spark, settings, day)
    run_dbt("run", settings, day)  # models only: their tests run in the models' own suite
    jobs.experiment_results.run(spark, settings, day, registry)


@pytest.fixture(scope="session")
def serving(request, spark, lake) -> ServingLake:
    """Two simulated upload days in the landing zone; the pipeline run over the first one."""
    from simulation.runner import run_scenario
    from tests.serving.stand_ins import ensure_contract, missing_result_rows

    base = lake("serving")
    settings = base.model_copy(
        update={
            "state_dir": base.home / "state",
            "services": base.services.model_copy(
                update={"thrift_port": free_port(), "superset_port": free_port()}
            ),
        }
    )
    # Superset's first setup and the Thrift server's JVM start need no data: overlap them with the
    # pipeline day (the `thrift` and `superset` fixtures wait for them).
    from quicexp.serve import start_thrift, stop_thrift
    from quicexp.superset import service

    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="serving-setup")
    background = {
        "superset_setup": pool.submit(_timed, service.setup, settings, log=log.info),
        "thrift": pool.submit(
            _timed, start_thrift, settings, driver_memory="1500m", timeout_s=900, log=log.info
        ),
    }
    pool.shutdown(wait=False)

    def stop_background_thrift() -> None:  # whatever happens below, stop the JVM we started
        background["thrift"].exception()  # waits for the start attempt to end
        stop_thrift(settings)

    request.addfinalizer(stop_background_thrift)
    manifest = run_scenario(
        REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml",
        settings.landing_root,
        days=2,
        clients=800,
        workers=2,
    )
    first = pd.Timestamp(manifest["start_date"]).date()
    started = time.monotonic()
    _pipeline_day(spark, settings, first)
    print(f"\n[serving] pipeline day {first} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    stand_ins = ensure_contract(spark, settings)
    if stand_ins:
        print(
            f"[serving] contract items derived by the test fixture: {', '.join(stand_ins)}",
            file=sys.stderr,
        )
    missing = missing_result_rows(spark, settings)
    if missing:
        print(
            f"[serving] experiment_results rows the pipeline does not produce yet: {missing}",
            file=sys.stderr,
        )
    return ServingLake(settings, background, first, tuple(stand_ins), tuple(missing))


@pytest.fixture(scope="session")
def thrift(serving: ServingLake):
    """The Spark Thrift Server of the serving namespace (host, port)."""
    from quicexp.serve import stop_thrift

    settings = serving.settings
    _, seconds = serving.background["thrift"].result()
    print(
        f"\n[serving] thrift server up in {seconds:.0f}s (started beside the pipeline)",
        file=sys.stderr,
    )
    yield settings.services.bind_host, settings.services.thrift_port
    stop_thrift(settings)


@pytest.fixture(scope="session")
def thrift_cursor(thrift):
    """A factory of DB-API cursors on the Thrift server (pyhive)."""
    from pyhive import hive

    host, port = thrift
    connections = []

    def make():
        conn = hive.connect(host=host, port=port, username="analyst")
        connections.append(conn)
        return conn.cursor()

    yield make
    for conn in connections:
        conn.close()


@dataclass(frozen=True)
class SupersetInstance:
    url: str
    user: str
    password: str
    setup_seconds: float


@pytest.fixture(scope="session")
def superset(serving: ServingLake, thrift) -> SupersetInstance:
    """Superset set up from scratch (metadata DB, secrets, admin, bundle import) and serving."""
    from quicexp.superset import service

    settings = serving.settings
    password, setup_seconds = serving.background["superset_setup"].result()
    started = time.monotonic()
    assert password, "a fresh state dir must yield a generated admin password"
    service.start(settings, timeout_s=600, log=log.info)
    print(
        f"\n[serving] superset setup {setup_seconds:.0f}s (beside the pipeline), "
        f"web server up after {time.monotonic() - started:.0f}s",
        file=sys.stderr,
    )
    yield SupersetInstance(service.base_url(settings), service.ADMIN_USER, password, setup_seconds)
    service.stop(settings)
