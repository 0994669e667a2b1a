#!/usr/bin/env bash
# A daemon that dies (SIGKILL, as the OOM killer sends) leaves a dead mount:
# `poolfs status` of the mount point and of the pool's name says the daemon
# died and how to recover; `poolfs mount` clears a dead mount of the
# user's own poolfs, on the same mount point or elsewhere, saying so in one
# line, and mounts (fsynced data is there); `poolfs unmount` removes a dead
# mount; the registry entry the dead daemon left does not keep another
# pool of the same name from being mounted. As root or as an unprivileged
# user.
#
# Usage: tests/e2e/dead_daemon_test.sh path/to/poolfs root|user
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init_mode "$1" "${2:-root}"
# The registry is per user; a name of our own keeps parallel tests apart.
NAME=dead$$
P=$W/pool/a.pool
P2=$W/pool/b.pool
M1=$W/m1 M2=$W/m2 M3=$W/m3
mount_dirs "$M1" "$M2" "$M3"

# kill_daemon FILE MNT: SIGKILLs the daemon serving FILE on MNT and waits
# until it is gone; the mount stays, dead.
kill_daemon() {
  local pid
  pid=$(pgrep -f -- "poolfs mount $1 $2\$" | head -n 1)
  [[ -n "$pid" ]] || {
    fail "no daemon for $1 on $2"
    return 1
  }
  kill -9 "$pid"
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$pid" 2>/dev/null && fail "daemon $pid still there after SIGKILL"
  is_mounted "$2" || fail "the dead mount on $2 went away by itself"
}

pf create "$P" --size 256M --name "$NAME" >/dev/null || {
  fail "poolfs create"
  finish
}
expect 0 "" pf mount "$P" "$M1"
u sh -c "echo before >'$M1/f' && sync '$M1/f'" || fail "write and fsync"
kill_daemon "$P" "$M1"

# --- status says the daemon died and how to recover
expect 1 "the poolfs daemon of this mount died" pf status "$M1"
[[ $LAST_OUT == *"poolfs mount $P $M1"* ]] && ok "status says how to mount it again" ||
  fail "status of the dead mount: $LAST_OUT"
expect 1 "the poolfs daemon of this mount died" pf status "$NAME"

# --- mount on the same mount point: the dead mount is cleared, one line
expect 0 "$M1: the daemon of this poolfs mount of $P is gone; unmounted it lazily" \
  pf mount "$P" "$M1"
[[ $(grep -c "unmounted it lazily" <<<"$LAST_OUT") -eq 1 ]] || fail "not one line: $LAST_OUT"
[[ $(u cat "$M1/f" 2>&1) == before ]] && ok "fsynced data is there after the remount" ||
  fail "after the remount: $(u cat "$M1/f" 2>&1)"
expect 0 "pool:" pf status "$NAME"

# --- mount on another mount point: the pool's dead mount is cleared too
kill_daemon "$P" "$M1"
expect 0 "$M1: the daemon of this poolfs mount of $P is gone" pf mount "$P" "$M2"
is_mounted "$M1" && fail "the dead mount on $M1 is still there"
[[ $(u cat "$M2/f" 2>&1) == before ]] || fail "data on $M2: $(u cat "$M2/f" 2>&1)"

# --- the dead daemon's registry entry does not hold the pool's name
kill_daemon "$P" "$M2"
pf create "$P2" --size 128M --name "$NAME" >/dev/null || fail "poolfs create (second pool)"
must pf dataset create --pool "$P2" "$NAME/second"
expect 0 "" pf mount "$P2" "$M3"
list=$(pf dataset list -H -o name "$NAME" -r 2>&1)
[[ $list == *"$NAME/second"* ]] && ok "the pool's name reaches the new mount" ||
  fail "dataset list $NAME: $list"
expect 0 "" pf unmount "$NAME"
is_mounted "$M3" && fail "$M3 still mounted after unmount by name"

# --- unmount removes a dead mount
expect 0 "" pf unmount "$M2"
is_mounted "$M2" && fail "the dead mount on $M2 is still there after poolfs unmount"
expect 2 "no poolfs daemon serves $M2" pf status "$M2"

pool_check "$P" || fail "poolfs check of the killed pool"
pool_check "$P2" || fail "poolfs check of the second pool"
finish
