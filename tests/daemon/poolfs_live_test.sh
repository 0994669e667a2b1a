#!/usr/bin/env bash
# End-to-end test of the daemon's services through a real mount: `poolfs
# status MOUNTPOINT` (asked over the control socket), `poolfs tune` (live
# and at-mount tunables, refusals), SIGHUP reloads (a good file applies, a
# bad one is logged and changes nothing), the log file, refusal of another
# uid, and `poolfs status POOLFILE` while mounted and after. Runs as root
# (needs /dev/fuse); skipped (exit 77, ctest's skip code, with the reason)
# when FUSE is unavailable.
#
# Usage: tests/daemon/poolfs_live_test.sh path/to/poolfs
set -uo pipefail

POOLFS=$(realpath "${1:?usage: $0 path/to/poolfs}")
if [[ ! -e /dev/fuse ]] || ! command -v fusermount3 >/dev/null; then
  echo "not run: no /dev/fuse or fusermount3"
  exit 77
fi
DIR=$(mktemp -d /tmp/poolfs-live-test.XXXXXX)
chmod 755 "$DIR"
export XDG_STATE_HOME=$DIR/state XDG_CONFIG_HOME=$DIR/config XDG_RUNTIME_DIR=$DIR/run
mkdir -p "$XDG_RUNTIME_DIR"
chmod 755 "$XDG_RUNTIME_DIR"
MNT=$DIR/mnt
CFG=$DIR/poolfs.toml
LOG=$XDG_STATE_HOME/poolfs

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

# run EXPECTED_EXIT "TEXT THE OUTPUT MUST HOLD" ARGS...: runs poolfs ARGS.
run() {
  local want=$1 text=$2
  shift 2
  local out rc
  out=$(timeout 60 "$POOLFS" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "poolfs $* exited $rc, expected $want; output:"$'\n'"$out"
  elif [[ -n "$text" && "$out" != *"$text"* ]]; then
    fail "poolfs $* did not say '$text'; output:"$'\n'"$out"
  else
    echo "ok: poolfs $* -> $rc"
  fi
}

# status_has TEXT: `poolfs status $MNT` says TEXT.
status_has() { run 0 "$1" status "$MNT"; }

# log_has TEXT: the pool's log file says TEXT (waits up to 10 s for it).
log_has() {
  for _ in $(seq 100); do
    grep -qF -- "$1" "$LOG"/*.log 2>/dev/null && { echo "ok: log says '$1'"; return; }
    sleep 0.1
  done
  fail "the log does not say '$1':"$'\n'"$(cat "$LOG"/*.log 2>/dev/null)"
}

daemon_pid() { pgrep -f -- "poolfs mount .* $MNT( |\$)" | head -n 1; }

run 0 "created" create tank.pool --size 128M --name tank
mkdir "$MNT"
printf '[txg]\ntimeout_ms = 2000\n' >"$CFG"
# A relative --config: the daemon detaches and changes its folder to /, so
# it must have made the path absolute for the SIGHUP reloads below.
run 0 "" mount tank.pool "$MNT" --config "$(basename "$CFG")"
grep -q " $MNT " /proc/mounts || { fail "not mounted"; exit 1; }
log_has "mounted"
echo hello >"$MNT/hello"

# --- status of a mountpoint, from the daemon ---
status_has "pool:             tank"
status_has "online (mounted)"
status_has "txg.timeout_ms = 2000ms"
status_has "# $CFG:2"
run 0 "pool:             tank" status "$MNT/"  # the same mountpoint, spelt differently

# --- tune ---
run 0 "txg.timeout_ms=700 (in effect)" tune "$MNT" txg.timeout_ms=700
status_has "txg.timeout_ms = 700ms"
status_has "# poolfs tune"
# The block cache's bound is live; status shows it and the cache's figures.
status_has "block cache:"
status_has "sublists"
run 0 "arc.max_bytes=64MiB (in effect)" tune "$MNT" arc.max_bytes=64MiB
status_has "of 64.0MiB (mru"
# ... and with it the objects kept in memory: a tenth of it at 1536 bytes each.
status_has "inodes (4369 kept when idle"
# ... and the decoded directory leaves: a 64th of it in 8 KiB leaves.
status_has "(about 128 kept)"
status_has "blocks read whole for the kernel, not cached"
run 0 "alloc.allocators: 0 -> 3 (at the next mount" tune "$MNT" alloc.allocators=3
status_has "pending, at the next mount:"
run 2 "did you mean txg.timeout_ms" tune "$MNT" txg.timout_ms=5
run 2 "expected" tune "$MNT" txg.dirty_sync_percent=400
run 0 "in effect" tune "$MNT" log.level=debug
echo more >"$MNT/more"
sync "$MNT/more"
# Debug lines appear at once, among them one per txg sync
# (MountOptions::on_txg_synced).
log_has "[debug] tank: "
log_has " synced in "
log_has "poolfs tune txg.timeout_ms=700"

# --- SIGHUP: a good file applies live values at once ---
printf '[txg]\ntimeout_ms = 3000\n[fuse]\nthreads = 2\n' >"$CFG"
pid=$(daemon_pid)
[[ -n "$pid" ]] || fail "no daemon process found for $MNT"
kill -HUP "$pid"
log_has "reload of $CFG: txg.timeout_ms: 700ms -> 3000ms (live, in effect)"
status_has "txg.timeout_ms = 3000ms"
status_has "fuse.threads: 0 -> 2 (at the next mount)"

# --- a bad file: logged with file and line, the running values stay ---
printf '[txg]\ntimeout_ms = "soon"\n' >"$CFG"
kill -HUP "$pid"
log_has "reload of $CFG refused, the running values stay: $CFG:2: txg.timeout_ms"
run 2 "$CFG:2" tune "$MNT" --reload
status_has "txg.timeout_ms = 3000ms"
kill -0 "$pid" 2>/dev/null || fail "the daemon died on a bad reload"

# --- another uid may not talk to the daemon ---
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" timeout 30 "$POOLFS" tune "$MNT" txg.timeout_ms=9 2>&1)
  rc=$?
  if [[ $rc -ne 2 || "$out" != *"not allowed"* ]]; then
    fail "another uid's tune exited $rc: $out"
  else
    echo "ok: another uid is refused"
  fi
  status_has "txg.timeout_ms = 3000ms"
fi

# --- the pool file while mounted: in use, with the mountpoint to ask ---
run 2 "poolfs status $MNT" status tank.pool

# --- after unmount ---
run 0 "" unmount "$MNT"
log_has "unmounted"
run 2 "no poolfs daemon serves $MNT" status "$MNT"
run 2 "no poolfs daemon serves $MNT" tune "$MNT" txg.timeout_ms=1000
run 0 "not mounted" status tank.pool
run 0 "healthy" status tank.pool

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "all poolfs live-config checks passed"
