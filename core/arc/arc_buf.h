// Block identity, the cache's per-block header, and ArcHandle, the RAII hold
// on a cached (or dirty) block that readers and writers keep.
//
// A block is named by where and when it was written: (vdev, offset, birth
// txg). Copy-on-write never rewrites a block in place, so a name always means
// the same bytes, and a cached copy can never be stale; a freed block's name
// simply stops being asked for (Arc::Forget drops it early).
//
// Thread safety: BlockKey is a value. An ArcHandle is like a shared_ptr: one
// handle is used by one thread at a time; different handles to the same block
// may live in different threads. The header's fields are guarded as its
// comments say; only arc/ code touches them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "poolfs/types.h"

namespace poolfs::core::arc {

class Arc;

// Where a block lives and the txg that wrote it.
struct BlockKey {
  VdevId vdev;
  VdevOffset offset;
  Txg birth;

  bool operator==(const BlockKey&) const = default;
  // A well-mixed 64-bit hash: the low bits pick the hash bucket (and its lock
  // stripe), the high bits pick the sublist.
  uint64_t Hash() const {
    uint64_t h = vdev.value() * 0x9e3779b97f4a7c15ull;
    h ^= offset.value() + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h ^= birth.value() * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  }
};

// Which list a header is on, or what it is when it is on none.
enum class ArcState : uint8_t {
  kMru,       // cached, read once since it entered
  kMfu,       // cached, read again since
  kMruGhost,  // evicted from MRU: a name and a size, no data
  kMfuGhost,  // evicted from MFU
  kGone,      // out of the cache (uncached, forgotten): freed with its last handle
};
inline constexpr int kListStates = 4;  // kMru .. kMfuGhost have lists

inline bool IsGhost(ArcState s) { return s == ArcState::kMruGhost || s == ArcState::kMfuGhost; }
inline bool IsCached(ArcState s) { return s == ArcState::kMru || s == ArcState::kMfu; }

// The cache's record of one block. `refs` is the number of handles plus
// kDetached when the cache no longer owns the header (kGone): the
// last handle of a detached header frees it. The hash fields and `state` are
// guarded by the key's hash stripe lock while the header is in the hash
// table; prev/next by the lock of the sublist the header is on.
struct ArcHeader {
  static constexpr uint32_t kDetached = 0x80000000u;
  static constexpr uint32_t kCountMask = kDetached - 1;

  BlockKey key;
  uint64_t hash = 0;
  std::byte* data = nullptr;  // null for a ghost
  uint32_t size = 0;          // the block's bytes
  uint32_t charged = 0;       // the memory it takes (BufferPool::ChargedSize)
  std::atomic<uint32_t> refs{0};
  ArcState state = ArcState::kGone;
  ArcHeader* hash_next = nullptr;
  ArcHeader* prev = nullptr;
  ArcHeader* next = nullptr;
};

// A hold on a block's bytes. While any handle to a block exists the cache
// never evicts it. Copying a handle takes another hold; destroying one drops
// it (no lock: an atomic decrement, plus the freeing of an uncached or
// forgotten block by its last handle). An empty handle (a miss) converts to false.
class ArcHandle {
 public:
  ArcHandle() = default;
  ArcHandle(const ArcHandle& o);
  ArcHandle(ArcHandle&& o) noexcept : arc_(o.arc_), h_(o.h_) {
    o.arc_ = nullptr;
    o.h_ = nullptr;
  }
  ArcHandle& operator=(ArcHandle o) noexcept {
    std::swap(arc_, o.arc_);
    std::swap(h_, o.h_);
    return *this;
  }
  ~ArcHandle() { Reset(); }

  explicit operator bool() const { return h_ != nullptr; }
  const std::byte* data() const { return h_->data; }
  uint32_t size() const { return h_->size; }
  std::span<const std::byte> bytes() const { return {h_->data, h_->size}; }
  // The block's name.
  const BlockKey& key() const { return h_->key; }
  // Drops the hold now; the handle becomes empty.
  void Reset();

 private:
  friend class Arc;
  ArcHandle(Arc* arc, ArcHeader* h) : arc_(arc), h_(h) {}  // adopts one hold

  Arc* arc_ = nullptr;
  ArcHeader* h_ = nullptr;
};

}  // namespace poolfs::core::arc
