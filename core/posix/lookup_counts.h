// LookupCounts: the kernel's lookup count of every inode it holds, in
// about 12 bytes each.
//
// The kernel may hold millions of inodes (a create storm leaves every new
// file in its cache until memory pressure or a drop_caches), and the
// filesystem must count the references of each until it is forgotten; an
// unordered_map of ino -> count costs about 45 bytes an entry (a node and
// a bucket), 90 MiB for 2,000,000 files.
//
// Each of 64 shards (picked by ino, a mutex each) is an open-addressing
// table of 8-byte slots, linear probing: a slot holds the inode number (48
// bits: object ids are below 2^48) and its count (16 bits). A count that
// reaches 0xffff moves to a small overflow map of the shard and the slot
// keeps 0xffff as a mark. A slot of 0 is empty (inode 0 does not exist). A
// removal shifts the following entries of its run back, so no tombstones
// are needed. A table grows at 3/4 full and shrinks below 1/8 (after the
// kernel forgot most of its inodes), to at least 64 slots.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "util/mutex.h"

namespace poolfs::core::posix {

class LookupCounts {
 public:
  static constexpr uint64_t kMaxIno = (uint64_t{1} << 48) - 1;

  // Adds n to the count of `ino` (1 <= ino <= kMaxIno).
  void Add(uint64_t ino, uint64_t n);
  // Takes n (at most the count) off; returns what is left.
  uint64_t Drop(uint64_t ino, uint64_t n);
  uint64_t Get(uint64_t ino);
  void Clear();
  // Inodes with a count above 0.
  uint64_t size();
  // Bytes the tables take.
  uint64_t memory_bytes();

 private:
  static constexpr size_t kShards = 64;
  static constexpr uint64_t kCountMask = 0xffff;  // also the overflow mark
  static constexpr size_t kMinSlots = 64;

  struct Shard {
    util::Mutex mu;
    std::vector<uint64_t> slots GUARDED_BY(mu);  // empty until the first Add
    uint64_t used GUARDED_BY(mu) = 0;
    std::unordered_map<uint64_t, uint64_t> overflow GUARDED_BY(mu);  // counts >= 0xffff
  };

  static uint64_t Hash(uint64_t ino) { return ino * 0x9e3779b97f4a7c15ull; }
  Shard& ShardOf(uint64_t ino) { return shards_[Hash(ino) >> 58]; }
  // The slot holding `ino`, or the empty slot where it would go.
  static size_t Find(const std::vector<uint64_t>& slots, uint64_t ino);
  static void Resize(Shard& s, size_t slots) REQUIRES(s.mu);
  static void EraseAt(Shard& s, size_t at) REQUIRES(s.mu);
  static uint64_t CountOf(Shard& s, uint64_t slot) REQUIRES(s.mu);

  std::array<Shard, kShards> shards_;
};

}  // namespace poolfs::core::posix
