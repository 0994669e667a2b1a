#!/usr/bin/env bash
# Everyday workloads on poolfs against its nearest peer, zfs-fuse (Debian's
# package: ZFS in a FUSE daemon), with a plain folder of the host's disk and
# tmpfs for reference, all measured in the same run.
#
#   createmany  `createmany -o -t 32` of COUNT empty files     -> files/s
#   untar       `tar -x` of /usr/include (packed once into the work
#               folder), then `sync -f` of the tree             -> files/s
#   find        `find -printf` over that tree after a remount (the host
#               side: caches dropped; tmpfs: as it is)          -> files/s
#   rm          `rm -rf` of the tree                            -> files/s
#   randwrite   fio, 4 KiB random writes, psync, one 128 MiB file,
#               end_fsync=1, no fallocate                       -> MiB/s
#   randwrite4k the same in a dataset of recordsize=4K, on poolfs
#               and on zfs-fuse alike (the host and tmpfs: not
#               measured, they have no records)                -> MiB/s
#   seqfsync    fio, 128 KiB sequential writes of one file of the same
#               size, each followed by fsync (a log's or a
#               checkpoint's pattern)                           -> MiB/s
#   sqlite      sqlite3 (journal_mode DELETE, synchronous FULL: its
#               defaults): single-row inserts, each its own
#               transaction                                     -> transactions/s
#   dbench      `dbench -t 30 4` (its client.txt load)          -> MB/s
# and createmany on memfs_ceiling (../shared/tools: an in-memory FUSE
# daemon, the ceiling of any FUSE daemon's create rate here) in each round.
#
# Each side gets a fresh filesystem every round: a poolfs pool file and a
# zfs-fuse pool file of the same size (sparse, in the work folder), a fresh
# folder on the host's disk, a fresh tmpfs. The sides take turns in each
# round, in the opposite order in the next one, and the medians of the
# rounds are compared. Nothing is pinned to a CPU (the daemons and the
# clients land where the scheduler puts them, as they do for users).
#
# Targets (poolfs over zfs-fuse unless said): sqlite >= 0.7 x the host
# disk and >= 1.5 x zfs-fuse; untar >= 2; randwrite4k >= 4; dbench >= 3;
# createmany >= 2.5, and >= 1.0 x memfs_ceiling. find and rm have none.
#
# Usage: scripts/bench-peers.sh [--rounds N] [--json] [--dir DIR] [--sides LIST] [--quick]
#   --rounds N    rounds (default 3)
#   --json        print one JSON object (medians, samples, ratios, settings) instead of the table
#   --dir DIR     where the pool files, the host-disk side and the tarball go (default /var/tmp)
#   --sides LIST  some of poolfs,zfs-fuse,host,tmpfs (default all four); zfs-fuse is
#                 installed from Debian's archive when it is missing
#   --quick       small sizes (10,000 creates, a 2,000-file tree, 16 MiB of random
#                 writes, 100 transactions, dbench for 5 s): checks the script, its
#                 figures say little
# Run it as root (zfs-fuse, tmpfs and dropping caches need it). Environment:
# POOLFS_BUILD (build folder, default "build").
# Progress goes to stderr. Exit 0 when every measurement ran (whether or not
# the targets are met), 1 when one failed, 2 for bad arguments.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
ROOT=$(pwd)

ROUNDS=3
JSON=0
WORKDIR=/var/tmp
SIDES=poolfs,zfs-fuse,host,tmpfs
QUICK=0
bench_option() {
  case $1 in
    --rounds) ROUNDS=${2:?}; BENCH_SHIFT=2 ;;
    --json) JSON=1 ;;
    --dir) WORKDIR=${2:?}; BENCH_SHIFT=2 ;;
    --sides) SIDES=${2:?}; BENCH_SHIFT=2 ;;
    --quick) QUICK=1 ;;
    *) return 1 ;;
  esac
}
bench_parse_args "$@"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH_NAME: --rounds '$ROUNDS': not a positive number" >&2; exit 2; }
IFS=, read -r -a SIDE_LIST <<<"$SIDES"
for s in "${SIDE_LIST[@]}"; do
  case $s in
    poolfs | zfs-fuse | host | tmpfs) ;;
    *) echo "$BENCH_NAME: --sides: unknown side '$s' (poolfs, zfs-fuse, host, tmpfs)" >&2; exit 2 ;;
  esac
