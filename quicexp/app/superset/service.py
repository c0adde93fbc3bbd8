"""Superset for analysts: one-command setup, the web server on 127.0.0.1, bundle import/export.

Superset lives in its own environment (.venvs/superset); this module drives it through
subprocesses. Its configuration module is ``quicexp/app/superset/superset_config.py``; its state
(SECRET_KEY, admin password, SQLite metadata DB) is under ``<state_dir>/superset/``, generated
at setup with ``secrets.token_urlsafe`` into files of mode 0600 and never in the repository.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from quicexp.app.superset import bundle
from quicexp.catalog import is_listening
from quicexp.config import REPO_ROOT, ConfigError, Settings
from quicexp.errors import ServiceUnavailable
from quicexp.pidfile import read_pid, stop_group

HERE = Path(__file__).resolve().parent
SUPERSET_VENV = Path(os.environ.get("QUICEXP_SUPERSET_VENV", REPO_ROOT / ".venvs" / "superset"))
ADMIN_USER = "admin"


@dataclass(frozen=True)
class SupersetPaths:
    """Files of one installation's Superset (all outside the repository)."""

    root: Path

    @classmethod
    def of(cls, settings: Settings) -> SupersetPaths:
        return cls(settings.state_dir / "superset")

    secret_key = property(lambda self: self.root / "secret_key")
    admin_password = property(lambda self: self.root / "admin_password")
    pid_file = property(lambda self: self.root / "superset.pid")
    log_file = property(lambda self: self.root / "superset.log")
    setup_stamp = property(lambda self: self.root / "setup.done")


