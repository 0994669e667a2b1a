// Tests of the ARC's single-threaded behaviour (core/arc/arc.h): hits and
// misses, the MRU/MFU moves, ghost hits moving the target p, adaptation
// toward MFU or MRU, held blocks surviving eviction, Forget and EvictAll.
#include "arc/arc.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

namespace poolfs::core::arc {
namespace {

constexpr uint32_t kBlock = 4096;

BlockKey Key(uint64_t n) { return {VdevId(0), VdevOffset(n * kBlock), Txg(1)}; }

// A cache of `blocks` 4 KiB blocks, no evictor thread: inserting threads
// evict, so every test is deterministic.
ArcOptions Small(uint64_t blocks, uint32_t sublists = 1, uint32_t batch = 1) {
  ArcOptions o;
  o.max_bytes = blocks * kBlock;
  o.sublists = sublists;
  o.evict_batch = batch;
  o.evict_thread = false;
  return o;
}

// Reads block n through the cache the way the dmu will: Lookup, and on a
// miss fill a buffer with n's pattern and Insert it. Returns true on a hit.
bool Read(Arc& arc, uint64_t n) {
  ArcHandle h = arc.Lookup(Key(n));
  bool hit = bool(h);
  if (!h) {
    ArcData d = arc.AllocData(kBlock);
    std::memset(d.data(), int(n & 0xff), kBlock);
    h = arc.Insert(Key(n), std::move(d));
  }
  REQUIRE(h.size() == kBlock);
  CHECK(h.data()[kBlock - 1] == std::byte(n & 0xff));
  return hit;
}

TEST_CASE("Arc returns an inserted block and misses an unknown one", "[arc]") {
  Arc arc(Small(16));
  CHECK_FALSE(arc.Lookup(Key(1)));
  CHECK_FALSE(Read(arc, 1));
  CHECK(Read(arc, 1));
  ArcStats st = arc.Stats();
  CHECK(st.hits == 1);
  CHECK(st.misses == 2);  // the Lookup above and the first Read
  CHECK(st.cached_bytes == kBlock);
}

TEST_CASE("Arc holds a block read once outside the cache and reuses its buffer", "[arc]") {
  Arc arc(Small(16));
  ArcData d = arc.AllocData(kBlock);
  std::memset(d.data(), 7, kBlock);
  const std::byte* buf = d.data();
  {
    ArcHandle h = arc.Hold(Key(1), std::move(d));
    REQUIRE(h.size() == kBlock);
    CHECK(h.data()[kBlock - 1] == std::byte(7));
    CHECK_FALSE(arc.Lookup(Key(1)));  // not cached
    ArcStats st = arc.Stats();
    CHECK(st.cached_bytes == 0);
    CHECK(st.read_once == 1);
    CHECK(st.uncached == 0);
  }
  // Its last handle gave the buffer back: the next one of its size is it.
  CHECK(arc.Stats().pool_retained_bytes >= kBlock);
  ArcData again = arc.AllocData(kBlock);
  CHECK(again.data() == buf);
  // A block cached meanwhile is not disturbed by a Hold of the same name.
  Read(arc, 2);
  ArcData other = arc.AllocData(kBlock);
  std::memset(other.data(), 9, kBlock);
  ArcHandle h = arc.Hold(Key(2), std::move(other));
  CHECK(h.data()[0] == std::byte(9));
  CHECK(Read(arc, 2));
  CHECK(arc.Stats().cached_bytes == kBlock);
}

TEST_CASE("Arc moves a block read twice from MRU to MFU", "[arc]") {
  Arc arc(Small(16));
  Read(arc, 1);
  CHECK(arc.Stats().mru_blocks == 1);
  Read(arc, 1);
  ArcStats st = arc.Stats();
  CHECK(st.mru_blocks == 0);
  CHECK(st.mfu_blocks == 1);
  CHECK(st.mru_hits == 1);
}

TEST_CASE("Arc says whether a block is cached without a hit, a miss or a move", "[arc]") {
  Arc arc(Small(2));
  CHECK_FALSE(arc.Contains(Key(1)));
  Read(arc, 1);
  const ArcStats before = arc.Stats();
  CHECK(arc.Contains(Key(1)));
  CHECK_FALSE(arc.Contains(Key(2)));
  ArcStats st = arc.Stats();
  CHECK(st.hits == before.hits);
  CHECK(st.misses == before.misses);
  CHECK(st.mru_blocks == 1);  // not moved to MFU
  // A ghost is not cached.
  Read(arc, 2);
  Read(arc, 3);
  CHECK(arc.Stats().mru_ghost_blocks >= 1);
  CHECK_FALSE(arc.Contains(Key(1)));
}

TEST_CASE("Arc never caches more than max_bytes and keeps ghosts of what it evicts", "[arc]") {
  Arc arc(Small(16));
  for (uint64_t n = 0; n < 100; n++) {
    Read(arc, n);
    CHECK(arc.cached_bytes() <= 16 * kBlock);
  }
  ArcStats st = arc.Stats();
  CHECK(st.cached_bytes == 16 * kBlock);
  CHECK(st.mru_bytes + st.mfu_bytes == st.cached_bytes);
  CHECK(st.evictions == 84);
  CHECK(st.mru_ghost_blocks > 0);
  // MRU + its ghosts stay within c, give or take the block just inserted
  // (ghosts are trimmed when eviction makes room for it).
  CHECK(st.mru_bytes + st.mru_ghost_bytes <= st.max_bytes + kBlock);
}

TEST_CASE("Arc ghost hit on MRU-ghost raises the MRU target", "[arc]") {
  Arc arc(Small(16));
  for (uint64_t n = 0; n <= 16; n++) Read(arc, n);  // 17th evicts block 0 to MRU-ghost
  uint64_t p0 = arc.Stats().target_mru_bytes;
  CHECK(p0 == 8 * kBlock);
  CHECK_FALSE(Read(arc, 0));
  ArcStats st = arc.Stats();
  CHECK(st.mru_ghost_hits == 1);
  CHECK(st.target_mru_bytes == p0 + kBlock);
  CHECK(st.mfu_blocks == 1);  // a block back from a ghost has been asked for twice
}

TEST_CASE("Arc ghost hit on MFU-ghost lowers the MRU target", "[arc]") {
  Arc arc(Small(16));
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t n = 0; n < 16; n++) Read(arc, n);
  }
  CHECK(arc.Stats().mfu_blocks == 16);
  Read(arc, 100);  // MRU is under p: eviction takes MFU's tail, block 0
  CHECK(arc.Stats().mfu_ghost_blocks == 1);
  uint64_t p0 = arc.Stats().target_mru_bytes;
  CHECK_FALSE(Read(arc, 0));
  ArcStats st = arc.Stats();
  CHECK(st.mfu_ghost_hits == 1);
  CHECK(st.target_mru_bytes == p0 - kBlock);
}

