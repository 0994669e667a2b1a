#!/usr/bin/env bash
# fsynced writes through the intent log: large writes written once, in
# their place (indirect writes, the default), against every byte copied
# into the log and written again by the txg (zil.indirect_write_bytes = 0),
# measured in the same run.
#
#   seqfsync  fio, BS sequential writes of one MIB MiB file, each followed
#             by fsync                                          -> MiB/s
#   written   what the daemon wrote (its wchar in /proc/PID/io) from the
#             first write to the last fsync, per MiB fsynced    -> MiB/MiB
# on a fresh pool per run, in two pool-file shapes: sparse (as `poolfs
# create` makes it: each block written for the first time makes the host
# allocate its space) and full (every byte of the pool file written before
# the mount). The configurations take turns, in the opposite order every
# other run; medians, and each shape's indirect/copied ratio.
#
# Usage: scripts/bench-fsync.sh [--runs N] [--mib N] [--bs SIZE] [--dir DIR] [--json]
#   --runs N    runs of each configuration and shape (default 3)
#   --mib N     the file written (default 64)
#   --bs SIZE   fio's block size (default 128k: one record of the default recordsize)
#   --dir DIR   where the pool files and mounts go (default /var/tmp)
#   --json      one JSON object (medians, samples, ratios, settings) instead of the table
# Environment: POOLFS_BUILD (build folder, default "build").
# Progress goes to stderr. Exit 0 when every measurement ran, 1 when one
# failed, 2 for bad arguments.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

