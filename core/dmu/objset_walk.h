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
// Thread safety: a function; the object set must not change meanwhile (a
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

// The space totals of the blocks below `root` (the root excluded), by a walk.
Result<ObjsetSpace> CountObjsetSpace(zio::Zio* zio, const zio::BlockPtr& root,
                                     std::string_view name);

}  // namespace poolfs::core::dmu
