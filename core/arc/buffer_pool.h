// BufferPool and HeaderCache: the ARC's memory allocators, for data buffers
// and for block headers.
//
// Every cached block's bytes come from a BufferPool and go back to it.
// Buffers are sized in power-of-two classes from 512 B to 1 MiB (a request is
// rounded up to its class; what the cache charges against arc.max_bytes is
// the class size, the memory really used); larger requests bypass the pool.
// Headers come from a HeaderCache the same way.
//
// Why pools of our own rather than malloc: the ARC churns through buffers of
// a few sizes at a high rate from many threads, and glibc's per-thread arenas
// then keep freed memory in whichever arena freed it, so the daemon's RSS
// drifts above the cache's bound. A pool with a retention cap reuses memory
// across threads and bounds what sits unused.
//
// Locks. Each pool is split into shards (the ARC uses one per sublist, so
// arc.sublists splits the cache's allocator as it splits its lists), each
// with a free list per class under its own mutex, holding at most
// retain_bytes / shards. A thread allocates from its own shard (threads get
// shards round-robin on first use), then from any other shard whose lock it
// gets at once, and takes malloc's memory when those are empty; a single free goes to the freeing
// thread's shard. FreeBatch puts a whole batch into one shard, the next shard for the next batch,
// so that the evictor's frees spread over every shard, and takes that shard's lock once per class
// in the batch: whoever frees many buffers at once (eviction, the end of a txg sync, unmount) pays
// one lock round trip per batch, not one per buffer.
//
// Huge-page chunks. Buffers of kChunkedClass (64 KiB) and up come from 2 MiB
// chunks (mmap, 2 MiB aligned) that ask the kernel for a huge page
// (MADV_HUGEPAGE; the kernel may not give one, and then nothing changes
// but speed). A chunk holds buffers of one class; a buffer past the
// retention cap goes back to its chunk, and a chunk all of whose buffers
// are back is unmapped. Why: blocks are read from disk straight into these
// buffers (O_DIRECT, and dmu::ReadAhead), and on a virtual disk a direct
// read into a huge page goes much faster, and more steadily, than one into
// 4 KiB pages, which reach the device one segment each.
// scripts/bench-fs.sh's read figure measures the path these buffers serve
// (1 GiB read through the mount with the caches dropped). The price: a
// chunk with one buffer in use keeps its 2 MiB; a new buffer comes from the
// chunk that has the fewest free, so that the others can empty.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "arc/arc_buf.h"
#include "util/mutex.h"

namespace poolfs::core::arc {

// One buffer handed back in a batch: its bytes and the size it was asked with.
struct PoolBuf {
  std::byte* data = nullptr;
  uint32_t size = 0;
};

// The calling thread's slot, assigned round-robin on first use; pools pick a
// thread's shard as slot % shards.
uint32_t ThreadSlot();

class BufferPool {
 public:
  static constexpr uint32_t kMinClass = 512;
  static constexpr uint32_t kMaxClass = uint32_t{1} << 20;

  // `retain_bytes` bounds the free bytes kept for reuse per size class,
  // split evenly over `shards` (>= 1).
  BufferPool(uint64_t retain_bytes, uint32_t shards);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // The bytes a request of `size` really takes (its class size; `size`
  // itself past kMaxClass).
  static uint64_t ChargedSize(uint32_t size);

  // Returns a buffer of at least `size` bytes (aligned to 4 KiB from 4 KiB
  // up, to 512 B below). Aborts like operator new when memory runs out.
  std::byte* Alloc(uint32_t size) NO_THREAD_SAFETY_ANALYSIS;  // try-locks in a loop

  // Gives back one buffer that Alloc(size) returned: one lock round trip.
  void Free(std::byte* p, uint32_t size);

  // Gives back many buffers into one shard, taking its class locks once.
  void FreeBatch(std::span<const PoolBuf> bufs);

  // Free bytes kept for reuse, summed over shards and classes.
  uint64_t retained_bytes() const;
  // Huge-page chunks mapped now.
  uint64_t chunks() const EXCLUDES(chunk_mu_);

  static constexpr uint32_t kChunkedClass = uint32_t{64} << 10;
  static constexpr uint64_t kChunkBytes = uint64_t{2} << 20;

 private:
  static constexpr int kClasses = 12;  // 512 B .. 1 MiB
  static int ClassOf(uint32_t size);   // -1 past kMaxClass

  struct alignas(64) SizeClass {
    mutable util::Mutex mu;
    std::vector<std::byte*> free GUARDED_BY(mu);
  };
  SizeClass& At(uint32_t shard, int c) { return classes_[size_t(shard) * kClasses + c]; }

  // Pushes `p` onto `sc`'s free list, or onto `spill` past the cap.
  void PushLocked(SizeClass& sc, int c, std::byte* p, std::vector<std::byte*>* spill)
      REQUIRES(sc.mu);
  // Memory for a new buffer of class c (malloc's, or a chunk's), and back.
  std::byte* NewBuffer(int c);
  void DropBuffers(std::span<std::byte* const> bufs, int c) EXCLUDES(chunk_mu_);
  // A buffer of class c (chunked) from the fullest chunk with one free.
  std::byte* FromChunk(int c) EXCLUDES(chunk_mu_);

  struct Chunk {
    std::byte* base = nullptr;
    std::vector<std::byte*> free;  // its buffers back from use
    uint32_t buffers = 0;          // how many it holds
  };

  const uint32_t shards_;
  const uint64_t retain_per_shard_;
  std::atomic<uint32_t> batch_cursor_{0};
  std::unique_ptr<SizeClass[]> classes_;  // [shard * kClasses + class]

  mutable util::Mutex chunk_mu_;
  // Every chunk by its base address; per class, the chunks with a free
  // buffer.
  std::unordered_map<uintptr_t, std::unique_ptr<Chunk>> chunks_ GUARDED_BY(chunk_mu_);
  std::array<std::vector<Chunk*>, kClasses> partial_ GUARDED_BY(chunk_mu_);
};

// HeaderCache: the allocator of ArcHeaders, sharded like BufferPool, with a
// capped free list per shard.
//
// Thread safety: every member function may be called from any thread.
class HeaderCache {
 public:
  // Keeps at most `retain_bytes` of free headers, split over `shards`.
  HeaderCache(uint64_t retain_bytes, uint32_t shards);
  ~HeaderCache();
  HeaderCache(const HeaderCache&) = delete;
  HeaderCache& operator=(const HeaderCache&) = delete;

  // A header in its initial state (all fields as ArcHeader's initializers).
  ArcHeader* New() NO_THREAD_SAFETY_ANALYSIS;  // try-locks in a loop
  // Takes back headers nothing links or refers to any more, into one shard
  // with one lock.
  void FreeBatch(std::span<ArcHeader* const> headers);
  // One header, into the calling thread's shard.
  void Free(ArcHeader* h);

 private:
  struct alignas(64) Shard {
    util::Mutex mu;
    std::vector<ArcHeader*> free GUARDED_BY(mu);
  };
  void FreeInto(Shard& s, std::span<ArcHeader* const> headers);

  const uint32_t shards_;
  const size_t retain_per_shard_;
  std::atomic<uint32_t> batch_cursor_{0};
  std::unique_ptr<Shard[]> shard_;
};

}  // namespace poolfs::core::arc
