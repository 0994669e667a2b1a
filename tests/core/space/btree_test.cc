// BTree against std::set: the same random operations on both, over many
// seeds and node sizes, with the invariant checker run along the way.
#include "space/btree.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace poolfs::core::space {
namespace {

template <typename Tree>
void RequireSameContents(const Tree& t, const std::set<uint64_t>& ref) {
  REQUIRE(t.size() == ref.size());
  auto it = t.begin();
  for (uint64_t v : ref) {
    REQUIRE(it != t.end());
    REQUIRE(*it == v);
    ++it;
  }
  REQUIRE(it == t.end());
  // And backwards.
  auto rit = t.end();
  for (auto r = ref.rbegin(); r != ref.rend(); ++r) {
    --rit;
    REQUIRE(*rit == *r);
  }
  REQUIRE(rit == t.begin());
}

// Runs `ops` random operations (insert, remove, find, lower_bound, bulk
// runs) on a BTree and a std::set and requires they agree.
void Differential(uint64_t seed, size_t leaf_bytes, size_t ops, uint64_t key_space) {
  std::mt19937_64 rng(seed);
  BTree<uint64_t> t(std::less<uint64_t>(), leaf_bytes);
  std::set<uint64_t> ref;
  for (size_t op = 0; op < ops; op++) {
    uint64_t k = rng() % key_space;
    switch (rng() % 10) {
      case 0: case 1: case 2: case 3: {
        auto [it, inserted] = t.Insert(k);
        REQUIRE(inserted == ref.insert(k).second);
        REQUIRE(*it == k);
        break;
      }
      case 4: case 5: case 6:
        REQUIRE(t.Remove(k) == (ref.erase(k) == 1));
        break;
      case 7: {
        auto it = t.lower_bound(k);
        auto rit = ref.lower_bound(k);
        REQUIRE((it == t.end()) == (rit == ref.end()));
        if (rit != ref.end()) {
          REQUIRE(*it == *rit);
          // Walk a few steps both ways from the found position.
          auto a = it;
          auto b = rit;
          for (int s = 0; s < 3 && b != ref.end(); s++, ++a, ++b) REQUIRE(*a == *b);
          a = it;
          b = rit;
          for (int s = 0; s < 3 && b != ref.begin(); s++) {
            --a;
            --b;
            REQUIRE(*a == *b);
          }
        }
        break;
      }
      case 8:
        REQUIRE((t.find(k) != t.end()) == (ref.count(k) == 1));
        break;
      case 9: {
        // A short bulk run past the current maximum.
        uint64_t base = ref.empty() ? 0 : *ref.rbegin() + 1;
        if (base > key_space * 2) break;
        size_t run = rng() % 64;
        for (size_t j = 0; j < run; j++) {
          uint64_t v = base + j * (1 + rng() % 3);
          if (!ref.empty() && v <= *ref.rbegin()) continue;
          t.BulkAppend(v);
          ref.insert(v);
        }
        break;
      }
    }
    if (op % 4096 == 0) {
      t.FinishBulk();
      REQUIRE(t.Verify().ok());
    }
  }
  t.FinishBulk();
  Status st = t.Verify();
  INFO(st.ToString());
  REQUIRE(st.ok());
  RequireSameContents(t, ref);
}

TEST_CASE("BTree agrees with std::set over random operations", "[btree]") {
  // Small nodes make deep trees and exercise every split, borrow and merge;
  // the default 4 KiB leaf is what range trees use.
  const size_t leaf_sizes[] = {64, 128, 256, 1024, 4096};
  for (uint64_t seed = 1; seed <= 24; seed++) {
    size_t leaf = leaf_sizes[seed % 5];
    uint64_t key_space = (seed % 3 == 0) ? 1000 : (seed % 3 == 1) ? 100000 : (1ull << 40);
    DYNAMIC_SECTION("seed " << seed << " leaf " << leaf << " keys " << key_space) {
      Differential(seed, leaf, 150000, key_space);
    }
  }
}

TEST_CASE("BTree bulk append leaves nodes about three quarters full", "[btree]") {
  BTree<uint64_t> bulk;
  BTree<uint64_t> random_order;
  const uint64_t n = 1000000;
  for (uint64_t i = 0; i < n; i++) bulk.BulkAppend(i * 2);
  bulk.FinishBulk();
  REQUIRE(bulk.Verify().ok());
  std::vector<uint64_t> keys(n);
  for (uint64_t i = 0; i < n; i++) keys[i] = i * 2;
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(7));
  for (uint64_t k : keys) random_order.Insert(k);
  REQUIRE(random_order.Verify().ok());
  double bulk_fill = double(n) / (bulk.leaf_count() * bulk.leaf_capacity());
  double random_fill = double(n) / (random_order.leaf_count() * random_order.leaf_capacity());
  INFO("bulk fill " << bulk_fill << ", random fill " << random_fill);
  REQUIRE(bulk_fill > 0.74);
  REQUIRE(bulk_fill < 0.77);
  REQUIRE(random_fill < 0.72);
  // Removing everything in random order empties the tree and frees every node.
  for (uint64_t k : keys) REQUIRE(bulk.Remove(k));
  REQUIRE(bulk.empty());
  REQUIRE(bulk.memory_bytes() == 0);
}

