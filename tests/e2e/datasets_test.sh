#!/usr/bin/env bash
# Datasets through a real mount, as root or as an unprivileged user:
# `poolfs dataset create/list/get/set/inherit/rename/destroy` reach the
# daemon by the pool's name; children appear as folders of their parent,
# live; hard links and renames between datasets fail with EXDEV; a join
# cannot be removed; inode numbers are unique across datasets and the same
# after a remount; a second pool of the same name is refused naming the
# first; status and unmount take the pool's name; --pool works offline on
# the exported pool; snapshots read under .poolfs/snapshot, read-only; a
# clone joins the mount with its snapshot's files and changes apart, and
# after a promote the dataset it came from goes; `poolfs check` is clean
# after a destroy.
#
# Usage: tests/e2e/datasets_test.sh path/to/poolfs root|user
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init_mode "$1" "${2:-root}"
# lib.sh's pf and u, without their bound of 60 s.
pf() { as "$U" "$POOLFS" "$@"; }
# What the mount shows its user (root cannot look into a user's FUSE mount).
u() { as "$U" "$@"; }
# The registry is per user; a name of our own keeps parallel tests apart.
NAME=ds$$
P=$W/pool/a.pool
M=$W/mnt
pf create "$P" --size 512M --name "$NAME" >/dev/null || {
  fail "poolfs create"
  finish
}
pool_mount "$P" "$M" "$U" || {
  fail "poolfs mount"
  finish
}

must pf dataset create "$NAME/home"
must pf dataset create -p -o compression=zstd "$NAME/home/alice/docs"
u test -d "$M/home/alice/docs" && ok "datasets appear as folders at once" ||
  fail "no $M/home/alice/docs after dataset create"
as "$U" sh -c "echo hello >'$M/home/alice/f' && echo top >'$M/f'" || fail "writes"
ino_alice_f=$(u stat -c %i "$M/home/alice/f")
ino_top_f=$(u stat -c %i "$M/f")
[[ $ino_alice_f != "$ino_top_f" ]] && ok "inode numbers differ across datasets" ||
  fail "the same inode number in two datasets"

out=$(as "$U" ln "$M/home/alice/f" "$M/f2" 2>&1) && fail "a hard link across datasets worked"
[[ $out == *"cross-device"* ]] && ok "link across datasets: EXDEV" || fail "link: $out"
if command -v python3 >/dev/null; then
  out=$(as "$U" python3 -c 'import os,sys; os.rename(sys.argv[1], sys.argv[2])' \
    "$M/home/alice/f" "$M/g" 2>&1) && fail "a rename across datasets worked"
  [[ $out == *"cross-device"* ]] && ok "rename across datasets: EXDEV" || fail "rename: $out"
fi
out=$(as "$U" rmdir "$M/home" 2>&1) && fail "rmdir of a dataset's folder worked"
[[ $out == *"busy"* ]] && ok "rmdir of a dataset: EBUSY" || fail "rmdir: $out"

list=$(pf dataset list -H -o name)
expect=$(printf '%s\n' "$NAME" "$NAME/home" "$NAME/home/alice" "$NAME/home/alice/docs")
[[ $list == "$expect" ]] && ok "dataset list names the tree" || fail "dataset list: $list"
src=$(pf dataset get -H compression "$NAME/home/alice/docs" | cut -f4)
[[ $src == local ]] || fail "compression source on docs: $src"
must pf dataset set atime=off "$NAME/home"
src=$(pf dataset get -H atime "$NAME/home/alice" | cut -f3,4)
[[ $src == $'off\tinherited from '"$NAME/home" ]] && ok "atime inherited from $NAME/home" ||
  fail "atime on alice: $src"
must pf dataset inherit atime "$NAME/home"
src=$(pf dataset get -H atime "$NAME/home/alice" | cut -f4)
[[ $src == default ]] || fail "atime after inherit: $src"
pf dataset list -j | grep -q '"name": "'"$NAME/home"'"' || fail "dataset list -j"

must pf dataset rename "$NAME/home/alice" "$NAME/alice"
[[ $(u cat "$M/alice/f" 2>&1) == hello ]] && ok "a renamed dataset moves in the mount" ||
  fail "after rename: $(u ls "$M" "$M/alice" 2>&1)"
