#!/usr/bin/env bash
# End-to-end test of the createmany program: the final line's format, the
# exit codes (0 success, 1 a failed operation, 2 bad arguments), errors on
# stderr with the file name and errno.
#
# Usage: tests/tools/createmany_cli_test.sh path/to/createmany
set -uo pipefail

CM=$(realpath "${1:?usage: $0 path/to/createmany}")
DIR=$(mktemp -d "${TMPDIR:-/tmp}/createmany-cli-test.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
cd "$DIR"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run EXPECTED_EXIT STDOUT_REGEX STDERR_REGEX ARGS...
run() {
  local want=$1 out_re=$2 err_re=$3
  shift 3
  local rc
  "$CM" "$@" >out.txt 2>err.txt
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "createmany $* exited $rc, expected $want; stdout: $(cat out.txt) stderr: $(cat err.txt)"
  elif [[ -n "$out_re" ]] && ! grep -Eq -- "$out_re" out.txt; then
    fail "createmany $*: stdout does not match '$out_re': $(cat out.txt)"
  elif [[ -n "$err_re" ]] && ! grep -Eq -- "$err_re" err.txt; then
    fail "createmany $*: stderr does not match '$err_re': $(cat err.txt)"
  else
    echo "ok: createmany $* -> $rc"
  fi
}

TOTAL='^total: [0-9]+ creates in [0-9]+\.[0-9]{2} seconds: [0-9]+\.[0-9]{2} creates/second$'

run 0 "^total: 100 creates in " "" -o -t 4 -D qs 100
run 0 "$TOTAL" "" -o -t 4 -D qs 100
[[ $(find qs -type f | wc -l) -eq 100 ]] || fail "-t 4 -D qs 100 left $(find qs -type f | wc -l) files"
[[ $(tail -n1 out.txt) =~ $TOTAL ]] || fail "the total line is not the last line: $(cat out.txt)"

run 0 "^total: 10 creates in " "" -m plain 10
[[ -f plain9 && ! -e plain10 ]] || fail "-m plain 10 did not make plain0..plain9"

# A failure: mknod on an existing name. Exit 1, stderr names it with errno,
# and the total line still comes (with what was done).
run 1 "^total: 0 creates in " "mknod\(plain0\): File exists \(errno 17\)" -m plain 10

# Time limit: no COUNT.
run 0 "$TOTAL" "" -o -r -D timed -1

# Bad arguments: exit 2 and the usage.
run 2 "" "usage: createmany" -o
run 2 "" "unknown option -q" -q f 10
run 2 "" "only one of" -o -d f 10
run 2 "" "THREADS" -o -t 0 -D x 10
run 0 "usage: createmany" "" --help

if [[ $failures -gt 0 ]]; then
  echo "createmany_cli_test: $failures failure(s)" >&2
  exit 1
fi
echo "createmany_cli_test: all passed"
