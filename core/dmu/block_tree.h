// BlockTree: the tree of block pointers under one dnode.
//
// Theory
// ------
// A dnode's data blocks (level 0) are found through indirect blocks: each is
// a 128 KiB array of 2048 block pointers, and the dnode holds one pointer,
// `top`, to the single block at level nlevels-1. Level L block j is
// described by slot j % 2048 of level L+1 block j / 2048 (or by top when
// L = nlevels-1). A hole pointer at any level means "all zeros below". The
// tree grows (nlevels + 1, the old top becoming slot 0 of a new top
// indirect) when a block past its reach is set; it never shrinks.
//
// Indirect blocks are read on demand and kept in memory, the level-1 ones
// (2048 of every 2049) up to kMaxCachedL1 of them: past that, Lookup drops
// every clean one first (a clean block is what its parent's pointer names
// on disk, so it loads again as it was). A dnode in memory thus holds at
// most about 10 MiB of them however large its object (its dnode leaves
// memory when idle: ObjectSet). Changing a pointer marks the indirect blocks
// on its path dirty; WriteDirty writes them bottom up in sync context, each
// level's new pointers going into the level above, and ends with a new top.
// A block already written in the same txg (a MOS sync pass after the first)
// is rewritten in place, so that repeated passes converge without new
// allocations; any other replaced block is freed in the txg. One that no
// longer fits its extent moves once, stored uncompressed: its logical size
// holds whatever a later pass writes there.
//
// `used` counts the allocated bytes of every block in the tree. Every
// change of it also goes to the tree's SpaceCounter when it has one: the
// object set's running totals of the blocks below its root (objset.h), kept
// exactly by the same block writes and frees, never recounted.
//
// Thread safety: none; the dnode guards its tree with a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dmu/copy_policy.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "zio/block_ptr.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {

// The blocks of one object set, counted as its trees write and free them:
// allocated bytes (asize, gang children included), logical bytes (lsize)
// and stored bytes (psize). Changed only in sync context, by the sync tasks
// of one txg at once: hence atomics.
struct SpaceCounter {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> logical{0};
  std::atomic<int64_t> physical{0};

  // A block joins (+1) or leaves (-1) the object set.
  void Add(const zio::BlockPtr& bp, int sign) {
    allocated.fetch_add(sign * int64_t(bp.allocated()), std::memory_order_relaxed);
    logical.fetch_add(sign * int64_t(bp.lsize), std::memory_order_relaxed);
    physical.fetch_add(sign * int64_t(bp.psize), std::memory_order_relaxed);
  }

  // Where a block the set stops referencing goes: freed (zio::Free) unless
  // `release` is set. The pool sets it for a dataset with snapshots: a
  // block one of them still holds goes to the dataset's deadlist instead
  // (pool.h). Called from the sync tasks of one txg at once. Set before the
  // set changes.
  std::function<Status(const zio::BlockPtr&, Txg)> release;
  Status Drop(zio::Zio* zio, const zio::BlockPtr& bp, Txg t) const {
    return release ? release(bp, t) : zio->Free(bp, t);
  }
};

class BlockTree {
 public:
  // `name` ("object 17") prefixes error messages.
  BlockTree(zio::Zio* zio, std::string name, uint8_t nlevels, const zio::BlockPtr& top,
            uint64_t used);

  uint8_t nlevels() const { return nlevels_; }
  const zio::BlockPtr& top() const { return top_; }
  uint64_t used() const { return used_; }
  // Where this tree's block writes and frees are also counted (nullptr:
  // nowhere). Set before the tree changes.
  void set_counter(SpaceCounter* counter) { counter_ = counter; }
  // How many copies its indirect blocks get (nullptr: one). Set before the
  // tree changes.
  void set_copy_policy(const CopyPolicy* copies) { copies_ = copies; }
  // Number of level-0 blocks the tree reaches without growing.
  uint64_t Capacity() const;
  // Clean level-1 blocks kept, at most (see above): 64 x 160 KiB decoded,
  // covering 16 GiB of 128 KiB blocks.
  static constexpr size_t kMaxCachedL1 = 64;
  // Indirect blocks in memory now.
  size_t cached_indirects() const { return cache_.size(); }

