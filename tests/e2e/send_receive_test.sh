#!/usr/bin/env bash
# `poolfs send` and `poolfs receive` between two pools, through real
# mounts: a dataset with modes, owners, nanosecond mtimes, xattrs,
# symlinks, hard links and a sparse file is sent in full (through its
# pool's daemon) and received with --pool into an exported pool; then a
# chain of incrementals (-i @NAME, -i POOL/PATH@NAME, -c) is received with
# --pool, through the receiving pool's daemon while another process writes
# to that pool, and through a pipe between the two daemons. After each
# step the received dataset (live, and its snapshot) matches the sent
# snapshot: tree_listing.py (types, modes, owners, mtimes in ns, link
# counts, symlink targets, hard links, xattrs, the data/hole map, the
# bytes' SHA-256) and diff -r. A damaged stream (one byte flipped), a
# truncated one and an empty one are refused with exit 1 and leave the
# target as it was; the good stream then applies. An unmount of the
# sending pool while a send is blocked on its reader ends the send with
# exit 1 and a message saying so, and the daemon exits cleanly. --pool
# sends from the exported pool. An interrupted receive -s resumes from its
# token (send -t), and receive -A discards one. send -R carries a dataset
# tree with its snapshots and local properties, and -R -i its changes.
# `poolfs check` is clean on both pools.
#
# Usage: tests/e2e/send_receive_test.sh path/to/poolfs
# Exit 77 (skipped) when not root or without python3.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
# A registry of mounted pools (and control sockets) of our own: tests that
# list every mounted pool run beside this one.
export XDG_RUNTIME_DIR=$W/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
if ! command -v python3 >/dev/null; then
  echo "$(basename "$0"): needs python3 (tree_listing.py); skipped" >&2
  exit 77
fi
U=""
mkdir -p "$W/pool" "$W/state"
LIST="$HERE/tree_listing.py"

# The registry is per user; names of our own keep parallel tests apart.
SRC=sr$$
BK=bk$$
A=$W/pool/src.pool
B=$W/pool/bk.pool
MA=$W/src
MB=$W/bk

# same_tree EXPECTED ACTUAL WHAT: the two trees match (listing and diff -r).
same_tree() {
  local want=$1 got=$2 what=$3
  local lw lg
  lw=$(python3 "$LIST" "$want" 2>&1)
  lg=$(python3 "$LIST" "$got" 2>&1)
  if [[ "$lw" == "$lg" ]] && diff -r --no-dereference "$want" "$got" >/dev/null 2>&1; then
    ok "$what: the received tree matches"
  else
    fail "$what: $got differs from $want:"$'\n'"$(diff <(echo "$lw") <(echo "$lg") | head -20)"$'\n'"$(diff -r --no-dereference "$want" "$got" 2>&1 | head -5)"
  fi
}

# snapshots DATASET: its snapshots' names, one a line.
snapshots() { pf dataset list -H -t snapshot -o name -r "$1" 2>&1; }

# mount_pool FILE MNT VAR: pool_mount, the daemon's pid in VAR.
mount_pool() {
  local file=$1 mnt=$2 var=$3
  shift 3
  pool_mount "$file" "$mnt" "" "$@" || return 1
  printf -v "$var" '%s' "$DAEMON_PID"
}
# unmount_pool MNT PID: poolfs unmount, and the daemon exits 0.
unmount_pool() {
  local rc=0
  pf unmount "$1" >"$W/unmount.log" 2>&1 || {
    cat "$W/unmount.log" >&2
    return 1
  }
  wait "$2" || rc=$?
  [[ $rc -eq 0 ]] || {
    echo "the daemon of $1 exited $rc" >&2
    return 1
  }
}

setx() { python3 -c 'import os,sys; os.setxattr(sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3]), follow_symlinks=False)' "$@"; }
rmx() { python3 -c 'import os,sys; os.removexattr(sys.argv[1], sys.argv[2])' "$@"; }

must pf create "$A" --size 512M --name "$SRC"
must pf create "$B" --size 512M --name "$BK"
mount_pool "$A" "$MA" PID_A || {
  fail "mount $A"
  finish
}
must pf dataset create "$SRC/home"
H=$MA/home

