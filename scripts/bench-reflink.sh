#!/usr/bin/env bash
# Block cloning through a mount: `cp --reflink=auto` of a file (random
# bytes, written and synced first), which copy_file_range lets the pool
# answer by sharing the file's blocks, against a plain copy of the same
# file (`cp --reflink=never`: read and written), on the same mount in the
# same run.
#
#   time   the wall time of each cp (the program alone: no sync after it)
#   space  what each copy adds to the pool's allocated space (statfs: the
#          pool's size less its free space), measured once every change
#          has synced and the syncs' frees are free again, as a share of
#          the file
# Each run has a fresh pool and file, and copies the file with
# --reflink=auto first, then --reflink=never. The order stays: the pool
# keeps growing and condensing its space maps for a while after a copy of
# a GiB, by a MiB or two, which would land in the clone's figure if the
# plain copy came first (the clone's time, a few ms, depends on nothing
# the plain copy leaves). Medians over the runs, and the plain copy's time
# over the clone's.
#
# Usage: scripts/bench-reflink.sh [--runs N] [--mib N] [--dir DIR] [--json]
#   --runs N    runs (default 5)
#   --mib N     the file's size (default 1024)
#   --dir DIR   where the pool file and the mount go (default /var/tmp)
#   --json      one JSON object (medians, samples, ratio, settings) instead of the table
# Environment: POOLFS_BUILD (build folder, default "build").
# Progress goes to stderr. Exit 0 when every measurement ran, 1 when one
# failed, 2 for bad arguments.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

