// Metaslab: the txg lifecycle (allocate, free, sync, defer), the space map
// it writes and loads back, and the accounting it always checks.
#include "space/metaslab.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <vector>

namespace poolfs::core::space {
namespace {

constexpr uint64_t kStart = 4 << 20;
constexpr uint64_t kSize = 64 << 20;
constexpr uint32_t kShift = 12;

TEST_CASE("Metaslab frees wait two txgs before reuse", "[metaslab]") {
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  // Fill the metaslab completely in txg 1.
  std::vector<uint64_t> blocks;
  for (;;) {
    auto r = ms.Allocate(1 << 20, Txg(1));
    if (!r.ok()) {
      REQUIRE(r.status().IsNoSpace());
      break;
    }
    blocks.push_back(*r);
  }
  REQUIRE(blocks.size() == kSize >> 20);
  REQUIRE(ms.Sync(Txg(1)));
  ms.SyncDone(Txg(1));
  // Free one block in txg 2: not allocatable in txgs 2, 3 or 4.
  REQUIRE(ms.Free(blocks[5], 1 << 20, Txg(2)).ok());
  REQUIRE(ms.Stats().deferred == 1 << 20);
  for (uint64_t t = 2; t <= 4; t++) {
    REQUIRE(ms.Allocate(1 << 20, Txg(t)).status().IsNoSpace());
    ms.Sync(Txg(t));
    ms.SyncDone(Txg(t));
  }
  // SyncDone(4) released the frees of txg 2.
  auto r = ms.Allocate(1 << 20, Txg(5));
  REQUIRE(r.ok());
  REQUIRE(*r == blocks[5]);
  ms.CheckAccounting();
}

TEST_CASE("Metaslab places a large block off its natural alignment when nothing aligned is free",
          "[metaslab]") {
  // Sprinkle 4 KiB blocks so that no 1 MiB-aligned MiB stays free, though
  // most of the metaslab does: a 1 MiB block must still fit (found by
  // poolfs-stress: a txg sync failed with NoSpace on a vdev 85% free).
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  // Fill it, then free runs of 1 MiB + 4 KiB that start 512 KiB past a MiB
  // boundary, one every 2 MiB: each run is long enough, none holds an
  // aligned MiB.
  while (ms.Allocate(4096, Txg(1)).ok()) {
  }
  uint64_t freed = 0;
  for (uint64_t at = kStart + (512 << 10); at + (1 << 20) + 4096 <= kStart + kSize; at += 2 << 20) {
    REQUIRE(ms.Free(at, (1 << 20) + 4096, Txg(1)).ok());
    freed += (1 << 20) + 4096;
  }
  for (uint64_t t = 1; t <= 3; t++) {
    ms.Sync(Txg(t));
    ms.SyncDone(Txg(t));
  }
  REQUIRE(ms.Stats().allocated == kSize - freed);
  auto big = ms.Allocate(1 << 20, Txg(4));
  INFO(big.status().ToString());
  REQUIRE(big.ok());
  REQUIRE(*big % (1 << 20) != kStart % (1 << 20));  // off the natural alignment
  ms.CheckAccounting();
}

TEST_CASE("Metaslab refuses double frees and frees of free space", "[metaslab]") {
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  auto a = ms.Allocate(8192, Txg(1));
  REQUIRE(a.ok());
  REQUIRE(ms.Free(*a, 8192, Txg(1)).ok());
  Status again = ms.Free(*a, 8192, Txg(1));
  REQUIRE(again.IsCorruption());
  REQUIRE(again.message().find("freed already") != std::string::npos);
  REQUIRE(ms.Free(*a + (1 << 20), 4096, Txg(1)).IsCorruption());  // never allocated
  REQUIRE(ms.Free(kStart + kSize, 4096, Txg(1)).IsCorruption());  // outside
  REQUIRE(ms.Free(*a + 1, 4096, Txg(1)).IsCorruption());          // misaligned
  ms.CheckAccounting();
}

TEST_CASE("Metaslab space map reloads to the same free space, condensed or not", "[metaslab]") {
  for (uint64_t seed : {1, 2, 3}) {
    std::mt19937_64 rng(seed);
    Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
    std::map<uint64_t, uint64_t> live;  // offset -> size
    uint64_t txg = 1;
    for (; txg <= 60; txg++) {
      for (int i = 0; i < 200; i++) {
        if (rng() % 3 != 0 || live.empty()) {
          uint64_t size = uint64_t(1 + rng() % 16) << kShift;
          auto r = ms.Allocate(size, Txg(txg));
          if (r.ok()) live[*r] = size;
        } else {
          auto it = live.begin();
          std::advance(it, rng() % live.size());
          REQUIRE(ms.Free(it->first, it->second, Txg(txg)).ok());
          live.erase(it);
        }
      }
      ms.Sync(Txg(txg));
      ms.SyncDone(Txg(txg));
      REQUIRE(ms.Verify().ok());
    }
    // A fresh metaslab loaded from the map has exactly `live` allocated (the
    // deferred frees are free on disk), so it can claim every gap and no block.
    Metaslab twin(0, 0, kStart, kSize, kShift, SpaceOptions{});
    Status st = twin.Load(ms.space_map());
    INFO(st.ToString());
    REQUIRE(st.ok());
    uint64_t live_bytes = 0;
    for (auto& [off, size] : live) {
      live_bytes += size;
      REQUIRE(twin.Claim(off, size, Txg(txg)).IsCorruption());
    }
    REQUIRE(twin.Stats().allocated == live_bytes);
    uint64_t prev = kStart;
    for (auto& [off, size] : live) {
      if (off > prev) REQUIRE(twin.Claim(prev, off - prev, Txg(txg)).ok());
      prev = off + size;
    }
    if (prev < kStart + kSize) REQUIRE(twin.Claim(prev, kStart + kSize - prev, Txg(txg)).ok());
    REQUIRE(twin.Stats().free == 0);
  }
}

TEST_CASE("Metaslab condenses a long space map", "[metaslab]") {
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  std::vector<uint64_t> blocks;
  uint64_t txg = 1;
  size_t longest = 0;
  for (; txg <= 1500; txg++) {
    // Churn a few blocks (two records a txg): the history grows, the state
    // does not.
    for (uint64_t b : blocks) REQUIRE(ms.Free(b, 4096, Txg(txg)).ok());
    blocks.clear();
    for (int i = 0; i < 8; i++) blocks.push_back(*ms.Allocate(4096, Txg(txg)));
    ms.Sync(Txg(txg));
    ms.SyncDone(Txg(txg));
    longest = std::max(longest, ms.space_map().size());
  }
  // Without condensing the map would hold ~3,000 records.
  INFO("longest map " << longest << " bytes, now " << ms.space_map().size());
  REQUIRE(ms.space_map().size() < longest);
  Metaslab twin(0, 0, kStart, kSize, kShift, SpaceOptions{});
  REQUIRE(twin.Load(ms.space_map()).ok());
  REQUIRE(twin.Stats().allocated == 8 * 4096);
}

// An import opens the pool at its last synced txg L; a rewind may then
// fall back to L - 1 or L - 2, whose trees reference blocks freed in L - 1
// and L. Loaded at L, a metaslab keeps those frees deferred as the running
// one did, from a condensed map as from an appended one.
TEST_CASE("Metaslab reloaded at its last synced txg keeps the last two txgs' frees deferred",
          "[metaslab]") {
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  std::vector<uint64_t> blocks;
  uint64_t generation = ms.map_generation();
  int condensed_checks = 0, plain_checks = 0, since_condense = 100;
  for (uint64_t txg = 1; txg <= 3000 && condensed_checks < 4; txg++) {
    for (uint64_t b : blocks) REQUIRE(ms.Free(b, 4096, Txg(txg)).ok());
    blocks.clear();
    for (int i = 0; i < 8; i++) blocks.push_back(*ms.Allocate(4096, Txg(txg)));
    ms.Sync(Txg(txg));
    ms.SyncDone(Txg(txg));
    since_condense = ms.map_generation() != generation ? 0 : since_condense + 1;
    generation = ms.map_generation();
    const bool near_condense = since_condense <= 1;  // the condensing txg and the next
    if (!near_condense && txg % 97 != 5) continue;
    (near_condense ? condensed_checks : plain_checks)++;
    INFO("txg " << txg << ", " << since_condense << " txgs after a condense");
    const MetaslabStats want = ms.Stats();
    REQUIRE(want.deferred == (txg >= 3 ? 16 * 4096 : (txg - 1) * 8 * 4096));
    Metaslab twin(0, 0, kStart, kSize, kShift, SpaceOptions{});
    REQUIRE(twin.Load(ms.space_map(), Txg(txg)).ok());
    CHECK(twin.Stats().deferred == want.deferred);
    CHECK(twin.Stats().free == want.free);
    CHECK(twin.Stats().allocated == want.allocated);
    // The next two syncs return them, one txg's worth each.
    twin.Sync(Txg(txg + 1));
    twin.SyncDone(Txg(txg + 1));
    CHECK(twin.Stats().deferred == want.deferred / 2);
    twin.Sync(Txg(txg + 2));
    twin.SyncDone(Txg(txg + 2));
    CHECK(twin.Stats().deferred == 0);
    CHECK(twin.Stats().free == want.free + want.deferred);
    // Loaded without a txg (the offline check): all free at once.
    Metaslab offline(0, 0, kStart, kSize, kShift, SpaceOptions{});
    REQUIRE(offline.Load(ms.space_map()).ok());
    CHECK(offline.Stats().deferred == 0);
    CHECK(offline.Stats().free == want.free + want.deferred);
  }
  REQUIRE(condensed_checks >= 4);
  REQUIRE(plain_checks > 0);
}

TEST_CASE("Metaslab load refuses a map that contradicts itself", "[metaslab]") {
  SpaceMapWriter w(SpaceMapGeometry{kStart, kSize, kShift});
  w.Append(SmType::kAlloc, Txg(1), kStart, 8192);
  w.Append(SmType::kAlloc, Txg(2), kStart + 4096, 4096);  // allocated twice
  Metaslab ms(0, 7, kStart, kSize, kShift, SpaceOptions{});
  Status st = ms.Load(w.bytes());
  REQUIRE(st.IsCorruption());
  INFO(st.ToString());
  REQUIRE(st.message().find("metaslab 7") != std::string::npos);
  REQUIRE(st.message().find("record 1") != std::string::npos);
  // Nothing can be handed out from a map that cannot be trusted.
  REQUIRE(ms.Allocate(4096, Txg(3)).status().IsNoSpace());
  ms.CheckAccounting();
}

TEST_CASE("Metaslab load refuses damaged bytes", "[metaslab]") {
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  for (uint64_t t = 1; t < 5; t++) {
    ms.Allocate(65536, Txg(t)).value();
    ms.Sync(Txg(t));
    ms.SyncDone(Txg(t));
  }
  std::string bytes = ms.space_map();
  bytes[bytes.size() / 2] ^= 0x10;
  Metaslab twin(0, 0, kStart, kSize, kShift, SpaceOptions{});
  REQUIRE(twin.Load(bytes).IsCorruption());
}

}  // namespace
}  // namespace poolfs::core::space

namespace poolfs::core::space {
namespace {

TEST_CASE("Metaslab appends a txg's later changes in further sync passes", "[metaslab]") {
  Metaslab ms(0, 0, kStart, kSize, kShift, SpaceOptions{});
  auto a = ms.Allocate(8192, Txg(1)).value();
  REQUIRE(ms.Sync(Txg(1)));
  REQUIRE_FALSE(ms.Sync(Txg(1)));  // nothing new
  // A second pass of the same txg allocates and frees more.
  auto b = ms.Allocate(4096, Txg(1)).value();
  REQUIRE(ms.Free(a, 8192, Txg(1)).ok());
  REQUIRE(ms.Sync(Txg(1)));
  ms.SyncDone(Txg(1));
  Metaslab twin(0, 0, kStart, kSize, kShift, SpaceOptions{});
  REQUIRE(twin.Load(ms.space_map()).ok());
  REQUIRE(twin.Stats().allocated == 4096);
  REQUIRE(twin.Claim(b, 4096, Txg(2)).IsCorruption());
  REQUIRE(twin.Claim(a, 8192, Txg(2)).ok());
}

}  // namespace
}  // namespace poolfs::core::space
