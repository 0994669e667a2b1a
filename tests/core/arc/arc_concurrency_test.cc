// Concurrent tests of the ARC (core/arc/arc.h), meant to run under TSan too
// (arc_tests is one of the "concurrent" test programs scripts/test.sh runs
// with -fsanitize=thread): the bound on cached data holds under 8 threads of
// reads with the evictor running, held blocks (cached, and read once outside
// the cache) survive that load intact, and batched Forget and EvictAll leave
// nothing behind.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "arc/arc.h"

namespace poolfs::core::arc {
namespace {

constexpr uint32_t kBlockSize = 4096;
constexpr int kThreads = 8;

BlockKey KeyOf(uint64_t n) { return {VdevId(1), VdevOffset(n * kBlockSize), Txg(7)}; }

// Reads block n (filling a miss with n's byte pattern) and checks its bytes.
// Returns false if the block's bytes are wrong.
bool ReadAndCheck(Arc& arc, uint64_t n) {
  ArcHandle h = arc.Lookup(KeyOf(n));
  if (!h) {
    ArcData d = arc.AllocData(kBlockSize);
    std::memset(d.data(), int(n & 0xff), kBlockSize);
    h = arc.Insert(KeyOf(n), std::move(d));
  }
  return h.size() == kBlockSize && h.data()[0] == std::byte(n & 0xff) &&
         h.data()[kBlockSize - 1] == std::byte(n & 0xff);
}

ArcOptions Concurrent(uint64_t blocks, uint32_t sublists) {
  ArcOptions o;
  o.max_bytes = blocks * kBlockSize;
  o.sublists = sublists;
  o.evict_batch = 10;
  o.evict_thread = true;
  return o;
}

TEST_CASE("Arc keeps cached data within max_bytes under 8 threads of random reads", "[arc]") {
  for (uint32_t sublists : {1u, 4u}) {
    Arc arc(Concurrent(256, sublists));
    const uint64_t bound = 256 * kBlockSize + 10 * kBlockSize;  // c + one evict batch of slack
    std::atomic<uint64_t> max_seen{0};
    std::atomic<bool> bad_data{false};
    std::atomic<bool> done{false};
    // A sampler besides the readers' own checks after each read.
    std::thread sampler([&] {
      while (!done.load()) {
        uint64_t v = arc.cached_bytes();
        uint64_t m = max_seen.load();
        while (v > m && !max_seen.compare_exchange_weak(m, v)) {
        }
        std::this_thread::yield();
      }
    });
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
      ts.emplace_back([&, t] {
        std::mt19937_64 rng(t + 1);
        for (int i = 0; i < 4000; i++) {
          if (!ReadAndCheck(arc, rng() % 512)) bad_data = true;
          uint64_t v = arc.cached_bytes();
          uint64_t m = max_seen.load();
          while (v > m && !max_seen.compare_exchange_weak(m, v)) {
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    done = true;
    sampler.join();
    ArcStats st = arc.Stats();
    INFO("sublists " << sublists << " max seen " << max_seen.load() << " bound " << bound);
    CHECK(max_seen.load() <= bound);
    CHECK_FALSE(bad_data.load());
    CHECK(st.hits + st.misses >= uint64_t{kThreads} * 4000);
    CHECK(st.evictions > 0);
    CHECK(st.cached_bytes == st.mru_bytes + st.mfu_bytes);
    CHECK(st.cached_bytes <= st.max_bytes);
  }
}

TEST_CASE("Arc evictor thread brings a full cache under its low-water mark", "[arc]") {
  Arc arc(Concurrent(256, 4));
  for (uint64_t n = 0; n < 256; n++) REQUIRE(ReadAndCheck(arc, n));
  ReadAndCheck(arc, 1000);  // past c - c/64: wakes the evictor
  // Bounded wait (a broken evictor fails here instead of hanging).
  const uint64_t low = 256 * kBlockSize - 256 * kBlockSize / 32;
  for (int i = 0; i < 2000 && arc.cached_bytes() > low; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(arc.cached_bytes() <= low);
  CHECK(arc.Stats().evictions > 0);
}

TEST_CASE("Arc eviction under concurrent load never drops a held block", "[arc]") {
  Arc arc(Concurrent(128, 4));
  // Held: blocks 10000.. read and kept by the main thread.
  std::vector<ArcHandle> held;
  for (uint64_t n = 10000; n < 10016; n++) {
    REQUIRE(ReadAndCheck(arc, n));
    held.push_back(arc.Lookup(KeyOf(n)));
    REQUIRE(held.back());
  }
  std::atomic<bool> bad{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      // Each thread keeps blocks read for one use (Hold: outside the cache,
      // in its allocator's memory) alive across the churn.
      std::vector<ArcHandle> once;
      for (int k = 0; k < 4; k++) {
        ArcData d = arc.AllocData(kBlockSize);
        std::memset(d.data(), 0x80 + t * 4 + k, kBlockSize);
        once.push_back(arc.Hold(KeyOf(20000 + t * 4 + k), std::move(d)));
      }
      for (int i = 0; i < 3000; i++) {
        if (!ReadAndCheck(arc, rng() % 1024)) bad = true;
      }
      for (int k = 0; k < 4; k++) {
        const std::byte want{uint8_t(0x80 + t * 4 + k)};
        if (once[k].data()[0] != want || once[k].data()[kBlockSize - 1] != want) bad = true;
        if (arc.Lookup(KeyOf(20000 + t * 4 + k))) bad = true;  // never entered the cache
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK_FALSE(bad.load());
  for (size_t i = 0; i < held.size(); i++) {
    CHECK(held[i].data()[0] == std::byte((10000 + i) & 0xff));
    CHECK(arc.Lookup(KeyOf(10000 + i)));  // still cached: never evicted while held
  }
  ArcStats st = arc.Stats();
  CHECK(st.read_once == kThreads * 4);
  CHECK(st.cached_bytes <= st.max_bytes);
}

TEST_CASE("Arc Forget and EvictAll racing with readers leave nothing behind", "[arc]") {
  Arc arc(Concurrent(128, 4));
  std::atomic<bool> bad{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(200 + t);
      std::vector<BlockKey> batch;
      for (int i = 0; i < 3000; i++) {
        uint64_t n = rng() % 512;
        if (!ReadAndCheck(arc, n)) bad = true;
        if (t % 2 == 0 && rng() % 8 == 0) batch.push_back(KeyOf(n));
        if (batch.size() >= 32) {
          arc.Forget(batch);
          batch.clear();
        }
        if (t == 1 && i % 1000 == 999) arc.EvictAll();
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK_FALSE(bad.load());
  std::vector<BlockKey> all;
  for (uint64_t n = 0; n < 512; n++) all.push_back(KeyOf(n));
  arc.Forget(all);
  ArcStats st = arc.Stats();
  CHECK(st.cached_bytes == 0);
  CHECK(st.mru_bytes + st.mfu_bytes + st.mru_ghost_bytes + st.mfu_ghost_bytes == 0);
  CHECK(st.mru_blocks + st.mfu_blocks + st.mru_ghost_blocks + st.mfu_ghost_blocks == 0);
}

}  // namespace
}  // namespace poolfs::core::arc
