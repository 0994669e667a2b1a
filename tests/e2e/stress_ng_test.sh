#!/usr/bin/env bash
# stress-ng's filesystem stressors on the mount, all at once for 25 s with
# --verify; then unmount and `poolfs check`. Prints stress-ng's metrics.
#
# Usage: tests/e2e/stress_ng_test.sh path/to/poolfs
# Exit 77 (skipped) when not root or without stress-ng.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
command -v stress-ng >/dev/null || {
  echo "stress-ng not installed (scripts/setup.sh installs it); skipped" >&2
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
mkdir "$M/stress"

rc=0
(cd "$M/stress" && stress-ng --temp-path "$M/stress" --timeout 25s --verify --metrics-brief \
  --hdd 1 --hdd-bytes 32M --hdd-write-size 16k \
  --dir 1 --dentry 1 --link 1 --symlink 1 --rename 1 --xattr 1 \
  --fallocate 1 --fallocate-bytes 16M --chmod 1 --chown 1 --utime 1 \
  --seek 1 --seek-size 16M --readahead 1 --readahead-bytes 16M --fsize 1) \
  >"$W/stress.out" 2>&1 || rc=$?
cat "$W/stress.out"
if [[ $rc -eq 0 ]]; then
  ok "stress-ng filesystem stressors passed"
else
  fail "stress-ng exited $rc"
fi

pool_unmount "$M" || fail "poolfs unmount"
pool_check "$P" || fail "poolfs check after stress-ng"
finish