TEST_CASE("Arc adapts toward MFU when a set is scanned again and again among one-time reads",
          "[arc]") {
  Arc arc(Small(64));
  const uint64_t c = 64 * kBlock;
  uint64_t next_scan = 1000;
  int last_round_hits = 0;
  for (int round = 0; round < 60; round++) {
    last_round_hits = 0;
    for (uint64_t n = 0; n < 40; n++) last_round_hits += Read(arc, n);  // the hot set
    for (int k = 0; k < 24; k++) Read(arc, next_scan++);                // read once, never again
  }
  ArcStats st = arc.Stats();
  INFO("p=" << st.target_mru_bytes << " mru=" << st.mru_bytes << " mfu=" << st.mfu_bytes);
  CHECK(st.mfu_ghost_hits > 0);
  CHECK(st.target_mru_bytes < c / 4);
  CHECK(st.mfu_bytes >= 40 * kBlock);
  CHECK(last_round_hits == 40);
}

TEST_CASE("Arc adapts toward MRU when blocks are read again soon after their first read", "[arc]") {
  Arc arc(Small(64));
  const uint64_t c = 64 * kBlock;
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t n = 0; n < 32; n++) Read(arc, 100000 + n);  // a stale frequent set
  }
  int late_hits = 0;
  // Each block is read again 32 steps (64 reads) after its first read: the
  // window needs more of the cache than MRU's starting half, and its blocks
  // are still remembered on MRU-ghost when they come back.
  for (uint64_t t = 32; t < 3000; t++) {
    Read(arc, t);
    bool hit = Read(arc, t - 32);
    if (t >= 2500) late_hits += hit;
  }
  ArcStats st = arc.Stats();
  INFO("p=" << st.target_mru_bytes << " mru=" << st.mru_bytes << " mfu=" << st.mfu_bytes);
  CHECK(st.mru_ghost_hits > 0);
  CHECK(st.target_mru_bytes >= c * 5 / 8);
  CHECK(late_hits == 500);  // the window fits once MRU has the room
}

