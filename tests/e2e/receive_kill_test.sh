#!/usr/bin/env bash
# SIGKILL of `poolfs receive` at random points: a receive into an exported
# pool (--pool) of a stream of about 150 MiB, fed at about 100 MiB/s, is
# killed at a random moment,
# with and without -s, several times. After each kill the pool imports
# again and the target is either as before (a full stream's: it does not
# exist) or, with -s, resumable: its receive_resume_token names where, and
# `poolfs send -t TOKEN | poolfs receive -s` completes it. In the end the
# received dataset matches the snapshot (tree_listing.py and diff -r) and
# `poolfs check` is clean on both pools.
#
# Usage: tests/e2e/receive_kill_test.sh path/to/poolfs
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
SRC=ks$$
BK=kb$$
A=$W/pool/src.pool
B=$W/pool/bk.pool

must pf create "$A" --size 512M --name "$SRC"
must pf create "$B" --size 512M --name "$BK"
pool_mount "$A" "$W/src" || {
  fail "mount $A"
  finish
}
must pf dataset create "$SRC/home"
H=$W/src/home
for i in $(seq 1 15); do head -c 10M /dev/urandom >"$H/f$i"; done
mkdir "$H/d"
for i in $(seq 1 200); do echo "$i" >"$H/d/s$i"; done
must pf snapshot "$SRC/home@k"
must pool_unmount "$W/src"
must pf send --pool "$A" "$SRC/home@k" >"$W/k.stream"
echo "stream: $(stat -c %s "$W/k.stream") bytes"

token_of() { pf dataset get --pool "$B" -H receive_resume_token "$BK/home" 2>/dev/null | cut -f3; }
exists() { pf dataset list --pool "$B" -H -o name "$BK/home" >/dev/null 2>&1; }

# kill_receive FLAGS: a receive killed after a random part of the time a
# whole one takes (measured first).
kill_receive() {
  # Not through pf: $! must be poolfs itself (env execs it). The stream
  # comes at about 100 MiB/s, so that the kill lands inside it.
  python3 "$W/feed.py" "$W/k.stream" | env XDG_STATE_HOME="$W/state" "$POOLFS" receive \
    --pool "$B" $1 "$BK/home" >"$W/recv.log" 2>&1 &
  local pid=$! delay
  delay=$(python3 -c "import random; print(round(random.uniform(0.1, 1.0) * $whole, 3))")
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  echo "killed after ${delay}s: $(cat "$W/recv.log" | head -2)"
}

cat >"$W/feed.py" <<'PY'
import sys, time
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        sys.stdout.buffer.write(b)
        sys.stdout.buffer.flush()
        time.sleep(0.01)
PY
# How long a whole receive takes here, fed so.
start=$(date +%s.%N)
python3 "$W/feed.py" "$W/k.stream" | pf receive --pool "$B" "$BK/home"
[[ "${PIPESTATUS[*]}" == "0 0" ]] || fail "a whole receive"
whole=$(python3 -c "print($(date +%s.%N) - $start)")
echo "a whole receive: ${whole}s"
must pf dataset destroy --pool "$B" "$BK/home@k"
must pf dataset destroy --pool "$B" "$BK/home"

resumed=0
for round in 1 2 3 4 5 6; do
  flags=""
  [[ $round -ge 2 ]] && flags="-s"
  kill_receive "$flags"
  if exists; then
    # It ran to the end before the kill: start again from nothing.
    ok "round $round: the receive had finished"
    must pf dataset destroy --pool "$B" "$BK/home@k"
    must pf dataset destroy --pool "$B" "$BK/home"
    continue
  fi
  token=$(token_of)
  if [[ $token == 1-* ]]; then
    [[ -n $flags ]] && ok "round $round: killed, resumable" || fail "round $round: a token without -s"
    if [[ $round -lt 6 && $resumed -eq 0 && $((RANDOM % 2)) -eq 0 ]]; then
      must pf receive --pool "$B" -A "$BK/home"
      continue
    fi
    pf send --pool "$A" -t "$token" >"$W/rest.stream" || fail "send -t"
    must pf receive --pool "$B" -s "$BK/home" <"$W/rest.stream"
    resumed=1
    # Again from nothing for the rounds left.
    if [[ $round -lt 6 ]]; then
      must pf dataset destroy --pool "$B" "$BK/home@k"
      must pf dataset destroy --pool "$B" "$BK/home"
    fi
  else
    ok "round $round: killed, the target is as before (no $BK/home, no token)"
  fi
done
exists || must pf receive --pool "$B" -s "$BK/home" <"$W/k.stream"
echo "a resumed receive finished the last round: $resumed"

pool_mount "$A" "$W/src" "" -o ro && pool_mount "$B" "$W/bk" "" -o noatime || {
  fail "mount the pools to compare"
  finish
}
lw=$(python3 "$HERE/tree_listing.py" "$W/src/home/.poolfs/snapshot/k")
lg=$(python3 "$HERE/tree_listing.py" "$W/bk/home")
[[ "$lw" == "$lg" ]] && diff -r "$W/src/home/.poolfs/snapshot/k" "$W/bk/home" >/dev/null &&
  ok "the received dataset matches the snapshot" || fail "the received dataset differs"
must pool_unmount "$W/bk"
must pool_unmount "$W/src"
pool_check "$A" || fail "poolfs check $A"
pool_check "$B" || fail "poolfs check $B"
finish
