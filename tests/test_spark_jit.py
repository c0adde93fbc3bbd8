"""The driver JVM's JIT follows the command's input: C1 alone for a small day, tiered otherwise; every
JVM runs the collector of ``spark.gc`` and retries allocations the GC locker holds up."""

from __future__ import annotations

from datetime import date

import pytest

from jobs.ingest.landing import day_bytes
from quicexp.config import ConfigError, load_settings
from quicexp.spark import GC_LOCKER_RETRIES, QUICK_JIT, gc_options, jit_options, spark_conf

LIMIT = 16 * 2**20


def _java_options(settings, **kwargs) -> list[str]:
    return spark_conf(settings, **kwargs)["spark.driver.extraJavaOptions"].split()


def test_auto_is_quick_up_to_the_limit_and_tiered_above_it_or_when_unknown(tmp_path):
    settings = load_settings(home=tmp_path)
    assert settings.spark.jit == "auto" and settings.spark.jit_quick_max_bytes == LIMIT
    assert jit_options(settings, 0) == list(QUICK_JIT)
    assert jit_options(settings, LIMIT) == list(QUICK_JIT)
    assert jit_options(settings, LIMIT + 1) == []
    assert jit_options(settings, None) == []
    options = _java_options(settings, input_bytes=1000)
    assert "-XX:TieredStopAtLevel=1" in options and "-XX:ReservedCodeCacheSize=512m" in options
    assert not any(o.startswith("-XX:TieredStopAtLevel") for o in _java_options(settings))
    # the other driver options stay whatever the JIT
    assert _java_options(settings)[0].startswith("-Dlog4j2.configurationFile=")
    assert _java_options(settings, input_bytes=0)[0].startswith("-Dlog4j2.configurationFile=")


@pytest.mark.parametrize(("mode", "small", "large"), [("quick", True, True), ("tiered", False, False)])
def test_a_fixed_mode_ignores_the_input(tmp_path, mode, small, large):
    settings = load_settings(home=tmp_path, spark={"jit": mode})
    assert (jit_options(settings, 0) == list(QUICK_JIT)) is small
    assert (jit_options(settings, None) == list(QUICK_JIT)) is large
    assert (jit_options(settings, 10 * LIMIT) == list(QUICK_JIT)) is large


def test_the_limit_is_a_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("QUICEXP_SPARK__JIT_QUICK_MAX_BYTES", "100")
    settings = load_settings(home=tmp_path)
    assert jit_options(settings, 100) == list(QUICK_JIT) and jit_options(settings, 101) == []


@pytest.mark.parametrize("spark", [{"jit": "fast"}, {"jit_quick_max_bytes": -1}, {"gc": "zgc"}])
def test_bad_jvm_settings_are_refused(tmp_path, spark):
    with pytest.raises(ConfigError):
        load_settings(home=tmp_path, spark=spark)


def test_day_bytes_counts_every_file_of_the_day(tmp_path):
    day = date(2026, 6, 15)
    folder = tmp_path / "upload_date=2026-06-15"
    (folder / "http_transactions").mkdir(parents=True)
    (folder / "qlog").mkdir()
    (folder / "http_transactions" / "a.parquet").write_bytes(b"x" * 1000)
    (folder / "qlog" / "c1.sqlog").write_bytes(b"y" * 234)
    (folder / "_manifest.json").write_bytes(b"{}")
    (tmp_path / "upload_date=2026-06-16").mkdir()
    assert day_bytes(tmp_path, day) == 1236
    assert day_bytes(tmp_path, date(2026, 6, 16)) == 0  # an empty day is known and small
    assert day_bytes(tmp_path, date(2026, 6, 17)) is None  # no folder: unknown
    assert day_bytes(None, day) is None


def test_a_clusters_executors_follow_the_drivers_jit(tmp_path):
    cluster = load_settings(home=tmp_path, spark={"master": "spark://127.0.0.1:7077"})
    executor = spark_conf(cluster, input_bytes=1000)["spark.executor.extraJavaOptions"].split()
    assert executor == [*gc_options(cluster), *QUICK_JIT]
    # unknown input: the JVM's default JIT
    assert spark_conf(cluster)["spark.executor.extraJavaOptions"].split() == gc_options(cluster)
    # local mode: the executors are the driver's threads
    assert "spark.executor.extraJavaOptions" not in spark_conf(load_settings(home=tmp_path), input_bytes=1000)


def test_every_jvm_retries_an_allocation_the_gc_locker_holds_up(tmp_path):
    assert set(GC_LOCKER_RETRIES) <= set(_java_options(load_settings(home=tmp_path)))
    assert set(GC_LOCKER_RETRIES) <= set(_java_options(load_settings(home=tmp_path), input_bytes=1000))


def test_every_jvm_runs_the_collector_of_the_setting(tmp_path, monkeypatch):
    default = load_settings(home=tmp_path)
    assert default.spark.gc == "parallel"
    assert "-XX:+UseParallelGC" in _java_options(default) and "-XX:+UseG1GC" not in _java_options(default)
    monkeypatch.setenv("QUICEXP_SPARK__GC", "g1")
    cluster = load_settings(home=tmp_path, spark={"master": "spark://127.0.0.1:7077"})
    for options in (_java_options(cluster), spark_conf(cluster)["spark.executor.extraJavaOptions"].split()):
        assert "-XX:+UseG1GC" in options and "-XX:+UseParallelGC" not in options
        assert set(GC_LOCKER_RETRIES) <= set(options)
