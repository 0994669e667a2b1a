#!/usr/bin/env bash
# Persistence: files written through the mount, unmounted, remounted: every
# checksum, link count, mode, symlink, inode number and mtime is as it was;
# twice, with a round of changes (appends, overwrites, truncates, renames,
# deletions) in between; `poolfs check` is clean after each unmount. Then
# inode numbers of deleted files may be reused, but never their file handle
# (node id + generation). Last, a sparse file's blocks.
#
# Usage: tests/e2e/persistence_test.sh path/to/poolfs path/to/e2e_parity
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1" "$2"

mkdir -p "$W/pool" "$W/src"
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

# state NAME: checksums of every file and the snapshot, into $W/NAME.*
state() {
  (cd "$M" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) >"$W/$1.sums" 2>&1
  "$E2E_PARITY" snapshot "$M" >"$W/$1.snap" 2>&1
}

# remount_and_compare NAME: unmount, check, mount, compare with state NAME.
remount_and_compare() {
  pool_unmount "$M" || fail "poolfs unmount ($1)"
  pool_check "$P" || fail "poolfs check after unmount ($1)"
  pool_mount "$P" "$M" || {
    fail "poolfs mount ($1)"
    finish
  }
  state "$1.after"
  if diff -u "$W/$1.sums" "$W/$1.after.sums" >"$W/$1.diff"; then
    ok "$1: $(wc -l <"$W/$1.sums") file checksums survive a remount"
  else
    head -40 "$W/$1.diff"
    fail "$1: checksums differ after a remount"
  fi
  if diff -u "$W/$1.snap" "$W/$1.after.snap" >"$W/$1.snapdiff"; then
    ok "$1: $(wc -l <"$W/$1.snap") entries keep inode, handle, mode, links, mtime"
  else
    head -40 "$W/$1.snapdiff"
    fail "$1: the tree differs after a remount"
  fi
}

# Round 1: a varied tree.
must mkdir -p "$M/d1/d2/d3" "$M/many"
: >"$M/empty" || fail "writing into the mount failed"
for n in 1 511 4095 4096 4097 131071 131072 131073 1000000; do
  head -c "$n" /dev/urandom >"$M/size-$n" || fail "writing into the mount failed"
done
head -c 24M /dev/urandom >"$W/src/big"
must cp "$W/src/big" "$M/d1/d2/d3/big"
head -c 8M <(yes "compressible line of text") >"$M/d1/text" || fail "writing into the mount failed"
must dd if=/dev/urandom of="$M/sparse" bs=4k count=1 seek=5000 status=none
for i in $(seq 1 300); do echo "file $i" >"$M/many/f$i" || fail "creating f$i"; done
must ln "$M/size-4096" "$M/d1/link-to-4096"
must ln "$M/size-4096" "$M/d1/d2/another-link"
must ln -s ../size-1 "$M/d1/sym"
must ln -s /absolute/dangling "$M/dangling"
must mkfifo "$M/d1/fifo"
must chmod 4711 "$M/size-511"
must chmod 0600 "$M/size-1"
must touch -d '2100-01-01 00:00:00.123456789' "$M/size-4097"
must touch -h -d '1999-12-31 23:59:59' "$M/d1/sym"
must sync "$M/d1/text"
state round1
remount_and_compare round1

# Round 2: changes of every kind on the remounted pool.
head -c 3M /dev/urandom >>"$M/d1/d2/d3/big" || fail "writing into the mount failed"
must dd if=/dev/urandom of="$M/d1/d2/d3/big" bs=64k count=7 seek=33 conv=notrunc status=none
must truncate -s 1000 "$M/size-1000000"
must truncate -s 50M "$M/size-131073"
must mv "$M/d1/d2" "$M/moved"
must mv "$M/size-4095" "$M/many/renamed"
for i in $(seq 1 2 300); do must rm "$M/many/f$i"; done
must rm "$M/d1/link-to-4096"
must rm -r "$M/moved/d3"
for i in $(seq 301 400); do echo "new file $i" >"$M/many/f$i" || fail "creating f$i"; done
state round2
remount_and_compare round2

# Round 3: an inode number may come back after its file is deleted, but
# never with the same file handle (the generation tells them apart).
must mkdir "$M/reuse"
for i in $(seq 1 100); do echo "old $i" >"$M/reuse/old$i" || fail "creating old$i"; done
must sync "$M/reuse"
"$E2E_PARITY" snapshot "$M/reuse" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(ino=|handle:)/) printf "%s ", $i; print ""}' >"$W/old.ids"
must rm -r "$M/reuse"
for k in 1 2 3; do must sync "$M"; done
must mkdir "$M/reuse2"
for i in $(seq 1 300); do echo "new $i" >"$M/reuse2/new$i" || fail "creating new$i"; done
must sync "$M/reuse2"
"$E2E_PARITY" snapshot "$M/reuse2" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(ino=|handle:)/) printf "%s ", $i; print ""}' >"$W/new.ids"
reused=$(cut -d' ' -f1 "$W/old.ids" | sort | comm -12 - <(cut -d' ' -f1 "$W/new.ids" | sort) | wc -l)
same_handle=$(cut -d' ' -f2 "$W/old.ids" | sort | comm -12 - <(cut -d' ' -f2 "$W/new.ids" | sort) | wc -l)
echo "inode numbers of 100 deleted files reused by 300 new ones: $reused"
if [[ $same_handle -eq 0 ]]; then
  ok "no new file has the file handle of a deleted one ($reused inode numbers reused)"
else
  fail "$same_handle new files have the file handle (node id and generation) of a deleted file"
fi

# Round 4: a sparse file. st_blocks counts what is allocated, not the size
# (du of a 1 TiB file never written is 0).
must truncate -s 1T "$M/sparse-1t"
blocks=$(stat -c %b "$M/sparse-1t")
[[ $blocks -eq 0 ]] && ok "a 1 TiB file never written has 0 blocks" ||
  fail "a 1 TiB file never written has $blocks blocks"
must dd if=/dev/urandom of="$M/sparse-1t" bs=128K count=1 seek=80 conv=notrunc,fsync status=none
blocks=$(stat -c %b "$M/sparse-1t")
[[ $blocks -ge 256 && $blocks -lt 1024 ]] && ok "128 KiB written in a 1 TiB file: $blocks blocks" ||
  fail "128 KiB written in a 1 TiB file: $blocks blocks (want 256 to 1023)"

pool_unmount "$M" || fail "poolfs unmount (last)"
pool_check "$P" || fail "poolfs check (last)"
finish