TEST_CASE("BTree erases at an iterator taken during a bulk append", "[btree]") {
  // Erase must refill the bulk right edge without losing track of the
  // element the iterator named.
  for (size_t leaf : {64, 256, 4096}) {
    std::mt19937_64 rng(leaf);
    BTree<uint64_t> t(std::less<uint64_t>(), leaf);
    std::set<uint64_t> ref;
    for (uint64_t i = 0; i < 20000; i++) {
      t.BulkAppend(i * 3);
      ref.insert(i * 3);
    }
    for (int round = 0; round < 2000; round++) {
      // Near the end, where the bulk right edge is refilled.
      uint64_t k = *ref.rbegin() - (rng() % 1500);
      auto it = t.find(k);
      REQUIRE((it != t.end()) == (ref.count(k) == 1));
      if (it == t.end()) continue;
      t.Erase(it);
      ref.erase(k);
      // Appending again puts the tree back in bulk mode.
      uint64_t next = *ref.rbegin() + 1 + rng() % 5;
      t.BulkAppend(next);
      ref.insert(next);
    }
    t.FinishBulk();
    REQUIRE(t.Verify().ok());
    RequireSameContents(t, ref);
  }
}

TEST_CASE("BTree iterates both ways and erases at an iterator", "[btree]") {
  BTree<uint64_t> t(std::less<uint64_t>(), 64);
  for (uint64_t i = 0; i < 1000; i++) t.Insert(i);
  uint64_t expect = 0;
  for (auto it = t.begin(); it != t.end(); ++it) REQUIRE(*it == expect++);
  REQUIRE(expect == 1000);
  // Erase every other element through iterators found by lower_bound.
  for (uint64_t i = 0; i < 1000; i += 2) t.Erase(t.lower_bound(i));
  REQUIRE(t.Verify().ok());
  REQUIRE(t.size() == 500);
  REQUIRE(*t.begin() == 1);
  REQUIRE(*t.last() == 999);
  REQUIRE(t.find(500) == t.end());
  REQUIRE(*t.lower_bound(500) == 501);
}

TEST_CASE("BTree MutableAt changes an element in place", "[btree]") {
  struct Seg {
    uint32_t start, end;
  };
  auto cmp = [](const Seg& a, const Seg& b) { return a.end <= b.start; };
  BTree<Seg, decltype(cmp)> t(cmp);
  t.Insert({0, 10});
  t.Insert({20, 30});
  auto it = t.find(Seg{0, 1});
  REQUIRE(it != t.end());
  t.MutableAt(it).end = 15;  // grows into the gap: order is kept
  REQUIRE(t.find(Seg{12, 13}) != t.end());
  REQUIRE(t.find(Seg{16, 17}) == t.end());
  REQUIRE(t.Verify().ok());
}

TEST_CASE("BTree Verify reports a broken order", "[btree]") {
  BTree<uint64_t> t(std::less<uint64_t>(), 64);
  for (uint64_t i = 0; i < 100; i++) t.Insert(i * 10);
  REQUIRE(t.Verify().ok());
  t.MutableAt(t.find(500)) = 5;  // breaks the order on purpose
  Status st = t.Verify();
  REQUIRE(st.IsCorruption());
}

}  // namespace
}  // namespace poolfs::core::space
