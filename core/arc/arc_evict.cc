// The ARC's eviction (the evictor thread and direct reclaim), Forget and
// EvictAll: everything that takes blocks out of the cache in batches. The
// theory is in arc.h.
#include <algorithm>
#include <chrono>
#include <limits>

#include "arc/arc.h"
#include "util/check.h"

namespace poolfs::core::arc {

using util::MutexLock;

namespace {
constexpr uint64_t kNoGoal = std::numeric_limits<uint64_t>::max();
}  // namespace

bool Arc::Reserve(uint64_t bytes) {
  int idle = 0;
  const int max_idle = int(2 * nsub_ + 4);
  for (;;) {
    uint64_t cur = cached_bytes_.load(std::memory_order_relaxed);
    uint64_t c = c_.load(std::memory_order_relaxed);
    if (cur + bytes <= c) {
      if (cached_bytes_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed)) {
        return true;
      }
      continue;
    }
    if (bytes > c) return false;
    if (EvictSome(cur + bytes - c) == 0 && ++idle >= max_idle) return false;
  }
}

void Arc::MaybeWakeEvictor() {
  if (!evictor_.joinable()) return;
  uint64_t c = c_.load(std::memory_order_relaxed);
  if (cached_bytes() <= c - c / 64) return;
  if (evict_wanted_.load(std::memory_order_relaxed)) return;
  if (evict_wanted_.exchange(true, std::memory_order_acq_rel)) return;
  MutexLock l(&evict_mu_);
  evict_cv_.Signal();
}

void Arc::EvictorMain() {
  for (;;) {
    {
      MutexLock l(&evict_mu_);
      while (!evict_stop_ && !evict_wanted_.load(std::memory_order_acquire)) {
        evict_cv_.Wait(&evict_mu_);
      }
      if (evict_stop_) return;
    }
    int idle = 0;
    for (;;) {
      uint64_t c = c_.load(std::memory_order_relaxed);
      if (cached_bytes() <= c - c / 32) break;
      if (EvictSome(kNoGoal) == 0 && ++idle >= 4) break;
    }
    evict_wanted_.store(false, std::memory_order_release);
    if (idle >= 4) {  // only held blocks left: do not spin, look again later
      MutexLock l(&evict_mu_);
      if (!evict_stop_) evict_cv_.WaitFor(&evict_mu_, std::chrono::milliseconds(10));
    }
  }
}

uint64_t Arc::EvictSome(uint64_t goal) {
  uint64_t mru = StateBytes(ArcState::kMru);
  uint64_t mfu = StateBytes(ArcState::kMfu);
  ArcState first =
      (mru > p_.load(std::memory_order_relaxed) || mfu == 0) ? ArcState::kMru : ArcState::kMfu;
  ArcState second = first == ArcState::kMru ? ArcState::kMfu : ArcState::kMru;
  uint64_t freed = 0;
  for (ArcState s : {first, second}) {
    if (StateBlocks(s) == 0) continue;
    for (uint32_t tries = 0; tries < nsub_ && freed == 0; tries++) {
      size_t n = 0;
      freed += EvictBatch(s, goal, /*drop=*/false, &n);
    }
    if (freed) break;
  }
  if (freed) TrimGhosts();
  return freed;
}

void Arc::TrimGhosts() {
  uint64_t c = c_.load(std::memory_order_relaxed);
  uint64_t mru = StateBytes(ArcState::kMru), mfu = StateBytes(ArcState::kMfu);
  uint64_t b1 = StateBytes(ArcState::kMruGhost), b2 = StateBytes(ArcState::kMfuGhost);
  size_t n = 0;
  if (b1 > 0 && mru + b1 > c) EvictBatch(ArcState::kMruGhost, kNoGoal, true, &n);
  b1 = StateBytes(ArcState::kMruGhost);
  if (b2 > 0 && mru + mfu + b1 + b2 > 2 * c) EvictBatch(ArcState::kMfuGhost, kNoGoal, true, &n);
}

