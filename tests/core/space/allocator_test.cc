// SpaceManager: metaslab sizing, allocations that never overlap under
// concurrency, allocators that keep to their own metaslabs, striping,
// NoSpace, and accounting.
#include "space/allocator.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace poolfs::core::space {
namespace {

std::vector<VdevSpaceConfig> Vdevs(int n, uint64_t size, uint32_t ms_shift = 0) {
  std::vector<VdevSpaceConfig> v;
  for (int i = 0; i < n; i++) v.push_back({uint32_t(i), 4 << 20, size, 12, ms_shift});
  return v;
}

SpaceOptions Options(uint32_t allocators) {
  SpaceOptions o;
  o.allocators = allocators;
  return o;
}

void RequireDisjoint(std::vector<Dva> dvas) {
  std::sort(dvas.begin(), dvas.end(), [](const Dva& a, const Dva& b) {
    return a.vdev != b.vdev ? a.vdev < b.vdev : a.offset < b.offset;
  });
  for (size_t i = 1; i < dvas.size(); i++)
    if (dvas[i].vdev == dvas[i - 1].vdev) REQUIRE(dvas[i - 1].offset + dvas[i - 1].size <= dvas[i].offset);
}

TEST_CASE("ChooseMetaslabShift cuts a vdev into about 200 metaslabs", "[allocator]") {
  for (uint64_t gib : {1, 20, 100, 1000, 16000}) {
    uint64_t size = gib << 30;
    uint32_t shift = ChooseMetaslabShift(size, 12);
    uint64_t count = (size + (uint64_t{1} << shift) - 1) >> shift;
    INFO(gib << " GiB: shift " << shift << ", " << count << " metaslabs");
    REQUIRE(count <= 200);
    REQUIRE((count > 100 || shift == 24));
  }
  REQUIRE(ChooseMetaslabShift(8 << 20, 12) == 23);  // smaller than the minimum: one metaslab
  REQUIRE(ChooseMetaslabShift(uint64_t{1} << 60, 9) == 41);  // 2^32 sectors at most
}

TEST_CASE("SpaceManager allocations never overlap across threads and allocators", "[allocator]") {
  for (uint32_t allocators : {1u, 2u, 3u}) {
    SpaceManager sm(Vdevs(2, 256 << 20, 24), Options(allocators));
    std::vector<std::vector<Dva>> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        for (int i = 0; i < 3000; i++) {
          auto r = sm.Allocate(t, uint64_t(1 + rng() % 8) << 12, Txg(1));
          if (r.ok()) got[t].push_back(*r);
        }
      });
    }
    for (auto& th : threads) th.join();
    std::vector<Dva> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    REQUIRE(all.size() == 12000);
    RequireDisjoint(all);
    SpaceStats s = sm.Stats();
    uint64_t bytes = 0;
    for (auto& d : all) bytes += d.size;
    REQUIRE(s.allocated == bytes);
    REQUIRE(s.allocated + s.free + s.deferred == s.capacity);
  }
}

TEST_CASE("SpaceManager allocators allocate from different metaslabs", "[allocator]") {
  SpaceManager sm(Vdevs(1, 1 << 30, 24), Options(2));
  auto a = sm.Allocate(0, 4096, Txg(1));
  auto b = sm.Allocate(1, 4096, Txg(1));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE((a->offset >> 24) != (b->offset >> 24));
  // And each keeps to its own while it has room.
  for (int i = 0; i < 100; i++) {
    REQUIRE((sm.Allocate(0, 4096, Txg(1))->offset >> 24) == (a->offset >> 24));
    REQUIRE((sm.Allocate(1, 4096, Txg(1))->offset >> 24) == (b->offset >> 24));
  }
}

TEST_CASE("SpaceManager stripes across vdevs", "[allocator]") {
  SpaceManager sm(Vdevs(3, 256 << 20, 24), Options(1));
  std::vector<uint64_t> per_vdev(3);
  // 2 MiB (the aliquot) of 128 KiB blocks on each vdev in turn, six rounds.
  for (int i = 0; i < 16 * 3 * 6; i++) per_vdev[sm.Allocate(0, 128 << 10, Txg(1))->vdev]++;
  for (uint64_t n : per_vdev) REQUIRE(n == 16 * 6);
}

TEST_CASE("SpaceManager fills every byte before NoSpace and frees come back after defer", "[allocator]") {
  SpaceManager sm(Vdevs(2, 64 << 20, 24), Options(2));
  std::vector<Dva> all;
  for (;;) {
    auto r = sm.Allocate(all.size() % 2, 1 << 20, Txg(1));
    if (!r.ok()) {
      REQUIRE(r.status().IsNoSpace());
      INFO(r.status().ToString());
      REQUIRE(r.status().message().find("no free block") != std::string::npos);
      break;
    }
    all.push_back(*r);
  }
  REQUIRE(all.size() == 128);  // stealing filled what the other allocator had active
  REQUIRE(sm.Stats().free == 0);
  sm.Sync(Txg(1), [](const Metaslab&) {});
  sm.SyncDone(Txg(1));
  for (auto& d : all) REQUIRE(sm.Free(d, Txg(2)).ok());
  REQUIRE(sm.Free(all[0], Txg(2)).IsCorruption());  // double free
  REQUIRE(sm.Free(Dva{5, 0, 4096}, Txg(2)).IsCorruption());  // no such vdev
  REQUIRE(sm.Stats().deferred == 128u << 20);
  for (uint64_t t = 2; t <= 4; t++) {
    if (t < 4) REQUIRE(sm.Allocate(0, 1 << 20, Txg(t)).status().IsNoSpace());
    int changed = 0;
    sm.Sync(Txg(t), [&](const Metaslab&) { changed++; });
    if (t == 2) REQUIRE(changed > 0);
    sm.SyncDone(Txg(t));
  }
  REQUIRE(sm.Stats().free == sm.Stats().capacity);
  REQUIRE(sm.Allocate(1, 16 << 20, Txg(5)).ok());  // a whole metaslab in one piece
}

TEST_CASE("SpaceManager refuses allocations that are not whole sectors", "[allocator]") {
  SpaceManager sm(Vdevs(1, 64 << 20), Options(1));
  REQUIRE(sm.Allocate(0, 1000, Txg(1)).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace poolfs::core::space