TEST_CASE("Arc eviction passes over held blocks", "[arc]") {
  Arc arc(Small(16));
  Read(arc, 0);
  ArcHandle held = arc.Lookup(Key(0));
  ArcHandle held_mru;
  {
    ArcData d = arc.AllocData(kBlock);
    std::memset(d.data(), 7, kBlock);
    held_mru = arc.Insert(Key(7777), std::move(d));
  }
  for (uint64_t n = 1; n < 500; n++) Read(arc, n);
  CHECK(held.data()[0] == std::byte(0));
  CHECK(held_mru.data()[kBlock - 1] == std::byte(7));
  CHECK(arc.Lookup(Key(0)));
  CHECK(arc.Lookup(Key(7777)));
  CHECK(arc.Stats().evict_skipped_held > 0);
  CHECK(arc.cached_bytes() <= 16 * kBlock);
}

TEST_CASE("Arc returns a block uncached when everything evictable is held", "[arc]") {
  Arc arc(Small(4));
  std::vector<ArcHandle> held;
  for (uint64_t n = 0; n < 4; n++) {
    Read(arc, n);
    held.push_back(arc.Lookup(Key(n)));
  }
  ArcData d = arc.AllocData(kBlock);
  std::memset(d.data(), 9, kBlock);
  ArcHandle h = arc.Insert(Key(9), std::move(d));
  REQUIRE(h);
  CHECK(h.data()[0] == std::byte(9));
  CHECK_FALSE(arc.Lookup(Key(9)));
  ArcStats st = arc.Stats();
  CHECK(st.uncached == 1);
  CHECK(st.cached_bytes == 4 * kBlock);
}

TEST_CASE("Arc Forget drops blocks and ghosts and frees held ones with their last handle",
          "[arc]") {
  Arc arc(Small(16));
  std::vector<BlockKey> keys;
  for (uint64_t n = 0; n < 40; n++) {
    Read(arc, n);
    keys.push_back(Key(n));
  }
  ArcHandle held = arc.Lookup(Key(39));
  ArcStats before = arc.Stats();
  CHECK(before.mru_ghost_blocks + before.mfu_ghost_blocks > 0);
  size_t found = arc.Forget(keys);
  CHECK(found == 16 + before.mru_ghost_blocks + before.mfu_ghost_blocks);
  ArcStats st = arc.Stats();
  CHECK(st.cached_bytes == 0);
  CHECK(st.mru_blocks + st.mfu_blocks + st.mru_ghost_blocks + st.mfu_ghost_blocks == 0);
  for (uint64_t n = 0; n < 40; n++) CHECK_FALSE(arc.Lookup(Key(n)));
  CHECK(held.data()[0] == std::byte(39));
  held.Reset();
  CHECK(arc.Forget(keys) == 0);
}

TEST_CASE("Arc Forget of one block drops it and frees a held one with its last handle", "[arc]") {
  Arc arc(Small(16));
  Read(arc, 1);
  Read(arc, 2);
  ArcHandle held = arc.Lookup(Key(2));
  CHECK(arc.Forget(Key(1)));
  CHECK(arc.Forget(Key(2)));
  CHECK_FALSE(arc.Forget(Key(3)));
  CHECK_FALSE(arc.Lookup(Key(1)));
  CHECK_FALSE(arc.Lookup(Key(2)));
  CHECK(arc.cached_bytes() == 0);
  CHECK(held.data()[0] == std::byte(2));
  CHECK(arc.Stats().forgotten == 2);
}

TEST_CASE("Arc EvictAll drops everything but held blocks", "[arc]") {
  Arc arc(Small(16, 4, 3));
  for (uint64_t n = 0; n < 40; n++) Read(arc, n);
  ArcHandle h1 = arc.Lookup(Key(39));
  ArcHandle h2 = arc.Lookup(Key(38));
  CHECK(arc.EvictAll() == 2);
  ArcStats st = arc.Stats();
  CHECK(st.cached_bytes == 2 * kBlock);
  CHECK(st.mru_ghost_blocks + st.mfu_ghost_blocks == 0);
  CHECK(arc.Lookup(Key(39)));
}

TEST_CASE("Arc SetMaxBytes shrinks the cache at once", "[arc]") {
  Arc arc(Small(64, 4, 10));
  for (uint64_t n = 0; n < 64; n++) Read(arc, n);
  CHECK(arc.cached_bytes() == 64 * kBlock);
  arc.SetMaxBytes(16 * kBlock);
  CHECK(arc.cached_bytes() <= 16 * kBlock);
  CHECK(arc.Stats().target_mru_bytes <= 16 * kBlock);
  for (uint64_t n = 100; n < 200; n++) {
    Read(arc, n);
    CHECK(arc.cached_bytes() <= 16 * kBlock);
  }
}

TEST_CASE("Arc options of 0 take the defaults", "[arc]") {
  Arc arc(ArcOptions{});
  CHECK(arc.sublists() >= 4);
  CHECK(arc.Stats().max_bytes >= uint64_t{64} << 20);
}

}  // namespace
}  // namespace poolfs::core::arc
