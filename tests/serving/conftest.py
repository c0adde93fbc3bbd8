"""Serving fixtures: the Thrift server and Superset over the run's shared pipeline lake
(tests/pipeline_lake.py), each started once per test run on free ports (session scope) and
stopped at the end.

Analysts only read the lake, so the ``serving`` namespace reads the shared lake's silver and gold
schemas and has a bronze schema of its own, which the Thrift consistency test ingests into.
Order matters only once: the run's Spark session (the ``spark`` fixture) creates the metastore
schema before the Thrift server's JVM connects to the same Derby server.
"""

from __future__ import annotations

import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date

import pytest

from quicexp.config import Settings
from tests.conftest import free_port

log = logging.getLogger("tests.serving")


@dataclass(frozen=True)
class ServingLake:
    settings: Settings
    background: dict  # name -> Future of the services set up while bronze was loaded
    first_day: date
    next_day: date


def _timed(fn, *args, **kwargs):
    started = time.monotonic()
    return fn(*args, **kwargs), time.monotonic() - started


@pytest.fixture(scope="session")
def serving(request, spark, lake, pipeline_lake) -> ServingLake:
    """The shared lake's silver and gold, an own bronze holding the first upload day."""
    import jobs.ingest
    from quicexp.app.serve import start_thrift, stop_thrift
    from quicexp.app.superset import service

    base = lake("serving")
    shared = pipeline_lake.settings
    settings = base.model_copy(
        update={
            "state_dir": base.home / "state",
            "landing_root": shared.landing_root,
            "registry_file": shared.registry_file,
            "silver_schema": shared.silver_schema,
            "gold_schema": shared.gold_schema,
            "services": base.services.model_copy(
                update={"thrift_port": free_port(), "superset_port": free_port()}
            ),
        }
    )
    # Superset's first setup and the Thrift server's JVM start need no data: overlap them with
    # the bronze load (the `thrift` and `superset` fixtures wait for them).
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
    first, second = pipeline_lake.days[:2]
    started = time.monotonic()
    jobs.ingest.run(spark, settings, first, ("http_transactions",))
    print(f"\n[serving] bronze of {first} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return ServingLake(settings, background, first, second)


@pytest.fixture(scope="session")
def thrift(serving: ServingLake):
    """The Spark Thrift Server of the serving namespace (host, port)."""
    from quicexp.app.serve import stop_thrift

    settings = serving.settings
    _, seconds = serving.background["thrift"].result()
    print(
        f"\n[serving] thrift server up in {seconds:.0f}s (started beside the pipeline)",
        file=sys.stderr,
    )
    yield settings.services.bind_host, settings.services.thrift_port
    stop_thrift(settings)


@pytest.fixture(scope="session")
def thrift_cursor(serving, thrift):
    """A factory of DB-API cursors on the Thrift server (pyhive), logged in with its credentials."""
    serving_settings = serving.settings
    from quicexp.app.serve import connect

    connections = []

    def make():
        conn = connect(serving_settings)  # the generated login (state_dir/thrift)
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
    from quicexp.app.superset import service

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