# s1: every kind of thing a stream must carry.
mkdir -p "$H/d/e"
printf 'hello\n' >"$H/f1"
head -c 3M /dev/urandom >"$H/big"
truncate -s 8M "$H/sparse"
dd if=/dev/urandom of="$H/sparse" bs=64K count=2 seek=16 conv=notrunc status=none
ln -s f1 "$H/link"
ln -s /nonexistent/target "$H/dangling"
ln "$H/f1" "$H/d/hard1"
: >"$H/empty"
chmod 640 "$H/f1"
chmod 1750 "$H/d/e"
chown 1234:5678 "$H/big"
chown -h 4321:8765 "$H/link"
setx "$H/f1" user.color 626c7565
setx "$H/d" user.bin 00ff10
touch -d '2010-01-01 00:00:00.987654321' "$H/big" "$H/d/e"
touch -h -d '2001-02-03 04:05:06.123456789' "$H/link"
touch -d '2015-06-07 08:09:10.000000001' "$H/d" "$H"
must pf snapshot "$SRC/home@s1"
S1=$H/.poolfs/snapshot/s1

# The estimate, then the full stream through the sending pool's daemon.
out=$(pf send -n -v "$SRC/home@s1" 2>&1 >"$W/n.out")
[[ $out == *"would send $SRC/home@s1 (full stream): about "* && ! -s "$W/n.out" ]] &&
  ok "send -n -v estimates and writes nothing" || fail "send -n -v: $out"
pf send -v "$SRC/home@s1" >"$W/s1.stream" 2>"$W/send.err" || fail "send s1: $(cat "$W/send.err")"
grep -q "sent $SRC/home@s1 (full stream): " "$W/send.err" && ok "send -v summary" ||
  fail "send -v summary: $(cat "$W/send.err")"
size=$(stat -c %s "$W/s1.stream")
[[ $size -gt 3000000 ]] && ok "the full stream holds the data ($size bytes)" ||
  fail "the full stream is $size bytes"

# s2: changes of every kind.
dd if=/dev/urandom of="$H/big" bs=64K count=4 conv=notrunc oflag=append status=none
rm "$H/empty"
mv "$H/f1" "$H/f1moved"
chmod 600 "$H/d/hard1"
setx "$H/d/hard1" user.size 31
fallocate -p -o 1M -l 512K "$H/big" 2>/dev/null || echo "fallocate -p not supported: no hole punched"
truncate -s 4M "$H/sparse"
mkdir "$H/new"
printf 'new\n' >"$H/new/file"
must pf snapshot "$SRC/home@s2"
S2=$H/.poolfs/snapshot/s2
must pf send -i @s1 "$SRC/home@s2" >"$W/s2.stream"

# s3
rm -r "$H/d/e"
mv "$H/d" "$H/dd"
ln -s dd/hard1 "$H/link2"
dd if=/dev/urandom of="$H/big" bs=4K count=3 seek=100 conv=notrunc status=none
rmx "$H/dd" user.bin
touch -d '2020-02-02 02:02:02.222222222' "$H/new/file"
must pf snapshot "$SRC/home@s3"
S3=$H/.poolfs/snapshot/s3
must pf send -i "$SRC/home@s2" "$SRC/home@s3" >"$W/s3.stream"

# Full and the first incremental received offline (--pool), into a pool
# that is not mounted.
out=$(pf receive -v --pool "$B" "$BK/home" <"$W/s1.stream" 2>&1) && ok "receive --pool s1" ||
  fail "receive --pool s1: $out"
[[ $out == *"received $BK/home@s1 (full stream): "* ]] || fail "receive -v summary: $out"
expect 1 "" pf receive --pool "$B" "$BK/home" <"$W/s1.stream"
must pf receive --pool "$B" "$BK/home" <"$W/s2.stream"
# noatime: reading the received files to compare them must not change the
# dataset, or the next incremental would need -F (as a zfs backup would).
mount_pool "$B" "$MB" PID_B -o noatime || {
  fail "mount $B"
  finish
}
same_tree "$S2" "$MB/home" "full + incremental with --pool"
same_tree "$S1" "$MB/home/.poolfs/snapshot/s1" "the received s1"
[[ $(snapshots "$BK/home") == "$BK/home@s1"$'\n'"$BK/home@s2" ]] ||
  fail "snapshots after s2: $(snapshots "$BK/home")"
blocks=$(stat -c %b "$MB/home/sparse")
[[ $((blocks * 512)) -lt $((1 << 20)) ]] && ok "the sparse file stays sparse ($blocks blocks)" ||
  fail "the received sparse file takes $blocks blocks"
[[ $(stat -c %i "$MB/home/f1moved") == $(stat -c %i "$MB/home/d/hard1") ]] &&
  ok "hard links stay one file" || fail "f1moved and d/hard1 are two files"

# The next one through the receiving pool's daemon, while another process
# writes to that pool.
must pf dataset create "$BK/other"
(for i in $(seq 1 300); do echo "$i" >"$MB/other/f$i" || exit 1; done) &
writer=$!
out=$(pf receive -v "$BK/home" <"$W/s3.stream" 2>&1) && ok "receive s3 through the daemon" ||
  fail "receive s3 through the daemon: $out"
