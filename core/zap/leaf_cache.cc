#include "zap/leaf_cache.h"

#include <utility>

namespace poolfs::core::zap {

uint64_t LeafCache::NewOwner() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<const Leaf> LeafCache::Find(uint64_t owner, uint64_t block) {
  std::shared_ptr<Cached> c = cache_.Find(Key(owner, block));
  if (!c || c->owner != owner || c->leaf.block() != block) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  // Aliasing: the leaf lives as long as its entry's reference.
  return std::shared_ptr<const Leaf>(c, &c->leaf);
}

std::shared_ptr<const Leaf> LeafCache::Put(uint64_t owner, Leaf leaf) {
  const uint64_t block = leaf.block();
  auto c = std::make_shared<Cached>(Cached{owner, std::move(leaf)});
  cache_.Replace(Key(owner, block), c);
  return std::shared_ptr<const Leaf>(c, &c->leaf);
}

void LeafCache::Drop(uint64_t owner, uint64_t block) { cache_.Erase(Key(owner, block)); }

}  // namespace poolfs::core::zap
