#!/usr/bin/env bash
# The README's test command (`make test`) and CI's: the whole suite, real components started.
set -euo pipefail
cd "$(dirname "$0")/.."
for hook in scripts/test-deps.d/*.sh; do [ -e "$hook" ] && bash "$hook"; done
# Two workers (pytest-xdist): a test run is mostly waiting on JVMs, services and subprocesses, so
# two of them overlap on two cores. Each shared lake is built once, on the worker that runs its
# group (tests/conftest.py). QUICEXP_TEST_WORKERS=0 runs the suite in this process.
exec .venvs/pipeline/bin/python -m pytest -n "${QUICEXP_TEST_WORKERS:-2}" --dist loadgroup \
  --no-loadscope-reorder "$@"
