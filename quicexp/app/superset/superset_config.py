"""The one Superset configuration of quicexp (loaded by Superset through ``SUPERSET_CONFIG_PATH``),
for both deployments.

Runs inside the Superset environment, so it imports nothing from quicexp. Secrets never live in
the repository:

- single machine (``quicexp superset setup``): generated under ``<state_dir>/superset/`` (files of
  mode 0600), a folder passed in ``QUICEXP_SUPERSET_DIR``; the metadata database is SQLite there
  unless ``metadata_db_url`` holds another SQLAlchemy URL;
- docker-compose.yml (``SUPERSET_SECRET_KEY`` set): the key and the metadata database's password
  come from the container's environment (compose secrets), the database is the compose PostgreSQL.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

#: docker-compose.yml sets it; the single-machine mode never does
_COMPOSE = "SUPERSET_SECRET_KEY" in os.environ

_DIR = Path(
    os.environ.get("QUICEXP_SUPERSET_DIR", Path.home() / ".config" / "quicexp" / "superset")
)


def _secret(name: str) -> str:
    path = _DIR / name
    try:
        return path.read_text().strip()
    except OSError:
        raise RuntimeError(f"{path} is missing: run `quicexp superset setup` first") from None


if _COMPOSE:
    SECRET_KEY = os.environ["SUPERSET_SECRET_KEY"]
    SQLALCHEMY_DATABASE_URI = "postgresql+psycopg2://superset:{password}@{host}:5432/superset".format(
        password=quote(os.environ["SUPERSET_DB_PASSWORD"], safe=""),
        host=os.environ.get("POSTGRES_HOST", "postgres"),
    )
    DATA_DIR = "/var/lib/superset"
    # The lake is read through the Spark Thrift Server; analysts query, they do not write.
    PREVENT_UNSAFE_DB_CONNECTIONS = True
else:
    SECRET_KEY = _secret("secret_key")
    _DB_URL_FILE = _DIR / "metadata_db_url"
    SQLALCHEMY_DATABASE_URI = (
        _DB_URL_FILE.read_text().strip()
        if _DB_URL_FILE.exists()
        else f"sqlite:///{_DIR / 'superset.db'}"
    )
    DATA_DIR = str(_DIR / "data")

# Local single-machine mode: no Celery, no Redis; results cached in-process.
CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 300}
DATA_CACHE_CONFIG = CACHE_CONFIG
FILTER_STATE_CACHE_CONFIG = {**CACHE_CONFIG, "CACHE_KEY_PREFIX": "filter_state_"}
EXPLORE_FORM_DATA_CACHE_CONFIG = {**CACHE_CONFIG, "CACHE_KEY_PREFIX": "explore_form_"}
RATELIMIT_STORAGE_URI = "memory://"

# Analysts read; the pipeline writes. SQL Lab runs synchronously against the Thrift server.
SQLLAB_TIMEOUT = 300
SUPERSET_WEBSERVER_TIMEOUT = 300
SQLLAB_CTAS_NO_LIMIT = False
WTF_CSRF_ENABLED = True
TALISMAN_ENABLED = False  # served on 127.0.0.1 (or behind the compose network) over plain HTTP
SESSION_COOKIE_SAMESITE = "Lax"
FEATURE_FLAGS = {"DASHBOARD_NATIVE_FILTERS": True, "ENABLE_TEMPLATE_PROCESSING": False}
# Dashboards import their charts' data eagerly: no thumbnails/screenshots workers here.
THUMBNAILS_ENABLE = False
LOG_LEVEL = os.environ.get("QUICEXP_SUPERSET_LOG_LEVEL", "INFO")
