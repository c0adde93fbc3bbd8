"""Settings: defaults, precedence (args > env > file), one-line errors, identifier checks."""

from __future__ import annotations

import os
from datetime import date

import pytest

from quicexp.config import ConfigError, load_settings, parse_day, validate_identifier


@pytest.fixture
def clean_env(monkeypatch):
    """No QUICEXP_* or SPARK_MASTER from the caller (the test session exports some of its own)."""
    for key in list(os.environ):
        if key.startswith("QUICEXP_") or key == "SPARK_MASTER":
            monkeypatch.delenv(key)
    return monkeypatch


def test_defaults_describe_the_embedded_mode(clean_env, tmp_path):
    settings = load_settings(home=tmp_path)
    assert settings.spark.master == "local[2]"
    assert settings.catalog.kind == "derby-server"
    assert settings.lake_root == tmp_path / "lake"
    assert settings.landing_root == tmp_path / "landing"
    assert settings.services.bind_host == "127.0.0.1"
    assert "jdbc:derby://127.0.0.1:" in settings.catalog.connection_url(settings.metastore_dir)


def test_env_overrides_file_and_spark_master_is_honoured(clean_env, tmp_path):
    config = tmp_path / "quicexp.yml"
    config.write_text("spark: {master: 'local[1]', shuffle_partitions: 7}\nbronze_schema: filed\n")
    clean_env.setenv("QUICEXP_CONFIG", str(config))
    clean_env.setenv("QUICEXP_BRONZE_SCHEMA", "from_env")
    settings = load_settings(home=tmp_path)
    assert settings.bronze_schema == "from_env"
    assert settings.spark.shuffle_partitions == 7
    assert settings.spark.master == "local[1]"
    clean_env.setenv("SPARK_MASTER", "spark://127.0.0.1:7077")
    assert load_settings(home=tmp_path).spark.master == "spark://127.0.0.1:7077"
    clean_env.setenv("QUICEXP_SPARK__MASTER", "local[3]")
    assert load_settings(home=tmp_path).spark.master == "local[3]"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"bronze_schema": "bronze; drop table x"}, "invalid schema name"),
        ({"services": {"bind_host": "0.0.0.0"}}, "loopback"),
        ({"spark": {"shuffle_partitions": 0}}, "spark.shuffle_partitions"),
        ({"unknown_key": 1}, "unknown_key"),
    ],
)
def test_bad_settings_are_one_line_errors(clean_env, overrides, message):
    with pytest.raises(ConfigError) as err:
        load_settings(**overrides)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_config_file_is_one_line(clean_env, tmp_path):
    config = tmp_path / "bad.yml"
    config.write_text("spark: [unclosed\n")
    clean_env.setenv("QUICEXP_CONFIG", str(config))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings()
    clean_env.setenv("QUICEXP_CONFIG", str(tmp_path / "missing.yml"))
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings()


def test_jdbc_catalog_needs_a_url():
    settings = load_settings(catalog={"kind": "jdbc"})
    with pytest.raises(ConfigError, match="jdbc_url"):
        settings.catalog.connection_url(settings.metastore_dir)
    pg = load_settings(catalog={"kind": "jdbc", "jdbc_url": "jdbc:postgresql://127.0.0.1:5432/metastore"})
    assert pg.catalog.driver_class() == "org.postgresql.Driver"


def test_parse_day_and_identifiers():
    assert parse_day("2026-06-15") == date(2026, 6, 15)
    with pytest.raises(ConfigError, match="YYYY-MM-DD"):
        parse_day("15/06/2026")
    assert validate_identifier("fhol_2026_06") == "fhol_2026_06"
    for bad in ("1abc", "a-b", "a b", "", "x" * 200, "a;b"):
        with pytest.raises(ConfigError):
            validate_identifier(bad)
