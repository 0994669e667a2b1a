#!/usr/bin/env bash
# Space that tells the truth: four measurements through a real mount, each
# on a fresh pool, each printed with its target.
#   1. freed space comes back on an idle pool: a 512 MiB pool filled with
#      one incompressible file until ENOSPC, the file deleted, then nothing
#      done: how long until a 16 MiB write (fsync'ed) succeeds; target at
#      most 3 x txg.timeout_ms (set to 1000 ms here).
#   2. small files fill the pool: on a 256 MiB pool, incompressible 4 KiB
#      files until the first ENOSPC (split(1) writes them); the share of
#      the pool's size they fill, target at least 80%; and what each costs
#      (df's used bytes over the files), target at most 5 KiB.
#   3. empty files: on a 256 MiB pool, createmany -o until it fails; target
#      at least 90% of the inodes df -i promised at the start.
#   4. deleting gives the space back: FILES empty files (200,000 by
#      default) created and deleted (createmany -o, then -r); the pool's
#      used bytes after, less a fresh pool's; target at most 2 MiB.
#
# Printed: one line per measurement with its figure, its target and "met"
# or "not met"; with --json one JSON object.
#
# Usage: scripts/bench-space.sh [--files N] [--small] [--dir DIR] [--json]
#   --files N   files created and deleted in measurement 4 (default 200000)
#   --small     pools of a quarter the size (128, 64 and 64 MiB): a quick
#               run that the targets' figures do not come from
#   --dir DIR   where the pool files and mounts go (default /var/tmp)
# Environment: POOLFS_BUILD (build folder, default "build").
# Exit 0 when every step ran (whether or not the targets are met), 1 when
# one failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

FILES=200000
WORKDIR=/var/tmp
JSON=0
SMALL=0
TIMEOUT_MS=1000

bench_option() {
  case $1 in
    --files) FILES=${2:?}; BENCH_SHIFT=2 ;;
    --dir) WORKDIR=${2:?}; BENCH_SHIFT=2 ;;
    --json) JSON=1 ;;
    --small) SMALL=1 ;;
    *) return 1 ;;
  esac
}
bench_parse_args "$@"
[[ $FILES =~ ^[1-9][0-9]*$ ]] || { echo "bench-space.sh: files: '$FILES' is not a positive number" >&2; exit 2; }

bench_programs

