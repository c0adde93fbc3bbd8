"""The production catalog: the Hive metastore on PostgreSQL, shared by concurrent Spark JVMs.

A throwaway PostgreSQL server (Debian's package, 127.0.0.1, generated passwords) holds the
metastore; the pipeline points at it by configuration only (``QUICEXP_CATALOG__KIND=jdbc`` and
the JDBC URL/user/password; the driver jar is in the jar cache from Maven Central). The Thrift
server and two Spark applications run at the same time and each sees the others' tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _deploy_procs import SPARK_BIN, free_port, stop_group, subprocess_env, tail, wait_for

from quicexp.catalog import is_listening

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
APP = Path(__file__).with_name("_deploy_pg_app.py")
SCHEMA = "pgmeta"
ROWS = {"app_a": 11, "app_b": 22, "from_thrift": 3}


def _group_cmdlines(pgid: int) -> list[str]:
    """Command lines of every process in process group ``pgid`` (spark-submit's JVM among them)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            out.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return out


def test_two_spark_apps_and_the_thrift_server_share_a_postgres_metastore(postgres_server, lake, tmp_path):
    pg = postgres_server
    home = lake("deploy_pg").home
    env = subprocess_env(
        QUICEXP_HOME=str(home),
        QUICEXP_LAKE_ROOT=None,
        QUICEXP_METASTORE_DIR=None,
        QUICEXP_SPARK__MASTER="local[1]",
        QUICEXP_SPARK__DRIVER_MEMORY="1g",
        QUICEXP_CATALOG__KIND="jdbc",
        QUICEXP_CATALOG__JDBC_URL=pg.jdbc_url,
        QUICEXP_CATALOG__USER=pg.user,
        QUICEXP_CATALOG__PASSWORD=pg.password,
    )

    # The Thrift server takes the one Spark configuration from a 0600 properties file.
    props = tmp_path / "thrift.properties"
    subprocess.run([sys.executable, str(REPO / "deploy" / "spark_properties.py"), str(props)], env=env, check=True)
    assert props.stat().st_mode & 0o777 == 0o600
    text = props.read_text()
    assert f"javax.jdo.option.ConnectionURL {pg.jdbc_url}" in text and "org.postgresql.Driver" in text

    port = free_port()
    log = tmp_path / "thrift.log"
    with log.open("wb") as out:
        thrift = subprocess.Popen(
            [str(SPARK_BIN / "spark-submit"), "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
             "--name", "quicexp-thrift-pg", "--master", "local[1]", "--driver-memory", "1g",
             "--properties-file", str(props), "spark-internal",
             "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1", "--hiveconf", f"hive.server2.thrift.port={port}",
             "--hiveconf", "hive.server2.webui.port=0"],
            env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    apps: list[subprocess.Popen] = []
    try:
        wait_for("thrift server", lambda: is_listening("127.0.0.1", port), 900, [thrift], [log])
        from pyhive import hive

        conn = hive.connect(host="127.0.0.1", port=port, username="quicexp")
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        cur.execute(f"CREATE OR REPLACE TABLE {SCHEMA}.from_thrift USING delta AS SELECT id FROM range({ROWS['from_thrift']})")

        release = tmp_path / "release"
        for name in ("app_a", "app_b"):
            with (tmp_path / f"{name}.log").open("wb") as app_log:
                apps.append(subprocess.Popen(
                    [sys.executable, str(APP), SCHEMA, name, str(ROWS[name]), str(tmp_path / f"{name}.json"),
                     str(release), *ROWS],
                    env=env, cwd=tmp_path, stdout=app_log, stderr=subprocess.STDOUT, start_new_session=True,
                ))  # fmt: skip
        logs = [tmp_path / "app_a.log", tmp_path / "app_b.log"]
        wait_for("both apps see all tables",
                 lambda: all((tmp_path / f"{n}.json").exists() for n in ("app_a", "app_b")), 1200, apps, logs)  # fmt: skip

        # All three JVMs are up at this moment: the apps wait for `release`.
        assert all(app.poll() is None for app in apps)
        for name in ("app_a", "app_b"):
            seen = json.loads((tmp_path / f"{name}.json").read_text())["counts"]
            assert seen == {f"{SCHEMA}.{t}": n for t, n in ROWS.items()}, (name, seen)
        cur.execute(f"SHOW TABLES IN {SCHEMA}")
        assert {row[1] for row in cur.fetchall()} == set(ROWS)
        for table, n in ROWS.items():
            cur.execute(f"SELECT count(*) FROM {SCHEMA}.{table}")
            assert cur.fetchone()[0] == n
        conn.close()

        # The tables live in PostgreSQL's metastore schema, nowhere else.
        with pg.connect() as db, db.cursor() as sql:
            sql.execute('SELECT d."NAME", t."TBL_NAME" FROM "TBLS" t JOIN "DBS" d ON t."DB_ID" = d."DB_ID"')
            assert {(SCHEMA, t) for t in ROWS} <= set(sql.fetchall())
        assert not (home / "metastore").exists(), "no Derby metastore should have been created"
        # The metastore password never reaches a command line (ps shows those to every user).
        for pid in [thrift.pid, *(a.pid for a in apps)]:
            cmdlines = _group_cmdlines(pid)
            assert any("java" in cmd for cmd in cmdlines), cmdlines
            assert all(pg.password not in cmd for cmd in cmdlines)

        release.touch()
        for app in apps:
            assert app.wait(300) == 0, tail(*logs)
    finally:
        for app in apps:
            stop_group(app)
        stop_group(thrift)


def test_compose_postgres_init_script_creates_a_role_and_database_per_service(postgres_server):
    """deploy/postgres/init-databases.sh (docker-compose's postgres init hook) on a real server."""
    import secrets

    import psycopg2

    pg = postgres_server
    passwords = {name: secrets.token_urlsafe(16) for name in ("metastore", "airflow", "superset")}
    env = subprocess_env(
        POSTGRES_USER="postgres", PGHOST="127.0.0.1", PGPORT=str(pg.port), PGPASSWORD=pg.superuser_password,
        METASTORE_DB_PASSWORD=passwords["metastore"], AIRFLOW_DB_PASSWORD=passwords["airflow"],
        SUPERSET_DB_PASSWORD=passwords["superset"], PATH=f"{pg.bin_dir}:{os.environ['PATH']}",
    )  # fmt: skip
    run = subprocess.run(["bash", str(REPO / "deploy" / "postgres" / "init-databases.sh")], env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    for name, password in passwords.items():
        conn = psycopg2.connect(host="127.0.0.1", port=pg.port, dbname=name, user=name, password=password)
        with conn, conn.cursor() as cur:
            cur.execute("SELECT current_user, current_database()")
            assert cur.fetchone() == (name, name)
        conn.close()
    missing = subprocess.run(["bash", str(REPO / "deploy" / "postgres" / "init-databases.sh")],
                             env={**env, "AIRFLOW_DB_PASSWORD": ""}, capture_output=True, text=True)  # fmt: skip
    assert missing.returncode != 0 and "AIRFLOW_DB_PASSWORD is not set" in missing.stderr
