"""``quicexp superset setup|start|stop|status|import|export``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from quicexp.app.superset import bundle, service
from quicexp.config import load_settings

superset_app = typer.Typer(
    help="Superset on the lake: setup, server on 127.0.0.1, dashboards as code."
)

BundleOption = Annotated[Path, typer.Option("--bundle", help="Bundle folder.")]


@superset_app.command("setup")
def setup_cmd() -> None:
    """Metadata DB, generated SECRET_KEY and admin password (printed once), dashboards imported."""
    settings = load_settings()
    password = service.setup(settings, log=typer.echo)
    paths = service.SupersetPaths.of(settings)
    if password:
        typer.echo(f"admin user: {service.ADMIN_USER}  password: {password}")
        typer.echo(f"(shown once; kept in {paths.admin_password}, mode 0600)")
    else:
        typer.echo(f"admin password unchanged; it is in {paths.admin_password}")


@superset_app.command("start")
def start_cmd() -> None:
    """Start the Superset web server on 127.0.0.1 (no-op when it runs)."""
    settings = load_settings()
    service.start(settings, log=typer.echo)
    typer.echo(service.status(settings))


@superset_app.command("stop")
def stop_cmd() -> None:
    """Stop the Superset web server this installation started."""
    settings = load_settings()
    service.stop(settings)
    typer.echo(service.status(settings))


@superset_app.command("status")
def status_cmd() -> None:
    """Say whether Superset runs and is set up."""
    typer.echo(service.status(load_settings()))


@superset_app.command("import")
def import_cmd(root: BundleOption = bundle.BUNDLE_DIR) -> None:
    """Import the dashboards bundle (overwrites by UUID; the database URI is filled in)."""
    service.import_bundle(load_settings(), root, log=typer.echo)


@superset_app.command("export")
def export_cmd(root: BundleOption = bundle.BUNDLE_DIR) -> None:
    """Export every dashboard (with charts, datasets, database), normalised, into the bundle folder."""
    service.export_bundle(load_settings(), root, log=typer.echo)
