#!/usr/bin/env bash
# End-to-end test of `poolfs create` and `poolfs check` (and the paths of
# `poolfs tunables`, `tune` and `status` that need no mount): the exit codes
# (0 healthy, 1 damaged or not a pool, 2 usage), the refusals, clear
# messages, no crash, and files that `check` leaves byte for byte unchanged.
#
# Usage: tests/cli/poolfs_cli_test.sh path/to/poolfs
set -uo pipefail

POOLFS=$(realpath "${1:?usage: $0 path/to/poolfs}")
DIR=$(mktemp -d "${TMPDIR:-/tmp}/poolfs-cli-test.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
cd "$DIR"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run EXPECTED_EXIT "TEXT THE OUTPUT MUST HOLD" ARGS...: runs poolfs ARGS,
# checks its exit code and that stdout+stderr contain TEXT.
run() {
  local want=$1 text=$2
  shift 2
  local out rc
  out=$("$POOLFS" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "poolfs $* exited $rc, expected $want; output:"$'\n'"$out"
  elif [[ -n "$text" && "$out" != *"$text"* ]]; then
    fail "poolfs $* did not say '$text'; output:"$'\n'"$out"
  else
    echo "ok: poolfs $* -> $rc"
  fi
}

# check_unchanged EXPECTED_EXIT TEXT FILE...: `poolfs check FILE...` exits as
# expected, says TEXT, and leaves every file as it was.
check_unchanged() {
  local want=$1 text=$2
  shift 2
  local before after
  before=$(sha256sum "$@")
  run "$want" "$text" check "$@"
  after=$(sha256sum "$@")
  [[ "$before" == "$after" ]] || fail "poolfs check $* changed the files"
}

# A label's header starts with the magic "PFSLABEL"; labels sit at 0 and
# 256 KiB, and 512 and 256 KiB before the end (size rounded down to 256 KiB).
label_offset() {
  local size=$1 index=$2 end=$(($1 / 262144 * 262144))
  case $index in
    0) echo 0 ;;
    1) echo 262144 ;;
    2) echo $((end - 524288)) ;;
    3) echo $((end - 262144)) ;;
  esac
}

# --- create ---
run 0 "created pool 'tank'" create tank.pool --size 64M --name tank
[[ $(stat -c %s tank.pool) -eq 67108864 ]] || fail "tank.pool is not 64 MiB"
[[ $(stat -c %b tank.pool) -lt 8192 ]] || fail "tank.pool is not sparse"
run 1 "already holds a poolfs pool" create tank.pool --size 64M
echo "precious" >notes.txt
run 1 "not empty" create notes.txt --size 64M
[[ $(cat notes.txt) == precious ]] || fail "a refused create changed notes.txt"
run 2 "bad size" create new.pool --size 12Q
run 2 "bad size" create new.pool --size -5G
run 2 "bad size" create new.pool --size 0
# The config file's sizes: binary units; "GB" is refused, not taken as GiB.
run 2 "ambiguous" create new.pool --size 10GB
run 2 "only whole numbers" create new.pool --size 1.5G
run 2 "too small" create new.pool --size 1M
run 2 "ashift" create new.pool --size 64M --ashift 20
[[ ! -e new.pool ]] || fail "a refused create left new.pool behind"
run 2 "required" create new.pool
run 2 "" create
run 0 "created pool 'pair'" create a.pool b.pool --size 48M --name pair
: >empty.pool
run 0 "created pool" create empty.pool --size 32M
run 0 "created pool 'pool'" create tank2.pool --size 32M
run 0 "created pool 'again'" create tank2.pool --size 40M --name again --force
run 0 "pool 'again'" check tank2.pool
run 2 "same file" create c.pool c.pool --size 32M

# --- check: healthy pools ---
check_unchanged 0 "pool is healthy" tank.pool
check_unchanged 0 "checked at txg" a.pool b.pool
check_unchanged 0 "pool is healthy" b.pool a.pool
check_unchanged 2 "2 vdevs but 1" a.pool
run 2 "does not exist" check missing.pool
run 2 "" check