uint64_t Arc::EvictBatch(ArcState state, uint64_t goal, bool drop, size_t* n) {
  // Try-lock sublists from the cursor on; block on the last one if all are busy.
  Sublist* l = nullptr;
  for (uint32_t k = 0; k < nsub_; k++) {
    uint32_t i = cursor_[int(state)].fetch_add(1, std::memory_order_relaxed) % nsub_;
    Sublist& cand = lists_[int(state) * nsub_ + i];
    if (k + 1 == nsub_) {
      cand.mu.Lock();
      l = &cand;
      break;
    }
    if (cand.mu.TryLock()) {
      l = &cand;
      break;
    }
    sublist_lock_misses_.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<PoolBuf> bufs;
  std::vector<ArcHeader*> dead;
  bufs.reserve(evict_batch_);
  uint64_t freed =
      EvictFrom(*l, state, goal, drop, std::max<size_t>(evict_batch_ * 16, 256), &bufs, &dead, n);
  l->mu.Unlock();
  // Outside every list lock: one pool lock for the batch's buffers.
  pool_.FreeBatch(bufs);
  headers_.FreeBatch(dead);
  return freed;
}

uint64_t Arc::EvictFrom(Sublist& l, ArcState state, uint64_t goal, bool drop, size_t scan_limit,
                        std::vector<PoolBuf>* bufs, std::vector<ArcHeader*>* dead, size_t* n) {
  uint64_t freed = 0;
  size_t done = 0, scanned = 0;
  const bool ghost = IsGhost(state);
  ArcHeader* h = l.tail;
  while (h && done < evict_batch_ && freed < goal && scanned < scan_limit) {
    scanned++;
    ArcHeader* prev = h->prev;
    Stripe& s = StripeOf(h->hash);
    if (!s.mu.TryLock()) {
      hash_lock_misses_.fetch_add(1, std::memory_order_relaxed);
      h = prev;
      continue;
    }
    // A header being forgotten is out of the hash and no longer in `state`;
    // Forget unlinks it itself.
    if (h->state != state) {
      s.mu.Unlock();
      h = prev;
      continue;
    }
    if ((h->refs.load(std::memory_order_acquire) & ArcHeader::kCountMask) != 0) {
      l.skipped_held++;
      s.mu.Unlock();
      h = prev;
      continue;
    }
    Unlink(l, h);
    if (!ghost) {
      bufs->push_back({h->data, h->size});
      h->data = nullptr;
      cached_bytes_.fetch_sub(h->charged, std::memory_order_relaxed);
      freed += h->charged;
      l.evictions++;
    } else {
      ghost_evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    if (ghost || drop) {
      HashRemove(s, h);
      h->state = ArcState::kGone;
      dead->push_back(h);
    } else {
      ArcState g = state == ArcState::kMru ? ArcState::kMruGhost : ArcState::kMfuGhost;
      h->state = g;
      Sublist& gl = ListOf(g, h->hash);
      MutexLock gg(&gl.mu);
      Link(gl, h);
    }
    s.mu.Unlock();
    done++;
    h = prev;
  }
  *n += done;
  return ghost ? done : freed;
}

size_t Arc::Forget(std::span<const BlockKey> keys) {
  // Phase 1, one lock per hash stripe: take the blocks out of the hash table.
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (hash, index in keys)
  order.reserve(keys.size());
  for (uint32_t i = 0; i < keys.size(); i++) order.emplace_back(keys[i].Hash(), i);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return (a.first & (kStripes - 1)) < (b.first & (kStripes - 1));
  });
  struct Item {
    ArcHeader* h;
    ArcState was;
    uint32_t list;  // index into lists_
  };
  std::vector<Item> items;
  for (size_t i = 0; i < order.size();) {
    Stripe& s = StripeOf(order[i].first);
    MutexLock l(&s.mu);
    size_t j = i;
    for (; j < order.size() && &StripeOf(order[j].first) == &s; j++) {
      ArcHeader* h = Find(s, keys[order[j].second], order[j].first);
      if (!h) continue;
      HashRemove(s, h);
      items.push_back({h, h->state, uint32_t(int(h->state) * nsub_ + SublistIndex(h->hash))});
      h->state = ArcState::kGone;  // the evictor now passes it over
    }
    i = j;
  }
  // Phase 2, one lock per sublist: unlink them.
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.list < b.list; });
  for (size_t i = 0; i < items.size();) {
    Sublist& l = lists_[items[i].list];
    MutexLock g(&l.mu);
    size_t j = i;
    for (; j < items.size() && items[j].list == items[i].list; j++) Unlink(l, items[j].h);
    i = j;
  }
  // Phase 3: free what nobody holds; a held block goes with its last handle.
  std::vector<ArcHeader*> dead;
  uint64_t uncharged = 0;
  for (const Item& it : items) {
    if (IsCached(it.was)) uncharged += it.h->charged;
    uint32_t prev = it.h->refs.fetch_or(ArcHeader::kDetached, std::memory_order_acq_rel);
    if ((prev & ArcHeader::kCountMask) == 0) dead.push_back(it.h);
  }
  if (uncharged) Unreserve(uncharged);
  forgotten_.fetch_add(items.size(), std::memory_order_relaxed);
  FreeHeaders(dead);
  return items.size();
}

bool Arc::Forget(const BlockKey& key) {
  const uint64_t hash = key.Hash();
  ArcHeader* h;
  ArcState was;
  {
    Stripe& s = StripeOf(hash);
    MutexLock l(&s.mu);
    h = Find(s, key, hash);
    if (!h) return false;
    HashRemove(s, h);
    was = h->state;
    h->state = ArcState::kGone;
  }
  {
    Sublist& l = ListOf(was, hash);
    MutexLock g(&l.mu);
    Unlink(l, h);
  }
  if (IsCached(was)) Unreserve(h->charged);
  forgotten_.fetch_add(1, std::memory_order_relaxed);
  uint32_t prev = h->refs.fetch_or(ArcHeader::kDetached, std::memory_order_acq_rel);
  if ((prev & ArcHeader::kCountMask) == 0) {
    pool_.Free(h->data, h->size);
    headers_.Free(h);
  }
  return true;
}

size_t Arc::EvictAll() {
  for (int s = 0; s < kListStates; s++) {
    for (uint32_t i = 0; i < nsub_; i++) {
      Sublist& l = lists_[s * nsub_ + i];
      for (;;) {
        std::vector<PoolBuf> bufs;
        std::vector<ArcHeader*> dead;
        size_t n = 0;
        {
          MutexLock g(&l.mu);
          EvictFrom(l, ArcState(s), kNoGoal, /*drop=*/true, std::numeric_limits<size_t>::max(),
                    &bufs, &dead, &n);
        }
        pool_.FreeBatch(bufs);
        headers_.FreeBatch(dead);
        forgotten_.fetch_add(n, std::memory_order_relaxed);
        if (n == 0) break;
      }
    }
  }
  return StateBlocks(ArcState::kMru) + StateBlocks(ArcState::kMfu);
}

}  // namespace poolfs::core::arc
