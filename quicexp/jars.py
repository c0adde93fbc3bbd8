"""The JVM jars the pipeline adds to Spark, fetched once from Maven Central and cached.

The list and checksums live in ``requirements/jars.txt``. Jars are passed to every
Spark JVM the same way (``spark.jars`` plus ``spark.driver.extraClassPath``), because
jars given with ``--packages`` never reach Thrift-server sessions (ARCHITECTURE.md).
"""

from __future__ import annotations

import hashlib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from quicexp.config import REPO_ROOT
from quicexp.errors import InputDataError, ServiceUnavailable

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
JARS_FILE = REPO_ROOT / "requirements" / "jars.txt"


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
