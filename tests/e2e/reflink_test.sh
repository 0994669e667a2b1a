#!/usr/bin/env bash
# Block cloning through copy_file_range(2) on a real mount, as root or as an
# unprivileged user:
#   - `cp --reflink=auto` of a file of several MiB (random, of a length no
#     block divides) and of a sparse file reads back identical (cmp, and
#     the same holes), and the pool's allocated space grows by a small
#     part of what a plain copy (`cp --reflink=never`) adds (for the sparse
#     file, by copy_file_range of the whole file: cp 9.1 copies a file
#     with holes by read and write); `cp --reflink=always` fails (FUSE has
#     no FICLONE);
#   - copies between two datasets of the pool clone too;
#   - at once after copy_file_range, before any txg has synced, and again
#     after a sync and after a remount, the destination (which held other
#     bytes and other holes) shows the new bytes to read(2), to a mapping
#     made before the copy and to a new one, has the right size, and
#     SEEK_DATA/SEEK_HOLE report the source's layout (e2e_clone_check);
#     also at offsets not alike in their blocks, and from a source whose
#     blocks have not synced yet;
#   - a copy fsync'ed, then the daemon killed (SIGKILL): after the remount
#     the destination has the new bytes; a copy not fsync'ed, then the
#     kill: the destination is wholly old or wholly new;
#   - `poolfs check` is clean after each of these steps.
#
# The mount's txgs sync only when asked (txg.timeout_ms = 10 minutes), so
# the checks "at once" run before the copy's txg syncs; txg_sync shortens
# the timeout live (poolfs tune) until every change so far has synced.
#
# Usage: tests/e2e/reflink_test.sh path/to/poolfs path/to/e2e_clone_check root|user
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
CLONE_CHECK=$(realpath "${2:?usage: $0 path/to/poolfs path/to/e2e_clone_check root|user}")
e2e_init_mode "$1" "${3:-root}"
NAME=rl$$
P=$W/pool/a.pool
M=$W/mnt
E=$W/expect # what the destinations must hold, outside the mount
user_dirs "$E" "$W/src"
CFG=$W/txg.toml
printf '[txg]\ntimeout_ms = 600000\n' >"$CFG"
chmod 644 "$CFG"
MiB=1048576

cc() { u "$CLONE_CHECK" "$@"; }

# txgs: "SYNCED OPEN FREED" from poolfs status: the last synced txg, the
# open one, and the space freed that is not allocatable yet ("0B" once the
# deferred frees are done).
txgs() {
  pf status "$M" | sed -n -e 's/^last synced txg: *\([0-9]*\) (open txg \([0-9]*\).*/\1 \2/p' \
    -e 's/^space:.* free, \([^ ]*\) freed.*/\1/p' | paste -sd' '
}

# txg_sync: returns once every change made so far is in a synced txg and
# the blocks those syncs freed are free again, so that the pool's figures
# are exact. A txg nobody held stays open (it has nothing to sync).
txg_sync() {
  local synced now freed start i
  read -r synced start freed < <(txgs)
  pf tune "$M" txg.timeout_ms=20 >/dev/null || fail "poolfs tune txg.timeout_ms=20"
  for i in $(seq 1 300); do
    sleep 0.05
    read -r synced now freed < <(txgs)
    if [[ $freed == 0B ]] && { ((synced >= start)) || ((i >= 10 && now == start)); }; then
      break
    fi
  done
  [[ $freed == 0B ]] && ((synced >= start || now == start)) || fail "txg_sync: txgs $synced/$now, $freed freed"
  pf tune "$M" txg.timeout_ms=600000 >/dev/null || fail "poolfs tune txg.timeout_ms=600000"
}

# allocated: the pool's allocated bytes as of the last synced txg (statfs:
# the pool's size less its free space; a clone counts once here, though in
# each dataset's referenced).
allocated() { u stat -f -c '%b %f %S' "$M" | awk '{printf "%d\n", ($1 - $2) * $3}'; }

mount_pool() {
  pool_mount "$P" "$M" "$U" --config "$CFG" || {
    fail "poolfs mount ($1)"
    finish
  }
}

# checkpoint WHAT: unmount, `poolfs check`, mount again.
checkpoint() {
  pool_unmount "$M" "$U" || fail "poolfs unmount ($1)"
  if pool_check "$P"; then ok "poolfs check clean after $1"; else fail "poolfs check after $1"; fi
  mount_pool "after $1"
}

