// BufferPool: the memory allocator of the ARC's data buffers.
//
// Every cached block's bytes come from here and go back here. Buffers are
// sized in power-of-two classes from 512 B to 1 MiB (a request is rounded up
// to its class; what the cache charges against arc.max_bytes is the class
// size, the memory really used). Each class keeps a free list of buffers
// under its own mutex, up to `retain_bytes` per class; what is freed beyond
// that goes back to the C library. Larger requests bypass the free lists.
//
// Why a pool of our own rather than malloc: the ARC churns through buffers of
// a few sizes at a high rate from many threads, and glibc's per-thread arenas
// then keep freed memory in whichever arena freed it, so the daemon's RSS
// drifts above the cache's bound. A shared pool with a retention cap reuses
// memory across threads and bounds what sits unused. Its price is one shared
// lock per class, which is why FreeBatch exists: whoever frees many buffers at
// once (eviction, the end of a txg sync, unmount) takes each class lock once
// per batch instead of once per buffer.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "arc/arc_buf.h"
#include "util/mutex.h"

namespace poolfs::core::arc {

// One buffer handed back in a batch: its bytes and the size it was asked with.
struct PoolBuf {
  std::byte* data = nullptr;
  uint32_t size = 0;
};

class BufferPool {
 public:
  static constexpr uint32_t kMinClass = 512;
  static constexpr uint32_t kMaxClass = uint32_t{1} << 20;

  // `retain_bytes` bounds the free bytes each size class keeps for reuse.
  explicit BufferPool(uint64_t retain_bytes = uint64_t{8} << 20);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // The bytes a request of `size` really takes (its class size; `size`
  // itself past kMaxClass).
  static uint64_t ChargedSize(uint32_t size);

  // Returns a buffer of at least `size` bytes (aligned to 4 KiB from 4 KiB
  // up, to 512 B below). Aborts like operator new when memory runs out.
  std::byte* Alloc(uint32_t size);

  // Gives back one buffer that Alloc(size) returned: one lock round trip.
  void Free(std::byte* p, uint32_t size);

  // Gives back many buffers, taking each class's lock once.
  void FreeBatch(std::span<const PoolBuf> bufs);

  // Free bytes kept for reuse, summed over the classes.
  uint64_t retained_bytes() const;

 private:
  static constexpr int kClasses = 12;  // 512 B .. 1 MiB
  static int ClassOf(uint32_t size);   // -1 past kMaxClass

  struct alignas(64) SizeClass {
    mutable util::Mutex mu;
    std::vector<std::byte*> free GUARDED_BY(mu);
  };

  // Pushes `p` onto class `c`'s free list, or onto `spill` past the cap.
  void PushLocked(SizeClass& sc, int c, std::byte* p, std::vector<std::byte*>* spill)
      REQUIRES(sc.mu);

  const uint64_t retain_bytes_;
  std::unique_ptr<SizeClass[]> classes_;
};

// HeaderCache: the allocator of ArcHeaders, a free list under one mutex with
// a cap on what it keeps. Like BufferPool, it exists so that whoever frees
// many headers at once (eviction dropping ghosts, Forget, unmount) takes one
// lock per batch, and so that headers are reused across threads instead of
// piling up in glibc's per-thread arenas.
//
// Thread safety: every member function may be called from any thread.
class HeaderCache {
 public:
  // Keeps at most `retain_bytes` of free headers.
  explicit HeaderCache(uint64_t retain_bytes);
  ~HeaderCache();
  HeaderCache(const HeaderCache&) = delete;
  HeaderCache& operator=(const HeaderCache&) = delete;

  // A header in its initial state (all fields as ArcHeader's initializers).
  ArcHeader* New();
  // Takes back headers the cache no longer links or refers to: one lock.
  void FreeBatch(std::span<ArcHeader* const> headers);
  void Free(ArcHeader* h) { FreeBatch({&h, 1}); }

 private:
  const size_t retain_;
  util::Mutex mu_;
  std::vector<ArcHeader*> free_ GUARDED_BY(mu_);
};

}  // namespace poolfs::core::arc
