// A counting global operator new/delete for the benchmarks: memory figures
// come from the bytes really allocated, not from estimates.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "bench_util.h"

namespace {
std::atomic<int64_t> g_live{0};

void* Allocate(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  g_live.fetch_add(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
void Release(void* p) {
  if (!p) return;
  g_live.fetch_sub(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, size_t) noexcept { Release(p); }
void operator delete[](void* p, size_t) noexcept { Release(p); }

namespace poolfs::bench {
uint64_t LiveHeapBytes() { return uint64_t(g_live.load(std::memory_order_relaxed)); }
}  // namespace poolfs::bench
