// CopyPolicy: how many copies each block of an object set is written with
// (zio/block_ptr.h's ditto blocks), as ZFS's redundant_metadata=all has it:
// the data blocks of plain objects (files) get the dataset's `copies`
// property, 1 to 3; every other block, one more, at most 3: indirect
// blocks, dnode blocks, the object set's root block, and the blocks of
// zaps and directories. One damaged block then loses at most one record of
// a file, never a directory, a dnode block or the tree above them. Every
// block of the MOS gets 3. The pool's format may hold fewer (format 1
// holds one); zio::Zio cuts to what it holds.
//
// Thread safety: SetDataCopies may race with the reads (an atomic); a
// change applies to blocks written afterwards, as ZFS's does.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "dmu/dnode_phys.h"
#include "zio/block_ptr.h"

namespace poolfs::core::dmu {

class CopyPolicy {
 public:
  explicit CopyPolicy(bool mos = false) : mos_(mos) {}

  // The dataset's `copies` (1..3; others are clamped).
  void SetDataCopies(uint8_t n) {
    data_.store(std::clamp<uint8_t>(n, 1, zio::kMaxCopies), std::memory_order_relaxed);
  }
  uint8_t data() const { return mos_ ? zio::kMaxCopies : data_.load(std::memory_order_relaxed); }
  uint8_t metadata() const { return std::min<uint8_t>(data() + 1, zio::kMaxCopies); }
  // A block at `level` of an object of `type` (the metadnode's level-0
  // blocks are dnode blocks: metadata).
  uint8_t For(ObjectType type, uint8_t level) const {
    return type == ObjectType::kPlain && level == 0 ? data() : metadata();
  }

 private:
  const bool mos_;
  std::atomic<uint8_t> data_{1};
};

}  // namespace poolfs::core::dmu
