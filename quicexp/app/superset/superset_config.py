"""Superset configuration of quicexp (loaded by Superset through ``SUPERSET_CONFIG_PATH``).

Runs inside the Superset environment (.venvs/superset), so it imports nothing from quicexp.
Secrets never live in the repository: ``quicexp superset setup`` generates them under
``<state_dir>/superset/`` (files of mode 0600) and passes that folder in
``QUICEXP_SUPERSET_DIR``. The metadata database is SQLite there unless ``metadata_db_url``
holds another SQLAlchemy URL (PostgreSQL in production).
"""

from __future__ import annotations

import os
from pathlib import Path

_DIR = Path(
    os.environ.get("QUICEXP_SUPERSET_DIR", Path.home() / ".config" / "quicexp" / "superset")
)


def _secret(name: str) -> str:
    path = _DIR / name
    try:
        return path.read_text().strip()
    except OSError:
        raise RuntimeError(f"{path} is missing: run `quicexp superset setup` first") from None


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
TALISMAN_ENABLED = False  # served on 127.0.0.1 over plain HTTP
SESSION_COOKIE_SAMESITE = "Lax"
FEATURE_FLAGS = {"DASHBOARD_NATIVE_FILTERS": True, "ENABLE_TEMPLATE_PROCESSING": False}
# Dashboards import their charts' data eagerly: no thumbnails/screenshots workers here.
THUMBNAILS_ENABLE = False
LOG_LEVEL = os.environ.get("QUICEXP_SUPERSET_LOG_LEVEL", "INFO")
