// LeafCache: fat-zap leaves kept decoded, shared by the zaps given it.
//
// Without it, every lookup, add and remove in a fat zap copies its leaf out
// of the dmu and checks every entry (Leaf::Decode): two leaf
// reads per file create (the kernel's LOOKUP, then the add), most of a
// create's CPU time in a large directory. With it, a leaf is decoded and
// checked once; a lookup reads the decoded leaf in place, a change takes it
// out (or copies it, if a reader still holds it), edits it and, once the
// dmu has the block, puts it back (Zap::Commit). Within a txg the cached
// leaf's bytes are the dmu's dirty copy itself (dmu/shared_block.h). The
// dmu stays the truth: a Commit that fails drops its leaves from the
// cache, so they are read again.
//
// Entries are keyed by (owner, block): the owner is a number each Zap takes
// when it is made (NewOwner, never reused in the process), so a zap opened
// again, or a new zap in a freed object's id, never meets another's leaves;
// a dropped Zap's leaves simply age out. Bounded in number (SetLimit, by
// CLOCK, util::ObjectCache): a leaf is one zap block (8 KiB by default), so
// the memory is about limit x block size.
//
// Thread safety: every method may be called from any thread. The Zap's own
// lock orders a change against lookups of the same zap.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "util/object_cache.h"
#include "zap/leaf.h"

namespace poolfs::core::zap {

class LeafCache {
 public:
  explicit LeafCache(uint64_t limit) { SetLimit(limit); }

  // At most about `limit` leaves (at least 1).
  void SetLimit(uint64_t limit) { cache_.SetLimit(limit); }
  uint64_t limit() const { return cache_.limit(); }

  // A number no other Zap of this process has.
  static uint64_t NewOwner();

  // The leaf `owner` cached for `block`, or nullptr.
  std::shared_ptr<const Leaf> Find(uint64_t owner, uint64_t block);
  // Caches `leaf` (which must be stored at `block`) for `owner`, replacing
  // what was there.
  std::shared_ptr<const Leaf> Put(uint64_t owner, Leaf leaf);
  void Drop(uint64_t owner, uint64_t block);

  uint64_t size() { return cache_.size(); }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  struct Cached {
    uint64_t owner;
    Leaf leaf;
  };
  // Blocks of a zap stay below 2^28 (kMaxDepth gives at most 2^26 leaves,
  // and the table's blocks come to less than as many again); owners below
  // 2^36 (a Zap a microsecond for two years). Find checks both anyway.
  static uint64_t Key(uint64_t owner, uint64_t block) { return owner << 28 | block; }

  util::ObjectCache<Cached> cache_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace poolfs::core::zap
