// CheckWalker: step 3 of the pool check (see check.h): walks object sets
// block by block, verifying and decoding everything, and records every
// referenced extent for the space check.
//
// Shared extents. An extent is recorded once, by the first pointer the walk
// meets; a later pointer to the very same extent (offset and size) is
// either the same pointer seen again through another tree (a snapshot
// shares its dataset's blocks up to its txg, a clone its origin's: the
// Share rules of WalkDataset), or a block clone: a level-0 data block the
// pool's block reference table counts (zio/block_ref_table.h). A clone
// reference counts once per lineage, like any pointer, and its objects and
// byte totals are the dataset's own, but the pool's referenced bytes count
// the extent once. After the walk, CheckRefTable compares what the walk
// found with what the table says. Any other second pointer is a problem.
//
// Thread safety: none; one check owns one walker.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "dmu/dnode_phys.h"
#include "pool/check.h"
#include "poolfs/pool_admin.h"
#include "poolfs/types.h"
#include "zio/block_ref_table.h"
#include "zio/zio.h"

namespace poolfs::core::pool {

// Adds problems and warnings to a report, listing at most kMaxListed of
// each (the rest are counted).
class ProblemSink {
 public:
  explicit ProblemSink(CheckReport* report) : report_(report) {}
  void Add(std::string where, std::string what);
  void Warn(std::string where, std::string what);

 private:
  CheckReport* report_;
};

// Where a vdev's blocks may lie and how its metaslabs are cut.
struct VdevGeometry {
  uint64_t alloc_start = 0;
  uint64_t alloc_size = 0;
  uint32_t ashift = 12;
  uint32_t ms_shift = 24;
};

// Origin::object of a deferred free (PoolDirectory::deferred_frees).
inline constexpr uint64_t kDeferredFreeObject = ~uint64_t{0} - 1;

// Who references a block, compactly (a pool has millions of blocks).
struct Origin {
  int32_t dataset = -1;  // index into the walker's dataset names; -1: the MOS
  dmu::ObjectType type = dmu::ObjectType::kNone;
  uint8_t level = 0;
  uint64_t object = 0;  // kRootBlockObject: the object set's root block;
                        // kDeferredFreeObject: the pool directory's deferred
                        // free number blkid
  uint64_t blkid = 0;
};

struct RefExtent {
  uint64_t size = 0;
  Origin origin;
};
// Per vdev: every referenced extent by offset (no two overlap).
using RefMap = std::vector<std::map<uint64_t, RefExtent>>;

// The content of a MOS object the walk gathered (the pool directory, space
// maps, deadlists, the block reference table).
struct GatheredObject {
  dmu::ObjectType type = dmu::ObjectType::kNone;
  std::string bytes;      // length bytes; holes read as zeros
  bool complete = false;  // every block of it read and verified
};

class CheckWalker {
 public:
  // `zio` reads (no space manager); `txg` is the uberblock's. `report`
  // gets the counts, `sink` the problems.
  CheckWalker(zio::Zio* zio, std::vector<VdevGeometry> vdevs, Txg txg, CheckReport* report,
              ProblemSink* sink, const BlockVisitor* visitor);

  // Walks the MOS from its root block pointer; gathers the content of its
  // pool directory, space map, deadlist and block reference table objects
  // (mos_objects()).
  void WalkMos(const zio::BlockPtr& root);
  // Before the datasets are walked: the entries of the pool's block
  // reference table (Decode's), so that a second pointer to a block they
  // count is taken as a clone. Without either call the pool has no table,
  // and every second pointer is a problem. SetRefTableUnknown: the pool has a
  // table that could not be read (reported already): second pointers to
  // data blocks are taken as clones, and CheckRefTable judges nothing.
  void SetRefTable(zio::BlockRefTable::Entries entries);
  void SetRefTableUnknown();
  // After every walk: each entry of the table against the clone references
  // the walk found to its block. Problems: an entry whose block no pointer
  // names, or that names another kind of block than a dataset's data
  // block; a count other than the walk's (too high: the block's space is
  // never freed; too low: a free releases the block while a pointer still
  // names it); an allocated size other than the block's. `where` names the
  // table ("block reference table (MOS object 9)").
  void CheckRefTable(const std::string& where);
  // Records the blocks the pool directory lists as deferred frees: still
  // allocated in the space maps, referenced by nothing else, never read.
  void ReferenceDeferredFrees(const std::vector<zio::BlockPtr>& frees);
  // Walks dataset (or snapshot) `name` from its root block pointer.
  // `lineage` names the dataset whose tree it is (its snapshots share
  // it). A block an earlier walk reached may be shared with it: when that
  // walk's lineage is one of `shares` and the block was born at or before
  // the txg given with it (the txg of the snapshot walked before, for the
  // same lineage; a clone's origin's, for the lineage of the origin), it
  // is walked again (its objects and counts are this tree's too) but
  // recorded once.
  struct Share {
    uint64_t lineage = 0;
    Txg through;
  };
  // For the space check of snapshots: while set, every block pointer a
  // walk reaches (recorded, shared with a tree walked before, or a clone)
  // joins *held, named by its first copy's place and its birth, counted
  // (block clones made in one txg give one tree several such pointers).
  using HeldKey = std::tuple<uint32_t, uint64_t, uint64_t>;  // vdev, offset, birth
  using HeldSet = std::map<HeldKey, uint64_t>;
  static HeldKey HeldKeyOf(const zio::BlockPtr& bp) {
    return {bp.dva.vdev, bp.dva.offset, bp.birth.value()};
  }
  void CollectHeld(HeldSet* held) { held_ = held; }
  void WalkDataset(const std::string& name, const zio::BlockPtr& root,
                   std::vector<Share> shares = {}, uint64_t lineage = 0);

