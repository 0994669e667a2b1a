#!/usr/bin/env bash
# A full pool: statfs gives real figures that follow the data written;
# filling the pool ends in ENOSPC; what was stored before is intact (and
# still intact after a remount, with `poolfs check` clean); deleting files
# frees space for new writes.
#
# Usage: tests/e2e/full_pool_test.sh path/to/poolfs
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"

SIZE_MIB=256
mkdir -p "$W/pool" "$W/src"
P=$W/pool/pool
M=$W/mnt
pool_create "$P" ${SIZE_MIB}M || {
  fail "poolfs create"
  finish
}
pool_mount "$P" "$M" || {
  fail "poolfs mount"
  finish
}

# avail_mib: what statfs says is available, in MiB.
avail_mib() { echo $(($(stat -f -c '%a * %S' "$M") / 1048576)); }

read -r bsize blocks bfree bavail namemax <<<"$(stat -f -c '%S %b %f %a %l' "$M")"
total_mib=$((bsize * blocks / 1048576))
echo "statfs: bsize $bsize, total $total_mib MiB, free $((bsize * bfree / 1048576)) MiB," \
  "available $((bsize * bavail / 1048576)) MiB, name max $namemax"
if [[ $total_mib -ge $((SIZE_MIB / 2)) && $total_mib -le $SIZE_MIB && $bavail -le $bfree &&
  $bfree -le $blocks && $namemax -eq 255 ]]; then
  ok "statfs figures match a $SIZE_MIB MiB pool"
else
  fail "statfs figures do not match a $SIZE_MIB MiB pool"
fi

head -c 8M /dev/urandom >"$W/src/keep"
cp "$W/src/keep" "$M/keep"
mkdir "$M/dir"
for i in $(seq 1 50); do echo "small $i" >"$M/dir/s$i"; done
sync "$M/keep" "$M/dir"
before=$(avail_mib)
head -c 32M /dev/urandom >"$M/chunk"
sync "$M/chunk"
after=$(avail_mib)
echo "statfs: available $before MiB before a 32 MiB fsync'ed write, $after MiB after"
if [[ $((before - after)) -ge 24 ]]; then
  ok "statfs available space follows the data written"
else
  fail "statfs available space went from $before to $after MiB after writing 32 MiB"
fi

# Fill the pool with incompressible 8 MiB files, each fsync'ed, until three
# in a row fail with ENOSPC (a first ENOSPC may be transient: the pool
# reserves room for the txgs in flight).
written=0
first_enospc=""
streak=0
n=0
while [[ $streak -lt 3 && $written -lt $((SIZE_MIB * 2)) ]]; do
  n=$((n + 1))
  if head -c 8M /dev/urandom >"$M/fill-$n" 2>"$W/fill.err" && sync "$M/fill-$n" 2>>"$W/fill.err"
  then
    written=$((written + 8))
    streak=0
  elif grep -q "No space left on device" "$W/fill.err"; then
    [[ -z "$first_enospc" ]] && first_enospc=$written
    streak=$((streak + 1))
    rm -f "$M/fill-$n"
  else
    cat "$W/fill.err"
    fail "writing fill-$n failed with something other than ENOSPC"
    break
  fi
done
left=$(avail_mib)
echo "full pool: first ENOSPC after $first_enospc MiB of fill, $written MiB written in all," \
  "statfs then says $left MiB available"
if [[ $streak -eq 3 ]]; then
  ok "filling the pool ends in ENOSPC"
else
  fail "no ENOSPC after writing $written MiB into a $SIZE_MIB MiB pool"
fi
# The 40 MiB stored before plus the fill should come near the available
# space: a pool that refuses writes with a quarter of its space free is not
# full.
if [[ $((written + 40)) -ge $((before * 3 / 4)) ]]; then
  ok "the pool took $((written + 40)) MiB of the $before MiB it said were available"
else
  fail "ENOSPC with only $((written + 40)) MiB stored of the $before MiB statfs said were available"
fi
cmp "$W/src/keep" "$M/keep" && ok "data stored before the pool filled is intact" ||
  fail "data stored before the pool filled was damaged"
[[ $(cat "$M/dir/s17") == "small 17" ]] || fail "a small file changed on the full pool"
ls "$M/dir" | wc -l | grep -qx 50 || fail "the directory lost entries on the full pool"

# Delete, and the space comes back. Frees become allocatable a few txgs
# later (TXG_DEFER_SIZE): each fsync below ends one txg.
# Tries every second for 30 s, fsyncing the root folder (whose entries
# changed) in between to end txgs.
rm -f "$M"/fill-* "$M/chunk"
freed=0
for attempt in $(seq 1 30); do
  sync "$M" 2>/dev/null
  if head -c 64M /dev/urandom >"$M/after-delete" 2>/dev/null && sync "$M/after-delete" 2>/dev/null
  then
    freed=1
    break
  fi
  rm -f "$M/after-delete"
  sleep 1
done
if [[ $freed -eq 1 ]]; then
  # Attempts are 1 s apart: a figure for the report, not a verdict.
  ok "deleting files freed space for a 64 MiB write (at attempt $attempt, 1 s apart)"
else
  fail "no 64 MiB write succeeded within 30 s of deleting the files"
fi

pool_unmount "$M" || fail "poolfs unmount"
pool_check "$P" || fail "poolfs check after filling the pool"
pool_mount "$P" "$M" || {
  fail "poolfs mount again"
  finish
}
cmp "$W/src/keep" "$M/keep" && ok "the kept data is intact after a remount" ||
  fail "the kept data was damaged across the remount"
pool_unmount "$M" || fail "poolfs unmount (second)"
pool_check "$P" || fail "poolfs check (second)"
finish
