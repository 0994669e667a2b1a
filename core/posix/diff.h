// Diff: the files created, removed, renamed and modified between a snapshot
// of a dataset and a later state of it (`poolfs diff`, DatasetAdmin::Diff).
//
// Theory
// ------
// A snapshot taken in txg T shares with every later state of its dataset
// each block born at or before T. So the objects that may have changed are
// those whose dnodes lie in metadnode blocks born after T, and
// dmu::ObjectSet::ChangedDnodes finds them by descending the later tree
// only through such blocks, comparing each dnode with the one in the same
// slot of the snapshot. The cost is that of the changed dnode blocks, not
// of the dataset. For each object whose dnode differs:
//   - a file is an object whose bonus is a znode (znode_phys.h) with at
//     least one link; the fixed objects (master, unlinked set) and xattr
//     objects are not files, and a file unlinked but still open (in the
//     unlinked set) counts as gone;
//   - a file in the later state only is created (+), in the earlier only
//     removed (-); the same id with another generation (the dnode's
//     creation txg) is one file removed and another created;
//   - a file in both is unchanged when its znode (atime aside: reads move
//     it) and its data pointer are the same; otherwise it is renamed (R)
//     when the name it had no longer leads to it and the name it has now
//     did not before, and modified (M) otherwise. Every POSIX change moves
//     the file's ctime, a rename included, so a rename always reaches its
//     dnode; a directory whose entries changed is modified itself.
// Paths. An object's path is found up its znodes' parent chain: in each
// parent directory, the entry whose value is the object (a file with
// several links gets one of its names). Each directory is listed at most
// once per side (its names kept by object), and each directory's path is
// kept once found: the work is that of the directories holding changed
// files. A file whose parent no longer holds it (a hard link's first name
// removed; a file renamed across directories by a build that did not
// update the parent) is found by one walk of the whole tree of that side.
// Output is sorted by path, then by type.
//
// The later state may also be a clone's (pool.h, "Clones"): a clone made
// from the snapshot, or from a later snapshot of its dataset, or a clone
// of such a clone, shares with the snapshot every block born up to its
// txg just as the dataset does, so the same walk compares them; any other
// dataset is refused.
//
// The later state, when it is the dataset itself, is its last synced root
// (Pool::OpenSyncedDataset after a sync): the blocks it names are not held
// by anything, so a dataset changing while the diff runs may free them;
// the diff is then tried again on the newer root, a few times.
//
// Damage (a znode that does not decode, a parent that is not a directory,
// a dnode that does not decode) is Corruption naming the set and object.
//
// Thread safety: functions; the object sets must not change meanwhile.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "dmu/objset.h"
#include "pool/pool.h"
#include "poolfs/dataset.h"
#include "poolfs/status.h"

namespace poolfs::core::posix {

// What a diff read, for tests and figures.
struct DiffStats {
  dmu::DnodeDiffStats dnodes;  // the metadnode walk's reads
  uint64_t objects = 0;        // objects whose dnodes differed
  uint64_t directories_listed = 0;
  bool full_walk = false;  // a path needed the whole tree (see above)
};

// The changes from `from`, the state of a dataset as of txg `from_txg` (a
// snapshot), to `to`, a later synced state of the same dataset, both of
// one pool.
Result<std::vector<DiffEntry>> DiffObjectSets(dmu::ObjectSet& from, Txg from_txg,
                                              dmu::ObjectSet& to, DiffStats* stats = nullptr);

// DatasetAdmin::Diff over `pool`: `from` "POOL/PATH@A", `to` "POOL/PATH@B"
// or "POOL/PATH" (synced first).
Result<std::vector<DiffEntry>> DiffDatasets(pool::Pool& pool, std::string_view from,
                                            std::string_view to, DiffStats* stats = nullptr);

}  // namespace poolfs::core::posix
