#include "txg/txg_holds.h"

#include "util/check.h"

namespace poolfs::core::txg {

TxgHolds::TxgHolds(Txg first_open) : open_(first_open.value()) { POOLFS_CHECK_GE(first_open.value(), 1u); }

size_t TxgHolds::MyStripe() {
  static std::atomic<size_t> next{0};
  thread_local const size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return mine;
}

void TxgHolds::LockAll() const NO_THREAD_SAFETY_ANALYSIS {
  for (const Stripe& s : stripes_) s.mu.Lock();
}

void TxgHolds::UnlockAll() const NO_THREAD_SAFETY_ANALYSIS {
  for (size_t i = kStripes; i-- > 0;) stripes_[i].mu.Unlock();
}

Txg TxgHolds::Join() {
  Stripe& s = stripes_[MyStripe()];
  util::MutexLock l(&s.mu);
  if (refused_.load(std::memory_order_relaxed)) return Txg(0);
  const Txg txg(open_.load(std::memory_order_relaxed));
  const size_t slot = Slot(txg);
  s.holds[slot]++;
  // Most joins find the flag already set and only read the shared line.
  if (!slots_[slot].held.load(std::memory_order_relaxed)) {
    slots_[slot].held.store(true, std::memory_order_release);
  }
  return txg;
}

TxgHolds::LeaveResult TxgHolds::Leave(Txg txg, uint64_t bytes) {
  LeaveResult r;
  const size_t slot = Slot(txg);
  Stripe& s = stripes_[MyStripe()];
  util::MutexLock l(&s.mu);
  const uint64_t open = open_.load(std::memory_order_relaxed);
  POOLFS_DCHECK_LE(txg.value(), open);
  POOLFS_DCHECK_LT(open - txg.value(), kSlots);
  r.txg_closed = txg.value() != open;
  s.holds[slot]--;
  s.dirty[slot] += bytes;
  s.unpublished[slot] += bytes;
  const uint64_t pending = s.unpublished[slot];
  if (pending != 0 && pending >= batch_.load(std::memory_order_relaxed)) {
    // Under the stripe lock, so a Seal of this txg cannot miss these bytes
    // and a Retire cannot subtract them before they are added.
    s.unpublished[slot] = 0;
    slots_[slot].published.fetch_add(pending, std::memory_order_relaxed);
    total_.fetch_add(pending, std::memory_order_relaxed);
    r.published = true;
  }
  return r;
}

Txg TxgHolds::Close() NO_THREAD_SAFETY_ANALYSIS {
  LockAll();
  const Txg closed(open_.load(std::memory_order_relaxed));
  const Txg next(closed.value() + 1);
  const size_t slot = Slot(next);
  // The slot's last user (next - kSlots) has synced and been retired: its
  // stripes sum to no holds and no unpublished bytes, though single stripes
  // may be off by cross-stripe leaves.
  int64_t holds = 0;
  uint64_t unpublished = 0;
  for (Stripe& s : stripes_) {
    holds += s.holds[slot];
    unpublished += s.unpublished[slot];
    s.holds[slot] = 0;
    s.dirty[slot] = 0;
  }
  POOLFS_CHECK_EQ(holds, 0);
  POOLFS_CHECK_EQ(unpublished, 0u);
  slots_[slot].held.store(false, std::memory_order_relaxed);
  slots_[slot].published.store(0, std::memory_order_relaxed);
  open_.store(next.value(), std::memory_order_release);
  UnlockAll();
  return closed;
}

void TxgHolds::Refuse() {
  LockAll();
  refused_.store(true, std::memory_order_relaxed);
  UnlockAll();
}

int64_t TxgHolds::Outstanding(Txg txg) const {
  const size_t slot = Slot(txg);
  int64_t sum = 0;
  for (const Stripe& s : stripes_) {
    util::MutexLock l(&s.mu);
    sum += s.holds[slot];
  }
  return sum;
}

uint64_t TxgHolds::Seal(Txg txg) {
  POOLFS_CHECK_LT(txg.value(), open_.load(std::memory_order_relaxed));
  const size_t slot = Slot(txg);
  uint64_t exact = 0;
  for (Stripe& s : stripes_) {
    util::MutexLock l(&s.mu);
    exact += s.dirty[slot];
    const uint64_t pending = s.unpublished[slot];
    if (pending != 0) {
      s.unpublished[slot] = 0;
      slots_[slot].published.fetch_add(pending, std::memory_order_relaxed);
      total_.fetch_add(pending, std::memory_order_relaxed);
    }
  }
  POOLFS_CHECK_EQ(slots_[slot].published.load(std::memory_order_relaxed), exact);
  return exact;
}

void TxgHolds::PublishAll() {
  for (Stripe& s : stripes_) {
    util::MutexLock l(&s.mu);
    for (size_t slot = 0; slot < kSlots; slot++) {
      const uint64_t pending = s.unpublished[slot];
      if (pending == 0) continue;
      s.unpublished[slot] = 0;
      slots_[slot].published.fetch_add(pending, std::memory_order_relaxed);
      total_.fetch_add(pending, std::memory_order_relaxed);
    }
  }
}

void TxgHolds::Retire(Txg txg, uint64_t bytes) {
  const size_t slot = Slot(txg);
  POOLFS_CHECK_EQ(slots_[slot].published.load(std::memory_order_relaxed), bytes);
  const uint64_t before = total_.fetch_sub(bytes, std::memory_order_relaxed);
  POOLFS_CHECK_GE(before, bytes);
}

uint64_t TxgHolds::dirty_total() const { return total_.load(std::memory_order_relaxed); }

uint64_t TxgHolds::open_dirty() const {
  return slots_[Slot(open())].published.load(std::memory_order_relaxed);
}

uint64_t TxgHolds::ExactDirtyTotal() const NO_THREAD_SAFETY_ANALYSIS {
  LockAll();
  uint64_t sum = total_.load(std::memory_order_relaxed);
  for (const Stripe& s : stripes_) {
    for (uint64_t u : s.unpublished) sum += u;
  }
  UnlockAll();
  return sum;
}

}  // namespace poolfs::core::txg
