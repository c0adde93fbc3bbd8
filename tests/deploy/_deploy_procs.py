"""Real servers for the deployment tests: a Spark standalone cluster and a PostgreSQL server.

Both bind to 127.0.0.1 on free ports, keep their state in throwaway directories, run in their
own process groups and are stopped by the fixture that started them (never by name).
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_BIN = Path(pyspark.__file__).parent / "bin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def subprocess_env(**updates: str | None) -> dict[str, str]:
    """This process's environment with ``updates`` applied (None removes a variable)."""
    env = dict(os.environ)
    for key, value in updates.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def wait_for(what: str, ready: Callable[[], bool], timeout_s: float, procs=(), logs=()) -> None:
    """Poll ``ready`` until true; fail with the tail of ``logs`` if a process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"{what}: process exited with {dead[0].returncode}\n{tail(*logs)}")
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not ready within {timeout_s:.0f}s\n{tail(*logs)}")


def tail(*paths: Path, lines: int = 30) -> str:
    out = []
    for path in paths:
        if Path(path).exists():
            out.append(f"--- {path}\n" + "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:]))
    return "\n".join(out)


def stop_group(proc: subprocess.Popen, timeout_s: float = 30) -> None:
    """Stop a process started with ``start_new_session=True`` and everything it spawned."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _spawn(cmd: list[str], log: Path, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, cwd=cwd, start_new_session=True,
        )  # fmt: skip


# --------------------------------------------------------------------------- Spark standalone


@dataclass
class StandaloneCluster:
    """A Spark standalone master and its workers, all on 127.0.0.1."""

    master_url: str
    web_url: str
    root: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    def state(self) -> dict:
        """The master's JSON status page (workers, running and completed applications)."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=20) as response:
            return json.load(response)

    def _poll(self) -> dict:
        try:
            return self.state()
        except (OSError, ValueError):  # not up yet, or too busy to answer in time
            return {}

    def alive_workers(self) -> int:
        return int(self._poll().get("aliveworkers", 0))

    def stop(self) -> None:
        for proc in reversed(self.procs):
            stop_group(proc)


def start_standalone(root: Path, workers: int = 2, cores: int = 1, memory: str = "1g", timeout_s: float = 300) -> StandaloneCluster:
    """Start a master and ``workers`` workers from the installed pyspark (``spark-class``)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root / "logs")}
    env.pop("SPARK_MASTER", None)
    port, web = free_port(), free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}", root)
    spark_class = str(SPARK_BIN / "spark-class")
    master_log = root / "logs" / "master.log"
    cluster.procs.append(
        _spawn(
            [spark_class, "org.apache.spark.deploy.master.Master",
             "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web)],
            master_log, env,
        )
    )  # fmt: skip
    try:
        wait_for("spark master", lambda: cluster._poll().get("status") == "ALIVE", timeout_s, cluster.procs, [master_log])
        logs = [master_log]
        for i in range(workers):
            work = root / f"worker{i}"
            work.mkdir(parents=True, exist_ok=True)
            logs.append(root / "logs" / f"worker{i}.log")
            cluster.procs.append(
                _spawn(
                    [spark_class, "org.apache.spark.deploy.worker.Worker",
                     "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                     "--cores", str(cores), "--memory", memory, "--work-dir", str(work), cluster.master_url],
                    logs[-1], env,
                )
            )  # fmt: skip
        wait_for("spark workers", lambda: cluster.alive_workers() == workers, timeout_s, cluster.procs, logs)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def executor_python(root: Path) -> Path:
    """An interpreter with the pipeline's *dependencies* but not the project itself.

    A venv whose only path entry is the pipeline environment's site-packages, added as a plain
    directory: its ``.pth`` files (among them the editable install of this repository) are not
    processed, so ``import jobs`` works on an executor only if the code was shipped to it.
    """
    env_dir = root / "executor-env"
    if not (env_dir / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
        site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "pyspark").exists())
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        (env_dir / "lib" / version / "site-packages" / "_pipeline_deps.pth").write_text(site + "\n")
    return env_dir / "bin" / "python"


# --------------------------------------------------------------------------- PostgreSQL


@dataclass
class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1 with one database and one role."""

    port: int
    data_dir: Path
    bin_dir: Path
    superuser_password: str
    database: str = "quicexp_metastore"
    user: str = "quicexp"
    password: str = ""

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    def connect(self, database: str | None = None, as_superuser: bool = False):
        import psycopg2

        user, password = ("postgres", self.superuser_password) if as_superuser else (self.user, self.password)
        return psycopg2.connect(
            host="127.0.0.1", port=self.port, dbname=database or self.database, user=user, password=password
        )

    def stop(self) -> None:
        subprocess.run(
            _as_postgres([str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w"]),
            capture_output=True, check=False, timeout=120,
        )  # fmt: skip
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def _as_postgres(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its programs as the ``postgres`` system user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def start_postgres(timeout_s: float = 120) -> PostgresServer:
    """initdb into a fresh directory, start on a free loopback port, create role + database."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL server binaries are missing: run scripts/test-deps.d/postgresql.sh")
    # Not under pytest's tmp dir: that one is private to root and the server runs as `postgres`.
    root = Path(tempfile.mkdtemp(prefix="quicexp-pg-"))
    data = root / "data"
    pwfile = root / "pwfile"
    superuser_password = secrets.token_urlsafe(24)
    pwfile.write_text(superuser_password + "\n")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(pwfile, "postgres")
    pwfile.chmod(0o600)
    port = free_port()
    try:
        subprocess.run(
            _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=scram-sha-256",
                          f"--pwfile={pwfile}", "--encoding=UTF8", "--no-sync"]),
            check=True, capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
        pwfile.unlink()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={data} -c fsync=off"
        log = root / "postgres.log"
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "start", "-D", str(data), "-o", options, "-l", str(log),
                          "-w", "-t", str(int(timeout_s))]),
            check=True, capture_output=True, text=True, timeout=timeout_s + 10,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"postgres did not start: {exc.stderr or exc.stdout}") from None
    server = PostgresServer(port, data, bin_dir, superuser_password, password=secrets.token_urlsafe(24))
    try:
        admin = server.connect("postgres", as_superuser=True)
        admin.autocommit = True
        with admin.cursor() as cur:
            cur.execute(f"CREATE ROLE {server.user} LOGIN PASSWORD %s", (server.password,))
            cur.execute(f"CREATE DATABASE {server.database} OWNER {server.user}")
        admin.close()
    except BaseException:
        server.stop()
        raise
    return server
