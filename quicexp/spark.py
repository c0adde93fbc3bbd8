"""Building a Spark session (or the flags of a spark-submit) with Delta and the shared catalog.

One function computes the Spark configuration; the session builder, the Thrift-server
launcher and the notebooks all use it, so every JVM sees the same tables.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from quicexp.config import REPO_ROOT, ConfigError, Settings
from quicexp.errors import ServiceUnavailable
from quicexp.jars import cached_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Jars each Spark JVM needs: Delta, and the Derby client for the shared metastore.
SPARK_JARS = ("delta-spark_2.13", "delta-storage", "derbyclient", "postgresql")

# Settings that must not appear on a JVM's command line (visible to every local user in `ps`).
SECRET_KEYS = ("spark.hadoop.javax.jdo.option.ConnectionPassword", "spark.authenticate.secret")

# The project's Python packages (pyproject.toml's packages.find); shipped to cluster executors.
PROJECT_PACKAGES = ("quicexp", "jobs", "stats", "simulation")
#: Where the JVMs' logs go (a file under <home>/logs), see quicexp/log4j2.properties.
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
#: With this, a class-data archive the JVM cannot use (stale, foreign, missing) is ignored silently.
CDS_LOG_OFF = "-Xlog:cds*=off"


#: The JIT of a JVM with little data (C1 only). A cold JVM running a step of a small day on two
#: cores spends a third to half of its CPU in C2 compiling the Catalyst, Janino and generated
#: code it runs for seconds; C1 alone takes a seventh to a third off such a step, but makes an
#: ingest of 86 MB a quarter slower (docs/decisions.md). C1 alone reserves a 48 MB code cache by
#: default, which a dbt build fills ("CodeCache is full", compilation off); tiered mode reserves
#: 240 MB, this reserves more (address space, committed only as code is compiled).
QUICK_JIT = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=512m")


#: JDK 17's G1 and parallel collectors throw OutOfMemoryError when an allocation that needs a
#: collection is retried twice while another thread holds a JNI critical region (JDK-8192647;
#: G1 pins regions instead from JDK 22): the Parquet and compression codecs enter such regions
#: constantly, so a task can fail with the heap far from full ("Retried waiting for GCLocker too
#: often allocating", seen with G1 on a 50 M-event ingest with the default 4 GB). More retries
#: make the allocation wait for the collection instead (docs/decisions.md).
GC_LOCKER_RETRIES = ("-XX:+UnlockDiagnosticVMOptions", "-XX:GCLockerRetryAllocationCount=100")

#: The collector of ``spark.gc``. ``parallel``: the throughput collector, no concurrent marking and
#: cheaper write barriers than G1 (which the JVM picks by itself on a machine of two cores): the
#: 10 M-event day's ingest and dbt build took ~10 % less with it (docs/decisions.md).
GARBAGE_COLLECTORS = {"parallel": "-XX:+UseParallelGC", "g1": "-XX:+UseG1GC"}


def gc_options(settings: Settings) -> list[str]:
    """A Spark JVM's collector flags: the collector of ``spark.gc`` and the GC locker's retries."""
    return [GARBAGE_COLLECTORS[settings.spark.gc], *GC_LOCKER_RETRIES]


def jit_options(settings: Settings, input_bytes: int | None) -> list[str]:
    """The driver JVM's JIT flags for a command whose input is ``input_bytes`` (None: unknown).

    ``spark.jit``: ``quick`` (C1 only), ``tiered`` (the JVM's default, no flags) or ``auto``:
    quick when the input is known and at most ``spark.jit_quick_max_bytes``.
    """
    mode = settings.spark.jit
    if mode == "auto":
        small = input_bytes is not None and input_bytes <= settings.spark.jit_quick_max_bytes
        mode = "quick" if small else "tiered"
    return list(QUICK_JIT) if mode == "quick" else []


def is_cluster(settings: Settings) -> bool:
    """True when Spark runs executors outside this process (any master but ``local[...]``)."""
    return not settings.spark.master.startswith("local")


def _project_files(root: Path) -> list[Path]:
    files = []
    for package in PROJECT_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                files.append(path)
    return files


def project_archive(dest_dir: Path, root: Path = REPO_ROOT) -> Path:
    """A zip of the project's packages for ``spark.submit.pyFiles``, named by its content hash.

    Executors of a cluster get the code the way spark-submit's ``--py-files`` gives it: the
    driver serves the zip, each executor fetches it into its work directory and puts it on its
    Python path. Same sources, same file: rebuilt only when a source file changes.
    """
    files = _project_files(root)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    target = dest_dir / f"quicexp-py-{digest.hexdigest()[:16]}.zip"
    if target.exists():
        return target
    dest_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            info = zipfile.ZipInfo(str(path.relative_to(root)), date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    partial.replace(target)
    return target


def _java_identity() -> str:
    """The java that spark-submit will start (``$JAVA_HOME/bin/java``, else the PATH's), with its mtime."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    if not found or not Path(found).exists():
        return "java"
    java = Path(found).resolve()
    return f"{java}@{java.stat().st_mtime_ns}"


def class_archive(settings: Settings) -> Path:
    """The driver JVM's class-data archive for this java, PySpark install and jar set (may not exist).

    A JVM started with ``-XX:SharedArchiveFile`` maps the classes a representative run loaded
    (Spark, Hive, Delta: some 20,000) from this one file instead of finding, reading and verifying
    them in the jars: about 3 s less per fresh JVM. ``quicexp setup-jars`` makes it
    (quicexp/class_archive.py); docs/decisions.md has the measurements.
    """
    import pyspark

    # The JVM's class path is PySpark's jars folder (per environment) + the cached jars, and the
    # JVM maps the archive only if every jar on it has the size and mtime it had at the dump: an
    # environment re-created at the same path (a fresh clone in the same folder) has new jars.
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    jars += cached_jars(settings.jar_cache, SPARK_JARS)
    stamps = [f"{jar}@{st.st_size}@{st.st_mtime_ns}" for jar, st in ((jar, jar.stat()) for jar in jars)]
    identity = "\0".join([_java_identity(), pyspark.__version__, *stamps])
    return settings.jar_cache / f"spark-classes-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.jsa"


def spark_conf(
    settings: Settings,
    app_name: str = "quicexp",
    *,
    dump_classes_to: Path | None = None,
    input_bytes: int | None = None,
) -> dict[str, str]:
    """The full Spark configuration for ``settings`` (no side effects).

    ``dump_classes_to``: the driver JVM writes the classes it loaded to this archive when it exits
    (the run that makes :func:`class_archive`); otherwise the driver uses that archive if it exists.
    ``input_bytes``: the size of what the session will read, when the caller knows it (None:
    unknown); it chooses the JIT of the driver and of a cluster's executors (:func:`jit_options`).
    """
    jars = [str(p) for p in cached_jars(settings.jar_cache, SPARK_JARS)]
    catalog = settings.catalog
    conf = {
        "spark.app.name": app_name,
        "spark.master": settings.spark.master,
        "spark.driver.memory": settings.spark.driver_memory,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": str(settings.spark.ui_enabled).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(settings.spark.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(settings.warehouse_dir),
        "spark.jars": ",".join(jars),
        "spark.driver.extraClassPath": os.pathsep.join(jars),
        "spark.hadoop.javax.jdo.option.ConnectionURL": catalog.connection_url(settings.metastore_dir),
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": catalog.driver_class(),
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        # Constraint propagation infers filters (isnotnull, equalities) from joins and pushes them
        # down. In the quantile models a CTE read by several others gets other inferred filters
        # in each reader, so Spark cannot reuse its exchange and builds it once per reader: off,
        # metric_values_daily takes 18-20 s instead of 24 s and the quantile statistics 61 s
        # instead of 71 s on the shared test lake's third day (docs/decisions.md). The ingest job
        # turns it off for its own run too, whatever session it is given (jobs/ingest/job.py).
        "spark.sql.constraintPropagation.enabled": "false",
        # Hash aggregation probes a small first-level map before the regular one. The models'
        # large aggregations are high-cardinality (per client, bin and arm): the first level
        # fills at once and every row pays for the probe. Off, on a 10 M-event day, the two
        # quantile models took 134 and 131 s in the dbt build instead of 152 and 146 s
        # (docs/decisions.md); the ingest's time did not move beyond its run-to-run spread.
        "spark.sql.codegen.aggregate.map.twolevel.enabled": "false",
        # Every table of the lake is partitioned by a date and read by date ranges, and no file
        # is sorted by any other column, so per-column min/max statistics skip nothing; collecting
        # them for the first 32 columns of every written row cost a quarter to a third of a bronze
        # write. New tables keep the row count only (docs/decisions.md); a table that wants
        # data skipping (or Z-ordering) sets the property back on itself.
        "spark.databricks.delta.properties.defaults.dataSkippingNumIndexedCols": "0",
        "spark.pyspark.python": sys.executable,
    }
    if catalog.kind == "jdbc":
        # DataNucleus creates metastore tables lazily; on PostgreSQL its ALTER TABLE … ADD FOREIGN
        # KEY waits for a lock its own JVM holds in another open transaction (seen: a CTAS through
        # the Thrift server hung for good). Tables and columns, but no foreign keys: autoCreateAll
        # would turn the constraints back on, so the three switches are set one by one.
        conf["spark.hadoop.datanucleus.schema.autoCreateAll"] = "false"
        conf["spark.hadoop.datanucleus.schema.autoCreateTables"] = "true"
        conf["spark.hadoop.datanucleus.schema.autoCreateColumns"] = "true"
        conf["spark.hadoop.datanucleus.schema.autoCreateConstraints"] = "false"
    if catalog.kind == "derby-server":
        # The metastore server requires the password it was started with (quicexp.catalog
        # generates it when it starts the server; ensure_catalog runs before any session).
        from quicexp.catalog import DERBY_USER, derby_password

        password = derby_password(settings, create=False)
        if password:
            conf["spark.hadoop.javax.jdo.option.ConnectionUserName"] = DERBY_USER
            conf["spark.hadoop.javax.jdo.option.ConnectionPassword"] = password
    if catalog.user:
        conf["spark.hadoop.javax.jdo.option.ConnectionUserName"] = catalog.user
    if catalog.password:
        conf["spark.hadoop.javax.jdo.option.ConnectionPassword"] = catalog.password
    if settings.spark.auth_secret_file is not None:
        # RPC between driver, executors, master and workers authenticated by a shared secret
        # (a cluster's; docker-compose.yml gives it as a secret file). Kept off the command line.
        conf["spark.authenticate"] = "true"
        conf["spark.authenticate.secret"] = _read_secret(settings.spark.auth_secret_file)
    # JVM logs (Spark, Hive, DataNucleus, Delta) go to <home>/logs/spark.log, not the console.
    # (log4j creates the folder; a home whose path holds a space would split the option.)
    java_options = [f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}", f"-Dquicexp.log.dir={settings.home / 'logs'}",
                    *gc_options(settings)]
    if dump_classes_to is not None:
        java_options += [f"-XX:ArchiveClassesAtExit={dump_classes_to}", CDS_LOG_OFF]
    elif (archive := class_archive(settings)).is_file():
        java_options += [f"-XX:SharedArchiveFile={archive}", CDS_LOG_OFF]
    jit = jit_options(settings, input_bytes)
    conf["spark.driver.extraJavaOptions"] = " ".join(java_options + jit)
    if is_cluster(settings):
        # Executors are JVMs of their own: the same collector and GC locker retries, and the driver's
        # JIT (a small input is small for them too: each is a cold JVM compiling the same code).
        conf["spark.executor.extraJavaOptions"] = " ".join([*gc_options(settings), *jit])
    if not is_cluster(settings):
        # Delta rebuilds a table's state with 50 tasks by default; on one machine 2 suffice.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
    conf.update(settings.spark.extra_conf)
    return conf


def _read_secret(path: Path) -> str:
    try:
        value = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read spark.auth_secret_file {path}: {exc.strerror}") from None
    if not value:
        raise ConfigError(f"spark.auth_secret_file {path} is empty")
    return value


def jvm_environment(conf: dict[str, str]) -> dict[str, str]:
    """Environment variables a Spark JVM started with ``conf`` needs.

    Spark's web UI binds to ``$SPARK_LOCAL_IP`` or else to every interface, whatever
    ``spark.driver.bindAddress`` says; so a driver bound to a loopback address gets the same
    address as ``SPARK_LOCAL_IP`` and its UI (when ``spark.ui.enabled``) stays on loopback.
    """
    bind = conf.get("spark.driver.bindAddress", "")
    if bind == "localhost" or bind.startswith("127.") or bind == "::1":
        return {"SPARK_LOCAL_IP": bind}
    return {}


def properties_text(conf: dict[str, str]) -> str:
    """``conf`` in the spark-defaults / ``--properties-file`` format (pure)."""
    lines = []
    for key in sorted(conf):
        value = conf[key].replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{key} {value}")
    return "\n".join(lines) + "\n"


def write_properties(path: Path, conf: dict[str, str]) -> Path:
    """Write ``conf`` as a properties file readable by its owner only (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(properties_text(conf))
    path.chmod(0o600)
    return path


def _secrets_file(conf: dict[str, str], settings: Settings) -> Path | None:
    """Move secret keys out of ``conf`` into a 0600 file under the state dir (None if none).

    PySpark starts the driver JVM as ``spark-submit --conf k=v …``: a password passed that way
    is readable in the process list. ``--properties-file`` keeps it in the file instead.
    """
    hidden = {key: conf.pop(key) for key in SECRET_KEYS if key in conf}
    if not hidden:
        return None
    return write_properties(settings.state_dir / "run" / f"spark-secrets-{os.getpid()}.properties", hidden)


#: The JVM's log4j file (Spark, Hive, DataNucleus, Delta) under <home>/logs (log4j2.properties).
SPARK_LOG = "spark.log"
#: The driver JVM's own output (the JVM's and the launcher's warnings, a crash report): what does
#: not go through log4j. Under <home>/logs beside spark.log.
JVM_CONSOLE_LOG = "spark-console.log"
#: This process's JVM log files and their sizes when its session started (see out_of_memory).
_LOG_MARKS: dict[Path, int] = {}
_OUT_OF_MEMORY = re.compile(r"java\.lang\.OutOfMemoryError[^\r\n]*")


def out_of_memory() -> tuple[str, Path] | None:
    """The first ``java.lang.OutOfMemoryError`` this process's Spark session logged, and the log.

    A task that runs out of heap in local mode stops the Spark context, and the job then fails
    with whatever its next call meets (a NullPointerException, "SparkContext was shut down"); a
    cluster's executor that runs out is lost, and the job fails with "executor lost". The logs
    say what happened: the lines the JVM wrote to spark.log and spark-console.log since the
    session was built are searched (None when there was no session, or no such line).
    """
    for path, start in _LOG_MARKS.items():
        try:
            with open(path, "rb") as fh:
                fh.seek(start)
                for raw in fh:
                    if b"OutOfMemoryError" in raw and (found := _OUT_OF_MEMORY.search(raw.decode(errors="replace"))):
                        return found.group(0).strip(), path
        except OSError:
            continue
    return None


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr (file descriptors 1 and 2) appended to ``path`` for the
    duration, so that a child started meanwhile (the driver JVM) writes there for its whole life.
    The JVM prints a warning for the vector module Spark adds, and spark-submit's shell mode a
    note on log levels, on its inherited stderr; the console is for progress and errors."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (fd, *saved):
            os.close(descriptor)


#: seconds a standalone master gets to accept a connection before the command gives up on it
MASTER_CONNECT_TIMEOUT = 5.0


def check_master_reachable(master: str, timeout: float = MASTER_CONNECT_TIMEOUT) -> None:
    """A ``spark://host:port[,host:port]`` master must accept a TCP connection (one of its
    hosts, for a standby list) before a driver JVM is started for it: a driver whose master does
    not answer keeps trying to register (89 s here, "All masters are unresponsive! Giving up.")
    and then fails with "Cannot call methods on a stopped SparkContext", exit 1. Other masters
    (local, yarn, k8s) are left to Spark.

    Raises:
        ServiceUnavailable: no host of the master accepted a connection within ``timeout``.
    """
    import socket

    if not master.startswith("spark://"):
        return
    failures = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except OSError as exc:
            failures.append(f"{address}: {exc.strerror or exc}")
    raise ServiceUnavailable(f"spark.master {master} is not reachable ({'; '.join(failures)})")


def build_spark(
    settings: Settings,
    app_name: str = "quicexp",
    *,
    dump_classes_to: Path | None = None,
    input_bytes: int | None = None,
) -> SparkSession:
    """Return the process's Spark session, creating it with the project's configuration
    (``dump_classes_to``, ``input_bytes``: see :func:`spark_conf`)."""
    from pyspark.sql import SparkSession

    from quicexp.catalog import ensure_catalog, refuse_jvm

    check_master_reachable(settings.spark.master)  # before the metastore and the JVM start
    refuse_jvm("a Spark session")
    ensure_catalog(settings)
    # PySpark starts its Python workers with $PYSPARK_PYTHON (default: `python3` on PATH, which
    # may lack pyarrow); use this interpreter unless the caller chose another.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = spark_conf(settings, app_name, dump_classes_to=dump_classes_to, input_bytes=input_bytes)
    if is_cluster(settings) and "spark.submit.pyFiles" not in conf:
        # Cluster executors do not share this interpreter: ship the project with the app.
        conf["spark.submit.pyFiles"] = str(project_archive(settings.home / "dist"))
    secrets = _secrets_file(conf, settings)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    for key, value in jvm_environment(conf).items():
        os.environ[key] = value  # read by the driver JVM that getOrCreate launches
    saved_args = os.environ.get("PYSPARK_SUBMIT_ARGS")
    if secrets is not None:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--properties-file {shlex.quote(str(secrets))} {saved_args or 'pyspark-shell'}"
    console = settings.home / "logs" / JVM_CONSOLE_LOG
    for log in (settings.home / "logs" / SPARK_LOG, console):
        _LOG_MARKS[log] = log.stat().st_size if log.exists() else 0
    try:
        with _output_to(console):
            spark = builder.enableHiveSupport().getOrCreate()
    except Exception as exc:
        if getattr(exc, "getCondition", lambda: None)() == "JAVA_GATEWAY_EXITED":
            raise ServiceUnavailable(f"the Spark driver JVM exited as it started (its output: {console})") from None
        raise
    finally:
        if secrets is not None:
            secrets.unlink(missing_ok=True)  # read by spark-submit at JVM start; not needed after
            if saved_args is None:
                os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
            else:
                os.environ["PYSPARK_SUBMIT_ARGS"] = saved_args
    spark.sparkContext.setLogLevel("WARN")
    return spark