# --- check: what is not a (whole) pool ---
cp tank.pool truncated.pool
truncate -s 40M truncated.pool
check_unchanged 1 "truncated" truncated.pool
head -c $((20 << 20)) /dev/urandom >random.pool
check_unchanged 1 "not a usable poolfs vdev" random.pool
: >empty.file
check_unchanged 1 "not a usable poolfs vdev" empty.file
# The magic of every label overwritten: not a pool at all.
cp tank.pool magic.pool
size=$(stat -c %s magic.pool)
for i in 0 1 2 3; do
  printf 'XXXXXXXX' | dd of=magic.pool bs=1 seek="$(label_offset "$size" "$i")" conv=notrunc status=none
done
check_unchanged 1 "bad magic" magic.pool
# One label's magic overwritten: the pool still opens, the check says which.
cp tank.pool label.pool
printf 'XXXXXXXX' | dd of=label.pool bs=1 seek="$(label_offset "$size" 2)" conv=notrunc status=none
check_unchanged 1 "label 2" label.pool

# --- check: damage inside the pool ---
# The pool's first data lies right after the 4 MiB front reserve; scribble
# over the first 1 MiB of it (MOS and dataset blocks of txg 1).
cp tank.pool scribbled.pool
head -c $((1 << 20)) /dev/urandom | dd of=scribbled.pool bs=1M seek=4 conv=notrunc status=none
check_unchanged 1 "" scribbled.pool

# --- tunables, tune, status (the paths that need no mount) ---
run 0 "txg.timeout_ms" tunables
run 0 "dmu.metadnode_backfill" tunables
run 0 "[txg]" tunables --toml
# Nothing mounted: tune checks its assignments first, then says no daemon serves it.
mkdir -p mnt
XDG_RUNTIME_DIR="$DIR" run 2 "no poolfs daemon serves mnt" tune mnt txg.timeout_ms=1000
XDG_RUNTIME_DIR="$DIR" run 2 "did you mean txg.timeout_ms" tune mnt txg.timout_ms=1000
XDG_RUNTIME_DIR="$DIR" run 2 "expected" tune mnt txg.timeout_ms=0
XDG_RUNTIME_DIR="$DIR" run 2 "KEY=VALUE" tune mnt txg.timeout_ms
XDG_RUNTIME_DIR="$DIR" run 2 "nothing to do" tune mnt
XDG_RUNTIME_DIR="$DIR" run 2 "no poolfs daemon serves mnt" tune mnt --reload
run 2 "" tune
XDG_RUNTIME_DIR="$DIR" run 2 "no poolfs daemon serves mnt" status mnt
run 2 "No such file" status missing.pool
run 2 "" status
# An unmounted pool is read offline, without writing.
before=$(sha256sum tank.pool)
XDG_CONFIG_HOME="$DIR/noconfig" run 0 "not mounted" status tank.pool
[[ "$(sha256sum tank.pool)" == "$before" ]] || fail "poolfs status changed tank.pool"
XDG_CONFIG_HOME="$DIR/noconfig" run 0 "pool:             tank" status tank.pool
run 0 "last synced txg:" status a.pool b.pool
run 2 "2 vdevs but 1" status a.pool
run 1 "not a usable poolfs vdev" status random.pool
printf '[txg]\ntimeout_ms = 1234\n' >good.toml
run 0 "1234ms" status tank.pool --config good.toml
printf '[txg]\ntimeout_ms = "soon"\n' >bad.toml
run 1 "bad.toml:2" status tank.pool --config bad.toml
# A pool in use by another process: held here the way a mount holds it.
if command -v flock >/dev/null; then
  ( flock -x 9; sleep 30 ) 9<tank.pool &
  holder=$!
  sleep 0.5
  run 2 "in use" status tank.pool
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "all poolfs CLI checks passed"