wait "$writer" || fail "the writer to $BK/other failed"
[[ $(ls "$MB/other" | wc -l) -eq 300 ]] || fail "$BK/other has $(ls "$MB/other" | wc -l) files"
same_tree "$S3" "$MB/home" "incremental through the daemon"
same_tree "$S3" "$MB/home/.poolfs/snapshot/s3" "the received s3"

# s4 through a pipe from one daemon to the other; compressed (-c) when the
# pool can send blocks as stored, which it may refuse (exit 1, saying so).
printf 'four\n' >"$H/four"
chown 7:7 "$H/four"
must pf snapshot "$SRC/home@s4"
c=-c
if ! out=$(pf send -n -c -i @s3 "$SRC/home@s4" 2>&1); then
  [[ $out == *"not supported"* ]] && echo "note: send -c is not supported by this pool: $out" ||
    fail "send -n -c: $out"
  c=""
fi
pf send $c -i @s3 "$SRC/home@s4" | pf receive "$BK/home"
[[ "${PIPESTATUS[*]}" == "0 0" ]] && ok "send $c | receive" || fail "send $c | receive: ${PIPESTATUS[*]}"
same_tree "$H/.poolfs/snapshot/s4" "$MB/home" "send $c | receive"

# s5: a damaged, a truncated and an empty stream are refused; the target
# stays as it was; the good stream then applies.
head -c 1M /dev/urandom >"$H/five"
must pf snapshot "$SRC/home@s5"
must pf send -i @s4 "$SRC/home@s5" >"$W/s5.stream"
before=$(python3 "$LIST" "$MB/home")
snaps_before=$(snapshots "$BK/home")
cp "$W/s5.stream" "$W/damaged.stream"
python3 - "$W/damaged.stream" <<'EOF'
import os, sys
p = sys.argv[1]
size = os.path.getsize(p)
if size == 0:
    sys.exit("empty stream: nothing to damage")
