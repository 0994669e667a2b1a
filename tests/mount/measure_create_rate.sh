#!/usr/bin/env bash
# Measures createmany-style creates/s through FUSE mounts, all in one run
# (the machine is shared and noisy: compare only figures of the same run).
# Each configuration is mounted on a fresh directory, loaded with
# create_rate, and unmounted; the rounds repeat the whole list so that load
# changes hit every configuration alike.
#
# Usage: measure_create_rate.sh BUILD_BIN_DIR ROUNDS FILES THREADS LABEL=COMMAND...
#   COMMAND (bash) mounts on "$MNT" in the foreground; it is started in
#   the background and ended with fusermount3 -u after the run; "$MNT.pool"
#   is removed afterwards, e.g.
#   'memfs=exec /tmp/memfs_ceiling $MNT -f'
#   'fake8=exec $BIN/fake_mount $MNT --threads 8'
#   'poolfs=$BIN/poolfs create $MNT.pool --size 4G && exec $BIN/poolfs mount -f $MNT.pool $MNT'
# Prints one line per configuration and round, then per configuration the
# median, the best, the median's ratio to the first configuration's, and
# the median daemon CPU time per create (includes mount and unmount).
set -uo pipefail
BIN=$(realpath "${1:?usage: $0 BIN ROUNDS FILES THREADS LABEL=COMMAND...}")
ROUNDS=$2 FILES=$3 THREADS=$4
shift 4
export BIN
declare -A rates cpu
labels=()
for spec in "$@"; do labels+=("${spec%%=*}"); done

run_one() {
  local label=$1 cmd=$2
  MNT=$(mktemp -d /tmp/poolfs-rate.XXXXXX)
  export MNT
  bash -c "$cmd" >/dev/null 2>&1 &
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
  # The daemon's CPU time (utime + stime, clock ticks) per create: unlike
  # the rate, it does not depend on what else the machine runs.
  local ticks
  ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
  cpu[$label]+="$(awk -v t="$ticks" -v n="$FILES" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.1f", t * 1e6 / hz / n}') "
  echo "$label: $out, daemon CPU $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {print t / hz}') s"
  rates[$label]+="$rate "
  fusermount3 -u "$MNT" 2>/dev/null || kill "$pid"
  wait "$pid" 2>/dev/null
  rmdir "$MNT"
  rm -f "$MNT.pool"
}

for ((r = 1; r <= ROUNDS; r++)); do
  for spec in "$@"; do run_one "${spec%%=*}" "${spec#*=}"; done
done

base=""
echo "creates/s over $ROUNDS rounds ($FILES files, $THREADS threads): median, best, median vs the first, median daemon CPU per create"
for l in "${labels[@]}"; do
  sorted=$(tr ' ' '\n' <<<"${rates[$l]:-}" | grep . | sort -n)
  med=$(awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}' <<<"$sorted")
  best=$(tail -n 1 <<<"$sorted")
  [[ -z "$base" ]] && base=$med
  mcpu=$(tr ' ' '\n' <<<"${cpu[$l]:-}" | grep . | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}')
  awk -v l="$l" -v m="$med" -v x="${best:-0}" -v b="$base" -v c="$mcpu" \
    'BEGIN {printf "  %-16s %8d %8d  %5.2fx  %6.1f us daemon CPU per create\n", l, m, x, (b ? m / b : 0), c}'
done
