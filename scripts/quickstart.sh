#!/usr/bin/env bash
# The README's first command: installs what is missing, builds poolfs, and
# shows what it can do today.
#
# That is the space layer (range trees in B-trees, metaslabs, allocators),
# shown through its benchmarks, then a pool created in a file, mounted
# through FUSE, a short createmany run on the mount, the unmount, and an
# offline check of the pool the run left behind.
#
# Usage: scripts/quickstart.sh
# Environment: POOLFS_BUILD (build folder, default "build"), JOBS (default nproc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD=${POOLFS_BUILD:-build}
JOBS=${JOBS:-$(nproc)}
BENCH=$BUILD/bin/poolfs-bench

say() { printf '\n=== %s\n' "$*"; }

say "1. install missing Debian packages (scripts/setup.sh)"
scripts/setup.sh

say "2. build ($BUILD/, RelWithDebInfo)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$JOBS"

if [[ ! -x "$BENCH" ]]; then
  echo "quickstart.sh: $BENCH was not built (bench/ has no sources yet?)" >&2
  exit 1
fi

say "3. space layer: RangeTree in B-trees vs two std::sets (memory, load, alloc+free rate)"
"$BENCH" space

say "4. allocators: 2 threads sharing 1 allocator vs 1 allocator each (allocations/s)"
"$BENCH" alloc --allocators 1,2 --threads 2

say "5. create a pool in a file (poolfs create)"
POOLDIR=$(mktemp -d "${TMPDIR:-/tmp}/poolfs-quickstart.XXXXXX")
MNT=$POOLDIR/tank
mkdir "$MNT"
# On any failure: unmount if still mounted, then remove the pool.
trap 'mountpoint -q "$MNT" 2>/dev/null && { "$BUILD/bin/poolfs" unmount "$MNT" || fusermount3 -uz "$MNT"; }; rm -rf "$POOLDIR"' EXIT
"$BUILD/bin/poolfs" create "$POOLDIR/tank.pool" --size 1G --name quickstart

say "6. mount it (poolfs mount; it returns once the mount is usable)"
"$BUILD/bin/poolfs" mount "$POOLDIR/tank.pool" "$MNT"

say "7. a dataset, quickstart/qs (it appears as $MNT/qs), and 20000 files in it with 4 threads (createmany -o -t 4 -D $MNT/qs 20000)"
"$BUILD/bin/poolfs" dataset create quickstart/qs
"$BUILD/bin/createmany" -o -t 4 -D "$MNT/qs" 20000
echo "files under $MNT/qs: $(find "$MNT/qs" -type f | wc -l)"
"$BUILD/bin/poolfs" dataset list -r quickstart

say "8. unmount (poolfs unmount; waits for the final sync and export)"
"$BUILD/bin/poolfs" unmount "$MNT"

say "9. verify the pool offline (poolfs check)"
"$BUILD/bin/poolfs" check "$POOLDIR/tank.pool"

say "done"
echo "Next: scripts/bench-fs.sh compares poolfs with the FUSE ceiling and the disk;"
echo "scripts/test.sh runs every test; README.md describes the layers and benchmarks."