  // Stops referencing `bp`, a block of this tree's object set, in the sync
  // of t: freed, or kept for a snapshot (SpaceCounter::Drop).
  Status Drop(const zio::BlockPtr& bp, Txg t) const {
    return counter_ != nullptr ? counter_->Drop(zio_, bp, t) : zio_->Free(bp, t);
  }

  // Returns the pointer of data block `blkid` (a hole past the tree's reach).
  // Reads indirect blocks as needed: IOError or Corruption.
  Result<zio::BlockPtr> Lookup(uint64_t blkid);

  // The next data block at or after `from` that is not under a hole, found
  // without visiting the holes: whole subtrees under a hole pointer are
  // skipped, so a sparse tree of any reach costs what its blocks cost.
  // {block, block + 1, its pointer} for a block; {first, end, error} for the
  // data blocks under an indirect block that cannot be read (the caller
  // decides what they count as); {Capacity(), Capacity()} when none is left
  // (first == end only then: the tree may reach less far than its caller
  // walks).
  //
  // A walk that calls Next repeatedly passes the same `walk`: it remembers
  // every indirect block Next read from disk, and an indirect block reached a
  // second time (a damaged tree whose pointers share a block, so that a few
  // blocks describe an enormous tree) is refused like an unreadable one, so
  // the walk costs what the pool's distinct blocks cost.
  struct Walk {
    std::set<std::pair<uint32_t, uint64_t>> indirects;  // (vdev, offset) read
  };
  struct NextBlock {
    uint64_t first;
    uint64_t end;
    zio::BlockPtr bp;
    Status status;
  };
  NextBlock Next(uint64_t from, Walk* walk);

  // Puts `bp` in the slot of data block `blkid`, growing the tree when
  // needed, and frees the block it replaces in txg (unless `bp` has the same
  // address: rewritten in place).
  Status Set(uint64_t blkid, const zio::BlockPtr& bp, Txg txg);

  // Frees every data block in [first, end) in txg and leaves holes.
  Status FreeRange(uint64_t first, uint64_t end, Txg txg);

  // Writes the dirty indirect blocks bottom up through `allocator` and
  // updates top. Blocks already born in txg are rewritten in place.
  Status WriteDirty(Txg txg, size_t allocator);

  // Writes `data` as a block of `props` that replaces `old`: in place when
  // old was born in txg and the result still fits, else as a new block. A
  // block born in txg that outgrows its extent moves once, stored
  // uncompressed, and stays uncompressed for the rest of txg: every later
  // rewrite fits in place.
  static Result<zio::BlockPtr> WriteBlock(zio::Zio* zio, const zio::WriteProps& props,
                                          std::string_view data, const zio::BlockPtr& old, Txg txg,
                                          size_t allocator);

 private:
  struct Indirect {
    std::vector<zio::BlockPtr> bps;  // 2048
    bool dirty = false;
  };
  using Key = std::pair<uint8_t, uint64_t>;  // (level, index)

  // The slot describing block `index` at `level`.
  Result<zio::BlockPtr*> Slot(uint8_t level, uint64_t index);
  Result<Indirect*> Load(uint8_t level, uint64_t index);
  void MarkPath(uint64_t blkid);
  // Drops every clean level-1 block when more than kMaxCachedL1 are kept.
  void TrimCache();
  void Grow();
  // `old` leaves its slot and `bp` takes it: `used` and the counter follow.
  // The same address is a rewrite in place (the sizes may still differ).
  void Account(const zio::BlockPtr& old, const zio::BlockPtr& bp);
  Status FreeUnder(uint8_t level, uint64_t index, zio::BlockPtr* slot, uint64_t first, uint64_t end,
                   Txg txg);
  std::string Where(uint8_t level, uint64_t index) const;

  zio::Zio* zio_;
  std::string name_;
  uint8_t nlevels_;
  zio::BlockPtr top_;
  uint64_t used_;
  SpaceCounter* counter_ = nullptr;
  const CopyPolicy* copies_ = nullptr;
  std::map<Key, std::unique_ptr<Indirect>> cache_;
  size_t cached_l1_ = 0;  // level-1 entries of cache_
};

}  // namespace poolfs::core::dmu
