#!/usr/bin/env bash
# The README's test command (`make test`) and CI's: the whole suite, real components started, on
# TEST_WORKERS pytest-xdist workers (default 2). Tests that share a lake or a service run on the
# worker that built it (tests/conftest.py: WORKER_GROUPS); TEST_WORKERS=0 runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
for hook in scripts/test-deps.d/*.sh; do [ -e "$hook" ] && bash "$hook"; done
workers="${TEST_WORKERS:-2}"
if ! [[ "$workers" =~ ^[0-9]+$ ]]; then
  echo "test: TEST_WORKERS must be a whole number (0: no workers), not '$workers'" >&2
  exit 2
fi
if [ "$workers" = 0 ]; then
  exec .venvs/pipeline/bin/python -m pytest "$@"
fi
exec .venvs/pipeline/bin/python -m pytest -n "$workers" --dist loadscope --no-loadscope-reorder "$@"
