// ObjectAllocator: exact free ids, chunks per slot, deferred reuse of freed
// ids, the backfill modes, import, and concurrent use.
#include "dmu/object_allocator.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace poolfs::core::dmu {
namespace {

std::vector<uint64_t> AllocateMany(ObjectAllocator& a, size_t n, size_t slot = 0) {
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < n; i++) {
    auto id = a.Allocate(slot);
    REQUIRE(id.ok());
    ids.push_back(id->value());
  }
  return ids;
}

// Creates n, frees a random half (released), creates n/2 again; returns the
// ids of the second create phase.
std::vector<uint64_t> Churn(ObjectAllocator& a, size_t n, uint64_t seed) {
  std::vector<uint64_t> ids = AllocateMany(a, n);
  std::mt19937_64 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (size_t i = 0; i < n / 2; i++) a.Free(ObjectId(ids[i]), Txg(7));
  a.Release(Txg(7));
  return AllocateMany(a, n / 2);
}

TEST_CASE("ObjectAllocator hands out unique dense ids to concurrent creators", "[dmu]") {
  for (BackfillMode mode : {BackfillMode::kAuto, BackfillMode::kOn, BackfillMode::kOff}) {
    ObjectAllocator a(mode, 128);
    constexpr int kThreads = 8, kEach = 20000;
    std::vector<std::vector<uint64_t>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; i++) got[t].push_back(a.Allocate(size_t(t)).value().value());
      });
    for (auto& th : threads) th.join();
    std::set<uint64_t> all;
    for (auto& v : got) all.insert(v.begin(), v.end());
    REQUIRE(all.size() == size_t(kThreads * kEach));
    REQUIRE(*all.begin() >= ObjectAllocator::kFirstId);
    ObjectAllocStats st = a.Stats();
    REQUIRE(st.live == uint64_t(kThreads * kEach));
    REQUIRE(st.failed_holds == 0);
    REQUIRE(st.reused == 0);
    // Only the slots' partly used chunks are holes.
    REQUIRE(st.high_water <= kThreads * kEach + 1 + kThreads * 128);
    REQUIRE(st.density() > 0.99);
    REQUIRE(a.free_segments() == 0);  // a create-only history keeps no free segments
  }
}

TEST_CASE("ObjectAllocator reuses a freed id only after its txg is released", "[dmu]") {
  ObjectAllocator a(BackfillMode::kOn, 4);
  std::vector<uint64_t> ids = AllocateMany(a, 10);
  a.Free(ObjectId(ids[3]), Txg(5));
  REQUIRE_FALSE(a.IsFree(ObjectId(ids[3])));
  a.Release(Txg(4));
  uint64_t next = a.Allocate(1).value().value();
  REQUIRE(next != ids[3]);
  a.Release(Txg(5));
  REQUIRE(a.IsFree(ObjectId(ids[3])));
  REQUIRE(a.Allocate(2).value().value() == ids[3]);
  REQUIRE(a.Stats().reused == 1);
}

TEST_CASE("ObjectAllocator off never backfills and leaves a sparse id space", "[dmu]") {
  ObjectAllocator a(BackfillMode::kOff, 128);
  std::vector<uint64_t> first = AllocateMany(a, 30000);
  const uint64_t top = *std::max_element(first.begin(), first.end());
  std::vector<uint64_t> second = Churn(a, 30000, 1);
  // (Churn allocated 30000 more before freeing: compare with its own top.)
  for (uint64_t id : second) REQUIRE(id > top);
  ObjectAllocStats st = a.Stats();
  REQUIRE(st.reused == 0);
  // 30000, then 30000 more, 15000 of them freed, 15000 new: 60000 live of 75000.
  REQUIRE(st.live == 60000);
  REQUIRE(st.density() == Approx(0.8).epsilon(0.01));
}

