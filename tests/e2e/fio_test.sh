#!/usr/bin/env bash
# Data integrity under load with fio (Debian's): sequential writes, and 20 s
# of random writes of mixed sizes from two jobs, every block verified with
# crc32c;
# then unmount, `poolfs check`, remount and verify the sequential file
# again (fio --verify_only). Prints fio's bandwidth figures.
#
# Usage: tests/e2e/fio_test.sh path/to/poolfs
# Exit 77 (skipped) when not root or without fio.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
command -v fio >/dev/null || {
  echo "fio not installed (scripts/setup.sh installs it); skipped" >&2
  exit 77
}

mkdir -p "$W/pool"
P=$W/pool/pool
M=$W/mnt
pool_create "$P" 1G || {
  fail "poolfs create"
  finish
}
pool_mount "$P" "$M" || {
  fail "poolfs mount"
  finish
}

SEQ=(--name=seq --directory="$M" --filename=seq.dat --rw=write --bs=128k --size=128M
  --ioengine=psync --verify=crc32c --verify_fatal=1 --end_fsync=1)
# fio prints its figures; its exit status is the verdict.
run_fio() {
  local what=$1
  shift
  # From the work folder: fio leaves its verify state files in the current one.
  if (cd "$W" && fio --output="$W/fio.$what" "$@"); then
    grep -E "WRITE:|READ:|issued rwts" "$W/fio.$what" | sed "s/^ */$what: /"
    # Each job read back (verified) something: "issued rwts: total=R,W,...".
    if grep "issued rwts" "$W/fio.$what" | grep -q "total=0,"; then
      fail "fio $what: a job verified nothing"
    else
      ok "fio $what: no error, no verify failure"
    fi
  else
    cat "$W/fio.$what"
    fail "fio $what failed"
  fi
}

run_fio seq "${SEQ[@]}"
# 20 s of random overwrites from two jobs, each block verified shortly after
# it is written (verify_backlog) and all again at the end.
run_fio rand --name=rand --directory="$M" --rw=randwrite --bsrange=4k-256k --size=96M \
  --numjobs=2 --ioengine=psync --verify=crc32c --verify_fatal=1 --verify_backlog=64 \
  --fsync=32 --time_based --runtime=20
run_fio randrw --name=randrw --directory="$M" --rw=randrw --bs=16k --size=32M \
  --ioengine=psync --verify=crc32c --verify_fatal=1 --runtime=15

pool_unmount "$M" || fail "poolfs unmount"
pool_check "$P" || fail "poolfs check after fio"
pool_mount "$P" "$M" || {
  fail "poolfs mount again"
  finish
}
run_fio seq-after-remount "${SEQ[@]}" --verify_only
pool_unmount "$M" || fail "poolfs unmount (second)"
pool_check "$P" || fail "poolfs check (second)"
finish
