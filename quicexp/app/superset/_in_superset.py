"""Tasks run by the Superset environment's own interpreter (.venvs/superset); no quicexp imports.

``python _in_superset.py admin`` (password on stdin, so it never shows in a process list),
``python _in_superset.py import <bundle.zip|folder>`` (overwrite by UUID, Superset's "assets"
import; the lake's Thrift password, if any, on stdin),
``python _in_superset.py export <out.zip>`` (every dashboard with its charts, datasets, database).
Errors are one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from io import BytesIO
from pathlib import Path
from zipfile import ZipFile


def _app():
    from superset.app import create_app

    return create_app()


def admin() -> None:
    from superset import security_manager as sm
    from superset.extensions import db

    password = sys.stdin.readline().rstrip("\n")
    if len(password) < 12:
        raise SystemExit("admin password must be at least 12 characters")
    user = sm.find_user(username="admin")
    if user is None:
        sm.add_user(
            "admin", "Quicexp", "Admin", "admin@localhost", sm.find_role("Admin"), password=password
        )
    else:
        sm.reset_password(user.id, password)
    db.session.commit()


def _zip_directory(root: str) -> BytesIO:
    buffer = BytesIO()
    base = Path(root)
    with ZipFile(buffer, "w") as archive:
        for path in sorted(base.rglob("*.yaml")):
            archive.write(path, f"bundle/{path.relative_to(base).as_posix()}")
    buffer.seek(0)
    return buffer


def import_bundle(path: str) -> None:
    """Import a bundle (zip or folder); the lake password, if any, is the first line of stdin and
    goes to every database of the bundle through the importer's ``passwords``."""
    from flask import g
    from superset import security_manager as sm
    from superset.commands.exceptions import CommandInvalidError
    from superset.commands.importers.v1.assets import ImportAssetsCommand
    from superset.commands.importers.v1.utils import get_contents_from_bundle

    g.user = sm.find_user(username="admin")
    password = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    source = _zip_directory(path) if Path(path).is_dir() else path
    with ZipFile(source) as bundle:
        contents = get_contents_from_bundle(bundle)
    passwords = {name: password for name in contents if name.startswith("databases/")} if password else {}
    try:
        ImportAssetsCommand(contents, passwords=passwords).run()
    except CommandInvalidError as exc:
        problems = "; ".join(f"{name}: {msg}" for name, msg in exc.normalized_messages().items())
        raise SystemExit(f"bundle rejected: {problems}") from None


def export_bundle(path: str) -> None:
    from flask import g
    from superset import security_manager as sm
    from superset.commands.dashboard.export import ExportDashboardsCommand
    from superset.extensions import db
    from superset.models.dashboard import Dashboard

    g.user = sm.find_user(username="admin")
    ids = [id_ for (id_,) in db.session.query(Dashboard.id).all()]
    with ZipFile(path, "w") as bundle:
        for name, content in ExportDashboardsCommand(ids).run():
            bundle.writestr(f"export/{name}", content())


def main(argv: list[str]) -> int:
    tasks = {"admin": admin, "import": import_bundle, "export": export_bundle}
    if not argv or argv[0] not in tasks:
        print(f"usage: _in_superset.py {'|'.join(tasks)} [path]", file=sys.stderr)
        return 2
    app = _app()
    with app.app_context(), app.test_request_context():
        try:
            tasks[argv[0]](*argv[1:])
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
                return 2
            raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