TEST_CASE("ObjectAllocator on reuses the lowest free ids first", "[dmu]") {
  ObjectAllocator a(BackfillMode::kOn, 128);
  std::vector<uint64_t> ids = AllocateMany(a, 1000);
  for (uint64_t id : {500, 40, 41, 900}) a.Free(ObjectId(id), Txg(2));
  a.Release(Txg(2));
  std::vector<uint64_t> again = AllocateMany(a, 4, 3);
  REQUIRE(again == std::vector<uint64_t>{40, 41, 500, 900});
  REQUIRE(a.Stats().reused == 4);
}

TEST_CASE("ObjectAllocator auto ignores a few frees but refills after a churn", "[dmu]") {
  ObjectAllocator a(BackfillMode::kAuto, 128);
  std::vector<uint64_t> ids = AllocateMany(a, 100000);
  const uint64_t top = *std::max_element(ids.begin(), ids.end());
  // A few scattered deletes: new creates keep growing (locality).
  for (int i = 0; i < 1000; i++) a.Free(ObjectId(ids[size_t(i) * 97]), Txg(3));
  a.Release(Txg(3));
  for (uint64_t id : AllocateMany(a, 500)) REQUIRE(id > top);
  REQUIRE_FALSE(a.Stats().backfilling);
  // Deleting half: the next creates take the lowest free ids until none
  // remain, and the id space ends dense.
  ObjectAllocator b(BackfillMode::kAuto, 128);
  std::vector<uint64_t> second = Churn(b, 100000, 2);
  ObjectAllocStats st = b.Stats();
  REQUIRE(st.reused >= 49000);
  REQUIRE(st.density() >= 0.95);
  REQUIRE(st.failed_holds == 0);
  ObjectAllocator off(BackfillMode::kOff, 128);
  Churn(off, 100000, 2);
  REQUIRE(off.Stats().density() < 0.7);
}

TEST_CASE("ObjectAllocator auto keeps backfilling while released ids run out and more are "
          "pending", "[dmu]") {
  // Deletes reach the free set a txg at a time: the first release crosses
  // the threshold (80000 / 8 = 10000); when its ids are used up, a later
  // txg's 8000 frees, fewer than the threshold, still go to backfill.
  ObjectAllocator a(BackfillMode::kAuto, 128);
  std::vector<uint64_t> ids = AllocateMany(a, 80000);
  for (size_t i = 0; i < 38000; i++) a.Free(ObjectId(ids[2 * i]), Txg(i < 30000 ? 5 : 6));
  a.Release(Txg(5));
  AllocateMany(a, 30000, 7);
  REQUIRE(a.Stats().reused == 30000);
  // None free now: this create grows, but backfill stays on, 8000 pending.
  REQUIRE(a.Allocate(0).value().value() > 80000);
  REQUIRE(a.Stats().backfilling);
  a.Release(Txg(6));
  for (uint64_t id : AllocateMany(a, 8000, 8)) REQUIRE(id < 80000);
  ObjectAllocStats st = a.Stats();
  REQUIRE(st.reused == 38000);
  REQUIRE(st.density() >= 0.99);
  // Nothing free or pending any more: growing again.
  REQUIRE(a.Allocate(9).value().value() > 80000);
  REQUIRE_FALSE(a.Stats().backfilling);
}

TEST_CASE("ObjectAllocator switches mode live and returns cached chunks", "[dmu]") {
  ObjectAllocator a(BackfillMode::kOff, 128);
  std::vector<uint64_t> ids = AllocateMany(a, 5000);
  for (size_t i = 0; i < 2500; i++) a.Free(ObjectId(ids[i]), Txg(1));
  a.Release(Txg(1));
  REQUIRE(a.Allocate(0).value().value() > 5000);
  a.SetMode(BackfillMode::kOn);
  REQUIRE(a.Allocate(0).value().value() == ids[0]);
  REQUIRE(a.Stats().mode == BackfillMode::kOn);
}

