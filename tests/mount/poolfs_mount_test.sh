#!/usr/bin/env bash
# End-to-end test of `poolfs mount` and `poolfs unmount` through the kernel:
# background start (returns only once mounted, reports failures), errors
# with clear messages and non-zero exits, unmount by `poolfs unmount` and
# `fusermount3 -u`, SIGTERM/SIGINT doing a final sync (data written before
# the signal is there after a remount), -o ro, a foreground mount, and the
# same as an unprivileged user through fusermount3. Runs as root (it
# creates the user poolfs-mnt-test and makes /dev/fuse mode 666).
#
# Usage: tests/mount/poolfs_mount_test.sh path/to/poolfs
set -uo pipefail

POOLFS=$(realpath "${1:?usage: $0 path/to/poolfs}")
DIR=$(mktemp -d /tmp/poolfs-mount-test.XXXXXX)
chmod 755 "$DIR"
# A registry and control sockets of its own (root's pools of the default
# name "pool" elsewhere on the machine do not collide with these).
export XDG_STATE_HOME=$DIR/state XDG_CONFIG_HOME=$DIR/config XDG_RUNTIME_DIR=$DIR/run
mkdir -p "$XDG_RUNTIME_DIR"
USER_NAME=poolfs-mnt-test

cleanup() {
  for m in $(grep -o "$DIR/[^ ]*" /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null; done
  pkill -TERM -f -- "$DIR/" 2>/dev/null
  sleep 0.5
  rm -rf "$DIR"
}
trap cleanup EXIT
cd "$DIR" || exit 1

# A filesystem that hangs must fail the test, not hang it: after 300 s the
# watchdog SIGKILLs this test's daemons, which aborts their FUSE
# connections, so every waiting syscall returns (ENOTCONN) and the script
# runs to its end.
( sleep 300 && touch "$DIR/watchdog-fired" && pkill -KILL -f -- "poolfs mount .*$DIR/" ) >/dev/null 2>&1 &
WATCHDOG=$!

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

# expect EXIT TEXT CMD...: runs CMD, checks its exit code and that its
# output holds TEXT.
expect() {
  local want=$1 text=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$* exited $rc, expected $want; output: $out"
  elif [[ -n "$text" && "$out" != *"$text"* ]]; then
    fail "$* did not say '$text'; output: $out"
  else
    ok "$* -> $rc"
  fi
}

# daemon_pid MOUNTPOINT: the pid of the daemon serving it.
daemon_pid() { pgrep -f -- "poolfs mount .* $1\$" | head -n 1; }

# wait_exit PID: waits up to 60 s for PID to end; fails the test otherwise.
wait_exit() {
  for _ in $(seq 600); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  fail "process $1 still runs 60 s after it was asked to end"
  return 1
}

is_mounted() { grep -q " $1 fuse.poolfs " /proc/mounts; }

"$POOLFS" create "$DIR/tank.pool" --size 512M >/dev/null || fail "poolfs create"
mkdir -p mnt m2 nonempty && touch nonempty/file

# --- background mount: mounted when the command returns; smoke of file ops
if "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt"; then
  if is_mounted "$DIR/mnt"; then ok "mounted when poolfs mount returned"; else fail "not mounted after poolfs mount returned 0"; fi
else
  fail "poolfs mount exited $?"
fi
echo hello >mnt/a && mkdir mnt/d && echo inside >mnt/d/f && ln -s a mnt/s && mv mnt/d/f mnt/d/g
[[ "$(cat mnt/a)" == hello && "$(cat mnt/s)" == hello && "$(cat mnt/d/g)" == inside ]] \
  && ok "files, directories, symlinks and rename through the mount" || fail "smoke file ops"
dd if=/dev/urandom of=big bs=1M count=3 status=none && cp big mnt/big && cmp -s big mnt/big \
  && ok "3 MiB copied in and read back" || fail "3 MiB copy differs"
[[ "$(ls mnt | tr '\n' ' ')" == "a big d s " ]] && ok "readdir" || fail "readdir: $(ls mnt)"
# fuse.read_ahead_bytes (default 1 MiB) is in place when poolfs mount returns.
read_ahead_kb() { cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"; }
[[ "$(read_ahead_kb mnt)" == 1024 ]] && ok "readahead 1024 KiB on the mount" \
  || fail "readahead on the mount: $(read_ahead_kb mnt) KiB, expected 1024"

# --- errors: clear message, non-zero exit, nothing left running
expect 2 "already mounted on $DIR/mnt" "$POOLFS" mount "$DIR/tank.pool" "$DIR/m2"
expect 2 "already mounted on $DIR/mnt" "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt"
expect 2 "does not exist" "$POOLFS" mount "$DIR/missing.pool" "$DIR/m2"
expect 2 "mount point $DIR/nowhere does not exist" "$POOLFS" mount "$DIR/tank.pool" "$DIR/nowhere"
"$POOLFS" create "$DIR/other.pool" --size 64M >/dev/null
# Another pool of the same name is refused while the first is mounted (the
# name is what `poolfs dataset` and `status POOL` find a mount by).
expect 2 "pool 'pool' is already mounted at $DIR/mnt" "$POOLFS" mount "$DIR/other.pool" "$DIR/m2"
"$POOLFS" create "$DIR/other.pool" --size 64M --name other --force >/dev/null
expect 2 "already has a mount (fuse.poolfs" "$POOLFS" mount "$DIR/other.pool" "$DIR/mnt"
expect 2 "is not empty" "$POOLFS" mount "$DIR/other.pool" "$DIR/nonempty"
expect 2 "is not a directory" "$POOLFS" mount "$DIR/other.pool" "$DIR/big"
head -c 16M /dev/urandom >junk.pool
expect 1 "junk.pool" "$POOLFS" mount "$DIR/junk.pool" "$DIR/m2"
is_mounted "$DIR/m2" && fail "a failed mount left m2 mounted"
[[ -z "$(daemon_pid "$DIR/m2")" ]] && ok "no daemon left after a failed mount" || fail "a daemon stayed after a failed mount"
expect 2 "is not mounted" "$POOLFS" unmount "$DIR/m2"
expect 2 "empty option" "$POOLFS" mount "$DIR/other.pool" "$DIR/m2" -o "rw,,ro"
expect 2 "unknown option" "$POOLFS" mount "$DIR/other.pool" "$DIR/m2" -o no_such_option
expect 2 "/nonexistent.toml" "$POOLFS" mount "$DIR/other.pool" "$DIR/m2" --config /nonexistent.toml
echo "txg.timeout_ms = 0" >bad.toml
expect 2 "bad.toml:1" "$POOLFS" mount "$DIR/other.pool" "$DIR/m2" --config "$DIR/bad.toml"
is_mounted "$DIR/m2" && fail "a refused option left m2 mounted"

# --- poolfs unmount waits for the export: check and remount work at once
expect 0 "" "$POOLFS" unmount "$DIR/mnt"
is_mounted "$DIR/mnt" && fail "still mounted after poolfs unmount"
expect 0 "pool is healthy" "$POOLFS" check "$DIR/tank.pool"
expect 0 "" "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt"
[[ "$(cat mnt/a)" == hello ]] && cmp -s big mnt/big && ok "data there after remount" || fail "data lost across unmount"

# --- SIGTERM, then SIGINT: final sync and export
for sig in TERM INT; do
  echo "before $sig" >"mnt/$sig"
  pid=$(daemon_pid "$DIR/mnt")
  kill -"$sig" "$pid"
  wait_exit "$pid"
  is_mounted "$DIR/mnt" && fail "still mounted after SIG$sig"
  expect 0 "pool is healthy" "$POOLFS" check "$DIR/tank.pool"
  "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt" || fail "remount after SIG$sig"
  [[ "$(cat "mnt/$sig" 2>/dev/null)" == "before $sig" ]] && ok "data written before SIG$sig is there" \
    || fail "data written before SIG$sig is lost"
done

# --- SIGHUP reloads the config file: live changes apply, a bad file is refused
mkdir -p "$XDG_CONFIG_HOME/poolfs"
printf '[txg]\ntimeout_ms = 5000\n[fuse]\nread_ahead_bytes = "4MiB"\n' >"$XDG_CONFIG_HOME/poolfs/poolfs.toml"
expect 0 "" "$POOLFS" unmount "$DIR/mnt"
expect 0 "" "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt"  # finds the file in $XDG_CONFIG_HOME
# `poolfs status` names the log file.
LOG=$("$POOLFS" status "$DIR/mnt" | sed -n 's/^log: *//p')
[[ "$LOG" == "$XDG_STATE_HOME/poolfs/tank-"*.log && -f "$LOG" ]] && ok "status names the log, $LOG" \
  || fail "status names no log file: '$LOG'"
[[ "$(read_ahead_kb mnt)" == 4096 ]] && ok "readahead from the config file" \
  || fail "readahead with fuse.read_ahead_bytes = 4MiB: $(read_ahead_kb mnt) KiB"
printf '[txg]\ntimeout_ms = 1000\n' >"$XDG_CONFIG_HOME/poolfs/poolfs.toml"
pid=$(daemon_pid "$DIR/mnt")
kill -HUP "$pid"
for _ in $(seq 100); do grep -q "5000ms -> 1000ms" "$LOG" && break; sleep 0.1; done
grep -q "5000ms -> 1000ms" "$LOG" && ok "SIGHUP applied txg.timeout_ms" || fail "SIGHUP: $(tail -n 5 "$LOG")"
echo "txg.timeout_ms = -3" >"$XDG_CONFIG_HOME/poolfs/poolfs.toml"
kill -HUP "$pid"
for _ in $(seq 100); do grep -q "refused" "$LOG" && break; sleep 0.1; done
grep -q "refused" "$LOG" && kill -0 "$pid" && ok "a bad config file is refused on SIGHUP, daemon still up" \
  || fail "bad reload: $(tail -n 5 "$LOG")"
rm "$XDG_CONFIG_HOME/poolfs/poolfs.toml"
grep -q "mounted pool $DIR/tank.pool on $DIR/mnt" "$LOG" && ok "the mount is logged" || fail "no mount line in $LOG"
expect 2 "entry_timeout=SECONDS" "$POOLFS" mount "$DIR/other.pool" "$DIR/m2" -o entry_timeout=soon

# --- two pools whose files have one name, in two folders: a log each
mkdir -p a b ma mb
"$POOLFS" create "$DIR/a/tank.pool" --size 64M --name twin_a >/dev/null || fail "create a/tank.pool"
"$POOLFS" create "$DIR/b/tank.pool" --size 64M --name twin_b >/dev/null || fail "create b/tank.pool"
expect 0 "" "$POOLFS" mount "$DIR/a/tank.pool" "$DIR/ma"
expect 0 "" "$POOLFS" mount "$DIR/b/tank.pool" "$DIR/mb"
log_a=$("$POOLFS" status twin_a | sed -n 's/^log: *//p')
log_b=$("$POOLFS" status twin_b | sed -n 's/^log: *//p')
if [[ -n "$log_a" && -n "$log_b" && "$log_a" != "$log_b" && "$log_a" != "$LOG" ]] \
  && grep -q "mounted pool $DIR/a/tank.pool" "$log_a" && ! grep -q "$DIR/b/tank.pool" "$log_a" \
  && grep -q "mounted pool $DIR/b/tank.pool" "$log_b" && ! grep -q "$DIR/a/tank.pool" "$log_b"; then
  ok "a/tank.pool and b/tank.pool log to $(basename "$log_a") and $(basename "$log_b")"
else
  fail "logs of a/tank.pool ($log_a) and b/tank.pool ($log_b) are not their own"
fi
expect 0 "" "$POOLFS" unmount twin_a
expect 0 "" "$POOLFS" unmount twin_b

# --- fusermount3 -u ends the daemon too
pid=$(daemon_pid "$DIR/mnt")
fusermount3 -u "$DIR/mnt" && wait_exit "$pid" && ok "fusermount3 -u ended the daemon"
expect 0 "pool is healthy" "$POOLFS" check "$DIR/tank.pool"

# --- -o ro: reads work, writes fail with EROFS
expect 0 "" "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt" -o ro,entry_timeout=0,attr_timeout=0
[[ "$(cat mnt/a)" == hello ]] && ok "read on a read-only mount" || fail "read on ro mount"
out=$(touch mnt/new 2>&1) && fail "created a file on a read-only mount" \
  || { [[ "$out" == *"Read-only file system"* ]] && ok "EROFS on a read-only mount" || fail "ro: $out"; }
expect 0 "" "$POOLFS" unmount "$DIR/mnt"

# --- -o dev,suid as root: device files and setuid bits take effect; a
# mount that does not ask is nodev,nosuid
id "$USER_NAME" >/dev/null 2>&1 || useradd --no-create-home --shell /bin/bash "$USER_NAME"
mount_opts() { awk -v m="$1" '$2 == m {print "," $4 ","}' /proc/mounts; }
expect 0 "" "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt" -o dev,suid,allow_other
opts=$(mount_opts "$DIR/mnt")
[[ "$opts" != *,nodev,* && "$opts" != *,nosuid,* ]] && ok "-o dev,suid: mounted without nodev,nosuid" \
  || fail "-o dev,suid as root: the mount has $opts"
mknod mnt/null c 1 3 && cp "$(command -v id)" mnt/suid-id && chmod 4755 mnt/suid-id \
  || fail "mknod and a setuid copy of id on the mount"
head -c 1 mnt/null >/dev/null 2>&1 && ok "a device file works on a dev mount" \
  || fail "a device file does not open on a dev mount"
[[ "$(runuser -u "$USER_NAME" -- "$DIR/mnt/suid-id" -u 2>&1)" == 0 ]] \
  && ok "a setuid file runs as its owner on a suid mount" \
  || fail "setuid on a suid mount: $(runuser -u "$USER_NAME" -- "$DIR/mnt/suid-id" -u 2>&1)"
expect 0 "" "$POOLFS" unmount "$DIR/mnt"
expect 0 "" "$POOLFS" mount "$DIR/tank.pool" "$DIR/mnt" -o allow_other
opts=$(mount_opts "$DIR/mnt")
[[ "$opts" == *,nodev,* && "$opts" == *,nosuid,* ]] && ok "without -o dev,suid: nodev,nosuid" \
  || fail "a mount without -o dev,suid has $opts"
head -c 1 mnt/null >/dev/null 2>&1 && fail "a device file opened on a nodev mount"
[[ "$(runuser -u "$USER_NAME" -- "$DIR/mnt/suid-id" -u 2>&1)" != 0 ]] \
  && ok "a setuid file runs as its caller on a nosuid mount" || fail "setuid took effect on a nosuid mount"
rm -f mnt/null mnt/suid-id
expect 0 "" "$POOLFS" unmount "$DIR/mnt"

# --- foreground: stays attached, SIGINT ends it with exit 0
"$POOLFS" mount -f "$DIR/tank.pool" "$DIR/mnt" 2>"$DIR/fg.log" &
fg=$!
for _ in $(seq 100); do is_mounted "$DIR/mnt" && break; sleep 0.1; done
echo foreground >mnt/fg
kill -INT "$fg"
wait "$fg"
rc=$?
[[ $rc -eq 0 ]] && ok "foreground mount exits 0 on SIGINT" || fail "foreground exit $rc: $(cat fg.log)"
grep -q "mounted pool" fg.log && grep -q "synced and exported" fg.log \
  && ok "foreground logs mount and unmount on stderr" || fail "foreground log: $(cat fg.log)"

# --- an unprivileged user, through fusermount3
id "$USER_NAME" >/dev/null 2>&1 || useradd --no-create-home --shell /bin/bash "$USER_NAME"
chmod 666 /dev/fuse
mkdir -p user/mnt && chown -R "$USER_NAME" user
as_user() {
  runuser -u "$USER_NAME" -- env -u XDG_RUNTIME_DIR XDG_STATE_HOME="$DIR/user/state" HOME="$DIR/user" "$@"
}
# The user must reach the program: a build under a folder only root may
# enter (a 0700 home, a mktemp -d checkout) is out of reach, so the user
# runs a copy then.
USER_POOLFS=$POOLFS
if ! runuser -u "$USER_NAME" -- test -x "$POOLFS"; then
  cp "$POOLFS" "$DIR/poolfs" && chmod 755 "$DIR/poolfs" && USER_POOLFS=$DIR/poolfs
fi
expect 0 "" as_user "$USER_POOLFS" create "$DIR/user/u.pool" --size 128M
# fusermount3 mounts every user's FUSE filesystem nodev,nosuid: asking is
# refused, saying so.
expect 2 "only root may mount with dev" as_user "$USER_POOLFS" mount "$DIR/user/u.pool" "$DIR/user/mnt" -o dev
expect 2 "only root may mount with suid" as_user "$USER_POOLFS" mount "$DIR/user/u.pool" "$DIR/user/mnt" -o ro,suid
is_mounted "$DIR/user/mnt" && fail "a refused -o dev left the user's mount point mounted"
expect 0 "" as_user "$USER_POOLFS" mount "$DIR/user/u.pool" "$DIR/user/mnt"
opts=$(mount_opts "$DIR/user/mnt")
[[ "$opts" == *,nodev,* && "$opts" == *,nosuid,* ]] && ok "the user's mount is nodev,nosuid" \
  || fail "the user's mount has $opts"
# Only root may set the readahead: the user's mount keeps the kernel's and logs why.
USER_LOG=$(as_user "$USER_POOLFS" status "$DIR/user/mnt" | sed -n 's/^log: *//p')
[[ "$USER_LOG" == "$DIR/user/state/poolfs/u-"*.log ]] || fail "the user's status names no log: '$USER_LOG'"
[[ "$(read_ahead_kb user/mnt)" != 1024 ]] && grep -q "readahead on $DIR/user/mnt left as the kernel set it" \
  "$USER_LOG" && ok "the user's mount logs that it keeps the kernel's readahead" \
  || fail "user readahead: $(read_ahead_kb user/mnt) KiB; log: $(tail -n 3 "$USER_LOG")"
as_user sh -c "echo mine >$DIR/user/mnt/f && mkdir $DIR/user/mnt/d" || fail "user writes"
[[ "$(as_user stat -c %U "$DIR/user/mnt/f" 2>&1)" == "$USER_NAME" ]] && ok "the user's file is the user's" \
  || fail "owner of the user's file: $(as_user stat -c %U "$DIR/user/mnt/f" 2>&1)"
[[ "$(as_user cat "$DIR/user/mnt/f")" == mine ]] || fail "user reads back"
expect 0 "" as_user "$USER_POOLFS" unmount "$DIR/user/mnt"
is_mounted "$DIR/user/mnt" && fail "user mount still there after poolfs unmount"
expect 0 "" as_user "$USER_POOLFS" mount "$DIR/user/u.pool" "$DIR/user/mnt"
[[ "$(as_user cat "$DIR/user/mnt/f")" == mine ]] && ok "user data after remount" || fail "user data lost"
pid=$(daemon_pid "$DIR/user/mnt")
kill -TERM "$pid" && wait_exit "$pid" && ok "SIGTERM ends the user's daemon"
is_mounted "$DIR/user/mnt" && fail "user mount still there after SIGTERM"
expect 0 "pool is healthy" as_user "$USER_POOLFS" check "$DIR/user/u.pool"

kill "$WATCHDOG" 2>/dev/null
[[ -e "$DIR/watchdog-fired" ]] && fail "the watchdog fired: a mount hung for 300 s (see above)"
if [[ $failures -gt 0 ]]; then
  echo "poolfs_mount_test: $failures FAILED"
  exit 1
fi
echo "poolfs_mount_test: all passed"
