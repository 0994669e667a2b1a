#!/usr/bin/env bash
# `poolfs mount POOL/PATH MNT` without --pool, as a ZFS user expects: while
# POOL is mounted, its daemon mounts the dataset's tree on MNT as a second
# FUSE mount over the same files (a change through either is the other's,
# names and data the other's kernel had cached included; inode numbers
# agree); status shows it; destroying its dataset (or an
# ancestor) is refused as busy and a rename moves it along; names a
# destroy drops reach it; -o ro holds; `poolfs unmount MNT` unmounts it
# alone; unmounting the pool unmounts its dataset mounts first (a busy one
# stops it, changing nothing), and so do unmounting the pool's mount by hand
# and SIGTERM; a killed daemon leaves a dead dataset mount that status
# reports and a new dataset mount clears. When POOL is not mounted, the
# message says how to mount the dataset. As root or as an unprivileged user.
#
# Usage: tests/e2e/dataset_mount_test.sh path/to/poolfs root|user
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init_mode "$1" "${2:-root}"
# The registry is per user; a name of our own keeps parallel tests apart.
NAME=dsm$$
P=$W/pool/a.pool
M=$W/pool-mnt D1=$W/d1 D2=$W/d2
mount_dirs "$M" "$D1" "$D2"

source_of() { awk -v m="$1" '$2 == m {print $1}' /proc/mounts; }

pf create "$P" --size 256M --name "$NAME" >/dev/null || {
  fail "poolfs create"
  finish
}
must pf dataset create -p --pool "$P" "$NAME/home/alice"

# --- the pool not mounted: the message says how to mount the dataset
expect 2 "poolfs mount --pool FILE $NAME/home $D1" pf mount "$NAME/home" "$D1"
is_mounted "$D1" && fail "a refused dataset mount left $D1 mounted"

expect 0 "" pf mount "$P" "$M"
u sh -c "echo hello >'$M/home/f' && echo deep >'$M/home/alice/x'" || fail "writes through the pool"

# --- the dataset mount: the dataset's tree, the same files
expect 0 "" pf mount "$NAME/home" "$D1"
is_mounted "$D1" && ok "$NAME/home is mounted on $D1" || fail "no mount on $D1"
[[ $(source_of "$D1") == "$NAME/home" ]] || fail "the source of $D1 is $(source_of "$D1")"
[[ $(u cat "$D1/f" 2>&1) == hello ]] && ok "a file of the dataset through its own mount" ||
  fail "$D1/f: $(u cat "$D1/f" 2>&1)"
u test -d "$D1/alice" || fail "the child dataset is not a folder of $D1"
u sh -c "echo back >'$D1/g'" || fail "a write through the dataset mount"
[[ $(u cat "$M/home/g" 2>&1) == back ]] && ok "a write through the dataset mount is the pool mount's" ||
  fail "$M/home/g: $(u cat "$M/home/g" 2>&1)"
[[ $(u stat -c %i "$M/home/f") == $(u stat -c %i "$D1/f") ]] && ok "inode numbers agree" ||
  fail "inode numbers differ between the mounts"
# --- coherence: what one mount changes, the other's kernel forgets (a
# thread of the daemon tells it, just after the change: give it a moment)
# eventually WANT CMD...: CMD prints WANT within 2 s.
eventually() {
  local want=$1 got
  shift
  for _ in $(seq 40); do
    got=$("$@" 2>&1)
    [[ $got == "$want" ]] && return 0
    sleep 0.05
  done
  fail "$* printed '$got', expected '$want'"
  return 1
}
u stat "$M/home/late" >/dev/null 2>&1 # cached there as absent
u cat "$M/home/f" >/dev/null          # f's size and pages cached there
u sh -c "echo created >'$D1/late' && echo longer than hello >'$D1/f'" ||
  fail "writes through the dataset mount"
eventually created u cat "$M/home/late" && ok "a name created through one mount appears in the other"
eventually "longer than hello" u cat "$M/home/f" && ok "a write through one mount is read through the other"
u sh -c "rm '$M/home/late' && echo hello >'$M/home/f'" || fail "changes through the pool mount"
eventually "gone" u sh -c "test -e '$D1/late' && echo there || echo gone" &&
  ok "a name removed through one mount goes from the other"
eventually hello u cat "$D1/f" && ok "a shorter write through the pool mount is read through the dataset mount"
expect 0 "dataset mount:    $NAME/home on $D1" pf status "$D1"
expect 0 "dataset mounts:   $NAME/home on $D1" pf status "$NAME"

# --- refusals: the pool's daemon serves the mount, with its settings
expect 2 "already has a mount" pf mount "$NAME/home" "$D1"
expect 2 "set the dataset's atime property instead" pf mount -o noatime "$NAME/home" "$D2"
expect 2 "leave -f out" pf mount -f "$NAME/home" "$D2"
expect 2 "has no dataset $NAME/nowhere" pf mount "$NAME/nowhere" "$D2"
is_mounted "$D2" && fail "a refused dataset mount left $D2 mounted"

