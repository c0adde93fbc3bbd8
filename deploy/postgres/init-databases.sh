#!/usr/bin/env bash
# Runs once, on the first start of the postgres service (docker-entrypoint-initdb.d): one role
# and one database each for the Hive metastore, Airflow and Superset. Passwords come from the
# environment (.env); none is written here, and none is put on psql's command line: psql reads
# each from the environment itself (\getenv, psql 15+).
set -euo pipefail
for var in METASTORE_DB_PASSWORD AIRFLOW_DB_PASSWORD SUPERSET_DB_PASSWORD; do
  [ -n "${!var:-}" ] || { echo "init-databases: $var is not set" >&2; exit 1; }
done
create() {  # create NAME VARIABLE: role NAME owning database NAME, password from $VARIABLE
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -v name="$1" <<SQL
\\getenv pass $2
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'name', :'pass') \\gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'name', :'name') \\gexec
SQL
}
create metastore METASTORE_DB_PASSWORD
create airflow AIRFLOW_DB_PASSWORD
create superset SUPERSET_DB_PASSWORD
