#!/usr/bin/env bash
# `poolfs-stress --help` shows the default of every option that has one
# (the run length, the threads, the crash mode by its name), so that a
# run's command line can be read without the source.
#
# Usage: tests/e2e/stress_help_test.sh path/to/poolfs-stress
set -uo pipefail
STRESS=${1:?usage: $0 path/to/poolfs-stress}
out=$(timeout 30 "$STRESS" --help 2>&1)
rc=$?
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
[[ $rc -eq 0 ]] || fail "poolfs-stress --help exited $rc"
# The option's line: "--seconds FLOAT:POSITIVE=60 how long ...", its type
# (which may hold spaces) ending in "=DEFAULT".
has_default() {
  if grep -Eq -- "^ *$1 .*=$2( |\$)" <<<"$out"; then
    echo "ok: $1 shows its default, $2"
  else
    fail "$1 does not show its default $2 in:"$'\n'"$out"
  fi
}
has_default --seconds 60
has_default --threads 4
has_default --mode kill
if [[ $failures -gt 0 ]]; then
  echo "stress_help_test: $failures failure(s)" >&2
  exit 1
fi
echo "stress_help_test: all checks passed"
