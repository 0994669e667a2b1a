#!/usr/bin/env bash
# The stress loop, in the spirit of OpenZFS's zloop: runs poolfs-stress again
# and again, each run on a fresh pool with a new seed (so a new vdev layout,
# ashift and workload), keeps the pool, op log and output of every failed
# run, and ends with a summary of all runs.
#
# Usage: scripts/stress.sh [-t TOTAL] [-s RUN] [-m MODE] [-n THREADS] [-d DIR]
#                          [-b BIN] [-f]
#   -t TOTAL    stop starting runs after TOTAL seconds (default 600; 0: forever)
#   -s RUN      seconds per run (default 120)
#   -m MODE     kill, powercut, both, mounts (many short clean mounts of a
#               large pool), or mixed: each run picks one of the four
#               (default mixed)
#   -n THREADS  workload threads per run (default 4)
#   -d DIR      working folder (default /tmp/poolfs-stress-$USER); failed
#               runs are kept as DIR/fail-<seed>/ with the pool files, the op
#               log and the run's output
#   -b BIN      the poolfs-stress binary (default build/bin/poolfs-stress)
#   -f          stop at the first failed run
# Runs under `nice`. Prints a line per run and ends with
#   runs: N, failed: N, cycles: N, txgs: N, bytes checked: N, seconds: S
# Exits 1 if any run failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

total=600
run=120
mode=mixed
threads=4
dir="/tmp/poolfs-stress-${USER:-$(id -un)}"
bin=build/bin/poolfs-stress
stop_on_fail=0
while getopts "t:s:m:n:d:b:fh" opt; do
  case "$opt" in
    t) total=$OPTARG ;;
    s) run=$OPTARG ;;
    m) mode=$OPTARG ;;
    n) threads=$OPTARG ;;
    d) dir=$OPTARG ;;
    b) bin=$OPTARG ;;
    f) stop_on_fail=1 ;;
    *)
      sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"
      [[ $opt == h ]] && exit 0 || exit 2
      ;;
  esac
done
case "$mode" in kill | powercut | both | mounts | mixed) ;; *)
  echo "stress.sh: -m must be kill, powercut, both, mounts or mixed" >&2
  exit 2
  ;;
esac
if [[ ! -x $bin ]]; then
  echo "stress.sh: $bin not found; build it first (cmake --build build --target poolfs-stress)" >&2
  exit 2
fi
mkdir -p "$dir"

start=$SECONDS
runs=0 failed=0 cycles=0 txgs=0 bytes=0
modes=(kill powercut both mounts)
while ((total == 0 || SECONDS - start < total)); do
  seed=$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ))
  m=$mode
  [[ $m == mixed ]] && m=${modes[RANDOM % 4]}
  work="$dir/run-$seed"
  rm -rf "$work"
  mkdir -p "$work"
  nice "$bin" --dir "$work/pool" --seconds "$run" --threads "$threads" --seed "$seed" \
    --mode "$m" >"$work/output" 2>&1
  rc=$?
  runs=$((runs + 1))
  summary=$(grep -E '^cycles: ' "$work/output" | tail -1)
  if [[ $summary =~ cycles:\ ([0-9]+),\ txgs:\ ([0-9]+),\ objects\ checked:\ [0-9]+,\ bytes\ checked:\ ([0-9]+) ]]; then
    cycles=$((cycles + BASH_REMATCH[1]))
    txgs=$((txgs + BASH_REMATCH[2]))
    bytes=$((bytes + BASH_REMATCH[3]))
  fi
  if ((rc == 0)); then
    echo "run $runs: seed $seed mode $m: ok: $summary"
    rm -rf "$work"
  else
    failed=$((failed + 1))
    mv "$work" "$dir/fail-$seed"
    echo "run $runs: seed $seed mode $m: FAILED (exit $rc), kept in $dir/fail-$seed:"
    grep -A12 'FAILED' "$dir/fail-$seed/output" | sed 's/^/    /'
    ((stop_on_fail)) && break
  fi
done
echo "runs: $runs, failed: $failed, cycles: $cycles, txgs: $txgs, bytes checked: $bytes, seconds: $((SECONDS - start))"
((failed == 0))