RUNS=3
MIB=64
BS=128k
WORKDIR=/var/tmp
JSON=0
bench_option() {
  case $1 in
    --runs) RUNS=${2:?}; BENCH_SHIFT=2 ;;
    --mib) MIB=${2:?}; BENCH_SHIFT=2 ;;
    --bs) BS=${2:?}; BENCH_SHIFT=2 ;;
    --dir) WORKDIR=${2:?}; BENCH_SHIFT=2 ;;
    --json) JSON=1 ;;
    *) return 1 ;;
  esac
}
bench_parse_args "$@"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH_NAME: --runs '$RUNS': not a positive number" >&2; exit 2; }
[[ $MIB =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH_NAME: --mib '$MIB': not a positive number" >&2; exit 2; }
command -v fio >/dev/null || die "fio is missing (scripts/setup.sh installs it)"
bench_programs

mkdir -p "$WORKDIR"
W=$(realpath "$(mktemp -d "$WORKDIR/poolfs-bench-fsync.XXXXXX")")
cleanup() {
  "$POOLFS" unmount "$W/mnt" >/dev/null 2>&1 || true
  bench_released "$W/fsync.pool" 120 || true
  rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/mnt" "$W/indirect/poolfs" "$W/copied/poolfs"
: >"$W/indirect/poolfs/poolfs.toml"
printf '[zil]\nindirect_write_bytes = 0\n' >"$W/copied/poolfs/poolfs.toml"
POOL_SIZE=$((MIB * 4 + 512))M

# Writes zeros over every hole of the file $1, leaving its data as it is.
fill_holes() {
  python3 - "$1" <<'EOF'
import os, sys
f = os.open(sys.argv[1], os.O_RDWR)
end = os.lseek(f, 0, os.SEEK_END)
zeros = bytes(1 << 20)
at = 0
while at < end:
    at = os.lseek(f, at, os.SEEK_HOLE)
    if at >= end:
        break
    try:
        data = os.lseek(f, at, os.SEEK_DATA)
    except OSError:
        data = end
    while at < data:
        n = min(len(zeros), data - at)
        os.pwrite(f, zeros[:n], at)
        at += n
os.fsync(f)
EOF
}

declare -A SAMPLES
add() { SAMPLES["$1"]="${SAMPLES["$1"]:-} $2"; }

run() {  # CONFIG SHAPE
  local config=$1 shape=$2 pid w0 w1 out bw
  rm -f "$W/fsync.pool"
  "$POOLFS" create "$W/fsync.pool" --size "$POOL_SIZE" --name fsync >/dev/null
  [[ $shape == full ]] && fill_holes "$W/fsync.pool"
  XDG_CONFIG_HOME="$W/$config" "$POOLFS" mount "$W/fsync.pool" "$W/mnt"
  pid=$(bench_holders "$W/fsync.pool" | head -1)
  [[ -n $pid ]] || die "no daemon holds $W/fsync.pool"
  w0=$(awk '/^wchar/ { print $2 }' "/proc/$pid/io")
  out=$(fio --name=seqfsync --directory="$W/mnt" --rw=write --bs="$BS" --size="${MIB}m" \
    --ioengine=psync --fsync=1 --fallocate=none --output-format=json) || die "fio failed"
  w1=$(awk '/^wchar/ { print $2 }' "/proc/$pid/io")
  "$POOLFS" unmount "$W/mnt"
  bench_released "$W/fsync.pool" 120 || die "the daemon still holds $W/fsync.pool 120 s after the unmount"
  bw=$(python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f" % (j["jobs"][0]["write"]["bw_bytes"] / 1048576))' <<<"$out")
  add "$config $shape seqfsync" "$bw"
  add "$config $shape written" "$(awk -v b=$((w1 - w0)) -v m="$MIB" 'BEGIN { printf "%.2f", b / 1048576 / m }')"
  log "  $config, $shape pool file: $bw MiB/s, $(awk -v b=$((w1 - w0)) 'BEGIN { printf "%.1f", b / 1048576 }') MiB written"
}

CONFIGS=(indirect copied)
SHAPES=(sparse full)
log "fio: $MIB MiB in writes of $BS, fsync after each; $RUNS runs"
for ((r = 1; r <= RUNS; r++)); do
  log "run $r of $RUNS"
  for shape in "${SHAPES[@]}"; do
    if ((r % 2 == 1)); then order=(indirect copied); else order=(copied indirect); fi
    for config in "${order[@]}"; do run "$config" "$shape"; done
  done
done

med() { median ${SAMPLES["$1"]}; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
if [[ $JSON -eq 1 ]]; then
  echo "{"
  echo "  \"settings\": {\"runs\": $RUNS, \"mib\": $MIB, \"bs\": \"$BS\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\"},"
  echo "  \"medians\": {"
  first=1
  for shape in "${SHAPES[@]}"; do
    for config in "${CONFIGS[@]}"; do
      for m in seqfsync written; do
        [[ $first -eq 1 ]] || echo ","
        first=0
        printf '    "%s %s %s": {"median": %s, "samples": [%s]}' "$config" "$shape" "$m" \
          "$(med "$config $shape $m")" "$(echo ${SAMPLES["$config $shape $m"]} | tr ' ' ',')"
      done
    done
  done
  echo
  echo "  },"
  echo "  \"ratios\": {"
  echo "    \"sparse seqfsync indirect/copied\": $(ratio "$(med "indirect sparse seqfsync")" "$(med "copied sparse seqfsync")"),"
  echo "    \"full seqfsync indirect/copied\": $(ratio "$(med "indirect full seqfsync")" "$(med "copied full seqfsync")")"
  echo "  }"
  echo "}"
  exit 0
fi
printf '%-12s %-10s %10s %10s %16s\n' "pool file" measure indirect copied indirect/copied
for shape in "${SHAPES[@]}"; do
  for m in seqfsync written; do
    unit=MiB/s
    [[ $m == written ]] && unit="MiB/MiB"
    a=$(med "indirect $shape $m")
    b=$(med "copied $shape $m")
    printf '%-12s %-10s %10s %10s %16s\n' "$shape" "$m" "$a" "$b" "$(ratio "$a" "$b")"
  done
done
printf 'seqfsync in MiB/s; written: MiB the daemon wrote per MiB fsynced. Medians of %s runs; %s writes; commit %s\n' \
  "$RUNS" "$BS" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
