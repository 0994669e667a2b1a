// Tests of ObjectCache (core/util/object_cache.h): the bound, what is never
// evicted (held objects, those the owner refuses), TryEvict, and one object
// per key under concurrent loads. Meant to run under TSan too
// (scripts/test.sh builds util_tests with -fsanitize=thread).
#include "util/object_cache.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <thread>
#include <vector>

namespace poolfs::util {
namespace {

struct Obj {
  explicit Obj(uint64_t k) : key(k) {}
  const uint64_t key;
  std::atomic<bool> dirty{false};
  std::atomic<int> users{0};
};
using Cache = ObjectCache<Obj>;

// The most a cache with this limit may hold of objects that can all go: per
// shard its share plus the growth that waits for the next sweep.
uint64_t Ceiling(uint64_t limit) {
  const uint64_t share = std::max<uint64_t>(limit / Cache::kShards, 1);
  return Cache::kShards * (share + std::max<uint64_t>(share / 4, 16) + 1);
}

TEST_CASE("ObjectCache agrees with a map over random inserts, replaces and erases",
          "[object_cache]") {
  // Unbounded, so that only the table decides what is there: keys from a
  // small range (long probe runs, erases shifting them back) and from all
  // of 64 bits, the table growing and shrinking as the count swings.
  for (uint64_t range : {uint64_t{3000}, ~uint64_t{0}}) {
    Cache cache;
    std::map<uint64_t, std::shared_ptr<Obj>> model;
    std::mt19937_64 rng(range);
    for (int round = 0; round < 6; round++) {
      const bool grow = round % 2 == 0;
      for (int op = 0; op < 20000; op++) {
        const uint64_t k =
            range == ~uint64_t{0} && !model.empty() && rng() % 2
                ? std::next(model.begin(), long(rng() % std::min<size_t>(model.size(), 50)))->first
                : rng() % range;
        const int what = int(rng() % 10);
        if (what < (grow ? 6 : 2)) {
          auto o = std::make_shared<Obj>(k);
          if (what == 0) {
            cache.Replace(k, o);
            model[k] = o;
          } else {
            auto got = cache.InsertIfAbsent(k, o);
            model.emplace(k, o);
            REQUIRE(got == model[k]);
          }
        } else if (what < 9) {
          cache.Erase(k);
          model.erase(k);
        } else {
          auto got = cache.Find(k);
          auto it = model.find(k);
          REQUIRE(got == (it == model.end() ? nullptr : it->second));
        }
      }
      REQUIRE(cache.size() == model.size());
      for (const auto& [k, o] : model) REQUIRE(cache.Find(k) == o);
    }
  }
}

TEST_CASE("ObjectCache keeps about its limit of idle objects", "[object_cache]") {
  Cache cache([](Obj& o) { return !o.dirty.load(); });
  cache.SetLimit(1024);
  for (uint64_t k = 1; k <= 100000; k++) cache.InsertIfAbsent(k, std::make_shared<Obj>(k));
  CHECK(cache.size() <= Ceiling(1024));
  CHECK(cache.size() >= 1024 / 2);
  CHECK(cache.evictions() == 100000 - cache.size());
  // The limit is live: a smaller one applies from the next inserts.
  cache.SetLimit(128);
  for (uint64_t k = 100001; k <= 110000; k++) cache.InsertIfAbsent(k, std::make_shared<Obj>(k));
  CHECK(cache.size() <= Ceiling(128));
}

TEST_CASE("ObjectCache never evicts a held object or one its owner refuses", "[object_cache]") {
  Cache cache([](Obj& o) { return !o.dirty.load(); });
  cache.SetLimit(64);
  std::vector<std::shared_ptr<Obj>> held;
  std::vector<uint64_t> dirty;
  for (uint64_t k = 1; k <= 20000; k++) {
    auto o = std::make_shared<Obj>(k);
    if (k % 97 == 0) held.push_back(o);
    if (k % 89 == 0) {
      o->dirty = true;
      dirty.push_back(k);
    }
    cache.InsertIfAbsent(k, std::move(o));
  }
  CHECK(cache.evictions() > 0);
  for (auto& o : held) CHECK(cache.Find(o->key) == o);  // the same object, not a copy
  for (uint64_t k : dirty) CHECK(cache.Find(k) != nullptr);
  // Once released and clean they may go.
  held.clear();
  for (uint64_t k : dirty) {
    auto o = cache.Find(k);
    REQUIRE(o);
    o->dirty = false;
  }
  for (uint64_t k = 20001; k <= 60000; k++) cache.InsertIfAbsent(k, std::make_shared<Obj>(k));
  CHECK(cache.size() <= Ceiling(64));
}

TEST_CASE("ObjectCache::Trim drops objects that became evictable without new inserts",
          "[object_cache]") {
  Cache cache([](Obj& o) { return !o.dirty.load(); });
  cache.SetLimit(64);
  for (uint64_t k = 1; k <= 5000; k++) {
    auto o = std::make_shared<Obj>(k);
    o->dirty = true;
    cache.InsertIfAbsent(k, o);
  }
  CHECK(cache.size() == 5000);  // all dirty: none may go
  for (uint64_t k = 1; k <= 5000; k++) cache.Find(k)->dirty = false;
  cache.Trim();  // the Finds set every bit: the sweep's first turn clears them
  CHECK(cache.size() <= 64);
  CHECK(cache.evictions() == 5000 - cache.size());
}

TEST_CASE("ObjectCache::TryEvict drops only an object nobody else holds", "[object_cache]") {
  Cache cache([](Obj& o) { return !o.dirty.load(); });
  auto a = cache.InsertIfAbsent(7, std::make_shared<Obj>(7));
  {
    auto other = cache.Find(7);
    CHECK_FALSE(cache.TryEvict(7, a));  // `other` holds it too
  }
  a->dirty = true;
  CHECK_FALSE(cache.TryEvict(7, a));  // the owner refuses
  a->dirty = false;
  auto stranger = std::make_shared<Obj>(7);
  CHECK_FALSE(cache.TryEvict(7, stranger));  // not the object under the key
  CHECK(cache.TryEvict(7, a));
  CHECK(cache.Find(7) == nullptr);
  CHECK(a->key == 7);  // the caller's reference keeps it alive
}

TEST_CASE("ObjectCache::FindOrLoad loads a key once and reports a failed load", "[object_cache]") {
  Cache cache;
  int loads = 0;
  auto load = [&]() -> Result<std::shared_ptr<Obj>> {
    loads++;
    return std::make_shared<Obj>(3);
  };
  auto a = cache.FindOrLoad(3, load);
  auto b = cache.FindOrLoad(3, load);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(loads == 1);
  auto bad = cache.FindOrLoad(
      4, []() -> Result<std::shared_ptr<Obj>> { return Status::IOError("block 9 unreadable"); });
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().ToString().find("block 9 unreadable") != std::string::npos);
  CHECK(cache.Find(4) == nullptr);
}

// Threads load, use and drop objects of a key range larger than the limit,
// so sweeps run all the time. While a thread holds an object, the cache
// must give that same object for its key: evicting a held object, or
// loading a second one for the key, would show as another (or none).
TEST_CASE("ObjectCache keeps one object per key under concurrent loads and sweeps",
          "[object_cache]") {
  Cache cache([](Obj& o) { return !o.dirty.load(); });
  cache.SetLimit(256);
  constexpr uint64_t kKeys = 4096;
  std::atomic<bool> broken{false};
  std::atomic<uint64_t> loads{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 20000; i++) {
        const uint64_t k = rng() % kKeys;
        auto r = cache.FindOrLoad(k, [&]() -> Result<std::shared_ptr<Obj>> {
          loads++;
          return std::make_shared<Obj>(k);
        });
        if (!r.ok() || (*r)->key != k) {
          broken = true;
          continue;
        }
        std::shared_ptr<Obj> o = *r;
        if (i % 7 == 0) o->dirty = !o->dirty.load();
        std::this_thread::yield();
        if (cache.Find(k) != o) broken = true;
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK_FALSE(broken.load());
  CHECK(loads.load() > kKeys);  // objects were evicted and loaded again
  CHECK(cache.evictions() > 0);
}

}  // namespace
}  // namespace poolfs::util
