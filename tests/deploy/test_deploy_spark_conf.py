"""quicexp.spark for cluster mode and the PostgreSQL catalog, and the local default left as it was."""

from __future__ import annotations

import zipfile

from quicexp.config import load_settings
from quicexp.spark import (
    SECRET_KEYS,
    _secrets_file,
    is_cluster,
    project_archive,
    properties_text,
    spark_conf,
)

PASSWORD_KEY = "spark.hadoop.javax.jdo.option.ConnectionPassword"


def test_local_default_is_unchanged(tmp_path):
    settings = load_settings(home=tmp_path, spark={"master": "local[2]"})
    conf = spark_conf(settings)
    assert not is_cluster(settings)
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith("jdbc:derby://127.0.0.1:")
    assert "spark.submit.pyFiles" not in conf
    assert "spark.hadoop.datanucleus.schema.autoCreateConstraints" not in conf
    assert conf["spark.hadoop.datanucleus.schema.autoCreateAll"] == "true"
    assert PASSWORD_KEY not in conf


def test_cluster_master_and_postgres_catalog_are_configuration_only(tmp_path):
    settings = load_settings(
        home=tmp_path,
        spark={"master": "spark://10.0.0.5:7077", "extra_conf": {"spark.driver.host": "driver"}},
        catalog={"kind": "jdbc", "jdbc_url": "jdbc:postgresql://db:5432/metastore", "user": "u", "password": "pw"},
    )
    conf = spark_conf(settings)
    assert is_cluster(settings)
    assert conf["spark.master"] == "spark://10.0.0.5:7077"
    assert conf["spark.driver.host"] == "driver"  # extra_conf wins over the loopback default
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == "jdbc:postgresql://db:5432/metastore"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionDriverName"] == "org.postgresql.Driver"
    assert conf["spark.hadoop.datanucleus.schema.autoCreateConstraints"] == "false"
    assert conf["spark.hadoop.datanucleus.schema.autoCreateAll"] == "false"  # it would re-enable them
    assert conf["spark.hadoop.datanucleus.schema.autoCreateTables"] == "true"
    assert any(jar.endswith("postgresql-42.7.4.jar") for jar in conf["spark.jars"].split(","))
    assert conf[PASSWORD_KEY] == "pw"


def test_secrets_leave_the_conf_for_a_private_file(tmp_path):
    settings = load_settings(home=tmp_path, state_dir=tmp_path / "state")
    conf = {"spark.master": "local[1]", PASSWORD_KEY: "s3cr\\et"}
    path = _secrets_file(conf, settings)
    assert PASSWORD_KEY not in conf and conf == {"spark.master": "local[1]"}
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text() == f"{PASSWORD_KEY} s3cr\\\\et\n"
    assert _secrets_file({"spark.master": "x"}, settings) is None
    assert PASSWORD_KEY in SECRET_KEYS and "spark.authenticate.secret" in SECRET_KEYS


def test_properties_text_is_sorted_and_escaped():
    assert properties_text({"b": "2", "a": "x\ny"}) == "a x\\ny\nb 2\n"


def test_project_archive_holds_the_packages_and_is_content_addressed(tmp_path):
    first = project_archive(tmp_path)
    stamp = first.stat().st_mtime_ns
    again = project_archive(tmp_path)
    assert again == first and again.stat().st_mtime_ns == stamp
    with zipfile.ZipFile(first) as archive:
        names = set(archive.namelist())
    assert {"quicexp/__init__.py", "quicexp/config.py", "jobs/__init__.py", "stats/engine.py"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
