#!/usr/bin/env bash
# Snapshots through a mounted pool's daemon: `poolfs snapshot` (one, and
# -r), `poolfs dataset list -t snapshot|all` with figures that follow the
# data (the snapshot taken before an overwrite holds the old data alone),
# a dataset with snapshots refused by destroy, `dataset destroy POOL@NAME`
# and of a range, `dataset rename POOL@A @B`, `dataset get written@SNAP`,
# `poolfs rollback` of a mounted child dataset and offline (-r), browsing
# MNT/.poolfs/snapshot (hidden, read-only, live, busy while in use),
# bad names refused naming the argument, `poolfs diff` of a child dataset
# (against the dataset and a later snapshot, offline too, and its
# refusals), the snapshots still there offline after the unmount,
# `poolfs clone` and `poolfs promote` through the mount (the clone reads
# as its snapshot and changes apart; the origin stays while the clone
# exists; after the promote the old dataset is a clone and goes), and
# `poolfs check` healthy. Runs as root (needs
# /dev/fuse); skipped (exit 77, ctest's skip code, with the reason) when
# FUSE is unavailable. About 10 s.
#
# Usage: tests/daemon/poolfs_snapshot_test.sh path/to/poolfs
set -uo pipefail

POOLFS=$(realpath "${1:?usage: $0 path/to/poolfs}")
if [[ ! -e /dev/fuse ]] || ! command -v fusermount3 >/dev/null; then
  echo "not run: no /dev/fuse or fusermount3"
  exit 77
fi
DIR=$(mktemp -d /tmp/poolfs-snapshot-test.XXXXXX)
chmod 755 "$DIR"
# A registry and sockets of our own, and a pool name of our own as well.
export XDG_STATE_HOME=$DIR/state XDG_CONFIG_HOME=$DIR/config XDG_RUNTIME_DIR=$DIR/run
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
MNT=$DIR/mnt
POOL=snap$$
MIB=1048576

