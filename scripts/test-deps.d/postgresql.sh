#!/usr/bin/env bash
# Debian's PostgreSQL server binaries (initdb, pg_ctl), for tests/deploy: the metastore test
# starts its own throwaway server on 127.0.0.1. Idempotent: does nothing when installed.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends postgresql
