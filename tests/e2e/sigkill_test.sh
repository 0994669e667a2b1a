#!/usr/bin/env bash
# SIGKILL after fsync: the daemon is killed (SIGKILL) while a writer keeps
# writing, right after some files were fsync'ed. `poolfs check` is clean on
# the killed pool, the remounted pool has every fsync'ed file intact (and
# those of earlier rounds), and every file it lists reads without error.
# Three rounds on one pool, the kill at a varying moment (2, 4, 6 s).
#
# Usage: tests/e2e/sigkill_test.sh path/to/poolfs
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"

mkdir -p "$W/pool" "$W/src"
P=$W/pool/pool
M=$W/mnt
pool_create "$P" 1G || {
  fail "poolfs create"
  finish
}
: >"$W/durable.sums"

for round in 1 2 3; do
  pool_mount "$P" "$M" || {
    fail "poolfs mount (round $round)"
    finish
  }
  mkdir -p "$M/r$round"
  for i in 1 2 3 4; do
    head -c $((i * 700000 + round * 1111)) /dev/urandom >"$W/src/r$round-$i"
    cp "$W/src/r$round-$i" "$M/r$round/durable-$i"
  done
  # fsync each file (coreutils sync FILE calls fsync) and the directory.
  sync "$M/r$round"/durable-* "$M/r$round" || fail "fsync (round $round)"
  (cd "$W/src" && sha256sum r$round-*) | sed "s| r$round-| r$round/durable-|" >>"$W/durable.sums"
  # A writer that keeps changing things the kill interrupts.
  (
    n=0
    while [[ -d "$M/r$round" ]] && [[ $n -lt 2000 ]]; do
      head -c $((n * 997 % 300000)) /dev/urandom >"$M/r$round/volatile-$n" 2>/dev/null || break
      [[ $((n % 3)) -eq 0 ]] && rm -f "$M/r$round/volatile-$((n - 2))" 2>/dev/null
      n=$((n + 1))
    done
  ) 2>/dev/null &
  writer=$!
  # 2, 4, 6 s: the later rounds kill after a txg of volatile files synced.
  sleep $((round * 2))
  kill -9 "$DAEMON_PID"
  wait "$DAEMON_PID" 2>/dev/null
  kill "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
  fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"
  ok "round $round: daemon killed with SIGKILL"

  pool_check "$P" || fail "poolfs check after SIGKILL (round $round)"
  pool_mount "$P" "$M" || {
    fail "poolfs mount after SIGKILL (round $round)"
    finish
  }
  if (cd "$M" && sha256sum --quiet -c "$W/durable.sums"); then
    ok "round $round: all $(wc -l <"$W/durable.sums") fsync'ed files intact after the kill"
  else
    fail "round $round: fsync'ed data lost or damaged after SIGKILL"
  fi
  bad=0
  while IFS= read -r -d '' f; do
    cat "$f" >/dev/null 2>>"$W/read.err" || bad=$((bad + 1))
  done < <(find "$M" -type f -print0)
  [[ $bad -eq 0 ]] || {
    cat "$W/read.err"
    fail "round $round: $bad files unreadable after SIGKILL"
  }
  ls "$M/r$round" | grep -c volatile | sed "s/^/round $round: volatile files that survived: /"
  pool_unmount "$M" || fail "poolfs unmount (round $round)"
  pool_check "$P" || fail "poolfs check after remount (round $round)"
done
finish
