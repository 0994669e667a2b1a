// ObjectCache: in-memory objects (a dataset's dnodes, a mount's inodes)
// by 64-bit key, shared by reference count and bounded in number, with
// CLOCK eviction.
//
// Theory
// ------
// Entries live in 64 shards picked by key, each a hash table under its own
// mutex, held only to find, insert or erase: there is no cache-wide lock.
// A shard's table is open addressing with linear probing, the key, the
// reference and the bit inline in one 32-byte slot: a lookup touches one
// slot (one cache miss in a large table), where a node-based map touched a
// bucket and a chain of nodes (measured: std::unordered_map's finds were 7%
// of the daemon's CPU under createmany, the misses of ~120,000 dnodes).
// Erase shifts the probe run back (no tombstones); the table doubles at 3/4
// full and halves below 1/8.
// An entry is a shared_ptr<T> and a referenced bit, which Find and the
// inserts set. References are only ever handed out under the shard's lock,
// so under that lock use_count() == 1 means that nobody but the cache holds
// the object: it may go, and nobody can be using it.
//
// The bound: a shard holds up to limit / 64 entries (its share, at least
// 1). An insert that takes its shard past its share sweeps the shard, from
// where the last sweep stopped (the clock hand): an entry whose bit is set
// loses it (a second chance); one whose bit is clear, that nobody else
// holds and that `evictable` accepts (the owner's test: clean, not in use,
// taken under the object's own lock) leaves. A sweep stops at 7/8 of the
// share or after two turns of the hand. Entries that cannot go (held, or
// dirty) may keep a shard above its share; the next sweep then waits until
// the shard has grown by a quarter, so a sweep costs O(1) per insert
// however many entries are pinned; Trim sweeps each shard above its share
// at once (its owner calls it when many objects became evictable). Evicted
// objects are destroyed together, after the shard's lock is released.
//
// Lock order: a shard's mutex, then whatever `evictable` takes (it should
// try-lock, so that a busy object is simply skipped).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "poolfs/status.h"
#include "util/check.h"
#include "util/mutex.h"

namespace poolfs::util {

template <typename T>
class ObjectCache {
 public:
  using Ref = std::shared_ptr<T>;
  // May `obj` (held by nobody but the cache) leave? Called under the
  // shard's lock.
  using Evictable = std::function<bool(T& obj)>;

  static constexpr size_t kShards = 64;

  // No bound until SetLimit.
  explicit ObjectCache(Evictable evictable = nullptr) : evictable_(std::move(evictable)) {}

  // At most about `limit` entries (those that can go); applies from the
  // next insert of each shard.
  void SetLimit(uint64_t limit) {
    share_.store(std::max<uint64_t>(limit / kShards, 1), std::memory_order_relaxed);
  }
  uint64_t limit() const {
    const uint64_t share = share_.load(std::memory_order_relaxed);
    return share == kNoLimit ? kNoLimit : share * kShards;
  }

  // The object under `key`, or nullptr.
  Ref Find(uint64_t key) {
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    Slot* e = s.table.Find(key);
    if (!e) return nullptr;
    e->referenced = true;
    return e->ref;
  }

  // The object under `key`; when absent, `load()` (a Result<Ref>) makes it,
  // under the shard's lock, so that a key is loaded once at a time: load
  // must not call back into this cache.
  template <typename Load>
  Result<Ref> FindOrLoad(uint64_t key, Load load) {
    std::vector<Ref> evicted;  // destroyed after the lock is released
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    if (Slot* e = s.table.Find(key)) {
      e->referenced = true;
      return e->ref;
    }
    Result<Ref> made = load();
    if (!made.ok()) return made.status();
    Ref ref = *made;
    POOLFS_CHECK(ref != nullptr);
    s.table.Insert(key, ref);
    Sweep(s, &evicted);
    return ref;
  }

  // Inserts `ref` unless `key` is present; returns the object now under key.
  Ref InsertIfAbsent(uint64_t key, Ref ref) {
    return *FindOrLoad(key, [&]() -> Result<Ref> { return std::move(ref); });
  }

  // Inserts `ref`, replacing whatever was under `key`.
  void Replace(uint64_t key, Ref ref) {
    std::vector<Ref> evicted;
    POOLFS_CHECK(ref != nullptr);
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    if (Slot* e = s.table.Find(key)) {
      evicted.push_back(std::move(e->ref));
      e->ref = std::move(ref);
      e->referenced = true;
    } else {
      s.table.Insert(key, std::move(ref));
    }
    Sweep(s, &evicted);
  }

  void Erase(uint64_t key) {
    Ref drop;
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    Slot* e = s.table.Find(key);
    if (!e) return;
    drop = std::move(e->ref);
    s.table.Erase(e);
  }

  // Drops `held` (the caller's reference to the object under `key`) from
  // the cache if nobody else holds it and `evictable` accepts it.
  bool TryEvict(uint64_t key, const Ref& held) {
    Ref drop;
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    Slot* e = s.table.Find(key);
    // The cache's reference and the caller's: nobody else can see it.
    if (!e || e->ref != held || held.use_count() != 2) return false;
    if (evictable_ && !evictable_(*held)) return false;
    drop = std::move(e->ref);
    s.table.Erase(e);
    return true;
  }

  // Sweeps every shard above its share, however little it grew since its
  // last sweep (after a sync made many objects evictable at once).
  void Trim() {
    for (Shard& s : shards_) {
      std::vector<Ref> evicted;
      MutexLock l(&s.mu);
      s.sweep_at = 0;
      Sweep(s, &evicted);
    }
  }

