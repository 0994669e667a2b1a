// The offline pool verifier behind `poolfs check` (poolfs::CheckPool), in the
// spirit of `zdb -b`.
//
// Theory
// ------
// 1. Labels. Every vdev's labels are read and must form one pool, exactly as
//    import requires (the same pool GUID, every vdev once, the vdev GUIDs
//    the config names). A damaged label copy is a problem; a ring slot that
//    does not decode is only a warning (a power cut tears the slot being
//    written, and import skips it).
// 2. The uberblock, chosen as import chooses it (uberblock_choice.h), with
//    import's own test (Pool::OpenAt's steps: the MOS root, the pool
//    directory, every space map replayed, every dataset root): the newest
//    txg. When it fails, that is a problem, and the newest is walked anyway,
//    so the report names the damage. With CheckOptions::rewind, the txg a
//    rewind import would open is checked instead, and the newer txgs that
//    fail are warnings (the damage a rewind leaves behind; the report's
//    rewind line says which txg was chosen and why).
//    The pool directory's own rules (dataset tree, snapshot names and
//    guids, deadlist keys, clone origins: on-disk-format.md 9) are the
//    decoder's: a directory that breaks one does not decode, a problem
//    naming the rule, and what it lists goes unchecked.
// 3. The walk (CheckWalker). From the MOS root: the MOS's metadnode, every
//    MOS object, then every dataset's root, metadnode and objects; every
//    block of every block tree is read through zio::Zio::Read (checksum
//    verified, decompressed) and decoded with the refusing decoders. What
//    cannot be read or decoded is a problem naming the dataset, object,
//    level and block; the walk skips that subtree and goes on. Structural
//    rules are checked on the way: levels and sizes as the parent says,
//    birth txgs no later than the parent's and the uberblock's, indirect
//    fill counts, each dnode's `used`, no block past an object's length,
//    the object counts of each object set.
// 4. Space, both ways (CheckSpace). Every stored block's extent (vdev,
//    offset, asize) goes into a per-vdev map; an extent met twice or
//    overlapping another is a problem, but for a block a snapshot or an
//    origin shares with a later tree, and for a block clone: a level-0
//    data block that the pool's block reference table (the MOS object the
//    pool directory names; zio/block_ref_table.h) counts. Its clones count
//    once each, in their datasets' figures but not in the pool's
//    referenced bytes, and must number exactly what the table says, for
//    a block of the allocated size it says (check_walker.h); a table that
//    does not decode is a problem. Each metaslab's space map (a MOS
//    object the pool directory names) is replayed from all-free into its
//    free set; a metaslab without a map is all free. Then every referenced
//    extent must be allocated, and every allocated byte referenced.
//    Snapshots' space is checked both ways too. Each deadlist entry lies
//    in its bucket's birth range and is held by a snapshot; and the walks
//    of a lineage (its snapshots oldest first, then the dataset; a clone's
//    first tree after its origin snapshot) each note the pointers they
//    reach, so that every deadlist must be exactly what the tree before
//    its owner held and its owner does not (pointers counted by place and
//    birth). A block missing from it would never be freed; one too many
//    miscounts `used`, which the buckets' bytes give.
//
// 5. A trial sync. When a read-write import would succeed (not with rewind,
//    whose import is read-only), the pool is imported over
//    in-memory overlays of its devices (vdev::OverlayDevice: nothing
//    reaches them), one object of a dataset is changed, and that txg is
//    synced: a pool whose next sync fails (a MOS sync that does not
//    converge, a space map that cannot take the txg) looks sound to steps
//    1-4 and yet loses whatever a mount writes. Its failure is a problem.
//
// What "allocated" means at a synced txg T: the maps hold exactly the
// blocks referenced by T's tree. Metaslab::Sync(T) appends T's allocations
// and T's frees, both stamped T, so a block freed in T is free in the map as
// of T even though the allocator keeps it out of use for kTxgDeferSize more
// txgs (that deferral lives only in memory); the pool's MOS passes repeat
// until a pass allocates and frees nothing, so the maps also cover the
// blocks the MOS sync itself wrote. The blocks the MOS sync freed from its
// second pass on are still allocated as of T, listed in the pool
// directory's deferred frees until the next txg frees them: they count as
// referenced by that list. No slack is allowed either way.
//
// Nothing is ever written (the trial writes to its overlays): the devices
// may be opened read-only.
//
// Thread safety: one call works on its own state; the devices must not be
// written meanwhile (CheckPool holds a shared lock on every file).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "dmu/dnode_phys.h"
#include "pool/pool_phys.h"
#include "poolfs/pool_admin.h"
#include "poolfs/status.h"
#include "vdev/block_device.h"
#include "zio/block_ptr.h"

namespace poolfs::core::pool {

// CheckedBlock::object of an object set's root block.
inline constexpr uint64_t kRootBlockObject = ~uint64_t{0};

// One stored block the walk reached, before it is read.
struct CheckedBlock {
  bool mos = false;
  std::string dataset;  // the dataset's name; empty for the MOS
  uint64_t object = 0;  // 0: the metadnode; kRootBlockObject: the root block
  dmu::ObjectType object_type = dmu::ObjectType::kNone;
  uint8_t level = 0;
  uint64_t blkid = 0;  // index of the block at its level
  zio::BlockPtr bp;
};

using BlockVisitor = std::function<void(const CheckedBlock&)>;

// What the intent log of the checked txg holds, as its reader says (the
// zil layer knows the log's blocks; this one only where they lie): the
// blocks of its chain, the records a replay would apply, the damage that
// ended the chain early ("" when it ended normally), and why the records
// end before an indirect write whose block does not verify ("" when none
// does: a commit that never returned leaves one).
struct LogSummary {
  uint64_t blocks = 0;
  uint64_t records = 0;
  std::string damage;
  std::string unwritten;
};
using LogAreaRead = std::function<Status(uint64_t offset, std::span<uint8_t> bytes)>;
// Reads the block an indirect write record names (the pool's encoded
// pointer; `where` starts the message of a failure), verified.
using LogBlockRead =
    std::function<Result<std::string>(std::string_view encoded, std::string_view where)>;
using LogChecker = std::function<Result<LogSummary>(const LogState&, uint64_t pool_guid,
                                                    const LogAreaRead&, const LogBlockRead&)>;

// Checks the pool on `devs` (all its vdevs, any order; only read). `visitor`,
// when set, sees every stored block the walk reaches (tests use it to find
// blocks to damage); `log`, when set, reads the intent log the checked
// uberblock names (damage there is a problem). Returns the report, or:
// InvalidArgument for the wrong set of devices, Corruption for a device that
// is not a poolfs vdev or a pool without any uberblock, NotSupported for
// another format version, IOError when every label read fails.
Result<CheckReport> CheckDevices(const std::vector<vdev::BlockDevice*>& devs,
                                 const BlockVisitor& visitor = nullptr,
                                 const CheckOptions& options = {}, const LogChecker& log = nullptr);

}  // namespace poolfs::core::pool
