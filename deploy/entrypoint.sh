#!/usr/bin/env bash
# Entry point of the quicexp image: one ROLE per docker-compose service.
#
#   entrypoint.sh ROLE [ARGS...]      roles: see `entrypoint.sh help`
#
# Configuration comes from the environment only (docker-compose.yml passes it from .env):
# QUICEXP_* for the pipeline (catalog on PostgreSQL, SPARK_MASTER), AIRFLOW__* for Airflow,
# SUPERSET_* for Superset. Nothing secret is written into the image or the repository.
set -euo pipefail

APP=/opt/quicexp
PIPELINE=$APP/.venvs/pipeline/bin
AIRFLOW=$APP/.venvs/airflow/bin
SUPERSET=$APP/.venvs/superset/bin
SPARK_BIN=$($PIPELINE/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "bin")')

say() { printf 'entrypoint: %s\n' "$*" >&2; }
need() { [ -n "${!1:-}" ] || { say "$1 is not set (see .env.example)"; exit 2; }; }

role=${1:-help}
shift || true

case "$role" in
  help)
    sed -n '2,7p' "$0"
    echo "roles: metastore-init spark-master spark-worker thrift-server airflow-init airflow-apiserver"
    echo "       airflow-scheduler airflow-dag-processor airflow-triggerer superset-init superset quicexp"
    ;;

  metastore-init)
    # Creates the Hive metastore schema in PostgreSQL and the lake's schemas, once, before the
    # services that share it start (concurrent first starts would race on the DDL).
    need QUICEXP_CATALOG__PASSWORD
    QUICEXP_SPARK__MASTER="local[1]" exec $PIPELINE/python $APP/deploy/metastore_init.py
    ;;

  spark-master)
    exec "$SPARK_BIN/spark-class" org.apache.spark.deploy.master.Master \
      --host spark-master --port 7077 --webui-port 8080
    ;;

  spark-worker)
    need SPARK_MASTER
    # Replicas have no service-unique name: advertise the container's address to the driver.
    exec "$SPARK_BIN/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "$(hostname -i | cut -d' ' -f1)" --webui-port 8081 --work-dir /tmp/spark-work \
      --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-4g}" "$SPARK_MASTER"
    ;;

  thrift-server)
    # The project's one Spark configuration, written 0600 (the metastore password stays off
    # the command line), on the cluster named by SPARK_MASTER.
    need SPARK_MASTER
    props=$QUICEXP_STATE_DIR/run/thrift-server.properties
    $PIPELINE/python $APP/deploy/spark_properties.py "$props" --app-name quicexp-thrift-server
    exec "$SPARK_BIN/spark-submit" --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 \
      --name quicexp-thrift-server --master "$SPARK_MASTER" --properties-file "$props" spark-internal \
      --hiveconf hive.server2.thrift.bind.host=0.0.0.0 --hiveconf hive.server2.thrift.port=10000 \
      --hiveconf hive.server2.transport.mode=binary
    ;;

  airflow-init)
    need AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
    $AIRFLOW/airflow db migrate
    # The daily DAG's Spark steps share one pool slot (dags/quicexp_daily.py: LAKE_POOL).
    $AIRFLOW/airflow pools set quicexp_lake 1 "One Spark job at a time on the lake (quicexp)" >/dev/null
    say "Airflow users: $AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS; generated passwords in" \
        "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE (airflow-apiserver container)"
    ;;

  airflow-apiserver)
    exec $AIRFLOW/airflow api-server --host 0.0.0.0 --port 8080
    ;;

  airflow-scheduler | airflow-dag-processor | airflow-triggerer)
    exec $AIRFLOW/airflow "${role#airflow-}"
    ;;

  superset-init)
    need SUPERSET_SECRET_KEY
    need SUPERSET_ADMIN_PASSWORD
    $SUPERSET/superset db upgrade
    $SUPERSET/superset fab create-admin --username admin --firstname quicexp --lastname admin \
      --email admin@localhost --password "$SUPERSET_ADMIN_PASSWORD" || true  # exists on re-runs
    $SUPERSET/superset init
    if [ -f "$APP/dashboards/metadata.yaml" ]; then
      # The bundle points at the Thrift server on 127.0.0.1 (single machine); here it is a service.
      bundle=$(mktemp -d)/dashboards
      cp -r "$APP/dashboards" "$bundle"
      sed -i "s#hive://127.0.0.1:10000/#hive://${QUICEXP_THRIFT_HOST:-thrift-server}:10000/#" \
        "$bundle"/databases/*.yaml
      $SUPERSET/superset import-directory "$bundle" --overwrite --force
    fi
    ;;

  superset)
    need SUPERSET_SECRET_KEY
    exec $SUPERSET/gunicorn --bind 0.0.0.0:8088 --workers "${SUPERSET_WORKERS:-2}" --timeout 120 \
      "superset.app:create_app()"
    ;;

  quicexp)
    # One-off pipeline commands: `docker compose run --rm pipeline simulate …`, `run-day …`.
    exec $PIPELINE/quicexp "$@"
    ;;

  *)
    say "unknown role '$role' (try: help)"
    exit 2
    ;;
esac
