"""The SQL endpoint for analysts: the Spark Thrift Server, started and stopped by the project.

The server is the pip pyspark's ``HiveThriftServer2`` launched through ``spark-submit`` with the
one Spark configuration of the project (``quicexp.spark.spark_conf``) turned into ``--conf``
flags. Jars go through ``--jars`` *and* ``spark.driver.extraClassPath`` (``--packages`` jars never
reach Thrift sessions), the listener binds to 127.0.0.1 only, and the metastore is the shared
Derby network server, so tables and days the pipeline writes appear without a restart.

What the server's JVM holds: a Spark home of its own (``<home>/run/thrift-spark-home``: pyspark's
``bin`` and its jars but Derby's embedded engine and the Hive JDBC driver), and of the project's
jars Delta, the one JDBC driver its metastore needs and the project jar.

Who may connect: HiveServer2 ``CUSTOM`` authentication with the project's
``quicexp.jvm.ThriftPasswordAuth`` (jvm/src) over the logins file
``<state_dir>/thrift/logins.properties`` (0600; each login's role and a PBKDF2 key of its
password, never the password). The first ``serve start`` generates two logins: ``analyst``
(notebooks, scripts: :func:`connect`) and ``superset`` (Superset's lake connection), each with
its password in ``<state_dir>/thrift/<login>.login`` (0600); ``quicexp serve add-login`` adds
more. What they may run: the session extension ``quicexp.jvm.SqlGuardExtension``, an allow-list
decided on the plans Spark builds: read-only queries over the catalog tables of the lake's
schemas, SHOW/DESCRIBE, USE (and, for the analyst role, temporary views and SET of a few session
options). The threat model is in docs/serving.md.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from quicexp.catalog import ensure_catalog, is_listening, refuse_jvm
from quicexp.config import ConfigError, Settings, load_settings
from quicexp.errors import ServiceUnavailable
from quicexp.jars import SQL_GUARD_CLASS, THRIFT_AUTH_CLASS, cached_jars, project_jar
from quicexp.pidfile import read_pid, stop_group
from quicexp.spark import SECRET_KEYS, jvm_environment, spark_conf

THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"

# Keys of spark_conf that spark-submit takes as flags, or that make no sense for a server.
_SKIPPED_CONF = {
    "spark.pyspark.python",
    "spark.master",
    "spark.driver.memory",
    "spark.jars",
    "spark.app.name",
}
#: The roles a login can have (quicexp.jvm.Logins.Role): both read the lake only; ``analyst`` may
#: also create temporary views and SET a few session options, ``superset`` runs queries, SHOW,
#: DESCRIBE and USE (what Superset sends).
ROLES = ("analyst", "superset")
#: The logins the first ``serve start`` generates: login name -> role.
DEFAULT_LOGINS = {"analyst": "analyst", "superset": "superset"}
#: PBKDF2-HMAC-SHA256 iterations of a generated login's key in the server's logins file.
PBKDF2_ITERATIONS = 100_000
_LOGIN_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
#: The system property (set with --hiveconf) and variable naming the logins file for the server's
#: ThriftPasswordAuth and SQL guard.
CREDENTIALS_PROPERTY = "quicexp.thrift.credentials"
CREDENTIALS_VARIABLE = "QUICEXP_THRIFT_CREDENTIALS"
#: Jars of pyspark's folder the server does without: Derby's embedded engine (the metastore is the
#: Derby network server, reached with derbyclient) and the Hive JDBC client driver.
SERVER_EXCLUDED_JARS = ("derby-", "hive-jdbc-")
#: The server options its SQL guard depends on (quicexp.jvm.GuardedParser.PINNED): no relation
#: is resolved from a path, no SQL script runs.
GUARD_PINNED_CONF = {"spark.sql.runSQLOnFiles": "false", "spark.sql.scripting.enabled": "false"}
#: The guard's lake schemas (quicexp.jvm.SqlGuardExtension.SCHEMAS).
GUARD_SCHEMAS_KEY = "spark.quicexp.guard.schemas"


@dataclass(frozen=True)
class ThriftPaths:
    """Where the server's pid file, log, logins and private Spark home live."""

    pid_file: Path
    log_file: Path
    secrets_file: Path
    logins: Path
    spark_home: Path

    @classmethod
    def of(cls, settings: Settings) -> ThriftPaths:
        run = settings.home / "run"
        return cls(
            run / "thrift-server.pid",
            settings.home / "logs" / "thrift-server.log",
            settings.state_dir / "run" / "thrift-secrets.properties",
            settings.state_dir / "thrift" / "logins.properties",
            run / "thrift-spark-home",
        )

    def login_file(self, name: str) -> Path:
        """The client side of a login: its user name and password (0600)."""
        return self.logins.parent / f"{name}.login"

    @property
    def authentication(self) -> Path:
        """An operator's HiveServer2 authentication settings (LDAP, …), optional."""
        return self.logins.parent / "authentication.properties"


