// RangeTree against a model: a vector<bool> of units, with every operation
// checked and both indexes verified along the way.
#include "space/range_tree.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

namespace poolfs::core::space {
namespace {

constexpr uint64_t kBase = 1 << 20;
constexpr uint32_t kSectorShift = 9;

// The model's segments: maximal runs of set units.
std::vector<Range> ModelSegments(const std::vector<bool>& m) {
  std::vector<Range> out;
  for (size_t i = 0; i < m.size();) {
    if (!m[i]) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < m.size() && m[j]) j++;
    out.push_back({kBase + (uint64_t(i) << kSectorShift), uint64_t(j - i) << kSectorShift});
    i = j;
  }
  return out;
}

template <typename Tree>
void RequireMatchesModel(Tree& t, const std::vector<bool>& m) {
  std::vector<Range> got;
  t.ForEach([&](const Range& r) { got.push_back(r); });
  REQUIRE(got == ModelSegments(m));
  Status st = t.Verify();
  INFO(st.ToString());
  REQUIRE(st.ok());
}

template <typename Tree>
void RandomOps(uint64_t seed, uint64_t floor) {
  const uint64_t units = 20000;
  std::mt19937_64 rng(seed);
  Tree t(kBase, units << kSectorShift, kSectorShift, floor, true);
  std::vector<bool> m(units);
  for (int op = 0; op < 40000; op++) {
    uint64_t a = rng() % units;
    uint64_t len = 1 + rng() % (rng() % 4 == 0 ? 300 : 8);
    if (a + len > units) len = units - a;
    uint64_t off = kBase + (a << kSectorShift), bytes = len << kSectorShift;
    bool all_set = true, none_set = true;
    for (uint64_t u = a; u < a + len; u++) (m[u] ? none_set : all_set) = false;
    switch (rng() % 3) {
      case 0: {
        Status st = t.TryAdd(off, bytes);
        REQUIRE(st.ok() == none_set);
        if (st.ok())
          for (uint64_t u = a; u < a + len; u++) m[u] = true;
        else
          REQUIRE(st.IsCorruption());
        break;
      }
      case 1: {
        // Remove only ranges inside one segment (set and contiguous).
        Status st = t.TryRemove(off, bytes);
        REQUIRE(st.ok() == all_set);
        if (st.ok())
          for (uint64_t u = a; u < a + len; u++) m[u] = false;
        break;
      }
      case 2: {
        REQUIRE(t.Contains(off, bytes) == all_set);
        auto ov = t.FindOverlap(off, bytes);
        REQUIRE(ov.has_value() == !none_set);
        break;
      }
    }
    if (op % 2000 == 0) RequireMatchesModel(t, m);
  }
  RequireMatchesModel(t, m);
  uint64_t space = 0;
  for (bool b : m) space += b ? (1u << kSectorShift) : 0;
  REQUIRE(t.space() == space);
}

TEST_CASE("RangeTree agrees with a unit model over random adds and removes", "[range_tree]") {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    DYNAMIC_SECTION("seed " << seed) {
      RandomOps<RangeTree32>(seed, seed % 2 ? 16384 : 0);
      RandomOps<RangeTree64>(seed + 100, 4096);
    }
  }
}

TEST_CASE("RangeTree merges adjacent segments", "[range_tree]") {
  RangeTree32 t(0, 1 << 20, 9, 0, true);
  t.Add(0, 512);
  t.Add(1024, 512);
  REQUIRE(t.segment_count() == 2);
  t.Add(512, 512);  // bridges both
  REQUIRE(t.segment_count() == 1);
  REQUIRE(t.Contains(0, 1536));
  REQUIRE(t.space() == 1536);
  t.Remove(512, 512);  // splits again
  REQUIRE(t.segment_count() == 2);
  REQUIRE_FALSE(t.Contains(0, 1536));
  REQUIRE(t.Verify().ok());
}

TEST_CASE("RangeTree refuses overlapping adds and absent removes", "[range_tree]") {
  RangeTree32 t(0, 1 << 20, 9, 0, true);
  t.Add(4096, 4096);
  REQUIRE(t.TryAdd(6144, 4096).IsCorruption());
  REQUIRE(t.TryAdd(0, 8192).IsCorruption());
  REQUIRE(t.TryRemove(0, 512).IsCorruption());
  REQUIRE(t.TryRemove(4096, 8192).IsCorruption());
  REQUIRE(t.TryAdd(1 << 20, 512).IsCorruption());  // past the end
  REQUIRE(t.TryAdd(100, 512).IsCorruption());      // misaligned
  REQUIRE(t.space() == 4096);
}