mkdir -p "$WORKDIR"
W=$(realpath "$(mktemp -d "$WORKDIR/poolfs-bench-space.XXXXXX")")
chmod 755 "$W"
MNT=$W/mnt
mkdir "$MNT"
# Pools are named after the folder, so that this run's never collide with
# another mounted pool's name.
NAME=space-$(basename "$W" | tr -cd 'A-Za-z0-9')
cleanup() {
  local rc=$?
  if mountpoint -q "$MNT" 2>/dev/null; then
    "$POOLFS" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -uz "$MNT" 2>/dev/null || true
  fi
  rm -rf "$W"
  [[ $rc -ne 0 ]] && echo "bench-space.sh: failed (exit $rc); mount and $W cleaned up" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$W/poolfs.toml" <<EOF
# scripts/bench-space.sh
[txg]
timeout_ms = $TIMEOUT_MS
EOF

# fresh SIZE: a new pool of SIZE mounted on $MNT (the last one unmounted).
fresh() {
  if mountpoint -q "$MNT"; then "$POOLFS" unmount "$MNT" >/dev/null || die "poolfs unmount failed"; fi
  rm -f "$W/pool"
  "$POOLFS" create --name "$NAME" --size "$1" "$W/pool" >/dev/null || die "poolfs create failed"
  "$POOLFS" mount --config "$W/poolfs.toml" "$W/pool" "$MNT" || die "poolfs mount failed"
  mountpoint -q "$MNT" || die "poolfs mount returned but $MNT is not a mount point"
}
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
used_bytes() { df -B1 --output=used "$MNT" | tail -1 | tr -d ' '; }
# settle: waits until df's used bytes have not changed for three txg
# timeouts (freed space comes back after a few idle txgs), at most 60 s;
# prints them.
settle() {
  local last=-1 cur i same=0
  for ((i = 0; i < 60 && same < 3; i++)); do
    sleep "$(awk -v t="$TIMEOUT_MS" 'BEGIN { printf "%.2f", t / 1000 }')"
    cur=$(used_bytes)
    if [[ $cur == "$last" ]]; then same=$((same + 1)); else same=0; fi
    last=$cur
  done
  echo "$cur"
}
verdict() { awk -v m="$1" 'BEGIN { print (m ? "met" : "not met") }'; }
RESULTS=()
result() {  # NAME FIGURE UNIT TARGET MET
  RESULTS+=("$1|$2|$3|$4|$5")
  log "$(printf '%-34s %10s %-8s target %-12s %s' "$1" "$2" "$3" "$4" "$5")"
}

FILL_MIB=512
SMALL_MIB=256
if ((SMALL)); then FILL_MIB=128 SMALL_MIB=64; fi

# 1. Freed space on an idle pool.
fresh ${FILL_MIB}M
dd if=/dev/urandom of="$MNT/fill" bs=1M status=none 2>/dev/null || true  # until ENOSPC
sync -f "$MNT/." 2>/dev/null || true
rm -f "$MNT/fill"
t0=$(now)
back=
for ((i = 0; i < 600; i++)); do
  if dd if=/dev/urandom of="$MNT/after" bs=1M count=16 conv=fsync status=none 2>/dev/null; then
    back=$(since "$t0")
    break
  fi
  rm -f "$MNT/after"
  sleep 0.1
done
[[ -n $back ]] || die "a 16 MiB write still fails 60 s after deleting everything"
limit=$(awk -v t="$TIMEOUT_MS" 'BEGIN { printf "%.1f", 3 * t / 1000 }')
result "freed space writable again after" "$back" s "<= $limit" "$(verdict "$(awk -v a="$back" -v b="$limit" 'BEGIN { print (a <= b) }')")"

# 2. 4 KiB files until ENOSPC.
fresh ${SMALL_MIB}M
size=$((SMALL_MIB << 20))
base=$(settle)
mkdir "$MNT/small"
head -c $((size + (64 << 20))) /dev/urandom | (cd "$MNT/small" && split -b 4096 -a 6 - f 2>/dev/null) || true
n=$(find "$MNT/small" -type f -size 4k | wc -l)
((n > 0)) || die "no 4 KiB file was written"
used=$(settle)
fill=$(awk -v n="$n" -v s="$size" 'BEGIN { printf "%.1f", 100 * n * 4096 / s }')
each=$(awk -v u="$used" -v b="$base" -v n="$n" 'BEGIN { printf "%.0f", (u - b) / n }')
result "4 KiB files before ENOSPC fill" "$fill" "% of pool" ">= 80" "$(verdict "$(awk -v f="$fill" 'BEGIN { print (f >= 80) }')")"
result "pool space per 4 KiB file" "$each" bytes "<= 5120" "$(verdict $((each <= 5120)))"

# 3. Empty files until createmany fails, against df -i at the start.
fresh ${SMALL_MIB}M
promised=$(df --output=iavail "$MNT" | tail -1 | tr -d ' ')
out=$("$CREATEMANY" -o -i 0 -D "$MNT/empty" "$promised" 2>&1 || true)
made=$(find "$MNT/empty" -type f | wc -l)
share=$(awk -v m="$made" -v p="$promised" 'BEGIN { printf "%.1f", 100 * m / p }')
result "empty files of df -i's promise" "$share" % ">= 90" "$(verdict "$(awk -v s="$share" 'BEGIN { print (s >= 90) }')")"

# 4. Create and delete FILES empty files.
fresh 1G
mkdir "$MNT/many"
base=$(settle)
"$CREATEMANY" -o -i 0 -D "$MNT/many" "$FILES" >/dev/null || die "createmany -o failed"
"$CREATEMANY" -r -i 0 -D "$MNT/many" "$FILES" >/dev/null || die "createmany -r failed"
after=$(settle)
grew=$(awk -v a="$after" -v b="$base" 'BEGIN { printf "%.2f", (a - b) / 1048576 }')
result "left after $FILES files come and go" "$grew" MiB "<= 2" "$(verdict "$(awk -v g="$grew" 'BEGIN { print (g <= 2) }')")"
"$POOLFS" unmount "$MNT" >/dev/null || die "poolfs unmount failed"

if ((JSON)); then
  printf '{"txg_timeout_ms": %s, "results": [' "$TIMEOUT_MS"
  sep=
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r name fig unit target met <<<"$r"
    printf '%s{"measure": "%s", "value": %s, "unit": "%s", "target": "%s", "met": %s}' "$sep" \
      "$name" "$fig" "$unit" "$target" "$([[ $met == met ]] && echo true || echo false)"
    sep=", "
  done
  printf ']}\n'
else
  echo "poolfs space (txg.timeout_ms $TIMEOUT_MS):"
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r name fig unit target met <<<"$r"
    printf '  %-34s %10s %-9s target %-8s %s\n' "$name" "$fig" "$unit" "$target" "$met"
  done
fi
