"""The shared Hive metastore of the embedded default: a Derby network server on 127.0.0.1.

Derby embedded admits one JVM; a Derby *network* server admits many, so a Spark job, a
dbt run, the Thrift server and a notebook can use the same table names at once. In
production the same Spark settings point at PostgreSQL instead (``catalog.kind: jdbc``).
See docs/decisions.md, "Catalog".
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from quicexp.config import ConfigError, Settings
from quicexp.errors import ServiceUnavailable
from quicexp.jars import cached_jars

_SERVER_CLASS = "org.apache.derby.drda.NetworkServerControl"


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _derby_classpath(settings: Settings) -> str:
    bundled = _pyspark_jars()
    parts = sorted(str(p) for p in bundled.glob("derby*.jar"))
    parts += [str(p) for p in cached_jars(settings.jar_cache, ("derbynet", "derbyclient"))]
    return os.pathsep.join(parts)


def is_listening(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _control(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    cat = settings.catalog
    cmd = ["java", "-cp", _derby_classpath(settings), _SERVER_CLASS, *args, "-h", cat.host, "-p", str(cat.port)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def _listener_pid(port: int) -> int | None:
    """Pid of the process listening on TCP ``port``, or None when the OS does not say (e.g. not root on macOS)."""
    import psutil

    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):  # e.g. macOS without root
        return None
    return next((c.pid for c in conns if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port), None)


def _server_home(pid: int) -> Path | None:
    """The ``derby.system.home`` a Derby network server process was started with, if it is one."""
    import psutil

    try:
        args = psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    if _SERVER_CLASS not in args:
        return None
    home = next((a.split("=", 1)[1] for a in args if a.startswith("-Dderby.system.home=")), None)
    return Path(home) if home else None


def _foreign_listener(settings: Settings) -> str | None:
    """Who holds the catalog port when it is not this home's metastore server, else None.

    None also when the OS does not name the listener (then it is taken to be ours, as before).
    """
    pid = _listener_pid(settings.catalog.port)
    if pid is None:
        return None
    home = _server_home(pid)
    if home is not None and home.resolve() == settings.metastore_dir.resolve():
        return None
    return f"{f'the metastore server of {home}' if home else 'another program'} (pid {pid})"


def _check_owner(settings: Settings) -> None:
    """Refuse (one line) a catalog port held by anything but this home's metastore server.

    Sharing another home's server would tie this home's catalog to that server's lifetime (its
    owner stops it when done) and send its log elsewhere.
    """
    foreign = _foreign_listener(settings)
    if foreign:
        cat = settings.catalog
        raise ConfigError(
            f"the catalog port {cat.host}:{cat.port} is taken by {foreign}, not by this home's metastore "
            f"server ({settings.metastore_dir}); set catalog.port (QUICEXP_CATALOG__PORT) to a free port"
        )


#: Set (to anything but empty) where no JVM may start: ``make test-fast`` sets it, so a test that
#: starts Spark or Derby without its marker fails at once instead of slowing the fast layer.
NO_JVM_VARIABLE = "QUICEXP_NO_JVM"


def refuse_jvm(what: str) -> None:
    """Raise when this process (or its parent run) forbids starting a JVM (``QUICEXP_NO_JVM``)."""
    if os.environ.get(NO_JVM_VARIABLE):
        raise ServiceUnavailable(
            f"{what} needs a JVM, and {NO_JVM_VARIABLE} forbids starting one here "
            "(a test that uses Spark or a service must carry the `spark` or `e2e` marker)"
        )


def start_derby(settings: Settings, timeout_s: float = 60.0) -> bool:
    """Start this home's Derby network server unless it is running; True if this call started it.

    Raises :class:`ConfigError` when the port is held by something else (another home's server).
    """
    cat = settings.catalog
    if is_listening(cat.host, cat.port):
        _check_owner(settings)
        return False
    refuse_jvm("the metastore server")
    settings.metastore_dir.mkdir(parents=True, exist_ok=True)
    log = (settings.metastore_dir / "derby-server.log").open("ab")
    cmd = [
        "java",
        f"-Dderby.system.home={settings.metastore_dir}",
        "-Dderby.drda.host=" + cat.host,
        "-Xmx256m",
        "-cp",
        _derby_classpath(settings),
        _SERVER_CLASS,
        "start",
        "-h",
        cat.host,
        "-p",
        str(cat.port),
        "-noSecurityManager",
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    (settings.metastore_dir / "derby-server.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if is_listening(cat.host, cat.port):
            return True
        if proc.poll() is not None:
            if is_listening(cat.host, cat.port):  # another process won the race
                _check_owner(settings)
                return False
            raise ServiceUnavailable(
                f"the metastore server exited (code {proc.returncode}); see {settings.metastore_dir}/derby-server.log"
            )
        time.sleep(0.2)
    raise ServiceUnavailable(f"the metastore server did not listen on {cat.host}:{cat.port} within {timeout_s:.0f}s")


def stop_derby(settings: Settings) -> bool:
    """Shut this home's Derby network server down; True if it was running.

    A listener that is not this home's server (another home's, another program) is left alone.
    """
    cat = settings.catalog
    if not is_listening(cat.host, cat.port):
        return False
    if _foreign_listener(settings):
        return False
    _control(settings, "shutdown")
    deadline = time.monotonic() + 30
    while is_listening(cat.host, cat.port) and time.monotonic() < deadline:
        time.sleep(0.2)
    return True


def ensure_catalog(settings: Settings) -> None:
    """Make sure the metastore the settings name is reachable (start it when it is ours)."""
    if settings.catalog.kind == "derby-server":
        start_derby(settings)


def catalog_status(settings: Settings) -> str:
    cat = settings.catalog
    if cat.kind == "jdbc":
        return f"external metastore at {cat.jdbc_url}"
    state = "stopped"
    if is_listening(cat.host, cat.port):
        foreign = _foreign_listener(settings)
        state = f"port taken by {foreign}" if foreign else "running"
    return f"derby network server on {cat.host}:{cat.port}: {state} (data in {settings.metastore_dir})"