TEST_CASE("RangeTree size index leaves out segments below the floor", "[range_tree]") {
  RangeTree32 t(0, 64 << 20, 9, 16384, true);
  for (uint64_t i = 0; i < 100; i++) t.Add(i * 65536, 4096);   // small
  for (uint64_t i = 0; i < 10; i++) t.Add(i * 65536 + 32768, 16384);  // at the floor
  REQUIRE(t.segment_count() == 110);
  REQUIRE(t.size_tree_count() == 10);
  std::vector<Range> by_size;
  t.WalkBySize(4096, [&](const Range& r) {
    by_size.push_back(r);
    return true;
  });
  REQUIRE(by_size.size() == 10);
  REQUIRE(t.histogram()[12] == 100);
  REQUIRE(t.histogram()[14] == 10);
  REQUIRE(t.Verify().ok());
}

TEST_CASE("RangeTree rebuilds the size index without the floor when it runs dry", "[range_tree]") {
  RangeTree32 t(0, 64 << 20, 9, 16384, true);
  for (uint64_t i = 0; i < 50; i++) t.Add(i * 65536, 4096);
  REQUIRE(t.size_tree_count() == 0);
  REQUIRE(t.size_floor_active());
  int seen = 0;
  t.WalkBySize(4096, [&](const Range& r) {
    REQUIRE(r.length == 4096);
    seen++;
    return true;
  });
  REQUIRE(seen == 50);
  REQUIRE_FALSE(t.size_floor_active());
  t.Add(40 << 20, 512);  // without the floor every segment is indexed
  REQUIRE(t.size_tree_count() == 51);
  REQUIRE(t.Verify().ok());
  t.Vacate([](const Range&) {});
  REQUIRE(t.size_floor_active());
  REQUIRE(t.space() == 0);
}

TEST_CASE("RangeTree load builds a dense size index in one pass", "[range_tree]") {
  RangeTree32 loaded(0, uint64_t(1) << 34, 9, 0, true);
  RangeTree32 incremental(0, uint64_t(1) << 34, 9, 0, true);
  std::mt19937_64 rng(3);
  std::vector<Range> segs;
  uint64_t off = 0;
  for (int i = 0; i < 200000; i++) {
    off += (1 + rng() % 16) * 512;
    uint64_t len = (1 + rng() % 64) * 512;
    segs.push_back({off, len});
    off += len;
  }
  loaded.BeginLoad();
  for (const Range& r : segs) loaded.Add(r.offset, r.length);
  loaded.EndLoad();
  std::shuffle(segs.begin(), segs.end(), rng);
  for (const Range& r : segs) incremental.Add(r.offset, r.length);
  REQUIRE(loaded.Verify().ok());
  REQUIRE(incremental.Verify().ok());
  REQUIRE(loaded.space() == incremental.space());
  REQUIRE(loaded.segment_count() == incremental.segment_count());
  // Bulk-built indexes are about 3/4 full; random insertion leaves ~ln 2.
  double per_seg = double(loaded.memory_bytes()) / loaded.segment_count();
  INFO("loaded: " << per_seg << " bytes/segment, incremental: "
                  << double(incremental.memory_bytes()) / incremental.segment_count());
  REQUIRE(per_seg < 24.0);
  REQUIRE(loaded.memory_bytes() < incremental.memory_bytes());
  REQUIRE(loaded.Largest()->length == incremental.Largest()->length);
}

TEST_CASE("RangeTree64 holds ranges beyond 32 bits of units", "[range_tree]") {
  RangeTree64 t(0, uint64_t(1) << 48, 0, 0, false);
  t.Add(1, (uint64_t(1) << 48) - 2);
  REQUIRE(t.space() == (uint64_t(1) << 48) - 2);
  t.Remove(uint64_t(1) << 40, 1);
  REQUIRE(t.segment_count() == 2);
  REQUIRE(t.Contains((uint64_t(1) << 40) + 1, 1000));
  REQUIRE(t.Verify().ok());
}

}  // namespace
}  // namespace poolfs::core::space
