#!/usr/bin/env bash
# Builds poolfs and runs every test: what CI runs (.ci/run), and the second
# command of the README.
#
#   1. scripts/setup.sh (installs missing Debian packages)
#   2. build/ (RelWithDebInfo), scripts/check-layers.sh, ctest
#   3. build-asan/ (ASan+UBSan, tests only), ctest
#   3b. build-tsan/ (TSan): only arc_tests, util_tests, zap_tests and
#      dmu_tests (the ARC, the locks, the object cache, the zap's concurrent
#      readers with its leaf cache, and its blocks shared with a syncing
#      txg, a file's reads beside its writes and syncs), ctest -R of those,
#      to keep CI time small
#   4. build-fuzz/ (clang, libFuzzer, tests only), ctest -R '^fuzz' (replays
#      the fuzz corpora); skipped when clang++ is not installed
#
# Usage: scripts/test.sh [--quick]
#   --quick   stop after step 2 (no sanitizer or fuzz build)
# Environment:
#   POOLFS_BUILD  build folder prefix (default "build": build, build-asan,
#                 build-fuzz); lets several people share one checkout
#   JOBS          parallel compile jobs (default: nproc)
#
# Ends with a line "N passed, N failed" (all ctest runs together) and exits
# non-zero if a build, the layer check or any test failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0
      ;;
    *)
      echo "test.sh: unknown argument: $arg (try --help)" >&2
      exit 2
      ;;
  esac
done

BUILD=${POOLFS_BUILD:-build}
JOBS=${JOBS:-$(nproc)}
passed=0
failed=0
failures=()

step() { printf '\n=== %s\n' "$*"; }

# Prints the summary and exits: 0 only if nothing failed.
finish() {
  echo
  if [[ ${#failures[@]} -gt 0 ]]; then
    local list
    list=$(printf '%s, ' "${failures[@]}")
    echo "test.sh: FAILED: ${list%, }"
  fi
  echo "$passed passed, $failed failed"
  if [[ ${#failures[@]} -gt 0 ]]; then
    exit 1
  fi
  exit 0
}

# build DIR [cmake args...]: configures and builds DIR. A failure is recorded
# and ends the run with the summary (later steps would fail the same way).
build() {
  local dir=$1
  shift
  step "configure and build $dir"
  local log
  log=$(mktemp)
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    failures+=("configure of $dir")
    finish
  fi
  rm -f "$log"
  # BUILD_TARGETS (optional): build only these targets.
  if ! cmake --build "$dir" -j"$JOBS" ${BUILD_TARGETS:+--target $BUILD_TARGETS}; then
    failures+=("build of $dir")
    finish
  fi
}

# run_ctest DIR NO_TESTS_POLICY [ctest args...]: runs ctest in DIR and adds
# its counts to the totals. NO_TESTS_POLICY is "error" or "ignore" (whether
# finding no tests at all is a failure).
run_ctest() {
  local dir=$1 no_tests=$2
  shift 2
  step "ctest in $dir $*"
  local log rc=0
  log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure -j2 --no-tests="$no_tests" "$@" 2>&1 \
    | tee "$log" || rc=$?
  local line
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 \
    || true)
  if [[ -n "$line" ]]; then
    local nfail ntotal
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    ntotal=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
    passed=$((passed + ntotal - nfail))
    failed=$((failed + nfail))
  elif grep -q 'No tests were found' "$log"; then
    echo "(no tests found in $dir)"
  fi
  rm -f "$log"
  if [[ $rc -ne 0 ]]; then
    failures+=("ctest in $dir")
  fi
}

step "setup"
scripts/setup.sh

build "$BUILD"
step "check layering"
if ! scripts/check-layers.sh; then
  failures+=("check-layers")
fi
run_ctest "$BUILD" error

if [[ $quick -eq 1 ]]; then
  finish
fi

# ASan+UBSan: any report fails the test that triggered it.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
build "$BUILD-asan" -DPOOLFS_SANITIZE=address -DPOOLFS_ONLY_TESTS=ON
run_ctest "$BUILD-asan" error

# TSan, for the concurrent code whose tests are written for it (about 2 min of
# build, seconds of tests). Any report fails the test that triggered it.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
BUILD_TARGETS="arc_tests util_tests zap_tests dmu_tests" build "$BUILD-tsan" \
  -DPOOLFS_SANITIZE=thread -DPOOLFS_ONLY_TESTS=ON
run_ctest "$BUILD-tsan" error -R \
  '^(arc|util):|^zap:(Readers share|Zap serves concurrent|Zap changes made while)|^dmu:(ObjectSet reads of one object|A sequential reader|Reads in a small window|Blocks read ahead|A block whose space|Take hands|Read ahead stays)'

# Fuzz: every fuzz target registers a ctest test named "fuzz:..." that replays
# its corpus. Until tests/fuzz/ has a CMakeLists.txt there are none, which is
# fine (POOLFS_FUZZ=ON would not even configure yet).
if ! command -v clang++ >/dev/null 2>&1; then
  step "fuzz: skipped (no clang++)"
elif [[ ! -f tests/fuzz/CMakeLists.txt ]]; then
  step "fuzz: no fuzz targets yet (tests/fuzz/CMakeLists.txt missing); no tests to run"
else
  CXX=clang++ build "$BUILD-fuzz" -DPOOLFS_FUZZ=ON -DPOOLFS_ONLY_TESTS=ON
  run_ctest "$BUILD-fuzz" ignore -R '^fuzz'
fi

finish
