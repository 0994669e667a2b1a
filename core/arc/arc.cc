// The ARC's lookups, inserts, dirty blocks and statistics (eviction, Forget
// and EvictAll are in arc_evict.cc). The theory is in arc.h.
#include "arc/arc.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "util/check.h"

namespace poolfs::core::arc {

using util::MutexLock;

ArcData& ArcData::operator=(ArcData&& o) noexcept {
  if (this != &o) {
    if (data_) pool_->Free(data_, size_);
    pool_ = o.pool_;
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
  }
  return *this;
}

ArcData::~ArcData() {
  if (data_) pool_->Free(data_, size_);
}

ArcHandle::ArcHandle(const ArcHandle& o) : arc_(o.arc_), h_(o.h_) {
  if (h_) h_->refs.fetch_add(1, std::memory_order_relaxed);
}

void ArcHandle::Reset() {
  if (!h_) return;
  uint32_t prev = h_->refs.fetch_sub(1, std::memory_order_acq_rel);
  if (prev == (ArcHeader::kDetached | 1)) arc_->FreeDetached(h_);
  h_ = nullptr;
  arc_ = nullptr;
}

uint64_t Arc::DefaultMaxBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  uint64_t ram = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
  return std::max<uint64_t>(ram / 8, uint64_t{64} << 20);
}

uint32_t Arc::DefaultSublists() { return std::max(4u, std::thread::hardware_concurrency()); }

Arc::Arc(const ArcOptions& o)
    : nsub_(o.sublists ? o.sublists : DefaultSublists()),
      pool_(o.pool_retain_bytes, nsub_),
      headers_(o.pool_retain_bytes, nsub_),
      evict_batch_(std::max(1u, o.evict_batch)),
      c_(o.max_bytes ? o.max_bytes : DefaultMaxBytes()),
      p_(c_.load() / 2),
      stripes_(new Stripe[kStripes]),
      lists_(new Sublist[size_t{kListStates} * nsub_]) {
  // One bucket per 4 KiB of c: 8 bytes of table per 4 KiB cached.
  uint64_t want = std::clamp<uint64_t>(c_.load() / 4096, kStripes, uint64_t{1} << 23);
  buckets_.assign(std::bit_ceil(want), nullptr);
  if (o.evict_thread) evictor_ = std::thread([this] { EvictorMain(); });
}

Arc::~Arc() {
  if (evictor_.joinable()) {
    {
      MutexLock l(&evict_mu_);
      evict_stop_ = true;
      evict_cv_.SignalAll();
    }
    evictor_.join();
  }
  std::vector<ArcHeader*> all;
  for (size_t i = 0; i < size_t{kListStates} * nsub_; i++) {
    Sublist& l = lists_[i];
    MutexLock g(&l.mu);
    for (ArcHeader* h = l.head; h; h = h->next) all.push_back(h);
    l.head = l.tail = nullptr;
  }
  for (ArcHeader* h : all) {
    POOLFS_DCHECK((h->refs.load() & ArcHeader::kCountMask) == 0);
    h->state = ArcState::kGone;
  }
  FreeHeaders(all);
}

ArcHeader*& Arc::Bucket(const Stripe&, uint64_t hash) {
  return buckets_[hash & (buckets_.size() - 1)];
}

ArcHeader* Arc::Find(const Stripe& s, const BlockKey& key, uint64_t hash) {
  for (ArcHeader* h = Bucket(s, hash); h; h = h->hash_next) {
    if (h->hash == hash && h->key == key) return h;
  }
  return nullptr;
}

void Arc::HashRemove(const Stripe& s, ArcHeader* h) {
  ArcHeader** pp = &Bucket(s, h->hash);
  while (*pp != h) {
    POOLFS_CHECK(*pp != nullptr);
    pp = &(*pp)->hash_next;
  }
  *pp = h->hash_next;
  h->hash_next = nullptr;
}