  // Whether `bp` is a block a walk recorded, exactly (its first extent).
  bool Referenced(const zio::BlockPtr& bp) const;

  // Every allocated MOS object: its type and, for the pool directory,
  // space maps and deadlists, its content.
  const std::map<uint64_t, GatheredObject>& mos_objects() const { return mos_objects_; }
  const RefMap& refs() const { return refs_; }
  // Subtrees not walked because their root could not be read or decoded:
  // the blocks below them are unknown to the space check.
  uint64_t skipped_subtrees() const { return skipped_; }
  const std::vector<std::string>& dataset_names() const { return names_; }
  // Failed reads of a bad copy that an earlier read of the walk found bad
  // already: a block a snapshot shares with a later tree is read once per
  // tree, but each bad copy is one problem, reported and counted once (the
  // check takes these from the pipeline's checksum error count).
  uint64_t repeated_copy_errors() const { return repeated_copy_errors_; }

  // "dataset 'tank' object 17 L0 block 3", "MOS metadnode L1 block 0",
  // "dataset 'tank' root block".
  std::string Describe(const Origin& o) const;
  // Describe() plus " (vdev 0 offset 0x1234000)".
  std::string DescribeAt(const Origin& o, uint32_t vdev, uint64_t offset) const;

 private:
  // One block tree being walked (an object's, or a metadnode's).
  struct TreeWalk {
    Origin base;  // dataset, object, type
    uint32_t block_size = 0;
    uint64_t used = 0;  // asize of every stored block found
    uint64_t leaves = 0;
    uint64_t last_leaf = 0;
    bool damaged = false;  // some block of it could not be walked
    std::function<void(uint64_t blkid, const std::string& data, const zio::BlockPtr& bp)> on_leaf;
  };

  void WalkObjset(int32_t dataset, const zio::BlockPtr& root);
  void WalkObject(int32_t dataset, uint64_t id, const dmu::DnodePhys& d, Txg parent_birth);
  // Walks the tree of `d` and checks the dnode against what it found.
  void WalkTree(TreeWalk& w, const dmu::DnodePhys& d, Txg parent_birth);
  void WalkBlock(TreeWalk& w, const zio::BlockPtr& bp, uint8_t level, uint64_t index,
                 Txg parent_birth);
  enum class Ref {
    kWalk,       // recorded (or overlapping another): read and walk it
    kDuplicate,  // the very block another pointer reached: walked already
    kShared,     // one the snapshot walked before holds too: walk, recorded
    kCloned,     // a block clone's reference, counted: walk, recorded
    kInvalid,    // outside the pool or misaligned: cannot be read
  };
  // Checks the pointer's birth and place and records its extent (a gang
  // block: its header's and its children's).
  Ref Reference(const zio::BlockPtr& bp, const Origin& o, Txg parent_birth);
  // Checks one extent of bp's and records it. `copy`: which of bp's copies
  // the extent is (-1: a gang child).
  Ref ReferenceExtent(const zio::BlockPtr& bp, const space::Dva& extent, const Origin& o, int copy);
  // Whether a share of the walk under way explains `bp` of this walk
  // naming the extent `by` reached first.
  bool ShareExplains(const zio::BlockPtr& bp, const Origin& o, const Origin& by) const;
  void Visit(const zio::BlockPtr& bp, const Origin& o);
  // The block's bytes, each of its copies verified (a copy that fails while
  // another reads is reported here).
  Result<std::string> ReadChecked(const zio::BlockPtr& bp, const Origin& o);
  void Problem(const Origin& o, const zio::BlockPtr& bp, std::string what);

  zio::Zio* zio_;
  std::vector<VdevGeometry> vdevs_;
  Txg txg_;
  CheckReport* report_;
  ProblemSink* sink_;
  const BlockVisitor* visitor_;
  RefMap refs_;
  std::vector<std::string> names_;
  std::map<uint64_t, GatheredObject> mos_objects_;
  uint64_t skipped_ = 0;
  HeldSet* held_ = nullptr;  // CollectHeld
  std::vector<Share> shares_;      // of the walk under way (WalkDataset)
  std::vector<uint64_t> lineage_;  // per walk (names_ index): its lineage
  uint64_t objset_bytes_ = 0;      // extents each walk reached, shared ones too
  // Block cloning. The table's entries (has_ref_table_: the pool has a
  // table; ref_table_known_: it was read), and per block the table counts
  // and the walk reached: its allocated bytes as its first pointer says,
  // and the clone references found (whose lineages share the way the
  // first's does).
  struct CloneRefs {
    uint64_t allocated = 0;
    bool seen = false;  // a pointer reached it
    std::vector<Origin> extra;
  };
  bool has_ref_table_ = false;
  bool ref_table_known_ = false;
  zio::BlockRefTable::Entries ref_table_;
  std::map<zio::BlockRefTable::Key, CloneRefs> clones_;
  // The copies a read found bad, by (vdev, offset), and the reads that
  // found one of them bad again.
  std::set<std::pair<uint32_t, uint64_t>> bad_copies_;
  uint64_t repeated_copy_errors_ = 0;
};

}  // namespace poolfs::core::pool