def _read_properties(path: Path) -> dict[str, str]:
    return dict(
        (key.strip(), value.strip())
        for key, value in (line.split("=", 1) for line in path.read_text().splitlines()
                           if "=" in line and not line.lstrip().startswith("#"))
    )  # fmt: skip


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) atomically: a complete temporary file renamed into place."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    partial.replace(path)


@contextmanager
def _logins_lock(settings: Settings) -> Iterator[ThriftPaths]:
    """The logins folder (0700), locked against other processes generating logins at once."""
    paths = ThriftPaths.of(settings)
    folder = paths.logins.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield paths
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pbkdf2_entry(password: str, salt: bytes | None = None, iterations: int = PBKDF2_ITERATIONS) -> str:
    """The logins file's key of ``password``: ``sha256:<iterations>:<salt>:<key>`` (base64), the
    form quicexp.jvm.Logins checks (PBKDF2-HMAC-SHA256, RFC 8018 §5.2)."""
    salt = secrets.token_bytes(16) if salt is None else salt
    key = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"sha256:{iterations}:{base64.b64encode(salt).decode()}:{base64.b64encode(key).decode()}"


def add_login(settings: Settings, name: str, role: str, external: bool = False) -> Path | None:
    """Add (or replace) a login of the Thrift server; return its client file (None if ``external``).

    The password (``secrets.token_urlsafe``) goes to ``<state_dir>/thrift/<name>.login`` (0600),
    its PBKDF2 key and the role to the server's logins file; the server reads that file again at
    the next login. ``external``: the role only, for a user whom LDAP authenticates.
    """
    if not _LOGIN_NAME.fullmatch(name):
        raise ConfigError(f"login name {name!r}: lower-case letters, digits, '_' or '-', starting with a letter")
    if role not in ROLES:
        raise ConfigError(f"role {role!r}: one of {', '.join(ROLES)}")
    with _logins_lock(settings) as paths:
        return _add_login_locked(paths, name, role, external)


def _add_login_locked(paths: ThriftPaths, name: str, role: str, external: bool) -> Path | None:
    lines = paths.logins.read_text().splitlines() if paths.logins.exists() else [
        "# generated by quicexp: the Thrift server's logins (role, PBKDF2 key); keep private",
    ]  # fmt: skip
    lines = [line for line in lines if not line.startswith(f"login.{name}.")]
    lines.append(f"login.{name}.role={role}")
    client = None
    if not external:
        password = secrets.token_urlsafe(24)
        lines.append(f"login.{name}.pbkdf2={pbkdf2_entry(password)}")
        client = paths.login_file(name)
        _write_private(client, f"# generated by quicexp: Thrift login {name!r} (role {role}); keep private\n"
                               f"user={name}\npassword={password}\n")  # fmt: skip
    else:
        paths.login_file(name).unlink(missing_ok=True)
    _write_private(paths.logins, "\n".join(lines) + "\n")
    return client


def ensure_logins(settings: Settings) -> None:
    """Generate the default logins that are missing (server entry or client file), under the lock
    so processes that start at once agree on one password per login."""
    paths = ThriftPaths.of(settings)
    if _default_logins_present(paths):
        return
    with _logins_lock(settings):
        for name, role in DEFAULT_LOGINS.items():
            known = _read_properties(paths.logins) if paths.logins.exists() else {}
            if known.get(f"login.{name}.role") != role or not paths.login_file(name).exists():
                _add_login_locked(paths, name, role, external=False)


def _default_logins_present(paths: ThriftPaths) -> bool:
    known = _read_properties(paths.logins) if paths.logins.exists() else {}
    return all(known.get(f"login.{n}.role") == r and paths.login_file(n).exists() for n, r in DEFAULT_LOGINS.items())


def thrift_login(settings: Settings, name: str = "analyst", create: bool = True) -> tuple[str, str]:
    """A Thrift login's (user, password) from its client file (0600); generated on first use.

    Never printed or logged.
    """
    if create:
        ensure_logins(settings)
    path = ThriftPaths.of(settings).login_file(name)
    if not path.exists():
        hint = "run `quicexp serve start`" if name in DEFAULT_LOGINS else f"run `quicexp serve add-login {name}`"
        raise ConfigError(f"the Thrift server has no login {name!r} ({path}): {hint}")
    values = _read_properties(path)
    if not values.get("user") or not values.get("password"):
        raise ConfigError(f"{path} lacks user or password; delete it and run `quicexp serve start`")
    return values["user"], values["password"]


def connect(settings: Settings, login: str = "analyst", **kwargs):
    """A DB-API connection (pyhive) to this installation's Thrift server, logged in as ``login``.

    For notebooks and scripts that query the lake over SQL instead of starting a Spark JVM.
    """
    from pyhive import hive

    user, password = thrift_login(settings, login, create=False)
    return hive.connect(
        host=settings.services.bind_host,
        port=settings.services.thrift_port,
        username=user,
        password=password,
        auth="CUSTOM",
        **kwargs,
    )