done
has_side() { [[ ",$SIDES," == *",$1,"* ]]; }
[[ $(id -u) -eq 0 ]] || die "run it as root: zfs-fuse, tmpfs and dropping caches need it"

if [[ $QUICK -eq 1 ]]; then
  COUNT=10000 TREE_FILES=2000 FIO_MIB=16 SQL_TX=100 DBENCH_S=5 POOL_SIZE=2G
else
  COUNT=100000 TREE_FILES=0 FIO_MIB=128 SQL_TX=500 DBENCH_S=30 POOL_SIZE=8G
fi

bench_programs
MEMFS=$BUILD/bin/memfs_ceiling
MEMFS_SRC=$ROOT/../shared/tools/memfs_ceiling.cc
if [[ ! -x "$MEMFS" && -f "$MEMFS_SRC" ]]; then
  log "compiling $MEMFS from $MEMFS_SRC"
  mkdir -p "$(dirname "$MEMFS")"
  g++ -O2 -std=c++17 "$MEMFS_SRC" -o "$MEMFS" $(pkg-config --cflags --libs fuse3)
fi
if [[ -x "$MEMFS" ]]; then
  MEMFS=$(realpath "$MEMFS")
else
  log "the FUSE ceiling's source $MEMFS_SRC is missing (it lives in ../shared/tools beside the repository): createmany is not measured against it"
  MEMFS=""
fi
missing=()
for tool in fio sqlite3 dbench tar; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if has_side zfs-fuse && ! command -v zfs-fuse >/dev/null; then missing+=(zfs-fuse); fi
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing ${missing[*]} from Debian's archive"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed (run apt-get update first?)"
fi
DBENCH_LOAD=/usr/share/dbench/client.txt
[[ -f $DBENCH_LOAD ]] || die "dbench's load file $DBENCH_LOAD is missing"

mkdir -p "$WORKDIR"
W=$(realpath "$(mktemp -d "$WORKDIR/poolfs-bench-peers.XXXXXX")")
ZPOOL_NAME=peers$$
ZFS_STARTED=0

