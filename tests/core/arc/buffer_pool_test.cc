// Tests of the ARC's allocators (core/arc/buffer_pool.h): size classes,
// reuse of freed buffers and headers, the retention cap, batched frees.
#include "arc/buffer_pool.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace poolfs::core::arc {
namespace {

TEST_CASE("BufferPool charges the power-of-two class of a request", "[arc][pool]") {
  CHECK(BufferPool::ChargedSize(1) == 512);
  CHECK(BufferPool::ChargedSize(512) == 512);
  CHECK(BufferPool::ChargedSize(513) == 1024);
  CHECK(BufferPool::ChargedSize(4096) == 4096);
  CHECK(BufferPool::ChargedSize(4097) == 8192);
  CHECK(BufferPool::ChargedSize(1 << 20) == 1 << 20);
  CHECK(BufferPool::ChargedSize((1 << 20) + 1) == (1 << 20) + 1);  // past the pool
}

TEST_CASE("BufferPool hands back aligned buffers and reuses freed ones", "[arc][pool]") {
  BufferPool pool(1 << 20, 1);
  std::byte* a = pool.Alloc(4096);
  CHECK(reinterpret_cast<uintptr_t>(a) % 4096 == 0);
  std::byte* small = pool.Alloc(100);
  CHECK(reinterpret_cast<uintptr_t>(small) % 512 == 0);
  pool.Free(a, 4096);
  CHECK(pool.retained_bytes() == 4096);
  CHECK(pool.Alloc(4000) == a);  // same class: the freed buffer again
  CHECK(pool.retained_bytes() == 0);
  pool.Free(a, 4000);
  pool.Free(small, 100);
}

TEST_CASE("BufferPool keeps no more than its cap and FreeBatch keeps the batch", "[arc][pool]") {
  BufferPool pool(8 * 4096, 2);  // 4 buffers of 4 KiB per shard
  std::vector<PoolBuf> bufs;
  for (int i = 0; i < 20; i++) bufs.push_back({pool.Alloc(4096), 4096});
  pool.FreeBatch({bufs.data(), 3});  // into one shard
  CHECK(pool.retained_bytes() == 3 * 4096);
  pool.FreeBatch({bufs.data() + 3, 17});  // the next shard: 4 kept, 13 to the C library
  CHECK(pool.retained_bytes() == 7 * 4096);
  std::set<std::byte*> kept;
  for (int i = 0; i < 7; i++) kept.insert(pool.Alloc(4096));  // own shard, then the other
  CHECK(pool.retained_bytes() == 0);
  for (std::byte* p : kept) pool.Free(p, 4096);
}

TEST_CASE("BufferPool carves buffers of 64 KiB and up from 2 MiB chunks, unmapped when all return",
          "[arc][pool]") {
  BufferPool pool(0, 1);  // keeps nothing: every freed buffer goes back to its chunk
  constexpr uint32_t kBuf = 128 * 1024;
  constexpr uint64_t kChunk = BufferPool::kChunkBytes;
  std::vector<std::byte*> a;
  for (int i = 0; i < 16; i++) a.push_back(pool.Alloc(kBuf));
  CHECK(pool.chunks() == 1);
  std::set<uintptr_t> bases;
  for (std::byte* p : a) {
    CHECK(reinterpret_cast<uintptr_t>(p) % kBuf == 0);
    bases.insert(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(kChunk - 1));
  }
  CHECK(bases.size() == 1);
  std::vector<std::byte*> b;
  for (int i = 0; i < 16; i++) b.push_back(pool.Alloc(kBuf));
  CHECK(pool.chunks() == 2);
  // Ten of the first chunk's back, two of the second's: the next buffer
  // comes from the second, the fuller one.
  for (int i = 0; i < 10; i++) pool.Free(a[i], kBuf);
  for (int i = 0; i < 2; i++) pool.Free(b[i], kBuf);
  std::byte* next = pool.Alloc(kBuf);
  CHECK((reinterpret_cast<uintptr_t>(next) & ~uintptr_t(kChunk - 1)) ==
        (reinterpret_cast<uintptr_t>(b[5]) & ~uintptr_t(kChunk - 1)));
  pool.Free(next, kBuf);
  // The first chunk's last six back: it is unmapped; the second stays.
  for (int i = 10; i < 16; i++) pool.Free(a[i], kBuf);
  CHECK(pool.chunks() == 1);
  std::vector<PoolBuf> rest;
  for (int i = 2; i < 16; i++) rest.push_back({b[i], kBuf});
  pool.FreeBatch(rest);
  CHECK(pool.chunks() == 0);
  // Smaller classes and the largest: malloc's, no chunk.
  std::byte* small = pool.Alloc(32 * 1024);
  std::byte* big = pool.Alloc((1 << 20) + 1);
  CHECK(pool.chunks() == 0);
  pool.Free(small, 32 * 1024);
  pool.Free(big, (1 << 20) + 1);
  // A retained buffer of a chunk keeps it until the pool goes.
  BufferPool keeper(1 << 20, 1);
  keeper.Free(keeper.Alloc(kBuf), kBuf);
  CHECK(keeper.chunks() == 1);
  CHECK(keeper.retained_bytes() == kBuf);
}

TEST_CASE("HeaderCache reuses headers reset to their initial state", "[arc][pool]") {
  HeaderCache cache(64 * sizeof(ArcHeader), 1);
  ArcHeader* h = cache.New();
  h->size = 77;
  h->state = ArcState::kMfu;
  h->refs.store(5);
  cache.Free(h);
  ArcHeader* again = cache.New();
  CHECK(again == h);
  CHECK(again->size == 0);
  CHECK(again->state == ArcState::kGone);
  CHECK(again->refs.load() == 0);
  std::vector<ArcHeader*> many;
  for (int i = 0; i < 100; i++) many.push_back(cache.New());
  many.push_back(again);
  cache.FreeBatch(many);  // 64 kept, the rest deleted
}

TEST_CASE("BufferPool and HeaderCache work from many threads at once", "[arc][pool]") {
  BufferPool pool(1 << 20, 4);
  HeaderCache headers(1 << 16, 4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; t++) {
    ts.emplace_back([&] {
      std::vector<PoolBuf> bufs;
      std::vector<ArcHeader*> hs;
      for (int i = 0; i < 2000; i++) {
        bufs.push_back({pool.Alloc(4096), 4096});
        bufs.back().data[0] = std::byte(i);
        hs.push_back(headers.New());
        if (bufs.size() == 10) {
          pool.FreeBatch(bufs);
          headers.FreeBatch(hs);
          bufs.clear();
          hs.clear();
        }
      }
      pool.FreeBatch(bufs);
      headers.FreeBatch(hs);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(pool.retained_bytes() <= 4 * (uint64_t{1} << 20));
}

}  // namespace
}  // namespace poolfs::core::arc
