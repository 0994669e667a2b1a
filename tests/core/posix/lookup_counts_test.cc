// LookupCounts (core/posix/lookup_counts.h) against a std::map model:
// growth, shrinking, removals from the middle of probe runs, counts past
// the 16 bits a slot holds.
#include "posix/lookup_counts.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>

namespace poolfs::core::posix {
namespace {

void RequireSame(LookupCounts& c, const std::map<uint64_t, uint64_t>& model, uint64_t keys) {
  REQUIRE(c.size() == model.size());
  for (uint64_t ino = 1; ino <= keys; ino++) {
    auto it = model.find(ino);
    INFO("ino " << ino);
    REQUIRE(c.Get(ino) == (it == model.end() ? 0 : it->second));
  }
}

TEST_CASE("LookupCounts agrees with a model over random adds and drops", "[posix][lookups]") {
  for (uint64_t seed : {1, 2, 3}) {
    LookupCounts c;
    std::map<uint64_t, uint64_t> model;
    std::mt19937_64 rng(seed);
    const uint64_t keys = 20000;
    for (int i = 0; i < 200000; i++) {
      const uint64_t ino = 1 + rng() % keys;
      const uint64_t n = rng() % 8 == 0 ? rng() % 200000 : 1 + rng() % 3;
      if (rng() % 2) {
        c.Add(ino, n);
        model[ino] += n;
      } else {
        auto it = model.find(ino);
        const uint64_t want = it == model.end() ? 0 : it->second - std::min(it->second, n);
        REQUIRE(c.Drop(ino, n) == want);
        if (it != model.end()) {
          if (want == 0)
            model.erase(it);
          else
            it->second = want;
        }
      }
    }
    RequireSame(c, model, keys);
  }
}

TEST_CASE("LookupCounts grows to millions of inodes and gives the memory back",
          "[posix][lookups]") {
  LookupCounts c;
  constexpr uint64_t kInodes = 2000000;
  for (uint64_t ino = 1; ino <= kInodes; ino++) c.Add(ino * 7919, 1);  // spread ids
  REQUIRE(c.size() == kInodes);
  const uint64_t full = c.memory_bytes();
  CHECK(full <= kInodes * 24);  // 8-byte slots at least 3/8 full (45 for unordered_map)
  for (uint64_t ino = 1; ino <= kInodes; ino += 1000) REQUIRE(c.Get(ino * 7919) == 1);
  REQUIRE(c.Get(7918) == 0);
  for (uint64_t ino = 1; ino <= kInodes; ino++) {
    if (ino % 100 == 0) continue;
    REQUIRE(c.Drop(ino * 7919, 1) == 0);
  }
  REQUIRE(c.size() == kInodes / 100);
  CHECK(c.memory_bytes() < full / 8);
  for (uint64_t ino = 100; ino <= kInodes; ino += 100) REQUIRE(c.Get(ino * 7919) == 1);
  c.Clear();
  REQUIRE(c.size() == 0);
  REQUIRE(c.Get(100 * 7919) == 0);
}

TEST_CASE("LookupCounts keeps counts past 16 bits exactly", "[posix][lookups]") {
  LookupCounts c;
  c.Add(5, 0xfffe);
  REQUIRE(c.Get(5) == 0xfffe);
  c.Add(5, 1);
  REQUIRE(c.Get(5) == 0xffff);
  c.Add(5, uint64_t{1} << 40);
  REQUIRE(c.Get(5) == 0xffff + (uint64_t{1} << 40));
  REQUIRE(c.Drop(5, uint64_t{1} << 40) == 0xffff);
  REQUIRE(c.Drop(5, 2) == 0xfffd);
  REQUIRE(c.Get(5) == 0xfffd);
  REQUIRE(c.Drop(5, 1) == 0xfffc);
  REQUIRE(c.Drop(5, uint64_t{1} << 50) == 0);
  REQUIRE(c.Get(5) == 0);
  REQUIRE(c.size() == 0);
  c.Add(LookupCounts::kMaxIno, 3);
  REQUIRE(c.Get(LookupCounts::kMaxIno) == 3);
}

}  // namespace
}  // namespace poolfs::core::posix