wait_pool_released() {
  bench_released "$W/poolfs.pool" 120 || die "the poolfs daemon still holds $W/poolfs.pool 120 s after the unmount"
}
cleanup() {
  local rc=$? m
  if command -v zpool >/dev/null && zpool list "$ZPOOL_NAME" >/dev/null 2>&1; then
    zpool destroy -f "$ZPOOL_NAME" >/dev/null 2>&1 || true
  fi
  if [[ $ZFS_STARTED -eq 1 ]]; then
    pkill -x zfs-fuse 2>/dev/null || true
  fi
  for m in "$W"/mnt-*; do
    if mountpoint -q "$m" 2>/dev/null; then
      fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    fi
  done
  bench_released "$W/poolfs.pool" 30 || true  # poolfs's final sync
  rm -rf "$W"
  [[ $rc -ne 0 ]] && echo "$BENCH_NAME: failed (exit $rc); mounts and $W cleaned up" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { s = b - a; if (s <= 0) s = 1e-6; printf "%.1f", n / s }'; }
ratio() {  # A B: A / B, or "-" when either is missing
  [[ -n $1 && -n $2 ]] || { echo "-"; return; }
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
}
drop_caches() {
  sync
  echo 3 >/proc/sys/vm/drop_caches
}

# The tree to unpack: /usr/include, or its first TREE_FILES files (--quick).
BALL=$W/tree.tar
if [[ $TREE_FILES -gt 0 ]]; then
  (cd /usr && { find include -type f || true; } | head -n "$TREE_FILES" >"$W/tree.list") || true
  tar -cf "$BALL" -C /usr -T "$W/tree.list"
else
  tar -cf "$BALL" -C /usr include
fi
BALL_ENTRIES=$(tar -tf "$BALL" | wc -l)
log "tree: $BALL_ENTRIES entries from /usr/include; createmany of $COUNT files; fio of $FIO_MIB MiB; $SQL_TX sqlite transactions; dbench for $DBENCH_S s"

# Each side: NAME_up (a fresh, empty filesystem at $W/mnt-NAME), NAME_remount
# (what a remount means for it), NAME_down.
poolfs_up() {
  rm -f "$W/poolfs.pool"
  "$POOLFS" create "$W/poolfs.pool" --size "$POOL_SIZE" --name peers >/dev/null
  mkdir -p "$W/mnt-poolfs"
  "$POOLFS" mount "$W/poolfs.pool" "$W/mnt-poolfs"
}
poolfs_remount() {
  "$POOLFS" unmount "$W/mnt-poolfs"
  wait_pool_released
  drop_caches
  "$POOLFS" mount "$W/poolfs.pool" "$W/mnt-poolfs"
}
poolfs_down() {
  "$POOLFS" unmount "$W/mnt-poolfs"
  wait_pool_released
  rm -f "$W/poolfs.pool"
}
zfs_up() {
  if ! pgrep -x zfs-fuse >/dev/null; then
    zfs-fuse --no-kstat-mount
    ZFS_STARTED=1
    local i
    for ((i = 0; i < 100; i++)); do zpool list >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  rm -f "$W/zfs.pool"
  truncate -s "$POOL_SIZE" "$W/zfs.pool"
  mkdir -p "$W/mnt-zfs-fuse"
  zpool create -f -m "$W/mnt-zfs-fuse" "$ZPOOL_NAME" "$W/zfs.pool" 2>&1 | grep -v '^Defaulting to' >&2 || true
  zpool list "$ZPOOL_NAME" >/dev/null 2>&1 || die "zfs-fuse: zpool create failed"
}
zfs_remount() {
  zpool export "$ZPOOL_NAME"
  drop_caches
  zpool import -d "$W" "$ZPOOL_NAME"
}
zfs_down() {
  local i
  for ((i = 0; i < 50; i++)); do  # busy for a moment after the last close
    zpool destroy -f "$ZPOOL_NAME" 2>/dev/null && break
    sleep 0.2
  done
  ! zpool list "$ZPOOL_NAME" >/dev/null 2>&1 || die "zfs-fuse: cannot destroy pool $ZPOOL_NAME"
  rm -f "$W/zfs.pool"
}
poolfs_rec4k() {  # a dataset of recordsize=4K: its folder
  "$POOLFS" dataset create peers/rec4k -o recordsize=4K >/dev/null
  echo "$W/mnt-poolfs/rec4k"
}
zfs_rec4k() {
  zfs create -o recordsize=4K "$ZPOOL_NAME/rec4k"
  echo "$W/mnt-zfs-fuse/rec4k"
}
host_up() { mkdir -p "$W/mnt-host"; }
host_remount() { drop_caches; }
host_down() { rm -rf "$W/mnt-host"; }
tmpfs_up() {
  mkdir -p "$W/mnt-tmpfs"
  mount -t tmpfs -o size=50% tmpfs "$W/mnt-tmpfs"
}
tmpfs_remount() { :; }
tmpfs_down() { umount "$W/mnt-tmpfs"; }
side_fn() {  # SIDE VERB
  case $1 in
    zfs-fuse) echo "zfs_$2" ;;
    *) echo "$1_$2" ;;
  esac
}

declare -A SAMPLES  # "side workload" -> space-separated samples
add() { SAMPLES["$1 $2"]="${SAMPLES["$1 $2"]:-} $3"; }