  // Drops every entry (held objects live on with their holders).
  void Clear() {
    for (Shard& s : shards_) {
      Table drop;
      MutexLock l(&s.mu);
      drop.Swap(s.table);
      s.sweep_at = 0;
      s.hand = 0;
    }
  }

  uint64_t size() {
    uint64_t n = 0;
    for (Shard& s : shards_) {
      MutexLock l(&s.mu);
      n += s.table.size();
    }
    return n;
  }
  // Entries the sweeps removed so far.
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
  static constexpr uint64_t kMix = 0x9e3779b97f4a7c15ull;  // Fibonacci hashing

  // An entry: empty when ref is null.
  struct Slot {
    uint64_t key = 0;
    Ref ref;
    bool referenced = false;
  };

  // A shard's table: open addressing, linear probing, backward-shift erase.
  // The home slot of a key takes the bits of key * kMix just below the six
  // that picked the shard.
  class Table {
   public:
    size_t size() const { return count_; }
    size_t capacity() const { return slots_.size(); }
    Slot* slots() { return slots_.data(); }

    Slot* Find(uint64_t key) {
      if (count_ == 0) return nullptr;
      for (size_t i = Home(key);; i = (i + 1) & mask_) {
        Slot& e = slots_[i];
        if (!e.ref) return nullptr;
        if (e.key == key) return &e;
      }
    }
    // `key` must be absent.
    void Insert(uint64_t key, Ref ref) {
      if ((count_ + 1) * 4 > slots_.size() * 3) Resize(std::max<size_t>(16, 2 * slots_.size()));
      slots_[FreeSlot(key)] = Slot{key, std::move(ref), true};
      count_++;
    }
    // Erases the entry `e` (one Find returned; its ref already moved out or
    // dropped), then shrinks the table if it is under 1/8 full.
    void Erase(Slot* e) {
      EraseAt(size_t(e - slots_.data()));
      MaybeShrink();
    }
    // Empties slot i (its ref already moved out or dropped) and shifts the
    // entries after it back into the hole their probes crossed. Never
    // resizes: a sweep erases by index as it goes.
    void EraseAt(size_t i) {
      slots_[i].ref.reset();
      for (size_t j = (i + 1) & mask_; slots_[j].ref; j = (j + 1) & mask_) {
        const size_t home = Home(slots_[j].key);
        // j's entry may move to i if i lies on its probe path home..j.
        if (((j - home) & mask_) >= ((j - i) & mask_)) {
          slots_[i] = std::move(slots_[j]);
          slots_[j].ref.reset();
          i = j;
        }
      }
      count_--;
    }
    // Halves the table when it is under 1/8 full (above 16 slots).
    void MaybeShrink() {
      if (slots_.size() > 16 && count_ * 8 < slots_.size()) Resize(slots_.size() / 2);
    }
    void Swap(Table& o) {
      slots_.swap(o.slots_);
      std::swap(count_, o.count_);
      std::swap(mask_, o.mask_);
      std::swap(shift_, o.shift_);
    }

   private:
    size_t Home(uint64_t key) const { return size_t((key * kMix) >> shift_) & mask_; }
    // The first empty slot of key's probe run (the table has room).
    size_t FreeSlot(uint64_t key) const {
      size_t i = Home(key);
      while (slots_[i].ref) i = (i + 1) & mask_;
      return i;
    }
    void Resize(size_t cap) {
      std::vector<Slot> old(cap);
      old.swap(slots_);
      mask_ = cap - 1;
      shift_ = 58 - std::countr_zero(cap);  // the bits below the shard's six
      count_ = 0;
      for (Slot& e : old) {
        if (!e.ref) continue;
        slots_[FreeSlot(e.key)] = std::move(e);
        count_++;
      }
    }

    std::vector<Slot> slots_;
    size_t count_ = 0;
    size_t mask_ = 0;
    int shift_ = 0;
  };

  struct Shard {
    Mutex mu;
    Table table GUARDED_BY(mu);
    size_t hand GUARDED_BY(mu) = 0;        // the slot the last sweep stopped at
    uint64_t sweep_at GUARDED_BY(mu) = 0;  // no sweep below this size
  };

  Shard& ShardOf(uint64_t key) { return shards_[(key * kMix) >> 58]; }

  void Sweep(Shard& s, std::vector<Ref>* evicted) REQUIRES(s.mu) {
    const uint64_t share = share_.load(std::memory_order_relaxed);
    Table& t = s.table;
    if (t.size() <= share || t.size() < s.sweep_at) return;
    const uint64_t target = share - share / 8;
    const size_t before = evicted->size();
    const size_t cap = t.capacity();
    size_t i = s.hand < cap ? s.hand : 0;
    // Two turns of the hand over the slots. An erase shifts a later entry
    // into slot i, which is looked at next without the hand moving (an
    // entry may thus be seen twice in a turn: CLOCK only needs most entries
    // looked at about once).
    for (size_t moves = 0; moves < 2 * cap && t.size() > target;) {
      Slot& e = t.slots()[i];
      if (e.ref && !e.referenced && e.ref.use_count() == 1 && (!evictable_ || evictable_(*e.ref))) {
        evicted->push_back(std::move(e.ref));
        t.EraseAt(i);
        continue;
      }
      if (e.ref) e.referenced = false;
      i = (i + 1) % cap;
      moves++;
    }
    s.hand = i;
    t.MaybeShrink();
    s.sweep_at = t.size() + std::max<uint64_t>(t.size() / 4, 16);
    evictions_.fetch_add(evicted->size() - before, std::memory_order_relaxed);
  }

  const Evictable evictable_;
  std::atomic<uint64_t> share_{kNoLimit};
  std::atomic<uint64_t> evictions_{0};
  std::array<Shard, kShards> shards_;
};

}  // namespace poolfs::util
