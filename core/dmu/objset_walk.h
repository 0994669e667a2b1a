// WalkObjsetBlocks: every block pointer of an object set, read from disk.
//
// From the root block down: the root block itself, then the metadnode's
// tree (its indirect blocks and dnode blocks) and, for each allocated dnode
// found, that object's tree (indirect and data blocks). Used where the whole
// set's blocks are wanted at once: to free a destroyed dataset, and to count
// the space of an object set whose root block predates its space totals.
// Data blocks are never read; indirect and dnode blocks are, through zio
// (not the cache), verified as every read is.
//
// WalkChangedDnodes: the objects whose dnodes differ between two synced
// states of one object set (a snapshot and a later snapshot or head), for a
// diff. Every block pointer carries the txg it was born in, and a block
// born at or before the older state's txg is shared by both trees, with
// everything below it. So the walk descends the newer metadnode tree only
// through blocks born after that txg, and beside each one the older tree's
// block at the same place: the cost is that of the changed dnode blocks
// (and the indirect blocks above them), whatever the set's size. The two
// trees may differ in height (the metadnode grows levels as ids grow): the
// shorter one stands at the bottom left of the taller, under pointers that
// are absent above its top.
//
// Thread safety: functions; the object sets must not change meanwhile (a
// synced tree: each level's blocks are those its parent names on disk).
#pragma once

#include <functional>

#include "dmu/dnode_phys.h"
#include "poolfs/status.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {

// Calls `fn` once per stored block (never a hole), parents before their
// children; stops at fn's first failure and returns it. IOError or
// Corruption (naming the block) for a block that cannot be read or decoded.
// With `born_after`, only the blocks born after that txg: a block born at
// or before it, and everything below it (no older than it), is skipped
// unread (what a rollback frees: the tree less what the snapshot shares).
Status WalkObjsetBlocks(zio::Zio* zio, const zio::BlockPtr& root, std::string_view name,
                        const std::function<Status(const zio::BlockPtr&)>& fn,
                        Txg born_after = Txg(0));

// What WalkChangedDnodes read.
struct DnodeDiffStats {
  uint64_t blocks_read = 0;   // root, indirect and dnode blocks, both trees
  uint64_t dnode_blocks = 0;  // dnode block positions compared
};

// Called with each object whose 512 dnode bytes differ between the older
// and the newer tree; either dnode may be free (type kNone).
using ChangedDnodeFn =
    std::function<Status(ObjectId id, const DnodePhys& older, const DnodePhys& newer)>;

// Calls `fn` for every object whose dnode differs between the object set
// whose root block is `older_root` (its state as of txg `older_txg`) and
// the later state of the same set at `newer_root`, in id order; stops at
// fn's first failure and returns it. An `older_root` that is a hole (with
// older_txg 0) stands for an empty set: every allocated object of the
// newer one is reported (a full send). IOError or Corruption (naming the
// set, `name`, and the block or object) for a block that cannot be read or
// a dnode that does not decode. `stats` (may be null) gets what was read.
Status WalkChangedDnodes(zio::Zio* zio, const zio::BlockPtr& older_root, Txg older_txg,
                         const zio::BlockPtr& newer_root, std::string_view name,
                         const ChangedDnodeFn& fn, DnodeDiffStats* stats = nullptr);

// One run of an object's data blocks (WalkObjectData): `count` blocks from
// block `first`, stored (`bp`: the pointer of block `first`; count 1) or
// holes (`bp` null).
using DataRunFn = std::function<Status(uint64_t first, uint64_t count, const zio::BlockPtr* bp)>;

// Calls `fn` in block order with the data of object `id` (its dnode `d`)
// that changed after txg `born_after`: each data block born after it, and
// each run of holes below a block born after it (holes carry no birth: a
// hole is reported when its parent is new, or the dnode's own pointer is
// one, as the dnode itself changed). Txg(0): every block and every hole of
// the tree's span (kFanout^(nlevels-1) blocks). Data blocks are not read;
// indirect blocks are (IOError or Corruption naming the block). Stops at
// fn's first failure and returns it.
Status WalkObjectData(zio::Zio* zio, std::string_view name, uint64_t id, const DnodePhys& d,
                      Txg born_after, const DataRunFn& fn);

// The space totals of the blocks below `root` (the root excluded), by a walk.
Result<ObjsetSpace> CountObjsetSpace(zio::Zio* zio, const zio::BlockPtr& root,
                                     std::string_view name);

}  // namespace poolfs::core::dmu
