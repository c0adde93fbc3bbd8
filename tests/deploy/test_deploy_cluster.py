"""Cluster mode, proven: one simulated day on a Spark standalone cluster = the same day in local mode.

A master and two workers run from the installed pyspark on 127.0.0.1. ``quicexp run-day`` runs
in a subprocess with ``SPARK_MASTER=spark://…`` (configuration only) over the first day of the
run's small pipeline lake (tests/conftest.py: ``small_lake``; same landing data, same registry),
which this process ran in local[2] mode. The cluster's ``experiment_results`` must equal the
small lake's right after that day (Delta time travel; row order free, doubles within a relative 1e-9).

Code reaches the executors as it would on a real cluster: the executors' Python has the
dependencies but not the project, so ``jobs`` imports there only from the zip the driver ships
(``spark.submit.pyFiles``); Delta comes through ``spark.jars``. The lake directory is the one
thing shared through the filesystem, as NFS or an object store would be (docs/deploy.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _deploy_procs import subprocess_env, wait_for

from jobs.delta_io import qualified
from tests.pipeline_lake import assert_same_tables, table_snapshot

pytestmark = pytest.mark.e2e

APP = Path(__file__).with_name("_deploy_cluster_app.py")


def test_one_day_on_a_standalone_cluster_matches_local_mode(
    spark, lake, small_lake, standalone_cluster, bare_executor_python, tmp_path
):
    local, remote, day = small_lake.settings, lake("deploy_cluster"), small_lake.days[0]

    env = subprocess_env(
        QUICEXP_SPARK__MASTER=None,  # the test run pins local[2]; the cluster run uses Spark's own variable
        SPARK_MASTER=standalone_cluster.master_url,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=str(bare_executor_python),
        QUICEXP_SPARK__DRIVER_MEMORY="1g",
        QUICEXP_HOME=str(remote.home),
        QUICEXP_LAKE_ROOT=str(remote.lake_root),
        QUICEXP_METASTORE_DIR=str(remote.metastore_dir),
        QUICEXP_LANDING_ROOT=str(local.landing_root),
        QUICEXP_REGISTRY_FILE=str(small_lake.registry_file),
        QUICEXP_BRONZE_SCHEMA=remote.bronze_schema,
        QUICEXP_SILVER_SCHEMA=remote.silver_schema,
        QUICEXP_GOLD_SCHEMA=remote.gold_schema,
    )
    log = tmp_path / "cluster-driver.log"
    with log.open("w") as err:
        driver = subprocess.Popen([sys.executable, str(APP), day.isoformat()], env=env, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=err, text=True)  # fmt: skip
        try:
            out, _ = driver.communicate(timeout=1800)
        finally:
            if driver.poll() is None:
                driver.kill()
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert driver.returncode == 0, f"cluster run failed:\n{tail}"
    report = json.loads(out.strip().splitlines()[-1])

    # It ran on the cluster, and the executors got the code from the shipped zip.
    assert report["master"] == standalone_cluster.master_url
    def finished_apps() -> set[str]:
        return {a["name"] for a in standalone_cluster.state()["completedapps"]}

    wait_for("the master to list the finished application", lambda: "quicexp-daily" in finished_apps(), 60)
    probes = [json.loads(p) for p in report["executors"]]
    assert probes, report
    workers = standalone_cluster.root.resolve()
    for probe in probes:
        assert probe["python"] == str(bare_executor_python), probe
        assert ".zip" in probe["jobs_file"] and Path(report["py_files"]).name in probe["jobs_file"], probe
        assert Path(probe["cwd"]).resolve().is_relative_to(workers), probe
    assert len({p["cwd"] for p in probes}) == 2, "both workers should have run tasks"

    # Same results as local mode (doubles within a relative 1e-9: sums may add in another order).
    table = qualified(local.gold_schema, "experiment_results")
    local_rows = table_snapshot(spark, table, small_lake.gold_versions[day]["experiment_results"])
    assert len(local_rows) > 0
    assert_same_tables({"experiment_results": table_snapshot(spark, qualified(remote.gold_schema, "experiment_results"))},
                       {"experiment_results": local_rows})  # fmt: skip
    print(f"\ncluster vs local: {len(local_rows)} result rows equal")
