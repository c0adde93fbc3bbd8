"""Superset configuration of docker-compose.yml (SUPERSET_CONFIG_PATH points here).

Everything secret comes from the environment; Superset refuses to start without its key.
"""

import os
from urllib.parse import quote

SECRET_KEY = os.environ["SUPERSET_SECRET_KEY"]
SQLALCHEMY_DATABASE_URI = (
    "postgresql+psycopg2://superset:{password}@{host}:5432/superset".format(
        password=quote(os.environ["SUPERSET_DB_PASSWORD"], safe=""), host=os.environ.get("POSTGRES_HOST", "postgres")
    )
)
# The lake is read through the Spark Thrift Server; analysts query, they do not write.
PREVENT_UNSAFE_DB_CONNECTIONS = True
WTF_CSRF_ENABLED = True
DATA_DIR = "/var/lib/superset"