w_createmany() {  # DIR: files/s
  local out
  out=$("$CREATEMANY" -o -i 0 -t 32 -D "$1/cm" "$COUNT") || die "createmany on $1 failed: $out"
  awk '/^total:/ { print $7 }' <<<"$out"
}
w_untar() {
  local t0 t1
  mkdir -p "$1/tree"
  t0=$(now)
  tar -xf "$BALL" -C "$1/tree"
  sync -f "$1/tree"
  t1=$(now)
  rate "$BALL_ENTRIES" "$t0" "$t1"
}
w_find() {
  local t0 t1 n
  t0=$(now)
  n=$(find "$1/tree" -printf '%p %s %m %u\n' | wc -l)
  t1=$(now)
  rate "$n" "$t0" "$t1"
}
w_rm() {
  local t0 t1 n
  n=$(find "$1/tree" | wc -l)
  t0=$(now)
  rm -rf "$1/tree"
  t1=$(now)
  rate "$n" "$t0" "$t1"
}
w_randwrite() {
  local out
  out=$(fio --name=randwrite --directory="$1" --rw=randwrite --bs=4k --size="${FIO_MIB}m" \
    --ioengine=psync --end_fsync=1 --fallocate=none --randrepeat=1 --output-format=json) ||
    die "fio on $1 failed"
  python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f" % (j["jobs"][0]["write"]["bw_bytes"] / 1048576))' <<<"$out"
  rm -f "$1"/randwrite.*
}
w_seqfsync() {
  local out
  out=$(fio --name=seqfsync --directory="$1" --rw=write --bs=128k --size="${FIO_MIB}m" \
    --ioengine=psync --fsync=1 --fallocate=none --output-format=json) ||
    die "fio on $1 failed"
  python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f" % (j["jobs"][0]["write"]["bw_bytes"] / 1048576))' <<<"$out"
  rm -f "$1"/seqfsync.*
}
w_sqlite() {
  local t0 t1 i
  sqlite3 "$1/bench.db" 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);'
  for ((i = 0; i < SQL_TX; i++)); do echo "INSERT INTO t (v) VALUES ('row $i of the benchmark');"; done >"$W/inserts.sql"
  t0=$(now)
  sqlite3 "$1/bench.db" <"$W/inserts.sql"
  t1=$(now)
  [[ $(sqlite3 "$1/bench.db" 'SELECT count(*) FROM t;') -eq $SQL_TX ]] || die "sqlite on $1 lost rows"
  rm -f "$1/bench.db"
  rate "$SQL_TX" "$t0" "$t1"
}
w_dbench() {
  local out
  mkdir -p "$1/dbench"
  out=$(dbench -c "$DBENCH_LOAD" -D "$1/dbench" -t "$DBENCH_S" 4 2>&1) || die "dbench on $1 failed: $(tail -3 <<<"$out")"
  rm -rf "$1/dbench"
  awk '/^Throughput/ { print $2 }' <<<"$out"
}

measure_side() {  # SIDE
  local side=$1 dir=$W/mnt-$1 v
  log "  $side"
  "$(side_fn "$side" up)"
  v=$(w_createmany "$dir"); add "$side" createmany "$v"
  v=$(w_untar "$dir"); add "$side" untar "$v"
  "$(side_fn "$side" remount)"
  v=$(w_find "$dir"); add "$side" find "$v"
  v=$(w_rm "$dir"); add "$side" rm "$v"
  v=$(w_randwrite "$dir"); add "$side" randwrite "$v"
  if [[ $side == poolfs || $side == zfs-fuse ]]; then
    v=$(w_randwrite "$("$(side_fn "$side" rec4k)")"); add "$side" randwrite4k "$v"
  fi
  v=$(w_seqfsync "$dir"); add "$side" seqfsync "$v"
  v=$(w_sqlite "$dir"); add "$side" sqlite "$v"
  v=$(w_dbench "$dir"); add "$side" dbench "$v"
  "$(side_fn "$side" down)"
  log "    createmany/s $(awk '{print $NF}' <<<"${SAMPLES["$side createmany"]}") untar/s $(awk '{print $NF}' <<<"${SAMPLES["$side untar"]}") sqlite tx/s $(awk '{print $NF}' <<<"${SAMPLES["$side sqlite"]}")"
}
measure_ceiling() {
  local v
  [[ -n $MEMFS ]] || return 0
  mkdir -p "$W/mnt-ceiling"
  "$MEMFS" "$W/mnt-ceiling"
  v=$(w_createmany "$W/mnt-ceiling")
  fusermount3 -u "$W/mnt-ceiling"
  add ceiling createmany "$v"
  log "  memfs_ceiling: createmany/s $v"
}

