#!/usr/bin/env bash
# Builds poolfs and runs every test: what CI runs (.ci/run), and the second
# command of the README. Three builds, each compiled once:
#
#   1. build/        g++, Release (the build users and packages make): the
#                    programs and every test (unit, mount, end to end,
#                    crash stress), and scripts/check-layers.sh
#   2. build-clang/  clang++, ASan+UBSan, debug checks on, libFuzzer: every
#                    unit test and the fuzz corpus replays; clang's
#                    thread-safety analysis is an error here
#   3. build-tsan/   clang++, TSan: the test programs labelled "concurrent"
#                    (ctest -L concurrent; the label is set where each
#                    program is declared, tests/CMakeLists.txt), but for
#                    their cases tagged [single-threaded]
#
# Every build makes the project's warnings errors (POOLFS_WERROR). Every test
# has a timeout. A test that cannot run here is skipped, says why, and
# counts as skipped.
#
# Usage: scripts/test.sh [--quick]
#   --quick   stop after step 1 (no sanitizer or fuzz build)
# Environment:
#   POOLFS_BUILD  build folder prefix (default "build": build, build-clang,
#                 build-tsan); lets several people share one checkout
#   JOBS          parallel compile jobs (default: nproc)
#
# Ends with each step's wall time and a line "N passed, N failed, N
# skipped" (all ctest runs together); exits non-zero if a build, the layer
# check or any test failed.
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
skipped=0
failures=()
step_names=()
step_secs=()
step_start=$SECONDS
step_name=""

# step NAME: starts timing a new step (and ends the one before).
step() {
  end_step
  step_name=$*
  step_start=$SECONDS
  printf '\n=== %s\n' "$*"
}

end_step() {
  if [[ -n "$step_name" ]]; then
    step_names+=("$step_name")
    step_secs+=($((SECONDS - step_start)))
    step_name=""
  fi
}

# Prints each step's time and the summary, and exits: 0 only if nothing failed.
finish() {
  end_step
  echo
  echo "step times:"
  local i total=0
  for i in "${!step_names[@]}"; do
    printf '  %5ds  %s\n' "${step_secs[$i]}" "${step_names[$i]}"
    total=$((total + step_secs[i]))
  done
  printf '  %5ds  total\n' "$total"
  if [[ ${#failures[@]} -gt 0 ]]; then
    local list
    list=$(printf '%s, ' "${failures[@]}")
    echo "test.sh: FAILED: ${list%, }"
  fi
  echo "$passed passed, $failed failed, $skipped skipped"
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
  if ! cmake -S . -B "$dir" -DPOOLFS_WERROR=ON "${LAUNCHER[@]}" "$@" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    failures+=("configure of $dir")
    finish
  fi
  grep -E '^-- poolfs:' "$log" || true
  rm -f "$log"
  # BUILD_TARGETS (optional): build only these targets.
  if ! cmake --build "$dir" -j"$JOBS" ${BUILD_TARGETS:+--target $BUILD_TARGETS}; then
    failures+=("build of $dir")
    finish
  fi
}

# run_ctest DIR [ctest args...]: runs ctest in DIR, adds its counts to the
# totals and prints, for every skipped test, the line in which it said why.
run_ctest() {
  local dir=$1
  shift
  step "ctest in $dir $*"
  local log junit rc=0
  log=$(mktemp)
  junit=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure -j"$JOBS" --timeout 600 --no-tests=error \
    --output-junit "$junit" "$@" 2>&1 | tee "$log" || rc=$?
  local line
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 \
    || true)
  if [[ -n "$line" ]]; then
    local nfail ntotal nskip
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    ntotal=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
    # ctest counts a skipped test among the passed ones and lists it under
    # "The following tests did not run".
    nskip=$(grep -cE '^[[:space:]]*[0-9]+ - .* \((Skipped|Disabled)\)$' "$log" || true)
    passed=$((passed + ntotal - nfail - nskip))
    failed=$((failed + nfail))
    skipped=$((skipped + nskip))
    if [[ $nskip -gt 0 ]]; then
      echo "skipped in $dir, and why:"
      skip_reasons "$junit"
    fi
  fi
  rm -f "$log" "$junit"
  if [[ $rc -ne 0 ]]; then
    failures+=("ctest in $dir")
  fi
}

# skip_reasons JUNIT: for each skipped test case of ctest's JUnit report,
# its name and the first line of its output that says it did not run.
skip_reasons() {
  awk '
    /<testcase / {
      name = $0; sub(/.*name="/, "", name); sub(/".*/, "", name)
      skip = ($0 ~ /status="(notrun|disabled)"/); why = ""
    }
    skip && why == "" && /(not run|skipped)/ && !/<(testcase|skipped) / { why = $0 }
    /<\/testcase>/ {
      if (skip) {
        gsub(/^[[:space:]]+|<[^>]*>/, "", why)
        printf "  %s: %s\n", name, (why == "" ? "(no reason printed)" : why)
      }
      skip = 0
    }' "$1"
}

step "setup"
scripts/setup.sh

# ccache, when installed (it is not one of setup.sh's packages: on a fresh
# machine its cache is empty and it would only add its own cost), makes a
# second run compile only what changed.
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# A build without the tests must not need Catch2.
step "configure $BUILD-notests (POOLFS_BUILD_TESTS=OFF, Catch2 hidden)"
log=$(mktemp)
if ! cmake -S . -B "$BUILD-notests" -DPOOLFS_BUILD_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON \
  >"$log" 2>&1; then
  cat "$log"
  failures+=("configure of $BUILD-notests")
fi
rm -f "$log"

build "$BUILD" -DCMAKE_BUILD_TYPE=Release
step "check layering"
if ! scripts/check-layers.sh; then
  failures+=("check-layers")
fi
run_ctest "$BUILD"

if [[ $quick -eq 1 ]]; then
  finish
fi

# The sanitizer builds: -O1 with line tables (fast to compile, readable
# reports), NDEBUG off so that the debug checks (POOLFS_DCHECK) run too.
# Unity builds (a target's sources compiled a few at a time as one unit)
# cut their compile time by about a quarter; the Release build above
# builds only its test programs so (tests/CMakeLists.txt,
# POOLFS_UNITY_TESTS), its libraries and programs one unit per file, as
# users build them, so that a missing #include there still fails.
SANITIZER_FLAGS=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
  -DPOOLFS_ONLY_TESTS=ON -DCMAKE_UNITY_BUILD=ON)

# ASan+UBSan and the fuzz targets in one clang build: any report fails the
# test that triggered it.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
CXX=clang++ build "$BUILD-clang" "${SANITIZER_FLAGS[@]}" -DPOOLFS_SANITIZE=address \
  -DPOOLFS_FUZZ=ON
run_ctest "$BUILD-clang"

# TSan, for the test programs whose code is concurrent. Any report fails the
# test that triggered it.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
CXX=clang++ BUILD_TARGETS=concurrent_tests build "$BUILD-tsan" "${SANITIZER_FLAGS[@]}" \
  -DPOOLFS_SANITIZE=thread
run_ctest "$BUILD-tsan" -L concurrent

finish