# kill_daemon WHAT: SIGKILL, the dead mount cleared, `poolfs check`, mount.
kill_daemon() {
  kill -9 "$DAEMON_PID"
  wait "$DAEMON_PID" 2>/dev/null
  fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"
  if pool_check "$P"; then ok "poolfs check clean after SIGKILL $1"; else fail "poolfs check after SIGKILL $1"; fi
  mount_pool "after SIGKILL $1"
}

as "$U" "$POOLFS" create "$P" --size 1G --name "$NAME" >/dev/null || {
  fail "poolfs create"
  finish
}
mount_pool "first"

# --- cp --reflink ----------------------------------------------------------
head -c $((7 * MiB + 12345)) /dev/urandom >"$W/src/rand"
chmod 644 "$W/src/rand"
must u cp "$W/src/rand" "$M/rand"
# 9 MiB + 777: data at 1-2 MiB, 300 KiB from 5 MiB + 333, the last 777 bytes.
must cc make "$M/sparse" 9M+777 1M:1M 5M+333:300K 9M:777
must cc make "$M/sparse.clone" 0
txg_sync
# cp 9.1 (Debian 12) copies a file with holes by read and write between
# SEEK_DATA and SEEK_HOLE, never by copy_file_range: its copy's bytes and
# holes are checked, and the space measured is that of copy_file_range of
# the whole file (what cp does for a file without holes).
must u cp --reflink=auto "$M/sparse" "$M/sparse.copy"
txg_sync
before=$(allocated)
must u cp --reflink=auto "$M/rand" "$M/rand.copy"
must cc clone "$M/sparse" "$M/sparse.clone" --exact-layout >/dev/null
u cmp "$M/rand" "$M/rand.copy" && u cmp "$M/sparse" "$M/sparse.copy" &&
  u cmp "$M/sparse" "$M/sparse.clone" &&
  ok "cp --reflink=auto and copy_file_range: identical contents" || fail "copies differ"
layout=$(cc layout "$M/sparse")
[[ $layout == "$(cc layout "$M/sparse.copy")" && $layout == "$(cc layout "$M/sparse.clone")" ]] &&
  ok "the sparse file's copies keep its holes: $layout" ||
  fail "holes: $layout vs $(cc layout "$M/sparse.copy") (cp), $(cc layout "$M/sparse.clone") (copy_file_range)"
txg_sync
cloned=$(($(allocated) - before))
must u cp --reflink=never "$M/rand" "$M/rand.plain"
txg_sync
plain=$(($(allocated) - before - cloned))
data=$((7 * MiB + 12345 + MiB + 300 * 1024 + 777))
echo "pool allocated space: +$cloned bytes for cp --reflink=auto of rand and" \
  "copy_file_range of sparse ($data bytes of data), +$plain bytes for cp --reflink=never of rand"
((plain >= 7 * MiB)) || fail "a plain copy of 7 MiB added only $plain bytes: the figure measures nothing"
((cloned * 10 < data)) && ok "the clones added $cloned bytes, less than a tenth of their $data" ||
  fail "cp --reflink=auto added $cloned bytes for $data bytes of data: not cloned"
out=$(u cp --reflink=always "$M/rand" "$M/rand.always" 2>&1) &&
  fail "cp --reflink=always worked (the kernel sends FICLONE to no FUSE filesystem)"
[[ $out == *"not supported"* ]] && ok "cp --reflink=always fails: $out" || fail "cp --reflink=always: $out"

# --- between datasets ------------------------------------------------------
# Each copy from a synced source: blocks a copy shared in a txg not synced
# yet are copied again, as any block changed since the last sync.
must pf dataset create "$NAME/a"
must pf dataset create "$NAME/b"
txg_sync
before=$(allocated)
must u cp --reflink=auto "$M/rand" "$M/a/rand"
txg_sync
must u cp --reflink=auto "$M/a/rand" "$M/b/rand"
u cmp "$M/rand" "$M/a/rand" && u cmp "$M/rand" "$M/b/rand" &&
  ok "copies between datasets: identical" || fail "copies between datasets differ"
txg_sync
cloned=$(($(allocated) - before))
((cloned * 10 < 2 * (7 * MiB + 12345))) &&
  ok "two copies between datasets added $cloned bytes to the pool" ||
  fail "two copies between datasets added $cloned bytes: not cloned"
