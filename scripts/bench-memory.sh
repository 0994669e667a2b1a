#!/usr/bin/env bash
# The memory bound: a poolfs daemon whose block cache is bounded
# (arc.max_bytes = 128MiB) must keep its peak RSS under 512 MiB whatever the
# pool holds. On a fresh pool mounted with that config:
#   1. createmany -o -t THREADS -D MNT/files FILES (2,000,000 by default);
#   2. a FILE_MIB MiB file (2 GiB by default) of incompressible data is
#      written (dd bs=1M conv=fsync from a file of random bytes);
#   3. that file is read back twice with dd bs=1M, the kernel's page cache
#      dropped before each read (as root: /proc/sys/vm/drop_caches; else
#      dd iflag=nocache), so every read reaches the daemon and its cache.
# The daemon's peak RSS is the kernel's own high-water mark (VmHWM in
# /proc/PID/status), read after each phase.
#
# Dirty data is bounded by the write throttle, not by the cache: the config
# also sets txg.dirty_max_bytes = 128MiB (half the default), so the bound
# tested is cache + dirty data + the daemon's own structures.
#
# Printed: one line per phase (elapsed seconds, VmRSS and VmHWM), then
# peak_rss_mib and whether it is under the target; with --json one JSON
# object.
#
# Usage: scripts/bench-memory.sh [--files N] [--file-mib M] [--threads T]
#          [--arc-mib A] [--dirty-mib D] [--dir DIR] [--json]
#   --files N     files createmany creates (default 2000000)
#   --file-mib M  size of the file read back twice (default 2048)
#   --arc-mib A   arc.max_bytes in MiB (default 128)
#   --dirty-mib D txg.dirty_max_bytes in MiB (default 128)
#   --dir DIR     where the pool file and the mount go (default /var/tmp)
# Environment: POOLFS_BUILD (build folder, default "build").
# Exit 0 when every step ran (whether or not the target is met), 1 when one
# failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

FILES=2000000
FILE_MIB=2048
THREADS=8
ARC_MIB=128
DIRTY_MIB=128
WORKDIR=/var/tmp
JSON=0
TARGET_MIB=512

bench_option() {
  case $1 in
    --files) FILES=${2:?}; BENCH_SHIFT=2 ;;
    --file-mib) FILE_MIB=${2:?}; BENCH_SHIFT=2 ;;
    --threads) THREADS=${2:?}; BENCH_SHIFT=2 ;;
    --arc-mib) ARC_MIB=${2:?}; BENCH_SHIFT=2 ;;
    --dirty-mib) DIRTY_MIB=${2:?}; BENCH_SHIFT=2 ;;
    --dir) WORKDIR=${2:?}; BENCH_SHIFT=2 ;;
    --json) JSON=1 ;;
    *) return 1 ;;
  esac
}
bench_parse_args "$@"
for n in FILES FILE_MIB THREADS ARC_MIB DIRTY_MIB; do
  [[ ${!n} =~ ^[1-9][0-9]*$ ]] || { echo "bench-memory.sh: ${n,,}: '${!n}' is not a positive number" >&2; exit 2; }
done

bench_programs

# Disk: about 2 KiB per file (see bench-createmany.sh), the file twice (the
# random source beside the pool, and its copy in the pool), 1 GiB spare.
mkdir -p "$WORKDIR"
NEED_KIB=$((FILES * 2 + FILE_MIB * 2048 + 1024 * 1024))
AVAIL_KIB=$(df -Pk "$WORKDIR" | awk 'NR == 2 { print $4 }')
((AVAIL_KIB >= NEED_KIB)) || die "$WORKDIR has $((AVAIL_KIB / 1024)) MiB free; $((NEED_KIB / 1024)) MiB needed"

