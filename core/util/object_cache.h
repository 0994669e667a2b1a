// ObjectCache: in-memory objects (a dataset's dnodes, a mount's inodes)
// by 64-bit key, shared by reference count and bounded in number, with
// CLOCK eviction.
//
// Theory
// ------
// Entries live in 64 shards picked by key, each a hash map under its own
// mutex, held only to find, insert or erase: there is no cache-wide lock.
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
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "poolfs/status.h"
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
    auto it = s.map.find(key);
    if (it == s.map.end()) return nullptr;
    it->second.referenced = true;
    return it->second.ref;
  }

  // The object under `key`; when absent, `load()` (a Result<Ref>) makes it,
  // under the shard's lock, so that a key is loaded once at a time: load
  // must not call back into this cache.
  template <typename Load>
  Result<Ref> FindOrLoad(uint64_t key, Load load) {
    std::vector<Ref> evicted;  // destroyed after the lock is released
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    auto it = s.map.find(key);
    if (it != s.map.end()) {
      it->second.referenced = true;
      return it->second.ref;
    }
    Result<Ref> made = load();
    if (!made.ok()) return made.status();
    Ref ref = *made;
    s.map.emplace(key, Entry{ref, true});
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
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    Entry& e = s.map[key];
    if (e.ref) evicted.push_back(std::move(e.ref));
    e.ref = std::move(ref);
    e.referenced = true;
    Sweep(s, &evicted);
  }

  void Erase(uint64_t key) {
    Ref drop;
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return;
    drop = std::move(it->second.ref);
    s.map.erase(it);
  }

  // Drops `held` (the caller's reference to the object under `key`) from
  // the cache if nobody else holds it and `evictable` accepts it.
  bool TryEvict(uint64_t key, const Ref& held) {
    Ref drop;
    Shard& s = ShardOf(key);
    MutexLock l(&s.mu);
    auto it = s.map.find(key);
    // The cache's reference and the caller's: nobody else can see it.
    if (it == s.map.end() || it->second.ref != held || held.use_count() != 2) return false;
    if (evictable_ && !evictable_(*held)) return false;
    drop = std::move(it->second.ref);
    s.map.erase(it);
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
      std::unordered_map<uint64_t, Entry> drop;
      MutexLock l(&s.mu);
      drop.swap(s.map);
      s.sweep_at = 0;
    }
  }

  uint64_t size() {
    uint64_t n = 0;
    for (Shard& s : shards_) {
      MutexLock l(&s.mu);
      n += s.map.size();
    }
    return n;
  }
  // Entries the sweeps removed so far.
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
  struct Entry {
    Ref ref;
    bool referenced = false;
  };
  struct Shard {
    Mutex mu;
    std::unordered_map<uint64_t, Entry> map GUARDED_BY(mu);
    uint64_t hand GUARDED_BY(mu) = 0;      // the key the last sweep stopped at
    uint64_t sweep_at GUARDED_BY(mu) = 0;  // no sweep below this size
  };

  Shard& ShardOf(uint64_t key) { return shards_[(key * 0x9e3779b97f4a7c15ull) >> 58]; }

  void Sweep(Shard& s, std::vector<Ref>* evicted) REQUIRES(s.mu) {
    const uint64_t share = share_.load(std::memory_order_relaxed);
    if (s.map.size() <= share || s.map.size() < s.sweep_at) return;
    const uint64_t target = share - share / 8;
    const size_t before = evicted->size();
    auto it = s.map.find(s.hand);
    for (size_t visits = 2 * s.map.size(); visits > 0 && s.map.size() > target; visits--) {
      if (it == s.map.end()) it = s.map.begin();
      Entry& e = it->second;
      if (e.referenced) {
        e.referenced = false;
        ++it;
      } else if (e.ref.use_count() == 1 && (!evictable_ || evictable_(*e.ref))) {
        evicted->push_back(std::move(e.ref));
        it = s.map.erase(it);
      } else {
        ++it;
      }
    }
    s.hand = it == s.map.end() ? 0 : it->first;
    s.sweep_at = s.map.size() + std::max<uint64_t>(s.map.size() / 4, 16);
    evictions_.fetch_add(evicted->size() - before, std::memory_order_relaxed);
  }

  const Evictable evictable_;
  std::atomic<uint64_t> share_{kNoLimit};
  std::atomic<uint64_t> evictions_{0};
  std::array<Shard, kShards> shards_;
};

}  // namespace poolfs::util
