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


# --- issue 19, item 7: typos, malformed values and an empty home are one-line errors ----------


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_an_unknown_nested_key_in_the_file_is_refused(clean_env, tmp_path):
    config = tmp_path / "typo.yml"
    config.write_text("spark:\n  mastre: local[1]\n")
    clean_env.setenv("QUICEXP_CONFIG", str(config))
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path)
    assert "spark.mastre" in _one_line(err) and "unknown setting" in str(err.value)
    config.write_text("ingest:\n  lookback_dayz: 2\n")
    with pytest.raises(ConfigError, match=r"ingest\.lookback_dayz"):
        load_settings(home=tmp_path)
    config.write_text("spark:\n  master: local[1]\n")  # the control: the right key loads
    assert load_settings(home=tmp_path).spark.master == "local[1]"


@pytest.mark.parametrize(
    ("variable", "message"),
    [
        ("QUICEXP_SPARK__MASTRE", "QUICEXP_SPARK__MASTRE (spark has"),
        ("QUICEXP_CATALOG__PASWORD", "QUICEXP_CATALOG__PASWORD (catalog has"),
        ("QUICEXP_SPRAK__MASTER", "'sprak' is not a settings section"),
    ],
)
def test_an_unknown_nested_key_in_the_environment_is_refused(clean_env, tmp_path, variable, message):
    clean_env.setenv(variable, "local[1]")
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path)
    assert message in _one_line(err)


def test_unknown_keys_are_refused_in_arguments_at_every_depth(clean_env):
    for overrides, where in (
        ({"spark": {"mastre": "x"}}, "spark.mastre"),
        ({"services": {"thrift_prot": 1}}, "services.thrift_prot"),
        ({"catalog": {"hots": "127.0.0.1"}}, "catalog.hots"),
    ):
        with pytest.raises(ConfigError) as err:
            load_settings(**overrides)
        assert where in _one_line(err)


def test_malformed_json_in_extra_conf_is_one_line(clean_env, tmp_path):
    clean_env.setenv("QUICEXP_SPARK__EXTRA_CONF", '{"spark.x": "1",')
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path)
    assert _one_line(err).startswith("QUICEXP_SPARK__EXTRA_CONF is not valid JSON")
    clean_env.setenv("QUICEXP_SPARK__EXTRA_CONF", '["spark.x"]')
    with pytest.raises(ConfigError, match="JSON object"):
        load_settings(home=tmp_path)
    clean_env.setenv("QUICEXP_SPARK__EXTRA_CONF", '{"spark.x": "1"}')
    assert load_settings(home=tmp_path).spark.extra_conf == {"spark.x": "1"}


def test_a_config_file_that_is_not_utf8_is_one_line(clean_env, tmp_path):
    config = tmp_path / "latin1.yml"
    config.write_bytes("bronze_schema: caf\u00e9\n".encode("latin-1"))
    clean_env.setenv("QUICEXP_CONFIG", str(config))
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path)
    assert "is not UTF-8" in _one_line(err) and str(config) in str(err.value)


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_home_is_refused(clean_env, value):
    clean_env.setenv("QUICEXP_HOME", value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "at home" in _one_line(err) and "must not be empty" in str(err.value)


@pytest.mark.parametrize("host", ["127.evil.example", "127.0.0.1.nip.io", "0.0.0.0", "10.0.0.5", "::", "example.com"])
def test_bind_and_catalog_hosts_must_be_loopback_addresses(clean_env, host):
    for overrides in ({"services": {"bind_host": host}}, {"catalog": {"host": host}}):
        with pytest.raises(ConfigError) as err:
            load_settings(**overrides)
        assert "loopback address" in _one_line(err)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_are_accepted(clean_env, host):
    settings = load_settings(services={"bind_host": host}, catalog={"host": host})
    assert settings.services.bind_host == settings.catalog.host == host


def test_a_jdbc_catalog_may_name_any_host(clean_env):
    url = "jdbc:postgresql://postgres:5432/metastore"
    assert load_settings(catalog={"kind": "jdbc", "jdbc_url": url, "host": "postgres"}).catalog.jdbc_url == url


# --- issue 40: inputs that cannot be right ------------------------------------------------------


@pytest.mark.parametrize("text", ["20260615", "2026-W25-1", "2026-166", "2026-6-15", "2026-06-15T00:00", " 2026-06-15"])
def test_a_day_is_yyyy_mm_dd_and_nothing_else(text):
    """date.fromisoformat reads the first three as 2026-06-15 (and more): only YYYY-MM-DD passes."""
    with pytest.raises(ConfigError) as err:
        parse_day(text)
    assert _one_line(err) == f"bad day {text!r}: expected YYYY-MM-DD"


@pytest.mark.parametrize(
    ("spark", "message"),
    [
        ({"driver_memory": "lots"}, "spark.driver_memory: 'lots' is not a memory size such as 4g or 512m"),
        ({"driver_memory": "4x"}, "spark.driver_memory: '4x' is not a memory size"),
        ({"driver_memory": "100m"}, "spark.driver_memory: '100m' is below the 512m Spark needs to start"),
        ({"master": "spark:/host:7077"}, "spark.master: 'spark:/host:7077' is not a Spark master URL"),
        ({"master": "local[0]"}, "spark.master: 'local[0]' is not a Spark master URL"),
        ({"extra_conf": {"spark.sql.extensions": "com.example.Ext"}},
         "spark.extra_conf: spark.sql.extensions is the project's (Delta's session extension"),
        ({"extra_conf": {"spark.master": "local[1]"}}, "spark.extra_conf: spark.master is the project's (set spark.master)"),
    ],
)  # fmt: skip
def test_spark_settings_that_cannot_start_a_session_are_usage_errors(clean_env, tmp_path, spark, message):
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, spark=spark)
    text = _one_line(err)
    assert text.startswith("bad configuration at ") and message in text, text


def test_spark_settings_spark_accepts(clean_env, tmp_path):
    for spark in ({"driver_memory": "512m"}, {"driver_memory": "4G"}, {"driver_memory": "2gb"},
                  {"master": "local[*]"}, {"master": "local[2,3]"}, {"master": "spark://a:7077,b:7077"},
                  {"master": "yarn"}, {"master": "k8s://https://10.0.0.1:6443"},
                  {"extra_conf": {"spark.executor.memory": "3g", "spark.driver.host": "pipeline"}}):  # fmt: skip
        load_settings(home=tmp_path, spark=spark)