cleanup() {
  if grep -q " $MNT " /proc/mounts; then
    "$POOLFS" unmount "$MNT" >/dev/null 2>&1 || umount -l "$MNT" 2>/dev/null
  fi
  rm -rf "$DIR"
}
trap cleanup EXIT
cd "$DIR" || exit 1

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run EXPECTED_EXIT "TEXT THE OUTPUT MUST HOLD" ARGS...: runs poolfs ARGS;
# its output is left in $OUT.
OUT=
run() {
  local want=$1 text=$2
  shift 2
  local rc
  OUT=$(timeout 60 "$POOLFS" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "poolfs $* exited $rc, expected $want; output:"$'\n'"$OUT"
  elif [[ -n "$text" && "$OUT" != *"$text"* ]]; then
    fail "poolfs $* did not say '$text'; output:"$'\n'"$OUT"
  else
    echo "ok: poolfs $* -> $rc"
  fi
}

# field NAME COLUMN: column COLUMN (1-based) of NAME's row in $OUT (-H).
field() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n { print $c }' <<<"$OUT"; }

# at_least WHAT VALUE MIN: VALUE is a number >= MIN.
at_least() {
  if [[ "$2" =~ ^[0-9]+$ ]] && (($2 >= $3)); then
    echo "ok: $1 = $2 (>= $3)"
  else
    fail "$1 is '$2', expected at least $3; list:"$'\n'"$OUT"
  fi
}
# at_most WHAT VALUE MAX
at_most() {
  if [[ "$2" =~ ^[0-9]+$ ]] && (($2 <= $3)); then
    echo "ok: $1 = $2 (<= $3)"
  else
    fail "$1 is '$2', expected at most $3; list:"$'\n'"$OUT"
  fi
}

run 0 "created" create pool.img --size 128M --name "$POOL"
mkdir "$MNT"
run 0 "" mount pool.img "$MNT"
grep -q " $MNT " /proc/mounts || {
  fail "not mounted"
  exit 1
}
run 0 "" dataset create "$POOL/home"
# Random data: compression keeps every byte of it.
head -c $MIB /dev/urandom >"$DIR/old"
head -c $MIB /dev/urandom >"$DIR/new"
cp "$DIR/old" "$MNT/file"
cp "$DIR/old" "$MNT/home/file"

run 0 "" snapshot "$POOL@one"
cp "$DIR/new" "$MNT/file" # a full overwrite: @one alone keeps the old data
run 0 "" snapshot -r "$POOL@two"
cmp -s "$DIR/new" "$MNT/file" || fail "the file does not read back as last written"

run 0 "" dataset list -t snapshot -H -p -o name,used,refer,written
names=$(cut -f1 <<<"$OUT" | tr '\n' ' ')
[[ $names == "$POOL@one $POOL@two $POOL/home@two " ]] && echo "ok: snapshots listed: $names" ||
  fail "dataset list -t snapshot named: $names"
at_least "used of @one (the old data, held by it alone)" "$(field "$POOL@one" 2)" $MIB
at_most "used of @one" "$(field "$POOL@one" 2)" $((2 * MIB))
at_most "used of @two (the head holds all of it)" "$(field "$POOL@two" 2)" $((MIB / 2))
at_least "refer of @one" "$(field "$POOL@one" 3)" $MIB
at_least "refer of @two" "$(field "$POOL@two" 3)" $MIB
at_least "written of @two (the overwrite)" "$(field "$POOL@two" 4)" $MIB
at_least "refer of $POOL/home@two" "$(field "$POOL/home@two" 3)" $MIB
run 0 "" dataset get -H -p usedbysnapshots "$POOL"
at_least "usedbysnapshots of $POOL" "$(cut -f3 <<<"$OUT")" $MIB
run 0 "USEDSNAP" dataset list -o space "$POOL"

# -t all: each dataset followed by its snapshots.
run 0 "" dataset list -t all -H -o name,type
want=$(printf '%s\n' "$POOL"$'\tfilesystem' "$POOL@one"$'\tsnapshot' "$POOL@two"$'\tsnapshot' \
  "$POOL/home"$'\tfilesystem' "$POOL/home@two"$'\tsnapshot')
[[ $OUT == "$want" ]] && echo "ok: list -t all orders datasets and snapshots" ||
  fail "list -t all:"$'\n'"$OUT"

# Browsing: MNT/.poolfs/snapshot/NAME, hidden from the root's listing,
# read-only, the snapshot's content; a new snapshot appears at once; one in
# use (a working directory in it) is not destroyed.
[[ $(ls -a "$MNT") != *.poolfs* ]] && echo "ok: .poolfs is hidden" || fail "ls -a shows .poolfs"
snaps=$(ls "$MNT/.poolfs/snapshot" | tr '\n' ' ')
[[ $snaps == "one two " ]] && echo "ok: .poolfs/snapshot lists: $snaps" ||
  fail ".poolfs/snapshot lists '$snaps'"
cmp -s "$DIR/old" "$MNT/.poolfs/snapshot/one/file" && echo "ok: @one's file reads as it was" ||
  fail "@one's file differs from what was written before it"
cmp -s "$DIR/old" "$MNT/home/.poolfs/snapshot/two/file" &&
  echo "ok: $POOL/home@two's file reads as it was" || fail "$POOL/home@two's file differs"
if echo x 2>/dev/null >"$MNT/.poolfs/snapshot/one/file" || touch "$MNT/.poolfs/snapshot/x" 2>/dev/null ||
  mkdir "$MNT/.poolfs/y" 2>/dev/null; then
  fail "a snapshot or its directory took a change"
else
  echo "ok: snapshots and their directories are read-only"
fi
# snapdir=visible lists it (inherited by the children), hidden again not.
run 0 "" dataset set snapdir=visible "$POOL"
[[ $(ls -a "$MNT") == *.poolfs* && $(ls -a "$MNT/home") == *.poolfs* ]] &&
  echo "ok: snapdir=visible lists .poolfs" || fail "snapdir=visible: ls -a does not show .poolfs"
run 0 "" dataset inherit snapdir "$POOL"
[[ $(ls -a "$MNT") != *.poolfs* ]] && echo "ok: hidden again" || fail "still listed"
run 0 "" snapshot "$POOL@browse"
[[ -d $MNT/.poolfs/snapshot/browse ]] && echo "ok: @browse appears at once" ||
  fail "@browse is not in .poolfs/snapshot"
(cd "$MNT/.poolfs/snapshot/browse" && sleep 4) &
sleep 0.5
run 2 "in use" dataset destroy "$POOL@browse"
wait
run 0 "" dataset destroy "$POOL@browse"
[[ ! -e $MNT/.poolfs/snapshot/browse ]] && echo "ok: @browse is gone" ||
  fail "@browse is still in .poolfs/snapshot"

# A dataset with snapshots stays; its snapshot goes.
run 1 "snapshot" dataset destroy "$POOL/home"
run 0 "" dataset destroy "$POOL@one"
run 0 "" dataset list -t snapshot -H -o name "$POOL"
[[ $OUT == "$POOL@two" ]] && echo "ok: one snapshot of $POOL left" ||
  fail "after destroying @one: $OUT"
run 2 "$POOL@one" dataset destroy "$POOL@one"

# Bad names: refused before anything is asked, naming the argument.
run 2 "'$POOL@'" snapshot "$POOL@"
run 2 "'$POOL@a@b'" snapshot "$POOL@a@b"
run 2 "'$POOL'" snapshot "$POOL"
run 2 "other$$" snapshot "other$$@x"
run 2 "one pool" snapshot "$POOL@x" "other$$@x"
run 1 "exists" snapshot "$POOL@two"
# Renamed within its dataset, written@ it, and destroyed as a range.
run 0 "" dataset rename "$POOL@two" @second
run 0 "written@second" dataset get written@second "$POOL"
run 0 "" snapshot "$POOL@three"
run 0 "" dataset destroy "$POOL@second%three"
run 0 "" dataset list -t snapshot -H -o name "$POOL"
[[ -z $OUT ]] || fail "after destroying @second%three: $OUT"
run 2 "'$POOL@a@b'" dataset destroy "$POOL@a@b"
run 2 "bogus" dataset list -t bogus

# Rollback of a child dataset on the mount: its files read as they were,
# through the same mount; the mount's own root is refused while mounted.
cp "$DIR/new" "$MNT/home/file"
echo extra >"$MNT/home/added"
run 0 "" rollback "$POOL/home@two"
cmp -s "$DIR/old" "$MNT/home/file" && echo "ok: home/file reads as at @two" ||
  fail "home/file after the rollback differs from @two's"
[[ ! -e $MNT/home/added ]] && echo "ok: home/added is gone" || fail "home/added survived"
cp "$DIR/old" "$MNT/file"
run 0 "" snapshot "$POOL@r1"
cp "$DIR/new" "$MNT/file"
run 0 "" snapshot "$POOL@r2"
run 2 "root of this mount" rollback "$POOL@r2"
run 2 "'$POOL'" rollback "$POOL"

# diff: what changed in a child dataset since its snapshot, against the
# dataset now and against a later snapshot, through the mount; refusals.
mkdir "$MNT/home/d"
echo a >"$MNT/home/d/keep"
echo b >"$MNT/home/d/old"
echo c >"$MNT/home/d/gone"
run 0 "" snapshot "$POOL/home@d1"
echo more >>"$MNT/home/d/keep"
mv "$MNT/home/d/old" "$MNT/home/d/new"
rm "$MNT/home/d/gone"
echo x >"$MNT/home/added2"
want=$(printf '%s\n' $'M\t/' $'+\t/added2' $'M\t/d' $'-\t/d/gone' $'M\t/d/keep' \
  $'R\t/d/old -> /d/new')
run 0 "" diff "$POOL/home@d1"
[[ $OUT == "$want" ]] && echo "ok: diff lists the changes since @d1" || fail "diff @d1:"$'\n'"$OUT"
run 0 "" snapshot "$POOL/home@d2"
run 0 "" diff "$POOL/home@d1" "$POOL/home@d2"
[[ $OUT == "$want" ]] && echo "ok: diff @d1 @d2 lists the same" || fail "diff @d1 @d2:"$'\n'"$OUT"
run 0 "" diff "$POOL/home@d2" "$POOL/home"
[[ -z $OUT ]] && echo "ok: nothing changed since @d2" || fail "diff @d2:"$'\n'"$OUT"
run 2 "older" diff "$POOL/home@d2" "$POOL/home@d1"
run 2 "no clone of" diff "$POOL/home@d1" "$POOL"
run 2 "no snapshot $POOL/home@nope" diff "$POOL/home@nope"
run 2 "'$POOL/home'" diff "$POOL/home"

run 0 "" unmount "$MNT"
run 0 $'R\t/d/old -> /d/new' diff --pool pool.img "$POOL/home@d1" "$POOL/home@d2"
# Still there, read offline from the exported pool, and rolled back there.
run 0 "$POOL/home@two" dataset list --pool pool.img -t snapshot
run 2 "later snapshots" rollback --pool pool.img "$POOL@r1"
run 0 "" rollback --pool pool.img -r "$POOL@r1"
run 0 "" mount pool.img "$MNT"
cmp -s "$DIR/old" "$MNT/file" && echo "ok: file reads as at @r1" ||
  fail "file after the offline rollback differs from @r1's"

# Clones: a writable dataset from a snapshot, joined to the mount at once.
run 0 "" clone -o compression=off "$POOL/home@two" "$POOL/work"
cmp -s "$DIR/old" "$MNT/work/file" && echo "ok: the clone reads as its snapshot" ||
  fail "work/file differs from home@two's"
cp "$DIR/new" "$MNT/work/file"
cmp -s "$DIR/old" "$MNT/home/file" && echo "ok: the origin's dataset is unchanged" ||
  fail "home/file changed with the clone"
run 0 "$POOL/home@two" dataset get -H origin "$POOL/work"
run 0 "$POOL/work" dataset get -H clones "$POOL/home@two"
# (A snapshot of the clone: its txg, with the overwrite, is synced when
# it returns, and the figures are the last synced txg's.)
run 0 "" snapshot "$POOL/work@w"
run 0 "" dataset list -H -p -o name,usedds,refer "$POOL/work"
at_least "usedds of the clone (its overwrite)" "$(field "$POOL/work" 2)" $MIB
at_most "usedds of the clone" "$(field "$POOL/work" 2)" $((2 * MIB))
run 1 "origin of" dataset destroy "$POOL/home@two"
run 2 "not a clone" promote "$POOL/home"
run 2 "does not exist" clone "$POOL/home@nope" "$POOL/w2"
run 2 "pool of its snapshot" clone "$POOL/home@two" "other$$/w2"
# Promoted, the clone owns the snapshot, and the old dataset is a clone
# that can go.
run 0 "" promote "$POOL/work"
run 0 "" dataset list -t snapshot -H -o name "$POOL/work"
[[ $OUT == "$POOL/work@two"$'\n'"$POOL/work@w" ]] && echo "ok: @two moved to the clone" ||
  fail "after promote: $OUT"
[[ -d $MNT/work/.poolfs/snapshot/two ]] && echo "ok: work/.poolfs/snapshot/two appears" ||
  fail "@two is not browsable under the clone"
run 0 "$POOL/work@two" dataset get -H origin "$POOL/home"
run 0 "" dataset destroy "$POOL/home@%" # its snapshots after @two stayed with it
run 0 "" dataset destroy "$POOL/home"
[[ ! -e $MNT/home ]] && echo "ok: home is gone" || fail "home is still in the mount"
cmp -s "$DIR/new" "$MNT/work/file" && echo "ok: the clone keeps its data" ||
  fail "work/file changed"
run 0 "" unmount "$MNT"
run 0 "healthy" check pool.img

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "all poolfs snapshot checks passed"
