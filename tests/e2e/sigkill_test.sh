#!/usr/bin/env bash
# SIGKILL after fsync: the daemon is killed (SIGKILL) while a writer keeps
# writing, right after some files were fsync'ed (and a rename made durable
# by fsync of its directory, and a new file by fsync of the file alone). `poolfs check` is clean on
# the killed pool, the remounted pool has every fsync'ed file intact (and
# those of earlier rounds), and every file it lists reads without error.
# Three rounds on one pool, the kill at a varying moment (2, 4, 6 s). Then
# a file unlinked while open: after SIGKILL and a remount its space is free.
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
: >"$W/gone"

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
  # A rename made durable by fsync of the directory alone.
  must mv "$M/r$round/durable-1" "$M/r$round/renamed-1"
  must sync "$M/r$round"
  sed -i "s| r$round/durable-1\$| r$round/renamed-1|" "$W/durable.sums"
  echo "r$round/durable-1" >>"$W/gone"
  # A new file made durable by fsync of the file alone (no fsync of its
  # directory: poolfs's txgs carry the entry with the data).
  head -c 100000 /dev/urandom >"$W/src/fileonly-$round"
  must cp "$W/src/fileonly-$round" "$M/r$round/fileonly"
  must sync "$M/r$round/fileonly"
  (cd "$W/src" && sha256sum "fileonly-$round") | sed "s| fileonly-$round| r$round/fileonly|" \
    >>"$W/durable.sums"
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
  while read -r g; do
    [[ -e "$M/$g" ]] && fail "round $round: $g is back after its rename was fsync'ed"
  done <"$W/gone"
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

# A file unlinked while open, then SIGKILL: the unlinked set on disk lets the
# next mount free it, so its 64 MiB come back (fs.h: "a crash or a kill
# leaks nothing"). Frees become allocatable a few txgs after they sync, and
# an fsync syncs no txg (the intent log makes it durable), so this mount
# syncs its txgs every 200 ms.
printf '[txg]\ntimeout_ms = 200\n' >"$W/fast-txg.toml"
pool_mount "$P" "$M" "" --config "$W/fast-txg.toml" || {
  fail "poolfs mount (unlinked round)"
  finish
}
avail() { echo $(($(stat -f -c '%a * %S' "$M") / 1048576)); }
for k in 1 2 3 4; do echo "$k" >"$M/tick" && sleep 0.3; done
before=$(avail)
must eval 'head -c 64M /dev/urandom >"$M/held"'
must sync "$M/held"
exec 7<"$M/held"
must rm "$M/held"
must sync "$M"
sleep 1  # df counts what the last synced txg holds
during=$(avail)
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
exec 7<&-
fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"
pool_check "$P" || fail "poolfs check after SIGKILL with an open unlinked file"
pool_mount "$P" "$M" "" --config "$W/fast-txg.toml" || {
  fail "poolfs mount after SIGKILL with an open unlinked file"
  finish
}
# Frees become allocatable a few txgs later; a txg with nothing dirty does
# not count, so each step writes a small file and waits for a txg.
after=$before
for k in $(seq 1 20); do
  echo "$k" >"$M/tick" && sleep 0.3
  after=$(avail)
  [[ $after -ge $((before - 4)) ]] && break
done
echo "unlinked open file: $before MiB available before, $during MiB while held, $after MiB after SIGKILL and remount"
if [[ $during -le $((before - 48)) && $after -ge $((before - 4)) ]]; then
  ok "the space of a file unlinked while open came back after SIGKILL"
else
  fail "the 64 MiB of a file unlinked while open did not come back after SIGKILL"
fi
pool_unmount "$M" || fail "poolfs unmount (unlinked round)"
pool_check "$P" || fail "poolfs check (unlinked round)"
finish
