#!/usr/bin/env bash
# `poolfs send` and `poolfs receive` around the stream, on a real mount:
# usage errors exit 2 with what is wrong (no snapshot name, a bad -i, a
# snapshot as a receive target, another pool's files); a terminal as the
# stream is refused (send's stdout, receive's stdin; `script` makes one),
# but not for send -n; a pool nobody mounted is named; a send or receive
# that fails in the pool exits 1 or 2 with "poolfs send: ..." and writes
# nothing to stdout, through the daemon and with --pool; while a receive
# waits for its stream, the mount's control socket still answers `poolfs
# status` and `poolfs dataset list`; a client killed in the middle of a
# receive leaves the daemon serving; an unmount while a receive waits
# fails it, saying why, and the daemon exits 0.
#
# Usage: tests/e2e/send_receive_cli_test.sh path/to/poolfs
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
# A registry of mounted pools (and control sockets) of our own: tests that
# list every mounted pool run beside this one.
export XDG_RUNTIME_DIR=$W/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
U=""
mkdir -p "$W/pool" "$W/state"
NAME=sc$$
P=$W/pool/a.pool
M=$W/mnt
must pf create "$P" --size 256M --name "$NAME"

# Usage: exit 2, before anything is opened.
expect 2 "not a snapshot name" pf send "$NAME/home"
expect 2 "give @NAME" pf send -i s1 "$NAME@s2"
expect 2 "both must be of one dataset" pf send -i "other@s1" "$NAME@s2"
expect 2 "receive into a dataset" pf receive "$NAME/x@s1" </dev/null
expect 2 "is '$NAME', not 'other'" pf receive --pool "$P" other/x </dev/null
expect 2 "no mounted pool named '$NAME'" pf send "$NAME@s1" >/dev/null
expect 2 "no mounted pool named '$NAME'" pf receive "$NAME/x" </dev/null

# A terminal is no place for a stream.
if command -v script >/dev/null; then
  expect 2 "standard output is a terminal" script -qec "$POOLFS send --pool $P $NAME@s1" /dev/null
  expect 2 "standard input is a terminal" script -qec "$POOLFS receive --pool $P $NAME/x" /dev/null
  # -n writes no stream: the terminal is fine (and the pool says what is wrong).
  out=$(script -qec "$POOLFS send -n --pool $P $NAME@nosuch" /dev/null 2>&1)
  [[ $out != *"is a terminal"* && $out == *"poolfs send: "* ]] && ok "send -n takes a terminal" ||
    fail "send -n on a terminal: $out"
else
  echo "no script(1): the terminal refusals are not checked"
fi

# A snapshot that does not exist, with --pool: an error, no stream.
# (Exit 2 for NotFound; 1 while the pool has no send layer.)
fails_cleanly() {
  local what=$1
  shift
  local rc=0
  "$@" >"$W/stream.out" 2>"$W/stream.err" || rc=$?
  if [[ $rc -ne 1 && $rc -ne 2 ]]; then
    fail "$what exited $rc: $(cat "$W/stream.err")"
  elif [[ -s "$W/stream.out" ]]; then
    fail "$what wrote $(stat -c %s "$W/stream.out") bytes to stdout"
  elif ! grep -q "^poolfs $what: " "$W/stream.err"; then
    fail "$what said: $(cat "$W/stream.err")"
  else
    ok "$what fails cleanly: $(cat "$W/stream.err")"
  fi
}
fails_cleanly send pf send --pool "$P" "$NAME@nosuch"
fails_cleanly receive pf receive --pool "$P" "$NAME/x" </dev/null

pool_mount "$P" "$M" "" || {
  fail "poolfs mount"
  finish
}
fails_cleanly send pf send "$NAME@nosuch"
fails_cleanly send pf send -v -i @a "$NAME@nosuch"
fails_cleanly receive pf receive "$NAME/x" </dev/null
printf 'not a stream at all' >"$W/junk"
fails_cleanly receive pf receive "$NAME/x" <"$W/junk"
expect 2 "" pf receive --pool "$P" "$NAME/x" </dev/null # the pool is in use

# While a receive waits for its stream, the control socket answers.
{
  sleep 3
} 2>/dev/null | pf receive "$NAME/waiting" 2>"$W/waiting.err" &
receiver=$!
sleep 0.5
start=$(date +%s%N)
timeout 3 "$POOLFS" status "$M" >/dev/null && ok "status answers during a receive" ||
  fail "status during a receive"
timeout 3 "$POOLFS" dataset list "$NAME" >/dev/null && ok "dataset list answers during a receive" ||
  fail "dataset list during a receive"
ms=$((($(date +%s%N) - start) / 1000000))
[[ $ms -lt 3000 ]] || fail "status and list took $ms ms during a receive"
wait "$receiver"
rc=$?
[[ $rc -eq 1 ]] && ok "an empty stream is refused (exit 1)" ||
  fail "receive of an empty stream exited $rc: $(cat "$W/waiting.err")"

# A client killed in the middle: the daemon goes on serving.
{
  printf 'partial'
  sleep 2
} 2>/dev/null | "$POOLFS" receive "$NAME/killed" 2>/dev/null &
client=$! # the last command of the pipeline: poolfs itself
sleep 0.5
kill -9 "$client" 2>/dev/null
wait "$client" 2>/dev/null
timeout 5 "$POOLFS" status "$M" >/dev/null && ok "the daemon serves after a client died" ||
  fail "no status after a receive's client died"
pf dataset list -H -o name -r "$NAME" | grep -q killed && fail "a killed receive left its dataset"

# An unmount while a receive waits for the rest of its stream: the
# receive fails, saying why, and the daemon exits 0 (pool_unmount).
# The stream's writer waits (at most 30 s) until the unmount is done.
{
  printf 'partial'
  for _ in $(seq 300); do
    [[ -e "$W/unmounted" ]] && break
    sleep 0.1
  done
} 2>/dev/null | "$POOLFS" receive "$NAME/late" 2>"$W/late.err" &
client=$!
sleep 0.5
pool_unmount "$M" || fail "unmount while a receive runs"
touch "$W/unmounted"
rc=0
wait "$client" || rc=$?
[[ $rc -eq 1 ]] && grep -q "unmounted while the stream ran" "$W/late.err" &&
  ok "a receive cut by the unmount says why" ||
  fail "receive during the unmount exited $rc: $(cat "$W/late.err")"
pool_check "$P" || fail "poolfs check"
finish
