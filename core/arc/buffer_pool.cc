#include "arc/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

#include "util/check.h"

namespace poolfs::core::arc {

namespace {
std::atomic<uint32_t> g_next_slot{0};
thread_local uint32_t t_slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
}  // namespace

uint32_t ThreadSlot() { return t_slot; }

BufferPool::BufferPool(uint64_t retain_bytes, uint32_t shards)
    : shards_(shards),
      retain_per_shard_(retain_bytes / std::max(1u, shards)),
      classes_(new SizeClass[size_t(std::max(1u, shards)) * kClasses]) {
  POOLFS_CHECK_GT(shards, 0u);
}

BufferPool::~BufferPool() {
  for (size_t i = 0; i < size_t(shards_) * kClasses; i++) {
    std::vector<std::byte*> bufs;
    {
      util::MutexLock l(&classes_[i].mu);
      bufs.swap(classes_[i].free);
    }
    DropBuffers(bufs, int(i % kClasses));
  }
  // Chunks with buffers still out (a caller's leak) go too.
  util::MutexLock l(&chunk_mu_);
  for (auto& [base, chunk] : chunks_) munmap(chunk->base, kChunkBytes);
}

uint64_t BufferPool::chunks() const {
  util::MutexLock l(&chunk_mu_);
  return chunks_.size();
}

std::byte* BufferPool::NewBuffer(int c) {
  const uint64_t bytes = uint64_t{kMinClass} << c;
  if (bytes >= kChunkedClass) return FromChunk(c);
  const size_t align = bytes >= 4096 ? 4096 : kMinClass;
  void* p = std::aligned_alloc(align, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

std::byte* BufferPool::FromChunk(int c) {
  const uint64_t bytes = uint64_t{kMinClass} << c;
  util::MutexLock l(&chunk_mu_);
  std::vector<Chunk*>& partial = partial_[c];
  if (partial.empty()) {
    // 2 MiB aligned: map twice that and trim both ends.
    void* m =
        mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t raw = reinterpret_cast<uintptr_t>(m);
    const uintptr_t base = (raw + kChunkBytes - 1) & ~uintptr_t(kChunkBytes - 1);
    if (base > raw) munmap(m, base - raw);
    if (raw + 2 * kChunkBytes > base + kChunkBytes)
      munmap(reinterpret_cast<void*>(base + kChunkBytes),
             raw + 2 * kChunkBytes - base - kChunkBytes);
    madvise(reinterpret_cast<void*>(base), kChunkBytes, MADV_HUGEPAGE);  // best effort
    auto chunk = std::make_unique<Chunk>();
    chunk->base = reinterpret_cast<std::byte*>(base);
    chunk->buffers = uint32_t(kChunkBytes / bytes);
    for (uint32_t i = chunk->buffers; i-- > 0;) chunk->free.push_back(chunk->base + i * bytes);
    partial.push_back(chunk.get());
    chunks_.emplace(base, std::move(chunk));
  }
  // The fullest chunk, so that the emptier ones can empty.
  auto fullest = std::min_element(partial.begin(), partial.end(), [](Chunk* a, Chunk* b) {
    return a->free.size() < b->free.size();
  });
  Chunk* chunk = *fullest;
  std::byte* p = chunk->free.back();
  chunk->free.pop_back();
  if (chunk->free.empty()) partial.erase(fullest);
  return p;
}

void BufferPool::DropBuffers(std::span<std::byte* const> bufs, int c) {
  if (bufs.empty()) return;
  if ((uint64_t{kMinClass} << c) < kChunkedClass) {
    for (std::byte* p : bufs) std::free(p);
    return;
  }
  util::MutexLock l(&chunk_mu_);
  std::vector<Chunk*>& partial = partial_[c];
  for (std::byte* p : bufs) {
    auto it = chunks_.find(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(kChunkBytes - 1));
    POOLFS_CHECK(it != chunks_.end());
    Chunk* chunk = it->second.get();
    chunk->free.push_back(p);
    if (chunk->free.size() == 1) partial.push_back(chunk);
    if (chunk->free.size() < chunk->buffers) continue;
    // Every buffer back: the chunk goes.
    partial.erase(std::find(partial.begin(), partial.end(), chunk));
    munmap(chunk->base, kChunkBytes);
    chunks_.erase(it);
  }
}

int BufferPool::ClassOf(uint32_t size) {
  if (size > kMaxClass) return -1;
  if (size <= kMinClass) return 0;
  return std::bit_width(size - 1) - std::bit_width(kMinClass - 1);
}

uint64_t BufferPool::ChargedSize(uint32_t size) {
  int c = ClassOf(size);
  return c < 0 ? size : uint64_t{kMinClass} << c;
}

std::byte* BufferPool::Alloc(uint32_t size) {
  int c = ClassOf(size);
  if (c >= 0) {
    // The thread's own shard, then any other whose lock is free right now.
    const uint32_t own = ThreadSlot() % shards_;
    for (uint32_t k = 0; k < shards_; k++) {
      SizeClass& sc = At((own + k) % shards_, c);
      if (k == 0) {
        sc.mu.Lock();
      } else if (!sc.mu.TryLock()) {
        continue;
      }
      std::byte* p = nullptr;
      if (!sc.free.empty()) {
        p = sc.free.back();
        sc.free.pop_back();
      }
      sc.mu.Unlock();
      if (p) return p;
    }
  }
  if (c >= 0) return NewBuffer(c);
  const uint64_t bytes = (uint64_t{size} + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

void BufferPool::PushLocked(SizeClass& sc, int c, std::byte* p, std::vector<std::byte*>* spill) {
  if ((sc.free.size() + 1) * (uint64_t{kMinClass} << c) <= retain_per_shard_) {
    sc.free.push_back(p);
  } else {
    spill->push_back(p);
  }
}

void BufferPool::Free(std::byte* p, uint32_t size) {
  if (!p) return;
  int c = ClassOf(size);
  if (c < 0) {
    std::free(p);
    return;
  }
  std::vector<std::byte*> spill;
  {
    SizeClass& sc = At(ThreadSlot() % shards_, c);
    util::MutexLock l(&sc.mu);
    PushLocked(sc, c, p, &spill);
  }
  DropBuffers(spill, c);
}

void BufferPool::FreeBatch(std::span<const PoolBuf> bufs) {
  if (bufs.empty()) return;
  uint32_t present = 0;  // bit c: the batch has a buffer of class c
  for (const PoolBuf& b : bufs) {
    if (!b.data) continue;
    int c = ClassOf(b.size);
    if (c < 0) {
      std::free(b.data);
    } else {
      present |= 1u << c;
    }
  }
  const uint32_t shard = batch_cursor_.fetch_add(1, std::memory_order_relaxed) % shards_;
  std::vector<std::byte*> spill;
  for (int c = 0; c < kClasses; c++) {
    if (!(present & (1u << c))) continue;
    spill.clear();
    {
      SizeClass& sc = At(shard, c);
      util::MutexLock l(&sc.mu);
      for (const PoolBuf& b : bufs) {
        if (b.data && ClassOf(b.size) == c) PushLocked(sc, c, b.data, &spill);
      }
    }
    DropBuffers(spill, c);
  }
}

uint64_t BufferPool::retained_bytes() const {
  uint64_t total = 0;
  for (size_t i = 0; i < size_t(shards_) * kClasses; i++) {
    util::MutexLock l(&classes_[i].mu);
    total += classes_[i].free.size() * (uint64_t{kMinClass} << (i % kClasses));
  }
  return total;
}

HeaderCache::HeaderCache(uint64_t retain_bytes, uint32_t shards)
    : shards_(shards),
      retain_per_shard_(retain_bytes / sizeof(ArcHeader) / std::max(1u, shards)),
      shard_(new Shard[std::max(1u, shards)]) {
  POOLFS_CHECK_GT(shards, 0u);
}

HeaderCache::~HeaderCache() {
  for (uint32_t i = 0; i < shards_; i++) {
    util::MutexLock l(&shard_[i].mu);
    for (ArcHeader* h : shard_[i].free) delete h;
    shard_[i].free.clear();
  }
}

ArcHeader* HeaderCache::New() {
  ArcHeader* h = nullptr;
  // The thread's own shard, then any other whose lock is free right now.
  const uint32_t own = ThreadSlot() % shards_;
  for (uint32_t k = 0; k < shards_ && !h; k++) {
    Shard& s = shard_[(own + k) % shards_];
    if (k == 0) {
      s.mu.Lock();
    } else if (!s.mu.TryLock()) {
      continue;
    }
    if (!s.free.empty()) {
      h = s.free.back();
      s.free.pop_back();
    }
    s.mu.Unlock();
  }
  if (!h) return new ArcHeader;
  h->~ArcHeader();
  return new (h) ArcHeader;
}

void HeaderCache::FreeInto(Shard& s, std::span<ArcHeader* const> headers) {
  size_t kept = 0;
  {
    util::MutexLock l(&s.mu);
    while (kept < headers.size() && s.free.size() < retain_per_shard_) {
      s.free.push_back(headers[kept++]);
    }
  }
  for (size_t i = kept; i < headers.size(); i++) delete headers[i];
}

void HeaderCache::FreeBatch(std::span<ArcHeader* const> headers) {
  if (headers.empty()) return;
  FreeInto(shard_[batch_cursor_.fetch_add(1, std::memory_order_relaxed) % shards_], headers);
}

void HeaderCache::Free(ArcHeader* h) { FreeInto(shard_[ThreadSlot() % shards_], {&h, 1}); }

}  // namespace poolfs::core::arc