RUNS=5
MIB=1024
WORKDIR=/var/tmp
JSON=0
bench_option() {
  case $1 in
    --runs) RUNS=${2:?}; BENCH_SHIFT=2 ;;
    --mib) MIB=${2:?}; BENCH_SHIFT=2 ;;
    --dir) WORKDIR=${2:?}; BENCH_SHIFT=2 ;;
    --json) JSON=1 ;;
    *) return 1 ;;
  esac
}
bench_parse_args "$@"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH_NAME: --runs '$RUNS': not a positive number" >&2; exit 2; }
[[ $MIB =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH_NAME: --mib '$MIB': not a positive number" >&2; exit 2; }
bench_programs

mkdir -p "$WORKDIR"
W=$(realpath "$(mktemp -d "$WORKDIR/poolfs-bench-reflink.XXXXXX")")
M=$W/mnt
cleanup() {
  "$POOLFS" unmount "$M" >/dev/null 2>&1 || true
  bench_released "$W/reflink.pool" 120 || true
  rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$M"
TIMEOUT=""

# fresh_pool: a new pool mounted on $M (the last one unmounted and removed).
fresh_pool() {
  if [[ -n $TIMEOUT ]]; then
    "$POOLFS" unmount "$M" >/dev/null
    bench_released "$W/reflink.pool" 120 || die "the daemon still holds $W/reflink.pool 120 s after the unmount"
  fi
  rm -f "$W/reflink.pool"
  # The file, both copies, and room for the metadata and the frees in flight.
  "$POOLFS" create "$W/reflink.pool" --size $((MIB * 4 + 1024))M --name "reflink$$" >/dev/null
  "$POOLFS" mount "$W/reflink.pool" "$M"
  TIMEOUT=$("$POOLFS" status "$M" | sed -n 's/^ *txg.timeout_ms = \([0-9]*\)ms$/\1/p')
  [[ -n $TIMEOUT ]] || die "poolfs status shows no txg.timeout_ms"
}

# settle: returns once every change made so far is in a synced txg and the
# blocks its syncs freed are free again (what statfs reports is then the
# pool's exact allocation). txg.timeout_ms is made short for the while.
settle() {
  local status synced open start freed i
  status=$("$POOLFS" status "$M")
  start=$(sed -n 's/^last synced txg: *[0-9]* (open txg \([0-9]*\).*/\1/p' <<<"$status")
  "$POOLFS" tune "$M" txg.timeout_ms=20 >/dev/null
  for ((i = 1; i <= 1200; i++)); do
    sleep 0.05
    status=$("$POOLFS" status "$M")
    read -r synced open < <(sed -n 's/^last synced txg: *\([0-9]*\) (open txg \([0-9]*\).*/\1 \2/p' <<<"$status")
    freed=$(sed -n 's/^space:.* free, \([^ ]*\) freed.*/\1/p' <<<"$status")
    # A txg nobody held stays open: it has nothing to sync.
    if [[ $freed == 0B ]] && ((synced >= start || (i >= 10 && open == start))); then break; fi
  done
  "$POOLFS" tune "$M" txg.timeout_ms="$TIMEOUT" >/dev/null
  ((i <= 1200)) || die "the pool did not settle in 60 s (txg $synced, open $open, $freed freed)"
}
allocated() { stat -f -c '%b %f %S' "$M" | awk '{ printf "%d\n", ($1 - $2) * $3 }'; }

declare -A SAMPLES
add() { SAMPLES["$1"]="${SAMPLES["$1"]:-} $2"; }

copy() {  # MODE RUN
  local mode=$1 before t0 t1 space
  before=$(allocated)
  # bash's clock, not bench-lib's `now` (a date process each side): the
  # clone takes milliseconds.
  t0=$EPOCHREALTIME
  cp --reflink="$mode" "$M/file" "$M/copy-$mode"
  t1=$EPOCHREALTIME
  settle
  space=$(($(allocated) - before))
  cmp -s "$M/file" "$M/copy-$mode" || die "cp --reflink=$mode: the copy differs from the file"
  add "$mode seconds" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')"
  add "$mode space_pct" "$(awk -v s="$space" -v m="$MIB" 'BEGIN { printf "%.3f", 100 * s / (m * 1048576) }')"
  log "  run $2, cp --reflink=$mode: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s, $(awk -v s="$space" 'BEGIN { printf "%.2f", s / 1048576 }') MiB of pool space"
}

for ((r = 1; r <= RUNS; r++)); do
  log "run $r of $RUNS: a fresh pool, the $MIB MiB file written and synced"
  fresh_pool
  head -c $((MIB * 1048576)) /dev/urandom >"$M/file"
  sync "$M/file"
  settle
  # The first stat after the writes sees a new mtime, on which the kernel
  # drops the file's cached pages (a tenth of a second for a GiB): not a
  # cost of either copy.
  stat "$M/file" >/dev/null
  copy auto "$r"
  copy never "$r"
done

# median with four decimals (bench-lib's has one).
med() { printf '%s\n' ${SAMPLES["$1"]} | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.4f\n", m }'; }
ratio=$(awk -v a="$(med "never seconds")" -v b="$(med "auto seconds")" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ $JSON -eq 1 ]]; then
  echo "{"
  echo "  \"settings\": {\"runs\": $RUNS, \"mib\": $MIB, \"commit\": \"$COMMIT\"},"
  echo "  \"medians\": {"
  first=1
  for mode in auto never; do
    for m in seconds space_pct; do
      [[ $first -eq 1 ]] || echo ","
      first=0
      printf '    "reflink=%s %s": {"median": %s, "samples": [%s]}' "$mode" "$m" "$(med "$mode $m")" \
        "$(echo ${SAMPLES["$mode $m"]} | tr ' ' ',')"
    done
  done
  echo
  echo "  },"
  echo "  \"never_over_auto_time\": $ratio"
  echo "}"
  exit 0
fi
printf '%-20s %12s %12s %12s %16s\n' "" "median s" "min s" "max s" "pool space, %"
for mode in auto never; do
  s=$(printf '%s\n' ${SAMPLES["$mode seconds"]} | sort -g)
  printf '%-20s %12s %12s %12s %16s\n' "cp --reflink=$mode" "$(med "$mode seconds")" "$(head -1 <<<"$s")" \
    "$(tail -1 <<<"$s")" "$(med "$mode space_pct")"
done
printf 'time, never / auto: %s (target >= 20); pool space of the reflink copy: %s%% of the file (target <= 1)\n' \
  "$ratio" "$(med "auto space_pct")"
printf 'a %s MiB file of random bytes, synced; medians of %s runs; commit %s\n' "$MIB" "$RUNS" "$COMMIT"
