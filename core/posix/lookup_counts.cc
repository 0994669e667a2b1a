// LookupCounts: compact tables of the kernel's lookup counts (see
// lookup_counts.h).
#include "posix/lookup_counts.h"

#include <algorithm>

#include "util/check.h"

namespace poolfs::core::posix {

size_t LookupCounts::Find(const std::vector<uint64_t>& slots, uint64_t ino) {
  // The low 6 bits of the hash picked the shard: the next ones pick the slot.
  const size_t mask = slots.size() - 1;
  for (size_t at = (Hash(ino) >> 16) & mask;; at = (at + 1) & mask) {
    const uint64_t v = slots[at];
    if (v == 0 || (v >> 16) == ino) return at;
  }
}

uint64_t LookupCounts::CountOf(Shard& s, uint64_t slot) {
  const uint64_t c = slot & kCountMask;
  if (c != kCountMask) return c;
  auto it = s.overflow.find(slot >> 16);
  POOLFS_CHECK(it != s.overflow.end());
  return it->second;
}

void LookupCounts::Resize(Shard& s, size_t n) {
  std::vector<uint64_t> old;
  old.swap(s.slots);
  s.slots.assign(n, 0);
  for (uint64_t v : old)
    if (v != 0) s.slots[Find(s.slots, v >> 16)] = v;
}

void LookupCounts::EraseAt(Shard& s, size_t at) {
  // Backward shift: move later entries of the run into the hole whenever
  // their home slot does not lie (cyclically) between the hole and them.
  const size_t mask = s.slots.size() - 1;
  size_t hole = at;
  for (size_t i = (at + 1) & mask; s.slots[i] != 0; i = (i + 1) & mask) {
    const size_t home = (Hash(s.slots[i] >> 16) >> 16) & mask;
    if (((i - home) & mask) >= ((i - hole) & mask)) {
      s.slots[hole] = s.slots[i];
      hole = i;
    }
  }
  s.slots[hole] = 0;
  s.used--;
  if (s.slots.size() > kMinSlots && s.used < s.slots.size() / 8) Resize(s, s.slots.size() / 2);
}

void LookupCounts::Add(uint64_t ino, uint64_t n) {
  POOLFS_CHECK(ino != 0 && ino <= kMaxIno);
  if (n == 0) return;
  Shard& s = ShardOf(ino);
  util::MutexLock l(&s.mu);
  if (s.slots.empty()) s.slots.assign(kMinSlots, 0);
  size_t at = Find(s.slots, ino);
  if (s.slots[at] == 0) {
    if ((s.used + 1) * 4 > s.slots.size() * 3) {
      Resize(s, s.slots.size() * 2);
      at = Find(s.slots, ino);
    }
    s.used++;
  }
  const uint64_t count = s.slots[at] == 0 ? n : CountOf(s, s.slots[at]) + n;
  if (count >= kCountMask) {
    s.overflow[ino] = count;
    s.slots[at] = (ino << 16) | kCountMask;
  } else {
    s.slots[at] = (ino << 16) | count;
  }
}

uint64_t LookupCounts::Drop(uint64_t ino, uint64_t n) {
  if (ino == 0 || ino > kMaxIno) return 0;
  Shard& s = ShardOf(ino);
  util::MutexLock l(&s.mu);
  if (s.slots.empty()) return 0;
  const size_t at = Find(s.slots, ino);
  if (s.slots[at] == 0) return 0;
  const uint64_t old = CountOf(s, s.slots[at]);
  const uint64_t left = old - std::min(old, n);
  if (old >= kCountMask) s.overflow.erase(ino);
  if (left == 0) {
    EraseAt(s, at);
  } else if (left >= kCountMask) {
    s.overflow[ino] = left;
  } else {
    s.slots[at] = (ino << 16) | left;
  }
  return left;
}

uint64_t LookupCounts::Get(uint64_t ino) {
  if (ino == 0 || ino > kMaxIno) return 0;
  Shard& s = ShardOf(ino);
  util::MutexLock l(&s.mu);
  if (s.slots.empty()) return 0;
  const uint64_t v = s.slots[Find(s.slots, ino)];
  return v == 0 ? 0 : CountOf(s, v);
}

void LookupCounts::Clear() {
  for (Shard& s : shards_) {
    std::vector<uint64_t> drop;
    util::MutexLock l(&s.mu);
    drop.swap(s.slots);
    s.used = 0;
    s.overflow.clear();
  }
}

uint64_t LookupCounts::size() {
  uint64_t n = 0;
  for (Shard& s : shards_) {
    util::MutexLock l(&s.mu);
    n += s.used;
  }
  return n;
}

uint64_t LookupCounts::memory_bytes() {
  uint64_t n = 0;
  for (Shard& s : shards_) {
    util::MutexLock l(&s.mu);
    n += s.slots.capacity() * sizeof(uint64_t) + s.overflow.size() * 48;
  }
  return n;
}

}  // namespace poolfs::core::posix