void Arc::Link(Sublist& l, ArcHeader* h) {
  h->prev = nullptr;
  h->next = l.head;
  if (l.head) {
    l.head->prev = h;
  } else {
    l.tail = h;
  }
  l.head = h;
  l.bytes.store(l.bytes.load(std::memory_order_relaxed) + h->charged, std::memory_order_relaxed);
  l.blocks.store(l.blocks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void Arc::Unlink(Sublist& l, ArcHeader* h) {
  if (h->prev) {
    h->prev->next = h->next;
  } else {
    l.head = h->next;
  }
  if (h->next) {
    h->next->prev = h->prev;
  } else {
    l.tail = h->prev;
  }
  h->prev = h->next = nullptr;
  l.bytes.store(l.bytes.load(std::memory_order_relaxed) - h->charged, std::memory_order_relaxed);
  l.blocks.store(l.blocks.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

void Arc::Move(ArcHeader* h, ArcState to) {
  if (h->state == to) {
    Sublist& l = ListOf(to, h->hash);
    MutexLock g(&l.mu);
    if (l.head != h) {
      Unlink(l, h);
      Link(l, h);
    }
    return;
  }
  UnlinkFrom(h);
  LinkNew(h, to);
}

void Arc::LinkNew(ArcHeader* h, ArcState to) {
  h->state = to;
  Sublist& l = ListOf(to, h->hash);
  MutexLock g(&l.mu);
  Link(l, h);
}

void Arc::UnlinkFrom(ArcHeader* h) {
  Sublist& l = ListOf(h->state, h->hash);
  MutexLock g(&l.mu);
  Unlink(l, h);
}

uint64_t Arc::StateBytes(ArcState s) const {
  uint64_t total = 0;
  for (uint32_t i = 0; i < nsub_; i++) {
    total += lists_[int(s) * nsub_ + i].bytes.load(std::memory_order_relaxed);
  }
  return total;
}

uint64_t Arc::StateBlocks(ArcState s) const {
  uint64_t total = 0;
  for (uint32_t i = 0; i < nsub_; i++) {
    total += lists_[int(s) * nsub_ + i].blocks.load(std::memory_order_relaxed);
  }
  return total;
}

ArcHandle Arc::Lookup(const BlockKey& key) {
  uint64_t hash = key.Hash();
  Stripe& s = StripeOf(hash);
  MutexLock l(&s.mu);
  ArcHeader* h = Find(s, key, hash);
  if (!h || !IsCached(h->state)) {
    s.misses++;
    return {};
  }
  s.hits++;
  if (h->state == ArcState::kMru) {
    s.mru_hits++;
  } else {
    s.mfu_hits++;
  }
  h->refs.fetch_add(1, std::memory_order_relaxed);
  Move(h, ArcState::kMfu);
  return ArcHandle(this, h);
}

bool Arc::Contains(const BlockKey& key) {
  const uint64_t hash = key.Hash();
  Stripe& s = StripeOf(hash);
  MutexLock l(&s.mu);
  const ArcHeader* h = Find(s, key, hash);
  return h != nullptr && IsCached(h->state);
}

ArcData Arc::AllocData(uint32_t size) {
  POOLFS_CHECK_GT(size, 0u);
  return ArcData(&pool_, pool_.Alloc(size), size);
}

ArcHandle Arc::Insert(const BlockKey& key, ArcData data) {
  POOLFS_CHECK(data.data_ != nullptr);
  POOLFS_CHECK(data.pool_ == &pool_);
  const uint64_t charged = BufferPool::ChargedSize(data.size_);
  const uint64_t hash = key.Hash();
  Stripe& s = StripeOf(hash);
  // A ghost hit adapts p before this insert's own eviction runs (which could
  // otherwise trim the very ghost that was hit).
  ArcState ghost_hit = ArcState::kGone;
  {
    MutexLock l(&s.mu);
    ArcHeader* h = Find(s, key, hash);
    if (h && IsGhost(h->state)) {
      ghost_hit = h->state;
      if (ghost_hit == ArcState::kMruGhost) {
        s.mru_ghost_hits++;
      } else {
        s.mfu_ghost_hits++;
      }
    }
  }
  if (ghost_hit != ArcState::kGone) AdaptOnGhostHit(ghost_hit, charged);
  bool reserved = Reserve(charged);
  bool used_reservation = false;
  ArcHandle out;
  {
    MutexLock l(&s.mu);
    ArcHeader* h = Find(s, key, hash);
    if (h && IsCached(h->state)) {  // another reader inserted it first
      h->refs.fetch_add(1, std::memory_order_relaxed);
      Move(h, ArcState::kMfu);
      out = ArcHandle(this, h);
    } else if (reserved && h) {  // a ghost: it would have been a hit in a larger list
      UnlinkFrom(h);
      h->data = data.data_;
      h->size = data.size_;
      h->charged = uint32_t(charged);
      data.data_ = nullptr;
      h->refs.fetch_add(1, std::memory_order_relaxed);
      LinkNew(h, ArcState::kMfu);
      used_reservation = true;
      out = ArcHandle(this, h);
    } else if (reserved) {
      h = headers_.New();
      h->key = key;
      h->hash = hash;
      h->data = data.data_;
      h->size = data.size_;
      h->charged = uint32_t(charged);
      data.data_ = nullptr;
      h->refs.store(1, std::memory_order_relaxed);
      ArcHeader*& b = Bucket(s, hash);
      h->hash_next = b;
      b = h;
      // A block whose ghost was hit (and trimmed since) has been asked for twice.
      LinkNew(h, ghost_hit == ArcState::kGone ? ArcState::kMru : ArcState::kMfu);
      used_reservation = true;
      out = ArcHandle(this, h);
    }
  }
  if (reserved && !used_reservation) Unreserve(charged);
  if (!out) {  // no room: the caller still gets its block, outside the cache
    uncached_.fetch_add(1, std::memory_order_relaxed);
    out = Outside(key, hash, std::move(data));
  }
  if (used_reservation) MaybeWakeEvictor();
  return out;
}

ArcHandle Arc::Hold(const BlockKey& key, ArcData data) {
  POOLFS_CHECK(data.data_ != nullptr);
  POOLFS_CHECK(data.pool_ == &pool_);
  read_once_.fetch_add(1, std::memory_order_relaxed);
  return Outside(key, key.Hash(), std::move(data));
}

ArcHandle Arc::Outside(const BlockKey& key, uint64_t hash, ArcData data) {
  auto* h = headers_.New();
  h->key = key;
  h->hash = hash;
  h->data = data.data_;
  h->size = data.size_;
  h->charged = uint32_t(BufferPool::ChargedSize(data.size_));
  data.data_ = nullptr;
  h->state = ArcState::kGone;
  h->refs.store(ArcHeader::kDetached | 1, std::memory_order_release);
  return ArcHandle(this, h);
}

void Arc::AdaptOnGhostHit(ArcState ghost, uint64_t bytes) {
  uint64_t b1 = StateBytes(ArcState::kMruGhost);
  uint64_t b2 = StateBytes(ArcState::kMfuGhost);
  uint64_t c = c_.load(std::memory_order_relaxed);
  uint64_t p = p_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    if (ghost == ArcState::kMruGhost) {
      uint64_t delta = bytes * std::max<uint64_t>(1, b2 / std::max<uint64_t>(b1, 1));
      next = std::min(c, p + delta);
    } else {
      uint64_t delta = bytes * std::max<uint64_t>(1, b1 / std::max<uint64_t>(b2, 1));
      next = p > delta ? p - delta : 0;
    }
  } while (!p_.compare_exchange_weak(p, next, std::memory_order_relaxed));
}

void Arc::FreeDetached(ArcHeader* h) {
  pool_.Free(h->data, h->size);
  headers_.Free(h);
}

void Arc::FreeHeaders(std::span<ArcHeader* const> headers) {
  if (headers.empty()) return;
  std::vector<PoolBuf> bufs;
  bufs.reserve(headers.size());
  for (ArcHeader* h : headers)
    if (h->data) bufs.push_back({h->data, h->size});
  if (bufs.size() == 1) {
    pool_.Free(bufs[0].data, bufs[0].size);
  } else {
    pool_.FreeBatch(bufs);
  }
  headers_.FreeBatch(headers);
}

void Arc::SetMaxBytes(uint64_t max_bytes) {
  uint64_t c = max_bytes ? max_bytes : DefaultMaxBytes();
  c_.store(c, std::memory_order_relaxed);
  uint64_t p = p_.load(std::memory_order_relaxed);
  while (p > c && !p_.compare_exchange_weak(p, c, std::memory_order_relaxed)) {
  }
  int idle = 0;
  while (cached_bytes() > c && idle < 4) {
    if (EvictSome(cached_bytes() - c) == 0) idle++;
  }
}

ArcStats Arc::Stats() const {
  ArcStats st;
  st.max_bytes = c_.load(std::memory_order_relaxed);
  st.target_mru_bytes = p_.load(std::memory_order_relaxed);
  st.sublists = nsub_;
  for (uint32_t i = 0; i < kStripes; i++) {
    const Stripe& s = stripes_[i];
    MutexLock l(&s.mu);
    st.hits += s.hits;
    st.misses += s.misses;
    st.mru_hits += s.mru_hits;
    st.mfu_hits += s.mfu_hits;
    st.mru_ghost_hits += s.mru_ghost_hits;
    st.mfu_ghost_hits += s.mfu_ghost_hits;
  }
  for (size_t i = 0; i < size_t{kListStates} * nsub_; i++) {
    const Sublist& l = lists_[i];
    MutexLock g(&l.mu);
    st.evictions += l.evictions;
    st.evict_skipped_held += l.skipped_held;
  }
  st.ghost_evictions = ghost_evictions_.load(std::memory_order_relaxed);
  st.hash_lock_misses = hash_lock_misses_.load(std::memory_order_relaxed);
  st.sublist_lock_misses = sublist_lock_misses_.load(std::memory_order_relaxed);
  st.uncached = uncached_.load(std::memory_order_relaxed);
  st.read_once = read_once_.load(std::memory_order_relaxed);
  st.forgotten = forgotten_.load(std::memory_order_relaxed);
  st.cached_bytes = cached_bytes();
  st.mru_bytes = StateBytes(ArcState::kMru);
  st.mfu_bytes = StateBytes(ArcState::kMfu);
  st.mru_ghost_bytes = StateBytes(ArcState::kMruGhost);
  st.mfu_ghost_bytes = StateBytes(ArcState::kMfuGhost);
  st.mru_blocks = StateBlocks(ArcState::kMru);
  st.mfu_blocks = StateBlocks(ArcState::kMfu);
  st.mru_ghost_blocks = StateBlocks(ArcState::kMruGhost);
  st.mfu_ghost_blocks = StateBlocks(ArcState::kMfuGhost);
  st.pool_retained_bytes = pool_.retained_bytes();
  return st;
}

}  // namespace poolfs::core::arc