echo "datasets (name, referenced): $(pf dataset list -Hp -o name,refer | paste -sd' ')"
checkpoint "the copies"

# --- at once after copy_file_range, then after a sync and a remount ----------
# The source: data, holes, data to its end (not a whole block). The
# destinations hold other bytes, with holes elsewhere.
must cc make "$M/c-src" 3M+4321 0:256K 1M:300K 2M:1M+4321
must cc make "$M/c-dst" 3M+4321 256K:768K 2560K:1M
must cc make "$M/c-mid" 5M 0:5M
must cc make "$M/c-odd" 2M 0:2M
txg_sync
read -r t0 _ _ < <(txgs)
# The whole file over one of the same size; 2 MiB from 128 KiB into the
# middle of a longer one (both alike in their blocks: shared); 1 MiB + 100
# at offsets unlike in their blocks (copied).
must cc clone "$M/c-src" "$M/c-dst" --exact-layout --save-new "$E/c-dst"
must cc clone "$M/c-src" "$M/c-mid" --off-in 128K --off-out 1M --len 2M --exact-layout \
  --save-new "$E/c-mid"
must cc clone "$M/c-src" "$M/c-odd" --off-in 4096 --off-out 12K --len 1M+100 --save-new "$E/c-odd"
# A source written since the last sync (its blocks are dirty: copied).
must cc make "$M/c-fresh" 1M+50 0:1M+50
must cc make "$M/c-fresh-dst" 1M+50 0:512K
must cc clone "$M/c-fresh" "$M/c-fresh-dst" --save-new "$E/c-fresh-dst"
read -r t1 _ _ < <(txgs)
[[ $t1 == "$t0" ]] && ok "the checks at once ran before any txg synced (last synced txg $t0)" ||
  fail "txgs $t0..$t1 synced during the copies: the checks at once did not all see unsynced clones"
txg_sync
for f in c-dst c-mid c-odd c-fresh-dst; do must cc verify "$M/$f" "$E/$f"; done
checkpoint "copy_file_range checks"
for f in c-dst c-mid c-odd c-fresh-dst; do must cc verify "$M/$f" "$E/$f"; done
cc verify "$M/c-src" "$E/c-dst" >/dev/null && ok "the source is unchanged" || fail "the source changed"

# --- SIGKILL between the copy and its sync ---------------------------------
# fsync'ed: the copy is durable (the intent log, or a sync), so it survives.
must cc make "$M/k-dst" 3M+4321 0:3M+4321
txg_sync
must cc clone "$M/c-src" "$M/k-dst" --exact-layout --fsync --save-new "$E/k-dst"
kill_daemon "after an fsync'ed copy"
cc verify "$M/k-dst" "$E/k-dst" && ok "an fsync'ed copy survives SIGKILL" ||
  fail "an fsync'ed copy lost or damaged by SIGKILL"
# Not fsync'ed: the destination is wholly old or wholly new. Round 1 kills
# at once; round 2 syncs every 200 ms and kills at a random moment within 0.8 s, perhaps
# during the copy's sync.
for round in 1 2; do
  must cc make "$M/n$round-dst" 3M+4321 0:1M 2M:1M+4321
  txg_sync
  ((round == 2)) && must pf tune "$M" txg.timeout_ms=200 >/dev/null
  must cc clone "$M/c-src" "$M/n$round-dst" --exact-layout --save-old "$E/n$round.old" --save-new "$E/n$round.new"
  ((round == 2)) && sleep "0.$((RANDOM % 9))"
  kill_daemon "after a copy not fsync'ed (round $round)"
  if u cmp -s "$M/n$round-dst" "$E/n$round.new"; then
    seen=new
  elif u cmp -s "$M/n$round-dst" "$E/n$round.old"; then
    seen=old
  else
    seen=""
    fail "round $round: after SIGKILL the copy not fsync'ed is neither wholly old nor wholly new"
  fi
  if [[ -n $seen ]]; then
    cc verify "$M/n$round-dst" "$E/n$round.$seen" >/dev/null &&
      ok "round $round: after SIGKILL the copy not fsync'ed is wholly $seen" ||
      fail "round $round: wholly $seen by its bytes, but its layout or mapping disagrees"
  fi
done

pool_unmount "$M" "$U" || fail "poolfs unmount at the end"
pool_check "$P" && ok "poolfs check clean at the end" || fail "poolfs check at the end"
finish
