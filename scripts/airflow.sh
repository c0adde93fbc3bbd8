#!/usr/bin/env bash
# Local Airflow for quicexp (`make airflow`, `make airflow-stop`) and the DAG's bridge into the
# pipeline environment. Airflow lives in .venvs/airflow and never imports Spark or quicexp: what it
# needs to know about the installation comes from the pipeline environment through this script.
#
#   scripts/airflow.sh start      db migrate, secrets + admin password (generated once, 0600, under
#                                 Settings.state_dir/airflow), pool, then api-server, scheduler and
#                                 dag-processor on 127.0.0.1; prints where the password is (never
#                                 the password)
#   scripts/airflow.sh stop       stop the three processes started by `start`
#   scripts/airflow.sh status     which of them run
#   scripts/airflow.sh day DAY    one run of quicexp_daily for logical day DAY, now (`make airflow-day`):
#                                 init and the api-server unless it answers (left running for the
#                                 UI), then python -m quicexp_airflow.day DAY (run named after DAY,
#                                 tasks on the executor, their logs where the UI reads them and here)
#   scripts/airflow.sh env        the environment Airflow runs with, as `export` lines
#                                 (`eval "$(scripts/airflow.sh env)"` then `airflow …`)
#   scripts/airflow.sh init       db migrate, secrets, password and pool only (what tests use)
#   scripts/airflow.sh secrets    the secrets and the admin password only
#   scripts/airflow.sh plan DAY   one JSON line for the DAG's `plan` task: landing dir, reports dir
#                                 and the experiments of the registry running on DAY
#
# QUICEXP_* variables (QUICEXP_HOME, QUICEXP_STATE_DIR, QUICEXP_CONFIG, …) select the installation,
# exactly as for the quicexp CLI; the pipeline's tasks inherit them from the scheduler.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
AIRFLOW_BIN=${QUICEXP_AIRFLOW_BIN:-$REPO/.venvs/airflow/bin/airflow}
ADMIN_USER=admin
POOL=quicexp_lake

# bold on a terminal only: no colour codes in a log file or CI output
if [ -t 2 ]; then say() { printf '\033[1mairflow:\033[0m %s\n' "$*" >&2; }
else say() { printf 'airflow: %s\n' "$*" >&2; }; fi
die() { printf 'airflow: error: %s\n' "$*" >&2; exit 2; }

QUICEXP_CLI=${QUICEXP_BIN:-$REPO/.venvs/pipeline/bin/quicexp}

