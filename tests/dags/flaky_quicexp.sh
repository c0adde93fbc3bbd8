#!/usr/bin/env bash
# Test-only stand-in for the pipeline CLI (the DAG runs "$QUICEXP_BIN" when it is set).
# Runs the real CLI ($QUICEXP_TEST_REAL_BIN) with the same arguments. If that succeeded and the flag
# file $QUICEXP_TEST_FAIL_ONCE exists and the arguments start with what it holds, the flag is removed and the
# step fails anyway: a task that did its work and then failed, which Airflow must retry. Production
# code never reads the flag.
set -uo pipefail
"${QUICEXP_TEST_REAL_BIN:?}" "$@"
rc=$?
flag=${QUICEXP_TEST_FAIL_ONCE:-}
if [ "$rc" -eq 0 ] && [ -n "$flag" ] && [ -f "$flag" ] && [[ "$*" == "$(cat "$flag")"* ]]; then
  rm -f "$flag"
  echo "quicexp: error: injected failure after '$*' (test flag $flag)" >&2
  exit 1
fi
exit "$rc"