u test -e "$M/home/alice" && fail "$M/home/alice still there after the rename"
[[ $(u stat -c %i "$M/alice/f") == "$ino_alice_f" ]] || fail "a rename changed inode numbers"

# Snapshots and clones, by the mount's user.
must pf dataset create "$NAME/src"
as "$U" sh -c "echo one >'$M/src/x'" || fail "write src/x"
must pf snapshot "$NAME/src@s1"
as "$U" sh -c "echo two >'$M/src/x'" || fail "rewrite src/x"
[[ $(u cat "$M/src/.poolfs/snapshot/s1/x" 2>&1) == one ]] && ok "a snapshot reads as it was" ||
  fail "src@s1's x: $(u cat "$M/src/.poolfs/snapshot/s1/x" 2>&1)"
out=$(as "$U" sh -c "echo no >'$M/src/.poolfs/snapshot/s1/x'" 2>&1) && fail "wrote into a snapshot"
[[ $out == *"Read-only"* ]] && ok "a snapshot is read-only: EROFS" || fail "write into s1: $out"
must pf clone "$NAME/src@s1" "$NAME/cl"
[[ $(u cat "$M/cl/x" 2>&1) == one ]] && ok "a clone joins the mount with its snapshot's files" ||
  fail "cl/x: $(u cat "$M/cl/x" 2>&1)"
as "$U" sh -c "echo three >'$M/cl/x'" || fail "write cl/x"
[[ $(u cat "$M/src/x") == two ]] && ok "the clone changes apart from its origin" ||
  fail "src/x after writing cl/x: $(u cat "$M/src/x")"
must pf promote "$NAME/cl"
u test -e "$M/cl/.poolfs/snapshot/s1/x" && ok "promote moves the snapshot to the clone" ||
  fail "no cl/.poolfs/snapshot/s1 after the promote"
must pf dataset destroy "$NAME/src"
u test -e "$M/src" && fail "$M/src still there after destroy"
[[ $(u cat "$M/cl/x") == three ]] || fail "cl/x after src went: $(u cat "$M/cl/x")"

# A second pool of the same name, mounted by the same user: refused
# (in the foreground: it must exit at once, with the first one named).
as_prefix "$U"
P2=$W/pool/b.pool
pf create "$P2" --size 256M --name "$NAME" >/dev/null || fail "poolfs create (second)"
mount_dirs "$W/mnt2"
out=$(timeout 20 "${AS[@]}" "$POOLFS" mount -f "$P2" "$W/mnt2" 2>&1) && fail "a second pool named $NAME was mounted"
[[ $out == *"already mounted at $M"* ]] && ok "a second pool of the same name is refused" ||
  fail "second mount: $out"

pf status "$NAME" | grep -q "^pool: *$NAME" && ok "status takes the pool's name" ||
  fail "status $NAME"

out=$(pf dataset destroy "$NAME/alice" 2>&1) && fail "destroy of a dataset with children worked"
[[ $out == *children* ]] || fail "destroy without -r: $out"
must pf dataset destroy -r "$NAME/alice"
u test -e "$M/alice" && fail "$M/alice still there after destroy"
pf dataset list -H -o name | grep -q "$NAME/alice" && fail "alice still listed after destroy"

# Unmount by name, then offline.
if as "$U" "$POOLFS" unmount "$NAME" >"$W/unmount.log" 2>&1; then
  wait "$DAEMON_PID" || fail "the daemon exited $?"
  ok "unmount takes the pool's name"
else
  cat "$W/unmount.log" >&2
  fail "poolfs unmount $NAME"
fi
pool_check "$P" || fail "poolfs check after destroy"
must pf dataset create --pool "$P" "$NAME/offline"
list=$(pf dataset list --pool "$P" -H -o name)
[[ $list == *"$NAME/offline"* ]] && ok "--pool works on the exported pool" || fail "offline: $list"

pool_mount "$P" "$M" "$U" || {
  fail "remount"
  finish
}
u test -d "$M/offline" && u test -d "$M/home" || fail "after remount: $(u ls "$M")"
[[ $(u stat -c %i "$M/f") == "$ino_top_f" ]] && ok "inode numbers stable across a remount" ||
  fail "inode of f changed across a remount"
pool_unmount "$M" "$U" || fail "unmount"
pool_check "$P" || fail "poolfs check at the end"
finish
