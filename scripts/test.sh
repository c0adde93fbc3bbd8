#!/usr/bin/env bash
# The README's test command (`make test`) and CI's: the whole suite, real components started.
set -euo pipefail
cd "$(dirname "$0")/.."
for hook in scripts/test-deps.d/*.sh; do [ -e "$hook" ] && bash "$hook"; done
exec .venvs/pipeline/bin/python -m pytest "$@"
