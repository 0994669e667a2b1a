#!/usr/bin/env bash
# Measures createmany-style creates/s through FUSE mounts, all in one run
# (the machine is shared and noisy: compare only figures of the same run).
# Each configuration is mounted on a fresh directory, loaded with
# create_rate, and unmounted; the rounds repeat the whole list so that load
# changes hit every configuration alike.
#
# Usage: measure_create_rate.sh BUILD_BIN_DIR ROUNDS FILES THREADS LABEL=COMMAND...
#   COMMAND mounts on "$MNT" in the foreground (it is started in the
#   background and killed with SIGTERM after the run), e.g.
#   'memfs=/tmp/memfs_ceiling $MNT -f'  'fake8=$BIN/fake_mount $MNT --threads 8'
# Prints one line per configuration and round, then the median per
# configuration and its ratio to the first one.
set -uo pipefail
BIN=$(realpath "${1:?usage: $0 BIN ROUNDS FILES THREADS LABEL=COMMAND...}")
ROUNDS=$2 FILES=$3 THREADS=$4
shift 4
export BIN
declare -A rates
labels=()
for spec in "$@"; do labels+=("${spec%%=*}"); done

run_one() {
  local label=$1 cmd=$2
  MNT=$(mktemp -d /tmp/poolfs-rate.XXXXXX)
  export MNT
  bash -c "exec $cmd" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
  if ! mountpoint -q "$MNT"; then
    echo "$label: did not mount" >&2
    kill "$pid" 2>/dev/null
    return
  fi
  local out rate
  out=$("$BIN/create_rate" "$MNT" --threads "$THREADS" --files "$FILES")
  rate=$(sed -E 's/.* ([0-9]+) creates\/s/\1/' <<<"$out")
  echo "$label: $out"
  rates[$label]+="$rate "
  fusermount3 -u "$MNT" 2>/dev/null || kill "$pid"
  wait "$pid" 2>/dev/null
  rmdir "$MNT"
}

for ((r = 1; r <= ROUNDS; r++)); do
  for spec in "$@"; do run_one "${spec%%=*}" "${spec#*=}"; done
done

base=""
echo "median creates/s over $ROUNDS rounds ($FILES files, $THREADS threads):"
for l in "${labels[@]}"; do
  med=$(tr ' ' '\n' <<<"${rates[$l]:-}" | grep . | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}')
  [[ -z "$base" ]] && base=$med
  awk -v l="$l" -v m="$med" -v b="$base" 'BEGIN {printf "  %-16s %8d  %5.2fx of %s\n", l, m, (b ? m / b : 0), "the first"}'
done
