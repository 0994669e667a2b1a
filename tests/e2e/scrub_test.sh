#!/usr/bin/env bash
# `poolfs scrub` on a mounted pool: status says no scrub has run, `-s` with
# none running is an error, a scrub of a healthy pool (files in the root
# dataset and in a child dataset) ends with 0 errors and status says so;
# after a byte of a file's only copy is flipped in the unmounted pool file,
# the pool remembers the last scrub across the remount, and a new scrub
# ends with 1 error and lists that file by its path.
#
# Usage: tests/e2e/scrub_test.sh path/to/poolfs
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
# The registry is per user; a name of our own keeps parallel tests apart.
NAME=scrub$$
mkdir -p "$W/pool" "$W/src"
P=$W/pool/s.pool
M=$W/mnt
"$POOLFS" create "$P" --size 512M --name "$NAME" >/dev/null || {
  fail "poolfs create"
  finish
}
pool_mount "$P" "$M" || {
  fail "poolfs mount"
  finish
}

# scan_line: the "scan:" line of `poolfs status`.
scan_line() { "$POOLFS" status "$NAME" | grep '^scan:'; }

# wait_scrub: waits until status no longer says a scrub is in progress
# (at most 120 s); prints the last scan line seen while in progress.
wait_scrub() {
  local i line
  for i in $(seq 1 1200); do
    line=$(scan_line)
    [[ $line == *"in progress"* ]] || return 0
    [[ $i -eq 1 ]] && echo "while running: $line"
    sleep 0.1
  done
  fail "the scrub did not end within 120 s: $line"
}

line=$(scan_line)
echo "$line"
if [[ $line =~ ^scan:\ +no\ scrub\ has\ run$ ]]; then
  ok "status says no scrub has run"
else
  fail "status of a fresh pool: $line"
fi

if out=$("$POOLFS" scrub -s "$NAME" 2>&1); then
  fail "poolfs scrub -s with no scrub running succeeded: $out"
elif [[ $out == *"no scrub of pool '$NAME' is running"* ]]; then
  ok "poolfs scrub -s on an idle pool: $out"
else
  fail "poolfs scrub -s on an idle pool said: $out"
fi

if out=$("$POOLFS" scrub "$W/nowhere" 2>&1); then
  fail "poolfs scrub of a folder that is no mount succeeded: $out"
else
  ok "poolfs scrub of no mount: $out"
fi

# Files: incompressible, so that they are stored as written.
mkdir -p "$M/dir/deep"
for i in $(seq 1 24); do head -c 1M /dev/urandom >"$M/dir/f$i"; done
head -c 128K /dev/urandom >"$W/src/victim"
cp "$W/src/victim" "$M/dir/deep/victim"
must "$POOLFS" dataset create "$NAME/ds" >/dev/null
mkdir -p "$M/ds/sub"
for i in $(seq 1 8); do head -c 1M /dev/urandom >"$M/ds/sub/g$i"; done
# On disk before the scrub starts (it leaves out what is written after).
sync "$M"/dir/f* "$M/dir/deep/victim" "$M"/ds/sub/g*

if out=$("$POOLFS" scrub "$NAME" 2>&1); then
  ok "poolfs scrub: $out"
else
  fail "poolfs scrub: $out"
fi
wait_scrub
line=$(scan_line)
echo "$line"
if [[ $line =~ ^scan:\ +scrub\ repaired\ 0\ copies\ in\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ with\ 0\ errors\ on\ .+\ \(.+\ in\ [0-9]+\ blocks\ examined\)$ ]]; then
  ok "a scrub of a healthy pool ends with 0 errors"
else
  fail "scan line after a scrub of a healthy pool: $line"
fi
if "$POOLFS" status "$NAME" | grep -q '^errors:'; then
  fail "status lists errors of a healthy pool"
fi
if out=$("$POOLFS" scrub -s "$M" 2>&1); then
  fail "poolfs scrub -s after the scrub ended succeeded: $out"
else
  ok "poolfs scrub -s by mount point after the scrub ended: $out"
fi

pool_unmount "$M" || fail "poolfs unmount"

# Flip a byte of the victim's only copy in the pool file.
python3 - "$P" "$W/src/victim" <<'PY' || fail "the victim's data was not found once in the pool file"
import mmap, sys
with open(sys.argv[2], "rb") as f:
    probe = f.read(4096)
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    at = m.find(probe)
    if at < 0 or m.find(probe, at + 1) >= 0:
        sys.exit(1)
    m[at + 100] ^= 0x21
    m.flush()
    print(f"flipped a byte of the victim at offset {at + 100}")
PY

pool_mount "$P" "$M" || {
  fail "poolfs mount after the damage"
  finish
}
line=$(scan_line)
if [[ $line == *"scrub repaired 0 copies"*"with 0 errors"* ]]; then
  ok "the last scrub's result survives the remount"
else
  fail "scan line after the remount: $line"
fi
must "$POOLFS" scrub "$NAME" >/dev/null
wait_scrub
status=$("$POOLFS" status "$NAME")
echo "$status" | sed -n '/^scan:/,/^last synced txg:/p' | grep -v '^last synced txg:'
if [[ $(echo "$status" | grep '^scan:') == *"with 1 error on"* ]]; then
  ok "the scrub counts the damaged block"
else
  fail "scan line after the damage: $(echo "$status" | grep '^scan:')"
fi
if echo "$status" | grep -q '^errors: *Permanent errors have been detected in the following files:$' &&
  echo "$status" | grep -qx "  $NAME:/dir/deep/victim"; then
  ok "status lists the damaged file by its path"
else
  fail "status does not list $NAME:/dir/deep/victim"
fi
if cat "$M/dir/deep/victim" >/dev/null 2>&1; then
  fail "reading the damaged file succeeded"
else
  ok "reading the damaged file fails"
fi
pool_unmount "$M" || fail "poolfs unmount"
finish
