"""The JVM jars the pipeline adds to Spark, fetched once from Maven Central and cached.

The list and checksums live in ``requirements/jars.txt``. One more jar is the project's own:
``jvm/src`` (the Thrift server's logins and its SQL guard, the metastore server's control-command
gate), compiled with ``javac`` against the pip pyspark's jars into the same cache with the data
files beside the sources (the guard's classified function list), named by the hash of both. Jars are passed to every
Spark JVM the same way (``spark.jars`` plus ``spark.driver.extraClassPath``), because
jars given with ``--packages`` never reach Thrift-server sessions (ARCHITECTURE.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from quicexp.config import REPO_ROOT
from quicexp.errors import InputDataError, ServiceUnavailable

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
JARS_FILE = REPO_ROOT / "requirements" / "jars.txt"
JVM_SOURCES = REPO_ROOT / "jvm" / "src"
#: the classes of the project's jar that the Thrift server names in its configuration
THRIFT_AUTH_CLASS = "quicexp.jvm.ThriftPasswordAuth"
SQL_GUARD_CLASS = "quicexp.jvm.SqlGuardExtension"


@dataclass(frozen=True)
class Jar:
    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        return f"{MAVEN_CENTRAL}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.filename}"


def declared_jars(path: Path = JARS_FILE) -> list[Jar]:
    jars = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        coordinate, sha256 = line.split()
        group, artifact, version = coordinate.split(":")
        jars.append(Jar(group, artifact, version, sha256))
    return jars


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_jars(cache: Path, log=print) -> list[Path]:
    """Download missing jars into ``cache``, verify checksums, return their paths."""
    cache.mkdir(parents=True, exist_ok=True)
    paths = []
    for jar in declared_jars():
        target = cache / jar.filename
        if not target.exists() or _sha256(target) != jar.sha256:
            log(f"fetching {jar.group}:{jar.artifact}:{jar.version} from Maven Central")
            partial = target.with_suffix(".part")
            try:
                urllib.request.urlretrieve(jar.url, partial)
            except OSError as exc:
                raise ServiceUnavailable(f"cannot download {jar.url}: {exc}") from None
            if _sha256(partial) != jar.sha256:
                partial.unlink()
                raise InputDataError(f"checksum mismatch for {jar.filename}; refusing to use it")
            partial.replace(target)
        paths.append(target)
    project_jar(cache)  # the Thrift server's authentication and SQL guard (jvm/src)
    return paths


def cached_jars(cache: Path, artifacts: tuple[str, ...] | None = None) -> list[Path]:
    """Paths of the cached jars (optionally only some artifacts); error if setup has not run."""
    paths = []
    for jar in declared_jars():
        if artifacts is not None and jar.artifact not in artifacts:
            continue
        target = cache / jar.filename
        if not target.exists():
            raise ServiceUnavailable(f"{jar.filename} is missing from {cache}: run `make setup` first")
        paths.append(target)
    return paths


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _source_digest(sources: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sources:
        digest.update(str(path.relative_to(JVM_SOURCES)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def project_jar(cache: Path, build: bool = True) -> Path:
    """The project's own jar (``jvm/src``), compiled into ``cache`` when missing or stale.

    Named by the hash of its sources, so a source change gives a new jar and an old one is never
    used by mistake. ``javac`` (Java 17, a prerequisite) compiles against the pip pyspark's jars,
    the ones the Thrift server runs with. Written to a temporary file and renamed, so concurrent
    builds are harmless.
    """
    sources = sorted(JVM_SOURCES.rglob("*.java"))
    # Data the classes read (the SQL guard's classified function list), packaged beside them.
    resources = sorted(p for p in JVM_SOURCES.rglob("*") if p.is_file() and p.suffix != ".java")
    target = cache / f"quicexp-jvm-{_source_digest(sources + resources)}.jar"
    if target.exists():
        return target
    if not build:
        raise ServiceUnavailable(f"{target.name} is missing from {cache}: run `make setup` first")
    javac = shutil.which("javac")
    if javac is None:
        raise ServiceUnavailable("javac not found: a Java 17 JDK is required (the Thrift server's guard is compiled at setup)")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="quicexp-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        proc = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8",
             "-cp", str(_pyspark_jars() / "*"), "-d", str(classes), *map(str, sources)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
            raise ServiceUnavailable(f"javac failed on jvm/src: {lines[0] if lines else proc.returncode}")
        partial = cache / f".{target.name}.{os.getpid()}.part"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: quicexp\n")
            for path in sorted(classes.rglob("*.class")):
                info = zipfile.ZipInfo(path.relative_to(classes).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
                jar.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
            for path in resources:
                info = zipfile.ZipInfo(path.relative_to(JVM_SOURCES).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
                jar.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
        partial.replace(target)
    return target
