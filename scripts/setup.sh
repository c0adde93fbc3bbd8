#!/usr/bin/env bash
# One-command setup: three Python environments from committed locks, the project, the jars.
# Idempotent: a second run checks the locks' hashes and the jar checksums and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
ENVS=(pipeline airflow superset)

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

python_bin() {
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && \
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  echo "setup: Python 3.11 is required (python3.11 or python3 on PATH)" >&2; exit 1
}

command -v java >/dev/null 2>&1 || { echo "setup: Java 17 is required (java on PATH)" >&2; exit 1; }
PY=$(python_bin)

# uv: use the one on PATH, else bootstrap a pinned copy from PyPI into .venvs/bootstrap.
if command -v uv >/dev/null 2>&1; then
  UV=$(command -v uv)
else
  if [ ! -x .venvs/bootstrap/bin/uv ]; then
    say "bootstrapping uv $UV_VERSION from PyPI"
    "$PY" -m venv .venvs/bootstrap
    .venvs/bootstrap/bin/pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
  fi
  UV=.venvs/bootstrap/bin/uv
fi

installed=
for env in "${ENVS[@]}"; do
  lock="requirements/$env.lock"
  stamp=".venvs/$env/.lock.sha256"
  want=$(sha256sum "$lock" pyproject.toml | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "$env environment up to date"
    continue
  fi
  say "installing the $env environment from $lock"
  [ -x ".venvs/$env/bin/python" ] || "$UV" venv --quiet --python "$PY" ".venvs/$env"
  VIRTUAL_ENV=".venvs/$env" "$UV" pip sync --quiet "$lock"
  if [ "$env" = pipeline ]; then
    VIRTUAL_ENV=".venvs/$env" "$UV" pip install --quiet --no-deps -e .
  fi
  echo "$want" > "$stamp"
  installed=1
done

.venvs/pipeline/bin/quicexp setup-jars
say "done: pipeline .venvs/pipeline, airflow .venvs/airflow, superset .venvs/superset"
# make's targets find the environments themselves; a shell needs the pipeline's on its PATH
[ -z "$installed" ] || say "quicexp is .venvs/pipeline/bin/quicexp; on a shell's PATH with: source .venvs/pipeline/bin/activate"
