#!/usr/bin/env bash
# Recovery: a pool whose newest txg's MOS root block is damaged after it was
# written (every copy, a byte flipped) is refused by `poolfs mount` and
# `poolfs check`; `poolfs check --rewind` checks the txg before it and finds
# it clean; `poolfs mount -o ro,rewind` mounts it read-only, says which txg
# it chose, serves the older files, takes no change and writes nothing to
# the pool file; -o rewind without ro is refused.
#
# Usage: tests/e2e/rewind_test.sh path/to/poolfs
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
export XDG_STATE_HOME=$W/state  # the background daemon's log

mkdir -p "$W/pool"
P=$W/pool/pool
M=$W/mnt
pool_create "$P" 256M || {
  fail "poolfs create"
  finish
}
pool_mount "$P" "$M" || {
  fail "poolfs mount"
  finish
}
# The first file in one mount, the second in the next: each unmount syncs,
# so the txg that writes the second comes after one that holds the first
# (an fsync would only put it in the intent log).
echo "the first file" >"$M/first" || fail "writing into the mount failed"
pool_unmount "$M" || fail "poolfs unmount"
pool_mount "$P" "$M" || {
  fail "poolfs mount"
  finish
}
echo "the second file" >"$M/second" || fail "writing into the mount failed"
pool_unmount "$M" || fail "poolfs unmount"
pool_check "$P" || fail "poolfs check of the healthy pool"

# The newest uberblock in label 0's ring; flip a byte in every copy of its
# MOS root block (format 2 block pointer: three 16-byte copies, vdev u32,
# reserved u32, offset u64). Prints the txg.
newest=$(python3 - "$P" <<'EOF'
import struct, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    best = None
    for s in range(128):
        f.seek(128 * 1024 + s * 1024)
        slot = f.read(1024)
        magic, version, _, txg = struct.unpack_from("<QIIQ", slot, 0)
        if magic == 0x4252454255534650 and (best is None or txg > best[0]):
            best = (txg, slot)
    txg, slot = best
    for c in range(3):
        vdev, _, offset = struct.unpack_from("<IIQ", slot, 48 + 16 * c)
        if vdev == 0 and offset == 0:
            continue
        f.seek(offset + 100)
        b = f.read(1)
        f.seek(offset + 100)
        f.write(bytes([b[0] ^ 0x40]))
    print(txg)
EOF
) || {
  fail "damaging the newest MOS root"
  finish
}
echo "damaged the MOS root block of txg $newest"
before=$(sha256sum <"$P")

mkdir -p "$M"
out=$("$POOLFS" mount "$P" "$M" 2>&1) && {
  echo "$M" >>"$W/mounts"
  fail "poolfs mount opened a pool whose newest txg does not verify"
}
if grep -q "the newest uberblock, txg $newest, does not verify" <<<"$out" &&
  grep -q -- "-o ro,rewind" <<<"$out"; then
  ok "a plain mount is refused: $out"
else
  fail "a plain mount: unexpected message: $out"
fi

out=$("$POOLFS" mount -o rewind "$P" "$M" 2>&1) && fail "-o rewind without ro was accepted"
grep -q "mount with -o ro,rewind" <<<"$out" && ok "-o rewind without ro is refused: $out" ||
  fail "-o rewind without ro: unexpected message: $out"

out=$("$POOLFS" check "$P" 2>&1) && fail "poolfs check passed a pool whose newest txg fails"
grep -q "POOL IS DAMAGED" <<<"$out" || fail "poolfs check: no verdict: $out"

out=$("$POOLFS" check --rewind "$P" 2>&1) || fail "poolfs check --rewind failed: $out"
echo "$out"
grep -q "rewound to txg $((newest - 1)) (the newest, txg $newest, does not verify" <<<"$out" &&
  ok "check --rewind checks txg $((newest - 1))" || fail "check --rewind: no rewind line"

out=$("$POOLFS" mount -o ro,rewind "$P" "$M" 2>&1)
rc=$?
echo "$M" >>"$W/mounts"
echo "$out"
if [[ $rc -ne 0 ]]; then
  fail "poolfs mount -o ro,rewind exited $rc"
  finish
fi
grep -q "rewound to txg $((newest - 1)) (the newest, txg $newest, does not verify" <<<"$out" &&
  ok "mount -o ro,rewind says which txg it opened" || fail "mount -o ro,rewind: no rewind line"
[[ "$(cat "$M/first" 2>&1)" == "the first file" ]] && ok "the older file reads back" ||
  fail "the first file: $(cat "$M/first" 2>&1)"
if touch "$M/new" 2>"$W/touch.err"; then
  fail "a change was taken by a read-only mount"
else
  grep -q "Read-only file system" "$W/touch.err" && ok "changes fail with EROFS" ||
    fail "a change failed otherwise: $(cat "$W/touch.err")"
fi
status=$("$POOLFS" status "$M" 2>&1)
grep -q "rewound to txg $((newest - 1))" <<<"$status" && ok "poolfs status shows the rewind" ||
  fail "poolfs status: no rewind line: $status"
must "$POOLFS" unmount "$M"
for i in $(seq 1 100); do
  grep -q " $M fuse" /proc/mounts || break
  sleep 0.1
done
[[ "$(sha256sum <"$P")" == "$before" ]] && ok "the read-only mount wrote nothing" ||
  fail "the pool file changed under a read-only mount"
finish
