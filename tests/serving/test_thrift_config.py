"""What the Thrift server is started with, checked without starting it: its class path (no Derby
engine, no Hive JDBC driver, one metastore driver), the guard's configuration, the logins file
and an operator's LDAP settings on its command line, and the classified function list."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from quicexp.app.serve import (
    GUARD_PINNED_CONF,
    GUARD_SCHEMAS_KEY,
    SERVER_EXCLUDED_JARS,
    ThriftPaths,
    server_conf,
    server_spark_home,
    thrift_command,
)
from quicexp.config import REPO_ROOT, ConfigError, load_settings
from quicexp.jars import SQL_GUARD_CLASS

FUNCTIONS = REPO_ROOT / "jvm" / "src" / "quicexp" / "jvm" / "functions.tsv"


@pytest.fixture
def settings(tmp_path):
    return load_settings(home=tmp_path / "home", state_dir=tmp_path / "state", gold_schema="g1_gold")


def _jar_names(conf: dict[str, str]) -> list[str]:
    return [Path(p).name for p in conf["spark.jars"].split(",")]


def test_the_server_gets_delta_its_metastore_driver_and_the_guard(settings):
    conf = server_conf(settings)
    jars = _jar_names(conf)
    assert any(j.startswith("delta-spark") for j in jars) and any(j.startswith("derbyclient") for j in jars)
    assert any(j.startswith("quicexp-jvm-") for j in jars)
    assert not any(j.startswith(("postgresql", "derbynet", "derby-")) for j in jars), jars
    assert conf["spark.driver.extraClassPath"].split(os.pathsep) == conf["spark.jars"].split(",")
    assert conf["spark.sql.extensions"].split(",")[-1] == SQL_GUARD_CLASS
    assert conf[GUARD_SCHEMAS_KEY] == "bronze,silver,g1_gold"
    assert GUARD_PINNED_CONF == {"spark.sql.runSQLOnFiles": "false", "spark.sql.scripting.enabled": "false"}
    assert all(conf[key] == value for key, value in GUARD_PINNED_CONF.items())
    production = settings.model_copy(
        update={"catalog": settings.catalog.model_copy(update={"kind": "jdbc", "jdbc_url": "jdbc:postgresql://db/m"})}
    )
    jars = _jar_names(server_conf(production))
    assert any(j.startswith("postgresql") for j in jars) and not any(j.startswith("derby") for j in jars)


def test_the_server_home_leaves_derby_s_engine_and_the_hive_jdbc_driver_out(settings):
    import pyspark

    home = server_spark_home(settings)
    bundled = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    linked = {p.name for p in (home / "jars").iterdir()}
    assert {n for n in bundled if n.startswith(SERVER_EXCLUDED_JARS)} == {
        n for n in bundled if n.startswith("derby-") or n.startswith("hive-jdbc-")
    } != set()
    assert linked == {n for n in bundled if not n.startswith(SERVER_EXCLUDED_JARS)}
    assert any(n.startswith("derbytools") for n in linked), "derbyclient's ClientDriver class lives in derbytools"
    assert (home / "bin" / "spark-submit").exists()
    cmd, _ = thrift_command(settings)
    assert cmd[0] == str(home / "bin" / "spark-submit")


def test_logins_file_and_an_operator_s_ldap_settings_reach_the_command_line(settings):
    paths = ThriftPaths.of(settings)
    cmd, _ = thrift_command(settings)
    assert f"quicexp.thrift.credentials={paths.logins}" in cmd
    assert "hive.server2.authentication=CUSTOM" in cmd
    paths.logins.parent.mkdir(parents=True)
    paths.authentication.write_text(
        "# LDAP instead of the generated logins\nhive.server2.authentication=LDAP\n"
        "hive.server2.authentication.ldap.url=ldaps://ldap.example:636\n"
    )
    cmd, _ = thrift_command(settings)
    hiveconf = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--hiveconf"]
    assert hiveconf.index("hive.server2.authentication=LDAP") > hiveconf.index("hive.server2.authentication=CUSTOM")
    assert "hive.server2.authentication.ldap.url=ldaps://ldap.example:636" in hiveconf
    paths.authentication.write_text("hive.server2.thrift.bind.host=0.0.0.0\n")
    with pytest.raises(ConfigError, match=r"not a hive\.server2\.authentication setting"):
        thrift_command(settings)


def test_add_login_on_the_command_line(tmp_path):
    env = {**os.environ, "QUICEXP_HOME": str(tmp_path / "home"), "QUICEXP_STATE_DIR": str(tmp_path / "state")}
    run = [sys.executable, "-m", "quicexp.app.cli", "serve", "add-login"]
    done = subprocess.run([*run, "carol", "--role", "superset"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == (
        f"login carol (role superset): its password is in {tmp_path / 'state' / 'thrift' / 'carol.login'} (0600)"
    )
    bad = subprocess.run([*run, "carol", "--role", "admin"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == "quicexp: error: role 'admin': one of analyst, superset"


def test_the_function_list_is_well_formed_and_refuses_the_jvm_reaching_ones():
    rows = [line.split("\t") for line in FUNCTIONS.read_text().splitlines() if line and not line.startswith("#")]
    assert all(len(row) == 3 and row[1] in ("allowed", "refused") and row[2] for row in rows)
    names = [row[0] for row in rows]
    assert names == sorted(names) and len(names) == len(set(names)) > 400
    refused = {name for name, verdict, _ in rows if verdict == "refused"}
    assert {"reflect", "java_method", "try_reflect", "from_protobuf", "table_changes_by_path"} <= refused
