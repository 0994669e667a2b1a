#include "arc/buffer_pool.h"

#include <bit>
#include <cstdlib>
#include <new>

namespace poolfs::core::arc {

BufferPool::BufferPool(uint64_t retain_bytes)
    : retain_bytes_(retain_bytes), classes_(new SizeClass[kClasses]) {}

BufferPool::~BufferPool() {
  for (int c = 0; c < kClasses; c++) {
    util::MutexLock l(&classes_[c].mu);
    for (std::byte* p : classes_[c].free) std::free(p);
    classes_[c].free.clear();
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
    SizeClass& sc = classes_[c];
    util::MutexLock l(&sc.mu);
    if (!sc.free.empty()) {
      std::byte* p = sc.free.back();
      sc.free.pop_back();
      return p;
    }
  }
  uint64_t bytes = ChargedSize(size);
  size_t align = bytes >= 4096 ? 4096 : kMinClass;
  bytes = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

void BufferPool::PushLocked(SizeClass& sc, int c, std::byte* p, std::vector<std::byte*>* spill) {
  if ((sc.free.size() + 1) * (uint64_t{kMinClass} << c) <= retain_bytes_) {
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
    SizeClass& sc = classes_[c];
    util::MutexLock l(&sc.mu);
    PushLocked(sc, c, p, &spill);
  }
  for (std::byte* s : spill) std::free(s);
}

void BufferPool::FreeBatch(std::span<const PoolBuf> bufs) {
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
  std::vector<std::byte*> spill;
  for (int c = 0; c < kClasses; c++) {
    if (!(present & (1u << c))) continue;
    SizeClass& sc = classes_[c];
    util::MutexLock l(&sc.mu);
    for (const PoolBuf& b : bufs) {
      if (b.data && ClassOf(b.size) == c) PushLocked(sc, c, b.data, &spill);
    }
  }
  for (std::byte* s : spill) std::free(s);
}

uint64_t BufferPool::retained_bytes() const {
  uint64_t total = 0;
  for (int c = 0; c < kClasses; c++) {
    util::MutexLock l(&classes_[c].mu);
    total += classes_[c].free.size() * (uint64_t{kMinClass} << c);
  }
  return total;
}

HeaderCache::HeaderCache(uint64_t retain_bytes) : retain_(retain_bytes / sizeof(ArcHeader)) {}

HeaderCache::~HeaderCache() {
  util::MutexLock l(&mu_);
  for (ArcHeader* h : free_) delete h;
  free_.clear();
}

ArcHeader* HeaderCache::New() {
  ArcHeader* h = nullptr;
  {
    util::MutexLock l(&mu_);
    if (!free_.empty()) {
      h = free_.back();
      free_.pop_back();
    }
  }
  if (!h) return new ArcHeader;
  h->~ArcHeader();
  return new (h) ArcHeader;
}

void HeaderCache::FreeBatch(std::span<ArcHeader* const> headers) {
  size_t kept = 0;
  {
    util::MutexLock l(&mu_);
    while (kept < headers.size() && free_.size() < retain_) free_.push_back(headers[kept++]);
  }
  for (size_t i = kept; i < headers.size(); i++) delete headers[i];
}

}  // namespace poolfs::core::arc