W=$(realpath "$(mktemp -d "$WORKDIR/poolfs-bench-memory.XXXXXX")")
MNT=$W/mnt
cleanup() {
  local rc=$?
  if mountpoint -q "$MNT" 2>/dev/null; then
    "$POOLFS" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -uz "$MNT" 2>/dev/null || true
  fi
  bench_released "$W/pool" 60 || true
  rm -rf "$W"
  [[ $rc -ne 0 ]] && echo "bench-memory.sh: failed (exit $rc); mount and $W cleaned up" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$W/poolfs.toml" <<EOF
# scripts/bench-memory.sh
[txg]
dirty_max_bytes = "${DIRTY_MIB}MiB"
[arc]
max_bytes = "${ARC_MIB}MiB"
EOF
POOL_GIB=$((FILES * 2 / 1024 / 1024 + FILE_MIB * 2 / 1024 + 8))
"$POOLFS" create "$W/pool" --size "${POOL_GIB}G" >/dev/null
mkdir "$MNT"
"$POOLFS" mount --config "$W/poolfs.toml" "$W/pool" "$MNT"
mountpoint -q "$MNT" || die "poolfs mount returned but $MNT is not a mount point"
PID=$(bench_holders "$W/pool" | head -1)
[[ -n "$PID" ]] || die "no process holds $W/pool after the mount"
STATUS=$("$POOLFS" status "$MNT") || die "poolfs status $MNT failed"
grep -q "^block cache: .* of ${ARC_MIB}[.0-9]*MiB" <<<"$STATUS" ||
  die "poolfs status does not show arc.max_bytes = ${ARC_MIB}MiB: $(grep '^block cache' <<<"$STATUS")"

START=$(date +%s.%N)
PHASES=()
# phase NAME: records elapsed seconds, VmRSS and VmHWM (MiB) of the daemon.
phase() {
  local rss hwm t
  rss=$(awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
  hwm=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
  t=$(awk -v a="$START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  PHASES+=("$1 $t $rss $hwm")
  log "$(printf '%-24s %7ss  rss %6s MiB  peak %6s MiB' "$1" "$t" "$rss" "$hwm")"
}
drop_caches() {
  sync
  if [[ $(id -u) -eq 0 ]]; then echo 3 >/proc/sys/vm/drop_caches; fi
}
read_back() {
  local nocache=()
  [[ $(id -u) -eq 0 ]] || nocache=(iflag=nocache)
  drop_caches
  dd if="$MNT/big" of=/dev/null bs=1M "${nocache[@]}" status=none || die "reading $MNT/big failed"
}

phase mounted
mkdir "$MNT/files"
log "creating $FILES files (createmany -o -t $THREADS)"
"$CREATEMANY" -o -i 0 -t "$THREADS" -D "$MNT/files" "$FILES" >&2 || die "createmany failed"
phase "created $FILES files"
log "writing a $FILE_MIB MiB file"
head -c "${FILE_MIB}M" /dev/urandom >"$W/random"
dd if="$W/random" of="$MNT/big" bs=1M conv=fsync status=none || die "writing $MNT/big failed"
rm -f "$W/random"
phase "wrote ${FILE_MIB} MiB"
read_back
phase "read it once"
read_back
phase "read it twice"
STATUS=$("$POOLFS" status "$MNT")
grep -E "^(block cache|cache activity|objects in memory):" <<<"$STATUS" >&2 || true
PEAK=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$PID/status")
MET=$([[ $PEAK -lt $TARGET_MIB ]] && echo met || echo "not met")

if ((JSON)); then
  printf '{"files": %s, "file_mib": %s, "arc_max_mib": %s, "dirty_max_mib": %s, "peak_rss_mib": %s, "target_mib": %s, "phases": [' \
    "$FILES" "$FILE_MIB" "$ARC_MIB" "$DIRTY_MIB" "$PEAK" "$TARGET_MIB"
  sep=
  for p in "${PHASES[@]}"; do
    # The name may hold spaces: the last three fields are the figures.
    read -r -a fields <<<"$p"
    n=${#fields[@]}
    name="${fields[*]:0:n-3}"
    printf '%s{"phase": "%s", "seconds": %s, "rss_mib": %s, "peak_rss_mib": %s}' "$sep" "$name" \
      "${fields[n-3]}" "${fields[n-2]}" "${fields[n-1]}"
    sep=", "
  done
  printf ']}\n'
else
  echo "poolfs daemon memory: arc.max_bytes ${ARC_MIB}MiB, txg.dirty_max_bytes ${DIRTY_MIB}MiB; $FILES files, then a $FILE_MIB MiB file read twice"
  printf '%-24s %9s %9s %9s\n' phase seconds rss_mib peak_mib
  for p in "${PHASES[@]}"; do
    read -r -a fields <<<"$p"
    n=${#fields[@]}
    printf '%-24s %9s %9s %9s\n' "${fields[*]:0:n-3}" "${fields[n-3]}" "${fields[n-2]}" "${fields[n-1]}"
  done
  echo "peak_rss_mib: $PEAK (target < $TARGET_MIB: $MET)"
fi
