"""The SQL endpoint for analysts: the Spark Thrift Server, started and stopped by the project.

The server is the pip pyspark's ``HiveThriftServer2`` launched through ``spark-submit`` with the
one Spark configuration of the project (``quicexp.spark.spark_conf``) turned into ``--conf``
flags. Jars go through ``--jars`` *and* ``spark.driver.extraClassPath`` (``--packages`` jars never
reach Thrift sessions), the listener binds to 127.0.0.1 only, and the metastore is the shared
Derby network server, so tables and days the pipeline writes appear without a restart.

Reads only, by convention: Spark has no grants, so a client that can reach the port can issue
DDL/DML. The limits and what enforces them (loopback bind, Superset's ``allow_dml: false``) are
written down in docs/serving.md.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from quicexp.catalog import ensure_catalog, is_listening, refuse_jvm
from quicexp.config import ConfigError, Settings, load_settings
from quicexp.errors import ServiceUnavailable
from quicexp.pidfile import read_pid, stop_group
from quicexp.spark import spark_conf

THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"

# Keys of spark_conf that spark-submit takes as flags, or that make no sense for a server.
_SKIPPED_CONF = {
    "spark.pyspark.python",
    "spark.master",
    "spark.driver.memory",
    "spark.jars",
    "spark.app.name",
}
# Settings that must not appear on the command line (readable by every local user in `ps`):
# they go to a 0600 properties file instead, removed once the server listens.
SECRET_KEYS = ("spark.hadoop.javax.jdo.option.ConnectionPassword",)


@dataclass(frozen=True)
class ThriftPaths:
    """Where the server's pid file and log live (under the installation's home)."""

    pid_file: Path
    log_file: Path
    secrets_file: Path

    @classmethod
    def of(cls, settings: Settings) -> ThriftPaths:
        run = settings.home / "run"
        return cls(
            run / "thrift-server.pid",
            settings.home / "logs" / "thrift-server.log",
            settings.state_dir / "run" / "thrift-secrets.properties",
        )


def spark_submit() -> Path:
    """The ``spark-submit`` of the pip pyspark installed next to this interpreter."""
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if not path.exists():
        raise ServiceUnavailable(f"spark-submit not found at {path}; run `make setup`")
    return path


def thrift_command(
    settings: Settings, driver_memory: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command line of the Thrift server, and the secret settings kept off it
    (to be written to ``ThriftPaths.secrets_file``, which the command names). Pure."""
    conf = spark_conf(settings, "quicexp-thrift-server")
    hidden = {key: conf.pop(key) for key in SECRET_KEYS if key in conf}
    services = settings.services
    cmd = [
        str(spark_submit()),
        "--class", THRIFT_CLASS,
        "--name", "quicexp-thrift-server",
        "--master", conf["spark.master"],
        "--driver-memory", driver_memory or conf["spark.driver.memory"],
        "--jars", conf["spark.jars"],
    ]  # fmt: skip
    if hidden:
        cmd += ["--properties-file", str(ThriftPaths.of(settings).secrets_file)]
    for key, value in sorted(conf.items()):
        if key not in _SKIPPED_CONF:
            cmd += ["--conf", f"{key}={value}"]
    cmd += [
        "spark-internal",
        "--hiveconf", f"hive.server2.thrift.bind.host={services.bind_host}",
        "--hiveconf", f"hive.server2.thrift.port={services.thrift_port}",
        "--hiveconf", "hive.server2.transport.mode=binary",
        "--hiveconf", "hive.server2.webui.port=0",
    ]  # fmt: skip
    return cmd, hidden


def _write_secrets(path: Path, hidden: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        for key, value in sorted(hidden.items()):
            handle.write(f"{key} {value.replace(chr(92), chr(92) * 2)}\n")


def thrift_status(settings: Settings) -> str:
    """One line: whether the server runs, where, and its pid."""
    paths = ThriftPaths.of(settings)
    host, port = settings.services.bind_host, settings.services.thrift_port
    pid = read_pid(paths.pid_file)
    listening = is_listening(host, port)
    state = (
        "running"
        if listening and pid
        else "starting"
        if pid
        else "listening (not ours)"
        if listening
        else "stopped"
    )
    suffix = f" (pid {pid}, log {paths.log_file})" if pid else ""
    return f"thrift server on {host}:{port}: {state}{suffix}"


def start_thrift(
    settings: Settings, timeout_s: float = 240.0, driver_memory: str | None = None, log=print
) -> int:
    """Start the Thrift server unless ours runs; wait until it listens; return its pid."""
    paths = ThriftPaths.of(settings)
    host, port = settings.services.bind_host, settings.services.thrift_port
    pid = read_pid(paths.pid_file)
    if pid and is_listening(host, port):
        return pid
    if not pid and is_listening(host, port):
        raise ConfigError(
            f"port {host}:{port} is taken by another process; set services.thrift_port"
        )
    refuse_jvm("the Thrift server")
    ensure_catalog(settings)
    for path in (paths.pid_file, paths.log_file):
        path.parent.mkdir(parents=True, exist_ok=True)
    if not pid:
        started = time.monotonic()
        cmd, hidden = thrift_command(settings, driver_memory)
        if hidden:
            _write_secrets(paths.secrets_file, hidden)
        with paths.log_file.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=settings.home,
            )
        pid = proc.pid
        paths.pid_file.write_text(str(pid))
        log(f"thrift server starting (pid {pid}, log {paths.log_file})")
    else:
        proc, started = None, time.monotonic()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if is_listening(host, port):
            paths.secrets_file.unlink(missing_ok=True)  # read by spark-submit at launch
            log(f"thrift server listening on {host}:{port} after {time.monotonic() - started:.1f}s")
            return pid
        if proc is not None and proc.poll() is not None:
            paths.pid_file.unlink(missing_ok=True)
            paths.secrets_file.unlink(missing_ok=True)
            raise ServiceUnavailable(
                f"the thrift server exited (code {proc.returncode}); see {paths.log_file}"
            )
        time.sleep(0.5)
    raise ServiceUnavailable(
        f"the thrift server did not listen on {host}:{port} within {timeout_s:.0f}s; see {paths.log_file}"
    )


def stop_thrift(settings: Settings, timeout_s: float = 60.0) -> bool:
    """Stop our Thrift server (its process group, by the recorded pid); True if one ran."""
    return stop_group(ThriftPaths.of(settings).pid_file, grace_s=timeout_s)


serve_app = typer.Typer(
    help="The Spark Thrift Server: the lake's SQL endpoint on 127.0.0.1 (read by Superset)."
)


@serve_app.command("start")
def serve_start(
    driver_memory: Annotated[
        str | None, typer.Option(help="Driver memory of the server JVM.")
    ] = None,
) -> None:
    """Start the Thrift server (no-op when it runs already)."""
    settings = load_settings()
    start_thrift(settings, driver_memory=driver_memory, log=typer.echo)
    typer.echo(thrift_status(settings))


@serve_app.command("stop")
def serve_stop() -> None:
    """Stop the Thrift server this installation started."""
    settings = load_settings()
    stop_thrift(settings)
    typer.echo(thrift_status(settings))


@serve_app.command("status")
def serve_status() -> None:
    """Say whether the Thrift server runs."""
    typer.echo(thrift_status(load_settings()))