# plan DAY: what the daily DAG needs for one day (folders, running experiments, each step's
# command), from the pipeline's own Settings, registry and step list: `quicexp plan --json`.
plan() {
  [ $# -eq 1 ] || die "usage: scripts/airflow.sh plan YYYY-MM-DD"
  exec "$QUICEXP_CLI" plan --date "$1" --json
}

# The installation's state dir and Airflow port/host, from the pipeline's typed Settings.
load_settings() {
  local out
  out=$("$QUICEXP_CLI" settings --shell) || exit 2
  STATE_DIR=$(eval "$(grep '^STATE_DIR=' <<<"$out")"; echo "$STATE_DIR")
  BIND_HOST=$(eval "$(grep '^SERVICES__BIND_HOST=' <<<"$out")"; echo "$SERVICES__BIND_HOST")
  PORT=$(eval "$(grep '^SERVICES__AIRFLOW_PORT=' <<<"$out")"; echo "$SERVICES__AIRFLOW_PORT")
  AF_HOME=$STATE_DIR/airflow
  SECRETS=$AF_HOME/secrets.env
  PASSWORDS=$AF_HOME/admin-password.json
  RUN=$AF_HOME/run
}

airflow_env() {
  export AIRFLOW_HOME=$AF_HOME
  export AIRFLOW__CORE__DAGS_FOLDER=$REPO/dags
  export AIRFLOW__CORE__LOAD_EXAMPLES=False
  # SQLite in WAL mode (Airflow's own setting); the busy timeout is raised from sqlite3's 5 s so a
  # CLI write (`airflow backfill create`) waits for the scheduler's transaction on a loaded machine
  # instead of failing with "database is locked".
  export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$AF_HOME/airflow.db?timeout=60"
  export AIRFLOW__CORE__EXECUTOR=LocalExecutor
  export AIRFLOW__CORE__PARALLELISM=4
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=$ADMIN_USER:admin
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=$PASSWORDS
  export AIRFLOW__CORE__EXECUTION_API_SERVER_URL=http://$BIND_HOST:$PORT/execution/
  export AIRFLOW__API__HOST=$BIND_HOST
  export AIRFLOW__API__PORT=$PORT
  export AIRFLOW__API__BASE_URL=http://$BIND_HOST:$PORT
  export AIRFLOW__API__WORKERS=1
  export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=30
  export AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK=False
  export AIRFLOW__LOGGING__BASE_LOG_FOLDER=$AF_HOME/logs
  if [ -f "$SECRETS" ]; then
    set -a
    # shellcheck disable=SC1090
    . "$SECRETS"
    set +a
  fi
}

print_env() {
  local name
  for name in $(compgen -e | grep -E '^AIRFLOW(_HOME$|__)'); do
    printf 'export %s=%q\n' "$name" "${!name}"
  done
}

random_secret() { head -c 32 /dev/urandom | base64 | tr -d '/+=\n' | head -c 43; }

# Secrets and the admin password: generated on first use, stored outside the repo, mode 0600.
ensure_secrets() {
  (umask 077 && mkdir -p "$AF_HOME" "$RUN")
  if [ ! -s "$SECRETS" ]; then
    (umask 077 && {
      echo "AIRFLOW__API_AUTH__JWT_SECRET=$(random_secret)"
      echo "AIRFLOW__API__SECRET_KEY=$(random_secret)"
    } > "$SECRETS")
  fi
  if [ ! -s "$PASSWORDS" ]; then
    local password
    password=$(random_secret)
    (umask 077 && printf '{"%s": "%s"}\n' "$ADMIN_USER" "$password" > "$PASSWORDS")
    say "generated the password of user '$ADMIN_USER' into $PASSWORDS (mode 0600)"
  fi
  chmod 600 "$SECRETS" "$PASSWORDS"
}

init() {
  ensure_secrets
  airflow_env
  say "home $AIRFLOW_HOME; migrating the metadata database"
  "$AIRFLOW_BIN" db migrate >"$AF_HOME/db-migrate.log" 2>&1 \
    || { tail -5 "$AF_HOME/db-migrate.log" >&2; die "airflow db migrate failed (log: $AF_HOME/db-migrate.log)"; }
  "$AIRFLOW_BIN" pools set "$POOL" 1 "One Spark job at a time on the lake (quicexp)" >>"$AF_HOME/db-migrate.log" 2>&1 \
    || die "could not create the pool $POOL (log: $AF_HOME/db-migrate.log)"
}

running() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

start_one() {
  local name=$1
  shift
  if running "$name"; then
    say "$name already runs (pid $(cat "$RUN/$name.pid"))"
    return
  fi
  # Own session, so `stop` ends exactly this process group and nothing else.
  setsid "$AIRFLOW_BIN" "$@" >"$AF_HOME/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
  say "$name started (pid $!, log $AF_HOME/$name.log)"
}

healthy() {
  PYTHONPATH=$REPO/dags "$REPO/.venvs/airflow/bin/python" -m quicexp_airflow.health \
    "http://$BIND_HOST:$PORT/api/v2/monitor/health" 2>/dev/null
}

wait_healthy() {
  local url=http://$BIND_HOST:$PORT/api/v2/monitor/health deadline=$((SECONDS + ${QUICEXP_AIRFLOW_START_TIMEOUT:-480}))
  until healthy
  do
    running api-server || { tail -20 "$AF_HOME/api-server.log" >&2; die "the api-server exited (log: $AF_HOME/api-server.log)"; }
    [ $SECONDS -lt $deadline ] || die "the api-server did not answer on $url in time"
    sleep 2
  done
}

start() {
  init
  start_one api-server api-server --host "$BIND_HOST" --port "$PORT"
  # --skip-serve-logs: the api-server reads the local log files; the log server would listen on
  # every interface (port 8793) and clash between two local installations.
  start_one scheduler scheduler --skip-serve-logs
  start_one dag-processor dag-processor
  wait_healthy
  say "up: http://$BIND_HOST:$PORT  (user '$ADMIN_USER', password in $PASSWORDS)"
  say "stop with: make airflow-stop"
}

# day DAY: the run of one logical day, its tasks on the executor (their log files are what the UI
# shows), which report to the api-server: started here when it does not answer, and left running.
day() {
  [ $# -eq 1 ] || die "usage: scripts/airflow.sh day YYYY-MM-DD"
  [[ $1 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] && date -u -d "$1" >/dev/null 2>&1 \
    || die "bad day '$1' (YYYY-MM-DD)"
  ensure_secrets
  airflow_env
  if ! healthy; then  # an api-server that answers has a migrated database and the pool
    init
    start_one api-server api-server --host "$BIND_HOST" --port "$PORT"
    wait_healthy
    say "the api-server keeps running for the UI: http://$BIND_HOST:$PORT (stop with: make airflow-stop)"
  fi
  PYTHONPATH=$REPO/dags exec "$REPO/.venvs/airflow/bin/python" -m quicexp_airflow.day "$1"
}

stop() {
  local name pid
  for name in dag-processor scheduler api-server; do
    if running "$name"; then
      pid=$(cat "$RUN/$name.pid")
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
      for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL -- "-$pid" 2>/dev/null
      say "$name stopped"
    fi
    rm -f "$RUN/$name.pid"
  done
}

status() {
  local name
  for name in api-server scheduler dag-processor; do
    if running "$name"; then echo "$name: running (pid $(cat "$RUN/$name.pid"))"; else echo "$name: stopped"; fi
  done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  plan) plan "$@" ;;
  env) load_settings; airflow_env; print_env ;;
  init) load_settings; init ;;
  secrets) load_settings; ensure_secrets ;;
  day) load_settings; day "$@" ;;
  start) load_settings; start ;;
  stop) load_settings; stop ;;
  status) load_settings; status ;;
  *) die "usage: scripts/airflow.sh start|stop|status|day DAY|env|init|secrets|plan DAY" ;;
esac