def server_spark_home(settings: Settings, create: bool = True) -> Path:
    """The server's Spark home: pyspark's ``bin`` and jars but :data:`SERVER_EXCLUDED_JARS`.

    ``spark-submit`` puts every jar of ``$SPARK_HOME/jars`` on the class path; a home of links
    keeps Derby's embedded engine (a JDBC URL would run any Derby statement inside the server)
    and the Hive JDBC driver off it. Rebuilt at each start, so it follows the installed pyspark.
    """
    import pyspark

    source = Path(pyspark.__file__).parent
    home = ThriftPaths.of(settings).spark_home
    if create:
        if home.exists():
            shutil.rmtree(home)
        (home / "jars").mkdir(parents=True)
        (home / "bin").symlink_to(source / "bin", target_is_directory=True)
        for jar in sorted((source / "jars").glob("*.jar")):
            if not jar.name.startswith(SERVER_EXCLUDED_JARS):
                (home / "jars" / jar.name).symlink_to(jar)
    return home


def spark_submit() -> Path:
    """The ``spark-submit`` of the pip pyspark installed next to this interpreter."""
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if not path.exists():
        raise ServiceUnavailable(f"spark-submit not found at {path}; run `make setup`")
    return path


def _authentication_overrides(paths: ThriftPaths) -> list[str]:
    """``--hiveconf`` flags of the operator's ``authentication.properties`` (``hive.server2.authentication*``
    keys only: LDAP and the like, docs/serving.md)."""
    if not paths.authentication.exists():
        return []
    flags = []
    for key, value in sorted(_read_properties(paths.authentication).items()):
        if not key.startswith("hive.server2.authentication"):
            raise ConfigError(f"{paths.authentication}: {key} is not a hive.server2.authentication setting")
        flags += ["--hiveconf", f"{key}={value}"]
    return flags


def thrift_command(
    settings: Settings, driver_memory: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command line of the Thrift server, and the secret settings kept off it
    (to be written to ``ThriftPaths.secrets_file``, which the command names). Pure."""
    conf = server_conf(settings)
    hidden = {key: conf.pop(key) for key in SECRET_KEYS if key in conf}
    services = settings.services
    paths = ThriftPaths.of(settings)
    cmd = [
        str(paths.spark_home / "bin" / "spark-submit"),
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
        "--hiveconf", "hive.server2.authentication=CUSTOM",
        "--hiveconf", f"hive.server2.custom.authentication.class={THRIFT_AUTH_CLASS}",
        "--hiveconf", f"{CREDENTIALS_PROPERTY}={paths.logins}",
        "--hiveconf", "hive.server2.enable.doAs=false",
        *_authentication_overrides(paths),
    ]  # fmt: skip
    return cmd, hidden


#: The project's cached jars the server needs, by metastore kind: Delta and the metastore's driver.
SERVER_JARS = {
    "derby-server": ("delta-spark_2.13", "delta-storage", "derbyclient"),
    "jdbc": ("delta-spark_2.13", "delta-storage", "postgresql"),
}


def server_conf(settings: Settings) -> dict[str, str]:
    """The project's Spark configuration plus what only the server has: of the cached jars only
    Delta and its metastore's JDBC driver, the project jar (logins, SQL guard) on both class
    paths, the guard among the session extensions with the lake's schemas, and the options the
    guard depends on."""
    conf = spark_conf(settings, "quicexp-thrift-server")
    jars = [str(p) for p in cached_jars(settings.jar_cache, SERVER_JARS[settings.catalog.kind])]
    jars.append(str(project_jar(settings.jar_cache)))
    conf["spark.jars"] = ",".join(jars)
    conf["spark.driver.extraClassPath"] = os.pathsep.join(jars)
    extensions = [e for e in conf.get("spark.sql.extensions", "").split(",") if e]
    conf["spark.sql.extensions"] = ",".join([*extensions, SQL_GUARD_CLASS])
    conf[GUARD_SCHEMAS_KEY] = ",".join(
        dict.fromkeys([settings.bronze_schema, settings.silver_schema, settings.gold_schema])
    )
    conf.update(GUARD_PINNED_CONF)
    return conf


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
        ensure_logins(settings)  # generated on the first start (0600), read at every login
        server_spark_home(settings)
        cmd, hidden = thrift_command(settings, driver_memory)
        if hidden:
            _write_secrets(paths.secrets_file, hidden)
        env = {
            **os.environ,
            **jvm_environment(server_conf(settings)),  # SPARK_LOCAL_IP: a Spark UI stays on loopback
            CREDENTIALS_VARIABLE: str(paths.logins),
            "SPARK_HOME": str(paths.spark_home),
        }
        with paths.log_file.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=settings.home,
                env=env,
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


@serve_app.command("add-login")
def serve_add_login(
    name: Annotated[str, typer.Argument(help="The login's user name.")],
    role: Annotated[str, typer.Option(help=f"One of {', '.join(ROLES)}.")] = "analyst",
    external: Annotated[
        bool, typer.Option(help="Role only: the user is authenticated by LDAP (docs/serving.md).")
    ] = False,
) -> None:
    """Add or replace a login of the Thrift server (takes effect at its next login, no restart)."""
    client = add_login(load_settings(), name, role, external)
    where = f"its password is in {client} (0600)" if client else "authenticated by the server's LDAP"
    typer.echo(f"login {name} (role {role}): {where}")
