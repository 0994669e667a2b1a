// Leaf (the fat zap's slotted leaf block) and the block helpers: inserts in
// key order, removal and compaction, splits by the next hash bit, round trips
// through Decode; the directory name check.
#include "zap/leaf.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "zap/zap_phys.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

const BlockContext kCtx{42, 4096, false};

// A key whose hash has `prefix` as its top `depth` bits.
uint64_t KeyIn(std::mt19937_64& rng, uint64_t prefix, uint8_t depth, uint32_t cd = 0) {
  uint64_t h = rng() >> (64 - kHashBits);
  if (depth > 0)
    h = (prefix << (kHashBits - depth)) | (h & ((uint64_t{1} << (kHashBits - depth)) - 1));
  return MakeKey(h, cd);
}

void CheckLeaf(Leaf& leaf, const std::map<uint64_t, std::string>& model) {
  REQUIRE(leaf.count() == model.size());
  uint32_t i = 0;
  for (const auto& [key, name] : model) {
    REQUIRE(leaf.KeyAt(i) == key);
    REQUIRE(leaf.NameAt(i) == name);
    REQUIRE(leaf.ValueAt(i) == Value{key ^ 1, key ^ 2});
    i++;
  }
  auto again = Leaf::Decode(leaf.Encoded().bytes(), kCtx, leaf.block());
  INFO(again.status().ToString());
  REQUIRE(again.ok());
  REQUIRE(again->count() == leaf.count());
  for (uint32_t j = 0; j < leaf.count(); j++) REQUIRE(again->NameAt(j) == leaf.NameAt(j));
}

TEST_CASE("Leaf keeps entries in key order through inserts, removals and compaction", "[zap]") {
  std::mt19937_64 rng(5);
  Leaf leaf(kCtx, 7, 0, 0);
  std::map<uint64_t, std::string> model;
  for (int round = 0; round < 2000; round++) {
    if (model.empty() || rng() % 3 != 0) {
      std::string name(1 + rng() % 120, char('a' + rng() % 26));
      if (!leaf.Fits(name.size())) continue;
      uint64_t key = KeyIn(rng, 0, 0);
      leaf.Insert(key, name, Value{key ^ 1, key ^ 2});
      model[key] = name;
    } else {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      uint32_t slot = leaf.LowerBound(it->first);
      REQUIRE(leaf.KeyAt(slot) == it->first);
      leaf.Erase(slot);
      model.erase(it);
    }
    if (round % 50 == 0) CheckLeaf(leaf, model);
  }
  CheckLeaf(leaf, model);
}

TEST_CASE("Leaf LowerBound agrees with a plain search, keys spread evenly or bunched", "[zap]") {
  // The interpolating search must hold for any keys the prefix allows:
  // even spreads, keys bunched at one end, long runs of one hash.
  std::mt19937_64 rng(11);
  for (int shape = 0; shape < 4; shape++) {
    const uint8_t depth = uint8_t(shape == 0 ? 0 : 3 + shape);
    const uint64_t prefix = depth == 0 ? 0 : rng() % (uint64_t{1} << depth);
    Leaf leaf(kCtx, 9, prefix, depth);
    std::vector<uint64_t> keys;
    const uint64_t base = KeyIn(rng, prefix, depth);
    for (int i = 0; i < 400; i++) {
      if (!leaf.Fits(8)) break;
      uint64_t key = KeyIn(rng, prefix, depth);
      if (shape == 2) key = MakeKey(KeyHash(base), 0) + (key % 5000);  // bunched together
      if (shape == 3) key = MakeKey(KeyHash(base) + uint64_t(i) / 50, uint32_t(i) % 50);  // runs
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      if (KeyHash(key) >> (kHashBits - depth) != prefix && depth != 0) continue;
      leaf.Insert(key, "n" + std::to_string(i), Value{1, 2});
      keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    REQUIRE(keys.size() > 100);
    std::vector<uint64_t> probes = {0, MakeKey(prefix << (kHashBits - depth), 0), ~uint64_t{0} >> 2,
                                    keys.front() - 1, keys.back() + 1};
    for (uint64_t k : keys) {
      probes.push_back(k);
      probes.push_back(k + 1);
      probes.push_back(k - 1);
    }
    for (int i = 0; i < 1000; i++) probes.push_back(KeyIn(rng, prefix, depth));
    for (uint64_t probe : probes) {
      INFO("shape " << shape << " key " << probe);
      const auto want = std::lower_bound(keys.begin(), keys.end(), probe) - keys.begin();
      REQUIRE(leaf.LowerBound(probe) == uint32_t(want));
    }
  }
}

TEST_CASE("Leaf finds names among equal hashes and the smallest free cd", "[zap]") {
  Leaf leaf(kCtx, 3, 0, 0);
  const uint64_t h = 12345;
  for (uint32_t cd : {0u, 1u, 3u}) leaf.Insert(MakeKey(h, cd), "n" + std::to_string(cd), {});
  leaf.Insert(MakeKey(h + 1, 0), "other", {});
  uint32_t free_cd = 99;
  REQUIRE(leaf.Find(h, "n3", &free_cd) == 2);
  REQUIRE(free_cd == 2);
  REQUIRE(leaf.Find(h, "absent", &free_cd) == leaf.count());
  REQUIRE(leaf.Find(h + 1, "n0", &free_cd) == leaf.count());  // same name, other hash
  REQUIRE(free_cd == 1);
  REQUIRE(leaf.Find(h + 2, "x", &free_cd) == leaf.count());
  REQUIRE(free_cd == 0);
}

TEST_CASE("Leaf splits on the next hash bit and both halves decode", "[zap]") {
  std::mt19937_64 rng(8);
  Leaf leaf(kCtx, 5, 1, 1);  // hashes starting with bit 1
  std::map<uint64_t, std::string> lo, hi;
  while (true) {
    std::string name = "entry" + std::to_string(rng() % 100000);
    if (!leaf.Fits(name.size())) break;
    uint64_t key = KeyIn(rng, 1, 1);
    leaf.Insert(key, name, Value{key ^ 1, key ^ 2});
    ((KeyHash(key) >> (kHashBits - 2)) & 1 ? hi : lo)[key] = name;
  }
  Leaf upper = leaf.SplitOff(9);
  REQUIRE(leaf.block() == 5);
  REQUIRE(leaf.prefix() == 2);  // binary 10
  REQUIRE(leaf.depth() == 2);
  REQUIRE(upper.block() == 9);
  REQUIRE(upper.prefix() == 3);  // binary 11
  REQUIRE(upper.depth() == 2);
  CheckLeaf(leaf, lo);
  CheckLeaf(upper, hi);
}

TEST_CASE("The directory name check finds '/' and NUL at every position", "[zap]") {
  for (size_t len = 1; len <= 40; len++) {
    std::string name(len, 'a');
    REQUIRE_FALSE(BadDirectoryName(name));
    for (size_t i = 0; i < len; i++) {
      for (char c : {'/', '\0'}) {
        std::string bad = name;
        bad[i] = c;
        INFO(len << " " << i);
        REQUIRE(BadDirectoryName(bad));
      }
    }
  }
  // Bytes near '/' and 0 (and high bytes) are fine.
  REQUIRE_FALSE(BadDirectoryName("\x01.0\x7f\x80\xff\x2e\x30\xaf\x01\x2e\xff\x80"));
}

}  // namespace
}  // namespace poolfs::core::zap