# --- destroy is busy, a rename moves the mount along
expect 2 "holds the root of the mount on $D1" pf dataset destroy -r "$NAME/home"
must pf dataset rename "$NAME/home" "$NAME/house"
[[ $(u cat "$D1/f" 2>&1) == hello ]] && ok "the dataset mount follows a rename" ||
  fail "$D1/f after the rename: $(u cat "$D1/f" 2>&1)"
u test -e "$M/house/f" || fail "$M/house/f after the rename"
expect 0 "dataset mounts:   $NAME/house on $D1" pf status "$NAME"

# --- a second one, read-only; unmounted alone
expect 0 "" pf mount -o ro "$NAME/house/alice" "$D2"
[[ $(u cat "$D2/x" 2>&1) == deep ]] || fail "$D2/x: $(u cat "$D2/x" 2>&1)"
out=$(u sh -c "echo no >'$D2/new'" 2>&1) && fail "a write on the read-only dataset mount worked"
[[ $out == *"Read-only file system"* ]] && ok "EROFS on a read-only dataset mount" || fail "ro: $out"
expect 0 "" pf unmount "$D2"
is_mounted "$D2" && fail "$D2 still mounted after poolfs unmount"
is_mounted "$D1" && is_mounted "$M" && ok "unmounting one dataset mount leaves the others" ||
  fail "poolfs unmount $D2 took other mounts with it"
# Its hold went with it; the names $D1's kernel holds below alice are
# dropped by the destroy.
[[ $(u cat "$D1/alice/x" 2>&1) == deep ]] || fail "$D1/alice/x: $(u cat "$D1/alice/x" 2>&1)"
expect 0 "" pf dataset destroy "$NAME/house/alice"
u test -e "$D1/alice" && fail "$D1/alice still there after its dataset was destroyed"

# --- unmounting the pool: its dataset mounts first; a busy one stops it
as_prefix "$U"
"${AS[@]}" sh -c "exec 7<'$D1/f'; exec sleep 120" &
holder=$!
echo "$holder" >>"$W/pids"
for _ in $(seq 100); do
  [[ -L /proc/$holder/fd/7 ]] && break
  sleep 0.05
done
[[ -L /proc/$holder/fd/7 ]] || fail "no process holds $D1/f open"
expect 2 "busy" pf unmount "$NAME"
is_mounted "$M" && is_mounted "$D1" && ok "a busy dataset mount keeps the pool mounted" ||
  fail "a busy dataset mount: $(grep "$W" /proc/mounts)"
kill "$holder"
wait "$holder" 2>/dev/null
expect 0 "" pf unmount "$NAME"
is_mounted "$D1" && fail "$D1 still mounted after the pool's unmount"
is_mounted "$M" && fail "$M still mounted after the pool's unmount"
pool_check "$P" || fail "poolfs check after the unmount"

# daemon_of: the pid of the daemon serving $P on $M.
daemon_of() { pgrep -f -- "poolfs mount $P $M\$" | head -n 1; }
# wait_gone PID: waits until PID has exited.
wait_gone() {
  for _ in $(seq 200); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.05
  done
  fail "daemon $1 still there"
}

# --- the pool's mount unmounted by hand (fusermount3 -u, umount): its
# daemon unmounts the dataset mounts before it exports the pool
expect 0 "" pf mount "$P" "$M"
expect 0 "" pf mount "$NAME/house" "$D1"
pid=$(daemon_of)
if [[ $MODE == user ]]; then
  must u fusermount3 -u "$M"
else
  must umount "$M"
fi
wait_gone "$pid"
is_mounted "$D1" && fail "$D1 still mounted after its pool's mount was unmounted by hand" ||
  ok "unmounting the pool's mount by hand unmounts its dataset mounts"

# --- SIGTERM: the same
expect 0 "" pf mount "$P" "$M"
expect 0 "" pf mount "$NAME/house" "$D1"
pid=$(daemon_of)
kill -TERM "$pid"
wait_gone "$pid"
is_mounted "$D1" || is_mounted "$M" && fail "mounts left after SIGTERM: $(grep "$W" /proc/mounts)" ||
  ok "SIGTERM unmounts the dataset mounts with the pool"

# --- a killed daemon: the dataset mount is dead; status says so, and
# mounting the dataset again (once the pool is mounted) clears it
expect 0 "" pf mount "$P" "$M"
expect 0 "" pf mount "$NAME/house" "$D1"
u sh -c "echo kept >'$D1/k' && sync '$D1/k'" || fail "write and fsync through $D1"
pid=$(daemon_of)
kill -9 "$pid"
wait_gone "$pid"
expect 1 "dataset $NAME/house is as of its last synced txg" pf status "$D1"
expect 0 "$M: the daemon of this poolfs mount" pf mount "$P" "$M"
expect 0 "$D1: the daemon of this poolfs mount of $NAME/house is gone" pf mount "$NAME/house" "$D1"
[[ $(u cat "$D1/k" 2>&1) == kept ]] && ok "fsynced data through the remounted dataset mount" ||
  fail "$D1/k after the remount: $(u cat "$D1/k" 2>&1)"
expect 0 "" pf unmount "$M"
is_mounted "$D1" && fail "$D1 still mounted after poolfs unmount $M"
pool_check "$P" || fail "poolfs check after the killed daemon"
[[ $failures -gt 0 ]] && cat "$W"/state/poolfs/*.log >&2
finish
