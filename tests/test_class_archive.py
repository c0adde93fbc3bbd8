"""The driver JVM's class-data archive (quicexp/class_archive.py): named by what it was made from,
used when it exists, ignored silently when it cannot be used, and mapped by the real session."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from quicexp.class_archive import ensure_class_archive
from quicexp.config import load_settings
from quicexp.jars import cached_jars
from quicexp.spark import CDS_LOG_OFF, SPARK_JARS, class_archive, spark_conf


@pytest.fixture
def settings(tmp_path):
    """Settings whose jar cache is a copy (links) of the real one, so that no test touches its archive."""
    real = load_settings().jar_cache
    cache = tmp_path / "jars"
    cache.mkdir()
    for jar in cached_jars(real, SPARK_JARS):
        (cache / jar.name).symlink_to(jar)
    return load_settings(home=tmp_path / "home", state_dir=tmp_path / "state", jar_cache=cache)


def java_options(settings, **kwargs) -> list[str]:
    return spark_conf(settings, **kwargs)["spark.driver.extraJavaOptions"].split()


def test_the_driver_uses_the_archive_only_when_it_exists(settings):
    archive = class_archive(settings)
    assert archive.parent == settings.jar_cache and archive.suffix == ".jsa"
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in java_options(settings))
    archive.write_bytes(b"not an archive")  # a JVM that cannot map it ignores it: CDS_LOG_OFF keeps it quiet
    assert java_options(settings)[-2:] == [f"-XX:SharedArchiveFile={archive}", CDS_LOG_OFF]
    dump = settings.jar_cache / "next.jsa"
    options = java_options(settings, dump_classes_to=dump)
    assert f"-XX:ArchiveClassesAtExit={dump}" in options and not any("SharedArchiveFile" in o for o in options)


def test_another_java_or_jar_set_names_another_archive(settings, tmp_path, monkeypatch):
    first = class_archive(settings)
    assert class_archive(settings) == first  # stable
    fake_java = tmp_path / "jdk" / "bin" / "java"
    fake_java.parent.mkdir(parents=True)
    fake_java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert class_archive(settings) != first


def test_a_jar_rewritten_at_the_same_path_names_another_archive(settings):
    """The JVM does not map an archive whose class path jars changed size or mtime (a fresh clone
    re-created in the same folder reinstalls PySpark's jars): such a jar names a new archive."""
    first = class_archive(settings)
    jar = cached_jars(settings.jar_cache, SPARK_JARS)[0]
    content = jar.read_bytes()
    jar.unlink()  # the test's cache holds links to the real jars: the real one is not touched
    jar.write_bytes(content)
    os.utime(jar, ns=(1_000_000_000, 1_000_000_000))
    assert class_archive(settings) != first


def test_a_failed_run_leaves_no_archive_and_says_so(settings, monkeypatch):
    monkeypatch.setenv("QUICEXP_NO_JVM", "1")  # the child refuses to start its JVM: a real failure
    said: list[str] = []
    assert ensure_class_archive(settings, log=said.append) is None
    assert not class_archive(settings).exists()
    assert not list(settings.jar_cache.glob(".*.part"))
    assert len(said) == 2 and "was not made" in said[-1] and "spark-classes.log" in said[-1]


def test_the_session_maps_the_archive_setup_made(spark, base_settings):
    """`make setup` made the archive; the session's JVM maps it (jcmd: the mapped CDS size
    includes the archive's, where the JDK's own base archive alone is some 13 MB)."""
    archive = class_archive(base_settings)
    assert archive.is_file(), f"{archive} is missing: `quicexp setup-jars` should have made it"
    java = shutil.which("java")
    jcmd = Path(java).resolve().parent / "jcmd" if java else None
    if jcmd is None or not jcmd.exists():
        pytest.skip("jcmd is not installed beside java (a JRE): cannot ask the JVM what it mapped")
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    info = subprocess.run([str(jcmd), str(pid), "VM.info"], capture_output=True, text=True, timeout=60).stdout
    mapped = re.search(r"CDS archive\(s\) mapped at: .*?size (\d+)", info)
    assert mapped, "the JVM reports no mapped class-data archive"
    assert int(mapped.group(1)) > archive.stat().st_size
    # with the collector of the settings (the archive holds classes, no heap objects: any collector maps it)
    collectors = {bean.getName() for bean in spark.sparkContext._jvm.java.lang.management.ManagementFactory
                  .getGarbageCollectorMXBeans()}
    prefix = {"parallel": "PS ", "g1": "G1 "}[base_settings.spark.gc]  # PS Scavenge, G1 Young Generation...
    assert collectors and all(name.startswith(prefix) for name in collectors), collectors
