#!/usr/bin/env bash
# POSIX parity of a mounted pool with tmpfs, and inode numbers and file
# handles (node id + generation) stable across a remount, and usable after
# it (as root: open_by_handle_at of every file, in a dataset too).
#
# Usage: tests/e2e/parity_test.sh path/to/poolfs path/to/e2e_parity MODE
#   root  the pool is mounted by root with allow_other; the scenarios run as
#         root, and their cross-user steps as the test user
#   user  the test user creates and mounts the pool (/dev/fuse made 0666)
#         and runs the scenarios; there is no cross-user step
#   user-default-permissions
#         the same, with -o default_permissions given explicitly (every
#         mount has it now, so this checks that the option is still
#         accepted and changes nothing)
# The differences found (scenario, call, tmpfs result, poolfs result) are
# printed; those listed in known_differences.txt (each with its reason) do
# not fail the test. Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1" "$2"
mode=${3:?usage: $0 poolfs e2e_parity root|user|user-default-permissions}
e2e_user

case "$mode" in
  root)
    user=""
    mount_opts=(-o allow_other)
    other=(--other-user "$E2E_USER")
    ;;
  user)
    user=$E2E_USER
    mount_opts=()
    other=()
    ;;
  user-default-permissions)
    user=$E2E_USER
    mount_opts=(-o default_permissions)
    other=()
    ;;
  *)
    echo "usage: $0 poolfs e2e_parity root|user|user-default-permissions" >&2
    exit 2
    ;;
esac

mkdir -p "$W/pool"
pool_create "$W/pool/pool" 1G "$user" || {
  fail "poolfs create"
  finish
}
mount_tmpfs "$W/tmpfs" || {
  fail "mount -t tmpfs"
  finish
}
pool_mount "$W/pool/pool" "$W/mnt" "$user" "${mount_opts[@]}" || {
  fail "poolfs mount ($mode)"
  finish
}
mkdir "$W/tmpfs/p"
[[ -n "$user" ]] && chown "$user" "$W/tmpfs/p"
as "$user" mkdir "$W/mnt/p"

rc=0
as "$user" "$E2E_PARITY" compare "${other[@]}" --known "$HERE/known_differences.txt" \
  --name-a tmpfs --name-b poolfs "$W/tmpfs/p" "$W/mnt/p" >"$W/parity.out" 2>&1 || rc=$?
cat "$W/parity.out"
if [[ $rc -eq 0 ]]; then
  ok "parity with tmpfs as $mode"
else
  fail "parity with tmpfs as $mode: e2e_parity exited $rc (differences above)"
fi

# As root, a dataset too, with files linked and moved in it: handles of
# its directories are connected through its root's ".." to its parent's.
if [[ -z "$user" ]]; then
  pool_name=$("$POOLFS" status "$W/mnt" | awk '/^pool:/ {print $2}')
  if "$POOLFS" dataset create "$pool_name/ds" >"$W/dataset.log" 2>&1; then
    mkdir -p "$W/mnt/ds/a/b" "$W/mnt/ds/c" && echo data >"$W/mnt/ds/a/b/f" &&
      ln "$W/mnt/ds/a/b/f" "$W/mnt/ds/c/g" && mv "$W/mnt/ds/a/b" "$W/mnt/ds/c/b" ||
      fail "files in the dataset $pool_name/ds"
  else
    cat "$W/dataset.log"
    fail "poolfs dataset create $pool_name/ds"
  fi
fi

# The scenarios' trees, then a remount: every inode number, file handle
# (node id and generation), mtime, link count and content must be the same.
as "$user" "$E2E_PARITY" snapshot "$W/mnt" >"$W/before" 2>&1
pool_unmount "$W/mnt" "$user" || fail "poolfs unmount"
pool_check "$W/pool/pool" || fail "poolfs check after the parity run"
pool_mount "$W/pool/pool" "$W/mnt" "$user" "${mount_opts[@]}" || {
  fail "poolfs mount again"
  finish
}
# First, before anything looks the tree up again: the handles taken before
# the remount open the same files, though the kernel holds none of them
# now and must look each up by node id ("." of it, and ".." to connect a
# directory). open_by_handle_at needs root.
if [[ -z "$user" ]]; then
  if "$E2E_PARITY" open-handles "$W/mnt" "$W/before" >"$W/handles.out" 2>&1; then
    ok "$(tail -n 1 "$W/handles.out")"
  else
    head -n 20 "$W/handles.out"
    fail "file handles from before the remount (above)"
  fi
fi
as "$user" "$E2E_PARITY" snapshot "$W/mnt" >"$W/after" 2>&1
if [[ $(wc -l <"$W/before") -lt 300 ]]; then
  fail "the snapshot before the remount has only $(wc -l <"$W/before") entries"
elif diff -u "$W/before" "$W/after" >"$W/remount.diff"; then
  ok "$(wc -l <"$W/before") entries: inode numbers, handles and contents stable across a remount"
else
  head -50 "$W/remount.diff"
  fail "the tree changed across a remount (diff above)"
fi
grep -q "handle:" "$W/before" && ! grep -q "handle:E" "$W/before" ||
  fail "no file handles in the snapshot (name_to_handle_at failed)"
pool_unmount "$W/mnt" "$user" || fail "poolfs unmount (second)"
pool_check "$W/pool/pool" || fail "poolfs check after the remount"
finish
