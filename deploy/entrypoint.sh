#!/usr/bin/env bash
# Entry point of the quicexp image: one ROLE per docker-compose service.
#
#   entrypoint.sh ROLE [ARGS...]      roles: see `entrypoint.sh help`
#
# Configuration comes from the environment only (docker-compose.yml passes it from .env):
# QUICEXP_* for the pipeline (catalog on PostgreSQL, SPARK_MASTER), AIRFLOW__* for Airflow,
# SUPERSET_* for Superset. Nothing secret is written into the image or the repository, put on a
# command line or printed: passwords that a program takes as an argument or would print come as
# files (/run/secrets/NAME, docker-compose.yml's `secrets:`) and go to the program by stdin or by a
# file of mode 0600. Every step's failure fails the role (set -e; no failure is swallowed).
set -euo pipefail
umask 077

APP=/opt/quicexp
PIPELINE=$APP/.venvs/pipeline/bin
AIRFLOW=$APP/.venvs/airflow/bin
SUPERSET=$APP/.venvs/superset/bin
SPARK_BIN=$($PIPELINE/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "bin")')

say() { printf 'entrypoint: %s\n' "$*" >&2; }
need() { [ -n "${!1:-}" ] || { say "$1 is not set (see .env.example)"; exit 2; }; }
# A secret file of docker-compose.yml: present and not empty, else exit 2 naming it.
secret() {
  local path=/run/secrets/$1
  [ -s "$path" ] || { say "secret $1 is missing or empty ($path; see .env.example)"; exit 2; }
  printf '%s' "$path"
}
# Spark daemons (master, worker) authenticate RPC with the shared secret: written into their
# spark-defaults.conf (mode 0600), never on their command line.
spark_auth_conf() {
  local dir=${SPARK_CONF_DIR:-/tmp/quicexp-spark-conf} file
  file=$(secret spark_auth_secret)
  mkdir -p "$dir"
  { printf 'spark.authenticate true\n'; printf 'spark.authenticate.secret '; cat "$file"; printf '\n'; } > "$dir/spark-defaults.conf"
  chmod 600 "$dir/spark-defaults.conf"
  export SPARK_CONF_DIR=$dir
}

role=${1:-help}
if [ $# -gt 0 ]; then shift; fi

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
    spark_auth_conf
    exec "$SPARK_BIN/spark-class" org.apache.spark.deploy.master.Master \
      --host spark-master --port 7077 --webui-port 8080
    ;;

  spark-worker)
    need SPARK_MASTER
    spark_auth_conf
    # Replicas have no service-unique name: advertise the container's address to the driver.
    exec "$SPARK_BIN/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "$(hostname -i | cut -d' ' -f1)" --webui-port 8081 --work-dir /tmp/spark-work \
      --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-4g}" "$SPARK_MASTER"
    ;;

  thrift-server)
    # The project's one Spark configuration with the server's additions (the project jar, the
    # SQL guard extension, Spark's RPC secret), written 0600 (secrets stay off the command line),
    # on the cluster named by SPARK_MASTER. Logins: user quicexp with the thrift_password secret,
    # checked by quicexp.jvm.ThriftPasswordAuth, which reads the secret file where it is: the
    # credentials file names it (password_file) and holds no secret itself.
    need SPARK_MASTER
    props=$QUICEXP_STATE_DIR/run/thrift-server.properties
    credentials=$QUICEXP_STATE_DIR/thrift/credentials.properties
    password_file=$(secret thrift_password)
    mkdir -p "$(dirname "$credentials")"
    printf 'user=quicexp\npassword_file=%s\n' "$password_file" > "$credentials"
    $PIPELINE/python $APP/deploy/spark_properties.py "$props" --app-name quicexp-thrift-server --thrift-server
    exec "$SPARK_BIN/spark-submit" --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 \
      --name quicexp-thrift-server --master "$SPARK_MASTER" --properties-file "$props" spark-internal \
      --hiveconf hive.server2.thrift.bind.host=0.0.0.0 --hiveconf hive.server2.thrift.port=10000 \
      --hiveconf hive.server2.transport.mode=binary --hiveconf hive.server2.enable.doAs=false \
      --hiveconf hive.server2.authentication=CUSTOM \
      --hiveconf hive.server2.custom.authentication.class=quicexp.jvm.ThriftPasswordAuth \
      --hiveconf "quicexp.thrift.credentials=$credentials"
    ;;

  airflow-init)
    need AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
    $AIRFLOW/airflow db migrate
    # The daily DAG's Spark steps share one pool slot (dags/quicexp_daily.py: LAKE_POOL).
    $AIRFLOW/airflow pools set quicexp_lake 1 "One Spark job at a time on the lake (quicexp)" >/dev/null
    # The admin's password comes from the airflow_admin_password secret into the simple auth
    # manager's passwords file (0600) before the API server starts: a user already in that file
    # gets no generated password, so none is printed to the container log.
    need AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE
    $AIRFLOW/python $APP/deploy/airflow_passwords.py "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE" \
      admin "$(secret airflow_admin_password)"
    say "Airflow user admin; its password is the airflow_admin_password secret (the env file)"
    ;;

  airflow-apiserver)
    exec $AIRFLOW/airflow api-server --host 0.0.0.0 --port 8080
    ;;

  airflow-scheduler | airflow-dag-processor | airflow-triggerer)
    exec $AIRFLOW/airflow "${role#airflow-}"
    ;;

  superset-init)
    need SUPERSET_SECRET_KEY
    admin_password=$(secret superset_admin_password)
    thrift_password=$(secret thrift_password)
    $SUPERSET/superset db upgrade
    # Creates the admin, or resets its password on re-runs; the password goes in on stdin.
    $SUPERSET/python $APP/quicexp/app/superset/_in_superset.py admin < "$admin_password"
    $SUPERSET/superset init
    # The bundle points at the Thrift server on 127.0.0.1 (single machine); here it is a service,
    # logged in to as quicexp (the password on stdin, kept encrypted by Superset; the URI holds
    # Superset's mask only).
    bundle=$(mktemp -d)/dashboards
    cp -r "$APP/dashboards" "$bundle"
    sed -i "s#hive://127.0.0.1:10000/default#hive://quicexp:XXXXXXXXXX@${QUICEXP_THRIFT_HOST:-thrift-server}:10000/default?auth=CUSTOM#" \
      "$bundle"/databases/*.yaml
    $SUPERSET/python $APP/quicexp/app/superset/_in_superset.py import "$bundle" < "$thrift_password"
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