TEST_CASE("ObjectAllocator loads the free set from the ids in use", "[dmu]") {
  ObjectAllocator a(BackfillMode::kOn, 128);
  REQUIRE(a.Load(100, {{1, 10}, {20, 30}, {99, 100}}).ok());
  ObjectAllocStats st = a.Stats();
  REQUIRE(st.live == 9 + 10 + 1);
  REQUIRE(st.high_water == 100);
  REQUIRE(st.free_below_high_water == 99 - 20);
  REQUIRE(a.Allocate(0).value().value() == 10);
  REQUIRE(a.IsFree(ObjectId(50)));
  REQUIRE_FALSE(a.IsFree(ObjectId(25)));
  REQUIRE(a.free_segments() == 1);  // [30, 99): the slot took the rest of [10, 20) as its chunk
  // Damage: ranges out of order, past the high-water mark, empty.
  ObjectAllocator b;
  REQUIRE(b.Load(50, {{10, 20}, {5, 8}}).IsCorruption());
  REQUIRE(b.Load(50, {{10, 60}}).IsCorruption());
  REQUIRE(b.Load(50, {{10, 10}}).IsCorruption());
  REQUIRE(b.Load(0, {}).IsCorruption());
}

TEST_CASE("ObjectAllocator counts dnode blocks in use", "[dmu]") {
  ObjectAllocator a(BackfillMode::kOff, 32);
  std::vector<uint64_t> ids = AllocateMany(a, 31 + 32 * 9);  // blocks 0..9 full
  REQUIRE(a.Stats().dnode_blocks_in_use == 10);
  for (uint64_t id = 32; id < 64; id++) a.Free(ObjectId(id), Txg(1));  // block 1
  for (uint64_t id = 64; id < 95; id++) a.Free(ObjectId(id), Txg(1));  // all of block 2 but 95
  a.Release(Txg(1));
  REQUIRE(a.Stats().dnode_blocks_in_use == 9);
}

TEST_CASE("ObjectAllocator Take claims ids found outside Allocate", "[dmu]") {
  ObjectAllocator a(BackfillMode::kLegacy, 128);
  REQUIRE(a.Take(ObjectId(5)).ok());
  REQUIRE(a.Stats().high_water == 6);
  REQUIRE(a.IsFree(ObjectId(3)));
  REQUIRE(a.Take(ObjectId(3)).ok());
  REQUIRE(a.Take(ObjectId(3)).code() == StatusCode::kInvalidArgument);
  REQUIRE(a.Stats().live == 2);
  REQUIRE(a.Stats().reused == 1);  // 3 was free below the high-water mark; 5 was not
}

TEST_CASE("ObjectAllocator never hands one id to two owners under concurrent churn", "[dmu]") {
  ObjectAllocator a(BackfillMode::kAuto, 16);
  std::mutex mu;
  std::set<uint64_t> live;
  std::atomic<uint64_t> txg{1};
  std::atomic<bool> dup{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<uint64_t> mine;
      for (int i = 0; i < 20000; i++) {
        if (mine.empty() || rng() % 3 != 0) {
          uint64_t id = a.Allocate(size_t(t)).value().value();
          std::lock_guard<std::mutex> l(mu);
          if (!live.insert(id).second) dup = true;
          mine.push_back(id);
        } else {
          size_t k = rng() % mine.size();
          uint64_t id = mine[k];
          mine[k] = mine.back();
          mine.pop_back();
          {
            std::lock_guard<std::mutex> l(mu);
            live.erase(id);
          }
          a.Free(ObjectId(id), Txg(txg.load()));
        }
        if (t == 0 && i % 500 == 0) a.Release(Txg(txg.fetch_add(1)));
      }
    });
  for (auto& th : threads) th.join();
  REQUIRE_FALSE(dup.load());
  REQUIRE(a.Stats().live == live.size());
}

}  // namespace
}  // namespace poolfs::core::dmu
