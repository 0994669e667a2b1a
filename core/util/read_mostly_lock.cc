#include "util/read_mostly_lock.h"

#include <atomic>

#include "util/check.h"

namespace poolfs::util {

namespace {
std::atomic<uint32_t> g_next_thread_slot{0};
thread_local uint32_t t_slot = g_next_thread_slot.fetch_add(1, std::memory_order_relaxed);
}  // namespace

ReadMostlyLock::ReadMostlyLock(uint32_t stripes) : n_(stripes), stripes_(new Stripe[stripes]) {
  POOLFS_CHECK_GT(stripes, 0u);
}

uint32_t ReadMostlyLock::ThreadStripe() const { return t_slot % n_; }

void ReadMostlyLock::WriteLock() {
  for (uint32_t i = 0; i < n_; i++) stripes_[i].mu.lock();
}

void ReadMostlyLock::WriteUnlock() {
  for (uint32_t i = n_; i-- > 0;) stripes_[i].mu.unlock();
}

}  // namespace poolfs::util
