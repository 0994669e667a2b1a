// LeafCache: a fat zap given one decodes each leaf once and reads it from
// the cache after that; the leaves its changes write replace the cached
// ones; zaps never see each other's leaves; concurrent readers share it.
#include "zap/leaf_cache.h"

#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;

Value ValueOf(uint64_t n) { return Value{n, n + 1}; }

// A fat zap (kDirectory, 4 KiB blocks: many leaves) with names n0..n(count-1).
ObjectId MakeFatZap(Fixture& f, int count) {
  ZapOptions o;
  o.block_size = 4096;
  auto z = f.NewZap(dmu::ObjectType::kDirectory, o);
  auto tx = f.NewTx();
  for (int i = 0; i < count; i++) REQUIRE(z->Add(*tx, "n" + std::to_string(i), ValueOf(i)).ok());
  tx->Commit();
  REQUIRE(z->Shape().leaves > 10);
  return z->id();
}

TEST_CASE("LeafCache keeps leaves apart by owner and block", "[zap]") {
  LeafCache cache(1000);
  const BlockContext ctx{7, 4096, true};
  const uint64_t a = LeafCache::NewOwner(), b = LeafCache::NewOwner();
  REQUIRE(a != b);
  Leaf l(ctx, 5, 0, 0);
  l.Insert(MakeKey(1, 0), "x", ValueOf(1));
  cache.Put(a, l);
  REQUIRE(cache.Find(b, 5) == nullptr);
  REQUIRE(cache.Find(a, 4) == nullptr);
  auto got = cache.Find(a, 5);
  REQUIRE(got != nullptr);
  REQUIRE(got->count() == 1);
  REQUIRE(got->NameAt(0) == "x");
  // A Put replaces; a reference taken before stays valid and unchanged.
  Leaf l2(ctx, 5, 0, 0);
  cache.Put(a, l2);
  REQUIRE(cache.Find(a, 5)->count() == 0);
  REQUIRE(got->count() == 1);
  cache.Drop(a, 5);
  REQUIRE(cache.Find(a, 5) == nullptr);
  REQUIRE(cache.hits() == 2);
  REQUIRE(cache.misses() == 3);
}

TEST_CASE("A zap with a leaf cache reads each leaf once and keeps its changes", "[zap]") {
  Fixture f;
  const int n = 3000;
  const ObjectId id = MakeFatZap(f, n);
  f.Reopen();
  LeafCache cache(100000);
  ZapOptions o;
  o.leaf_cache = &cache;
  auto z = f.OpenZap(id, o);
  const uint64_t leaves = z->Shape().leaves;
  for (int i = 0; i < n; i++) REQUIRE(z->Lookup("n" + std::to_string(i)).value() == ValueOf(i));
  // The first lookup in each leaf missed; every other lookup found it.
  REQUIRE(cache.misses() == leaves);
  REQUIRE(cache.size() == leaves);
  const uint64_t misses = cache.misses();
  {
    auto tx = f.NewTx();
    for (int i = 0; i < n; i += 2) REQUIRE(z->Remove(*tx, "n" + std::to_string(i)).ok());
    for (int i = 1; i < n; i += 2)
      REQUIRE(z->Update(*tx, "n" + std::to_string(i), ValueOf(i + 5)).ok());
    for (int i = n; i < 2 * n; i++) REQUIRE(z->Add(*tx, "n" + std::to_string(i), ValueOf(i)).ok());
    tx->Commit();
  }
  // Changes read the cached leaves and put back what they wrote (splits
  // included): nothing was read again.
  REQUIRE(cache.misses() == misses);
  REQUIRE(cache.size() == z->Shape().leaves);
  auto check = [&](const Zap& zap) {
    for (int i = 0; i < 2 * n; i++) {
      auto got = zap.Lookup("n" + std::to_string(i));
      if (i < n && i % 2 == 0) {
        REQUIRE(got.status().IsNotFound());
      } else {
        REQUIRE(got.value() == ValueOf(i < n ? i + 5 : i));
      }
    }
  };
  check(*z);
  // What the cache served is what the dmu holds: a zap without the cache,
  // and one after a reopen, read the same.
  check(*f.OpenZap(id));
  z.reset();
  f.Reopen();
  check(*f.OpenZap(id));
  // A new Zap of the same object does not see the old one's leaves.
  auto again = f.OpenZap(id, o);
  const uint64_t before = cache.misses();
  REQUIRE(again->Lookup("n1").ok());
  REQUIRE(cache.misses() == before + 1);
}

TEST_CASE("A small leaf cache stays bounded and its zap stays right", "[zap][single-threaded]") {
  Fixture f;
  const int n = 150000;  // more leaves (about 1,650) than even a swept-late cache holds
  const ObjectId id = MakeFatZap(f, n);
  LeafCache cache(64);  // one leaf a shard
  ZapOptions o;
  o.leaf_cache = &cache;
  auto z = f.OpenZap(id, o);
  REQUIRE(z->Shape().leaves > 64 * 17);
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < n; i++) REQUIRE(z->Lookup("n" + std::to_string(i)).value() == ValueOf(i));
  // A shard sweeps back to its share once it grows by 16 past it.
  REQUIRE(cache.size() <= 64 * 17);
  REQUIRE(cache.misses() > 2 * z->Shape().leaves);
}

TEST_CASE("Readers share a leaf cache while a writer changes the zap", "[zap]") {
  Fixture f;
  const ObjectId id = MakeFatZap(f, 2000);
  LeafCache cache(16);  // small: leaves leave and come back under the readers
  ZapOptions o;
  o.leaf_cache = &cache;
  auto z = f.OpenZap(id, o);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; t++)
    readers.emplace_back([&, t] {
      uint64_t i = uint64_t(t) * 7919;
      while (!stop.load()) {
        i = (i * 6364136223846793005ull + 1442695040888963407ull);
        const int k = int((i >> 33) % 2000);
        auto got = z->Lookup("n" + std::to_string(k));
        if (!got.ok() || !(*got == ValueOf(k))) errors++;
      }
    });
  for (int round = 0; round < 10; round++) {
    auto tx = f.NewTx();
    for (int i = round * 300; i < (round + 1) * 300; i++)
      REQUIRE(z->Add(*tx, "m" + std::to_string(i), ValueOf(i)).ok());
    tx->Commit();
  }
  stop = true;
  for (auto& r : readers) r.join();
  REQUIRE(errors.load() == 0);
  REQUIRE(z->Count() == 5000);
  for (int i = 0; i < 3000; i++) REQUIRE(z->Lookup("m" + std::to_string(i)).value() == ValueOf(i));
}

}  // namespace
}  // namespace poolfs::core::zap