for ((round = 1; round <= ROUNDS; round++)); do
  log "round $round of $ROUNDS"
  order=("${SIDE_LIST[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((i = ${#SIDE_LIST[@]} - 1; i >= 0; i--)); do order+=("${SIDE_LIST[i]}"); done
  fi
  measure_ceiling
  for side in "${order[@]}"; do measure_side "$side"; done
done

WORKLOADS=(createmany untar find rm randwrite randwrite4k seqfsync sqlite dbench)
declare -A UNIT=([createmany]=files/s [untar]=files/s [find]=files/s [rm]=files/s
  [randwrite]=MiB/s [randwrite4k]=MiB/s [seqfsync]=MiB/s [sqlite]=tx/s [dbench]=MB/s)
declare -A TARGET=([createmany]=2.5 [untar]=2 [randwrite4k]=4 [sqlite]=1.5 [dbench]=3)
declare -A MED
for key in "${!SAMPLES[@]}"; do
  # shellcheck disable=SC2086  # the samples are numbers
  MED[$key]=$(median ${SAMPLES[$key]})
done
med() { echo "${MED["$1 $2"]:-}"; }
verdict() {  # VALUE TARGET
  [[ -z $1 || $1 == - ]] && { echo "-"; return; }
  awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t ? "met" : "NOT MET") }'
}

if [[ $JSON -eq 1 ]]; then
  {
    echo "{"
    echo "  \"settings\": {\"rounds\": $ROUNDS, \"quick\": $QUICK, \"sides\": \"$SIDES\", \"createmany_files\": $COUNT, \"tree_entries\": $BALL_ENTRIES, \"fio_mib\": $FIO_MIB, \"sqlite_transactions\": $SQL_TX, \"dbench_seconds\": $DBENCH_S, \"pool_size\": \"$POOL_SIZE\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\"},"
    echo "  \"medians\": {"
    first=1
    for side in ceiling "${SIDE_LIST[@]}"; do
      for wl in "${WORKLOADS[@]}"; do
        v=$(med "$side" "$wl")
        [[ -z $v ]] && continue
        [[ $first -eq 1 ]] || echo ","
        first=0
        # shellcheck disable=SC2086
        printf '    "%s %s": {"median": %s, "samples": [%s]}' "$side" "$wl" "$v" "$(echo ${SAMPLES["$side $wl"]} | tr ' ' ',')"
      done
    done
    echo ""
    echo "  },"
    echo "  \"ratios\": {"
    first=1
    for wl in "${WORKLOADS[@]}"; do
      r=$(ratio "$(med poolfs "$wl")" "$(med zfs-fuse "$wl")")
      [[ $r == - ]] && continue
      [[ $first -eq 1 ]] || echo ","
      first=0
      printf '    "%s poolfs/zfs-fuse": %s' "$wl" "$r"
    done
    r=$(ratio "$(med poolfs sqlite)" "$(med host sqlite)")
    [[ $r != - ]] && { [[ $first -eq 1 ]] || echo ","; first=0; printf '    "sqlite poolfs/host": %s' "$r"; }
    r=$(ratio "$(med poolfs createmany)" "$(med ceiling createmany)")
    [[ $r != - ]] && { [[ $first -eq 1 ]] || echo ","; printf '    "createmany poolfs/memfs_ceiling": %s' "$r"; }
    echo ""
    echo "  }"
    echo "}"
  }
  exit 0
fi

printf '%-11s %-8s' workload unit
for side in "${SIDE_LIST[@]}"; do printf ' %10s' "$side"; done
printf '   %-16s %s\n' "poolfs/zfs-fuse" "target"
for wl in "${WORKLOADS[@]}"; do
  printf '%-11s %-8s' "$wl" "${UNIT[$wl]}"
  for side in "${SIDE_LIST[@]}"; do v=$(med "$side" "$wl"); printf " %10s" "${v:--}"; done
  r=$(ratio "$(med poolfs "$wl")" "$(med zfs-fuse "$wl")")
  if [[ -n ${TARGET[$wl]:-} ]]; then
    printf '   %-16s >= %s %s\n' "$r" "${TARGET[$wl]}" "$(verdict "$r" "${TARGET[$wl]}")"
  else
    printf '   %-16s\n' "$r"
  fi
done
r=$(ratio "$(med poolfs sqlite)" "$(med host sqlite)")
printf 'sqlite, poolfs over the host disk: %s (target >= 0.7 %s)\n' "$r" "$(verdict "$r" 0.7)"
r=$(ratio "$(med poolfs createmany)" "$(med ceiling createmany)")
printf 'createmany, poolfs over memfs_ceiling (%s files/s): %s (target >= 1.0 %s)\n' \
  "$(med ceiling createmany)" "$r" "$(verdict "$r" 1.0)"
printf 'medians of %s rounds; commit %s\n' "$ROUNDS" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