with open(p, "r+b") as f:
    f.seek(size // 2)
    b = f.read(1)
    f.seek(size // 2)
    f.write(bytes([b[0] ^ 0x5A]))
EOF
expect 1 "poolfs receive: " pf receive "$BK/home" <"$W/damaged.stream"
head -c $(($(stat -c %s "$W/s5.stream") / 2)) "$W/s5.stream" >"$W/truncated.stream"
expect 1 "poolfs receive: " pf receive "$BK/home" <"$W/truncated.stream"
expect 1 "poolfs receive: " pf receive "$BK/home" </dev/null
expect 2 "poolfs receive: " pf receive --pool "$A" "$SRC/x" </dev/null  # A is mounted: Busy
[[ $(python3 "$LIST" "$MB/home") == "$before" ]] && ok "refused streams left the files as they were" ||
  fail "a refused stream changed $BK/home"
[[ $(snapshots "$BK/home") == "$snaps_before" ]] && ok "refused streams made no snapshot" ||
  fail "snapshots after refused streams: $(snapshots "$BK/home")"
must pf receive "$BK/home" <"$W/s5.stream"
same_tree "$H/.poolfs/snapshot/s5" "$MB/home" "the good stream after the refused ones"

# s6, resumable: a receive -s cut halfway keeps what arrived; the target's
# receive_resume_token gives a token; send -t sends the rest, which
# receive -s completes. receive -A discards a kept receive. A full stream
# cut the same way shows its token on the target it has not made yet.
head -c 6M /dev/urandom >"$H/six"
must pf snapshot "$SRC/home@s6"
must pf send -i @s5 "$SRC/home@s6" >"$W/s6.stream"
head -c $(($(stat -c %s "$W/s6.stream") / 2)) "$W/s6.stream" >"$W/s6.half"
token_of() { pf dataset get -H receive_resume_token "$1" 2>&1 | cut -f3; }
out=$(pf receive -s "$BK/home" <"$W/s6.half" 2>&1)
[[ $? -eq 1 && $out == *"what arrived is kept"* ]] && ok "receive -s of half a stream keeps it" ||
  fail "receive -s of half a stream: $out"
token=$(token_of "$BK/home")
[[ $token == 1-* ]] && ok "the target shows its resume token" || fail "receive_resume_token: $token"
expect 2 "interrupted receive into it is kept" pf receive "$BK/home" <"$W/s6.stream"
pf send -t "$token" >"$W/s6.rest" 2>"$W/rest.err" || fail "send -t: $(cat "$W/rest.err")"
[[ $(stat -c %s "$W/s6.rest") -lt $(stat -c %s "$W/s6.stream") ]] &&
  ok "send -t sends only the rest" || fail "send -t sent the whole stream again"
must pf receive -s "$BK/home" <"$W/s6.rest"
[[ $(token_of "$BK/home") == "-" ]] || fail "a token is left after the resumed receive"
same_tree "$H/.poolfs/snapshot/s6" "$MB/home" "a resumed receive"
expect 2 "is not the newest snapshot" pf receive -s "$BK/home" <"$W/s6.half"  # s5, its base, is not the newest
pf send "$SRC/home@s6" 2>/dev/null | head -c 5000000 >"$W/full.half"  # send sees the pipe close
expect 1 "what arrived is kept" pf receive -s "$BK/copy" <"$W/full.half"
[[ $(token_of "$BK/copy") == 1-* ]] && ok "a cut full stream's target shows a token" ||
  fail "token of $BK/copy: $(token_of "$BK/copy")"
must pf receive -A "$BK/copy"
out=$(token_of "$BK/copy")
[[ $out != 1-* ]] && ok "receive -A discards it" || fail "after receive -A: $out"
expect 2 "no interrupted receive" pf receive -A "$BK/copy"

# send -R: the dataset tree (home, home/kid, home/kid/grand with its own
# properties), its snapshots and local properties, through a pipe between
# the two daemons; then -R -i from the last common snapshot.
must pf dataset create -o recordsize=16K "$SRC/home/kid"
must pf dataset create -o atime=off "$SRC/home/kid/grand"
printf 'kid\n' >"$H/kid/k"
head -c 200K /dev/urandom >"$H/kid/grand/g"
must pf snapshot -r "$SRC/home@t1"
pf send -R "$SRC/home@t1" | pf receive "$BK/tree"
[[ "${PIPESTATUS[*]}" == "0 0" ]] && ok "send -R | receive" || fail "send -R | receive: ${PIPESTATUS[*]}"
same_tree "$H/kid/grand/.poolfs/snapshot/t1" "$MB/tree/kid/grand" "send -R: a grandchild"
same_tree "$H/.poolfs/snapshot/s6" "$MB/tree/.poolfs/snapshot/s6" "send -R: an earlier snapshot"
got=$(pf dataset get -H atime "$BK/tree/kid/grand" | cut -f3,4)
[[ $got == "off"$'\t'"local" ]] && ok "send -R carries local properties" ||
  fail "atime of $BK/tree/kid/grand: $got"
printf 'more\n' >"$H/kid/grand/g2"
must pf snapshot -r "$SRC/home@t2"
pf send -R -i @t1 "$SRC/home@t2" | pf receive "$BK/tree"
[[ "${PIPESTATUS[*]}" == "0 0" ]] && ok "send -R -i | receive" ||
  fail "send -R -i | receive: ${PIPESTATUS[*]}"
same_tree "$H/kid/grand/.poolfs/snapshot/t2" "$MB/tree/kid/grand" "send -R -i: a grandchild"

# An unmount while a send waits for its reader: the send fails, saying so.
# The reader starts reading once the unmount is done (at most 30 s).
(
  pf send "$SRC/home@s5" 2>"$W/cancel.err" | {
    for _ in $(seq 300); do
      [[ -e "$W/unmounted" ]] && break
      sleep 0.1
    done
    cat >/dev/null
  }
  echo "${PIPESTATUS[0]}" >"$W/cancel.rc"
) &
sender=$!
sleep 1
unmount_pool "$MA" "$PID_A" && ok "unmount while a send runs" || fail "unmount while a send runs"
touch "$W/unmounted"
wait "$sender"
[[ $(cat "$W/cancel.rc") == 1 ]] && grep -q "unmounted while the stream ran" "$W/cancel.err" &&
  ok "the interrupted send says why" ||
  fail "interrupted send: exit $(cat "$W/cancel.rc"): $(cat "$W/cancel.err")"

# --pool sends from the exported pool.
out=$(pf send -n -v --pool "$A" -i "$SRC/home@s4" "$SRC/home@s5" 2>&1) &&
  [[ $out == *"would send $SRC/home@s5 (incremental from $SRC/home@s4)"* ]] &&
  ok "send -n -v --pool" || fail "send -n -v --pool: $out"
pf send --pool "$A" -i @s4 "$SRC/home@s5" >"$W/offline.stream" && [[ -s "$W/offline.stream" ]] &&
  ok "send --pool" || fail "send --pool"

must unmount_pool "$MB" "$PID_B"
pool_check "$A" || fail "poolfs check $A"
pool_check "$B" || fail "poolfs check $B"
finish