def _write_secret(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    os.chmod(path, 0o600)


def superset_env(settings: Settings) -> dict[str, str]:
    """Environment of every Superset process: our config module and the state folder."""
    paths = SupersetPaths.of(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        {
            "SUPERSET_CONFIG_PATH": str(HERE / "superset_config.py"),
            "QUICEXP_SUPERSET_DIR": str(paths.root),
            "FLASK_APP": "superset.app:create_app()",
            "SUPERSET_HOME": str(paths.root / "home"),
            "PATH": f"{SUPERSET_VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    return env


def _run(settings: Settings, args: list[str], what: str, stdin: str | None = None) -> str:
    exe = SUPERSET_VENV / "bin" / args[0]
    if not exe.exists():
        raise ServiceUnavailable(f"{exe} not found: run `make setup` (the superset environment)")
    proc = subprocess.run(
        [str(exe), *args[1:]],
        env=superset_env(settings),
        input=stdin,
        capture_output=True,
        text=True,
        cwd=SupersetPaths.of(settings).root,
        check=False,
    )
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
        raise ServiceUnavailable(
            f"superset {what} failed: {lines[-1] if lines else f'exit {proc.returncode}'}"
        )
    return proc.stdout


def _task(settings: Settings, *args: str, stdin: str | None = None) -> str:
    return _run(settings, ["python", str(HERE / "_in_superset.py"), *args], args[0], stdin)


def setup(settings: Settings, log=print) -> str | None:
    """Create secrets, the metadata DB, roles and the admin user; import the bundle.

    Returns the admin password when this call generated it (to be shown once), else None.
    """
    paths = SupersetPaths.of(settings)
    paths.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not paths.secret_key.exists():
        _write_secret(paths.secret_key, secrets.token_urlsafe(48))
        log(f"generated SECRET_KEY in {paths.secret_key}")
    started = time.monotonic()
    _run(settings, ["superset", "db", "upgrade"], "db upgrade")
    log(f"superset metadata DB upgraded in {time.monotonic() - started:.1f}s")
    password = None
    if not paths.admin_password.exists():
        password = secrets.token_urlsafe(18)
        _task(settings, "admin", stdin=password + "\n")
        _write_secret(paths.admin_password, password)
    step = time.monotonic()
    _run(settings, ["superset", "init"], "init")
    log(f"superset roles and permissions initialised in {time.monotonic() - step:.1f}s")
    import_bundle(settings, log=log)
    paths.setup_stamp.write_text(f"{time.time():.0f}\n")
    return password


def import_bundle(settings: Settings, root: Path = bundle.BUNDLE_DIR, log=print) -> int:
    """Import (overwrite by UUID) the bundle in ``root`` rendered for ``settings``; count of files."""
    files = bundle.load_bundle(root)
    broken = list(bundle.uuid_links(files))
    if broken:
        raise ConfigError(f"bundle {root} has broken links: {broken[0]}")
    # The lake connection logs in to the Thrift server as its own login (role superset: queries,
    # SHOW, DESCRIBE, USE): the user in the URI, the password on the importer's stdin (stored
    # encrypted with SECRET_KEY by Superset).
    from quicexp.app.serve import thrift_login

    user, password = thrift_login(settings, "superset")
    rendered = bundle.render(files, settings, user)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "bundle.zip"
        archive.write_bytes(bundle.to_zip(rendered))
        _task(settings, "import", str(archive), stdin=password + "\n")
    log(f"imported {len(files) - 1} assets from {root} in {time.monotonic() - started:.1f}s")
    return len(files) - 1


def export_bundle(settings: Settings, root: Path = bundle.BUNDLE_DIR, log=print) -> list[Path]:
    """Export every dashboard from Superset, normalise it and write it to ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "export.zip"
        _task(settings, "export", str(archive))
        files = bundle.normalise(bundle.read_zip(archive.read_bytes()), settings)
    written = bundle.write_bundle(files, root)
    log(f"exported {len(written) - 1} assets to {root}")
    return written


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def base_url(settings: Settings) -> str:
    return f"http://{settings.services.bind_host}:{settings.services.superset_port}"


def start(settings: Settings, timeout_s: float = 300.0, log=print) -> int:
    """Start the web server (gunicorn, 127.0.0.1) unless ours runs; wait for /health."""
    paths = SupersetPaths.of(settings)
    if not paths.setup_stamp.exists():
        raise ConfigError("superset is not set up: run `quicexp superset setup` first")
    host, port = settings.services.bind_host, settings.services.superset_port
    pid = read_pid(paths.pid_file)
    if pid is None and is_listening(host, port):
        raise ConfigError(
            f"port {host}:{port} is taken by another process; set services.superset_port"
        )
    if pid is None:
        cmd = [
            str(SUPERSET_VENV / "bin" / "gunicorn"),
            "--bind", f"{host}:{port}",
            "--workers", "1", "--worker-class", "gthread", "--threads", "8",
            "--timeout", "300", "--limit-request-line", "0", "--limit-request-field_size", "0",
            "superset.app:create_app()",
        ]  # fmt: skip
        with paths.log_file.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                env=superset_env(settings),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=paths.root,
            )
        pid = proc.pid
        paths.pid_file.write_text(str(pid))
        log(f"superset starting (pid {pid}, log {paths.log_file})")
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if _healthy(base_url(settings)):
            log(f"superset healthy at {base_url(settings)} after {time.monotonic() - started:.1f}s")
            return pid
        if read_pid(paths.pid_file) is None:
            raise ServiceUnavailable(f"superset exited during start; see {paths.log_file}")
        time.sleep(1)
    raise ServiceUnavailable(
        f"superset did not answer /health within {timeout_s:.0f}s; see {paths.log_file}"
    )


def stop(settings: Settings) -> bool:
    """Stop our web server (its process group, by the recorded pid); True if one ran."""
    return stop_group(SupersetPaths.of(settings).pid_file)


def status(settings: Settings) -> str:
    paths = SupersetPaths.of(settings)
    pid = read_pid(paths.pid_file)
    url = base_url(settings)
    state = "healthy" if pid and _healthy(url) else "starting" if pid else "stopped"
    setup_state = "set up" if paths.setup_stamp.exists() else "not set up"
    return f"superset at {url}: {state}, {setup_state} (state in {paths.root})"
