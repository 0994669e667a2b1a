// The ARC: poolfs's cache of decoded blocks.
//
// Theory.
//
// What it caches. Decoded blocks (verified, decompressed), keyed by block
// identity (arc_buf.h: vdev, offset, birth txg). Readers get an ArcHandle,
// a counted hold; a held block is never evicted. Only synced blocks are
// cached: the dirty copies a txg builds are the dmu's (dmu::BlockBuffers),
// and a block enters the cache when it is read back.
//
// Replacement: ARC (Megiddo and Modha). Cached blocks are on MRU (seen once
// since they entered) or MFU (seen again); a hit on MRU moves the block to
// MFU, a hit on MFU to the head of MFU. Evicting a block keeps its name and
// size as a ghost on MRU-ghost or MFU-ghost (no data). The target p is the
// share of the cache MRU should hold; eviction takes from MRU while MRU holds
// more than p, from MFU otherwise.
//
// How p adapts. A miss that finds a ghost means "had that list been larger,
// this would have been a hit". A ghost hit on MRU-ghost (recency would have
// paid) raises p by the block's size times max(1, mfu_ghost/mru_ghost)
// bytes, capped at c; a ghost hit on MFU-ghost lowers it by the size times
// max(1, mru_ghost/mfu_ghost), floored at 0. The ratio makes the smaller
// ghost list's hits count for more, so p moves fast toward whichever side
// is missing blocks. A block that had a ghost re-enters on MFU (it has now
// been asked for twice). Ghost lists are trimmed so MRU + MRU-ghost stays
// within c and all four together within 2c. p starts at c / 2.
//
// The bound. c = arc.max_bytes (0: 1/8 of physical RAM, at least 64 MiB; a
// user-space daemon shares the machine with the page cache and applications,
// so it takes less than OpenZFS's 5/8). Cached data (MRU + MFU, counted in
// BufferPool class sizes) never exceeds c: Insert reserves its bytes with a
// compare-and-swap on one counter before the block becomes visible; with no
// room, the inserting thread evicts (direct reclaim) and retries, and if
// everything evictable is held it returns the block uncached (a handle that
// frees it when dropped; counted in ArcStats::uncached). Headers (about 100
// bytes a block, ghosts included) are not in c.
//
// Locks without a global one. Every list of every state is split into
// arc.sublists sublists (0: one per core, at least 4), picked by the high bits
// of the key's hash, each with its own mutex; a block's MRU, MFU and ghost
// sublists share its index. The hash table is an array of chained buckets
// guarded by 1024 striped mutexes (bucket & 1023). Lock order: hash stripe,
// then a live sublist, then a ghost sublist. The evictor goes the other way
// (sublist first), so it only try-locks a block's stripe and skips the block
// when that fails (hash_lock_misses), and try-locks sublists, moving to the
// next when one is busy (sublist_lock_misses). Statistics live next to the
// lock that guards what they count, so counting takes no shared cache line.
// The cache's allocators (buffer_pool.h: data buffers and headers) are split
// into as many shards as there are sublists, so arc.sublists = 1 means one
// lock for each list and for the allocator, the fully serialized baseline.
//
// Eviction and release in batches. One evictor thread wakes when cached data
// passes c - c/64 and evicts until it is under c - c/32: it takes up to
// arc.evict_batch blocks from one sublist, unlocks, hands the batch's data
// buffers to the BufferPool in one call (one pool lock per batch, not per
// buffer) and deletes dropped ghost headers, then moves to the next sublist.
// The same batched path serves the blocks a txg sync replaces or frees
// (Forget: a vector of keys, with one lock round trip per hash stripe and
// per sublist in the batch, one allocator lock) and unmount (EvictAll,
// sublist by sublist, from Pool::Export).
//
// Callers: the dmu's read path (Lookup, then on a miss read, decode into
// AllocData, Insert; Hold for a block read once), the sync (Forget of the
// blocks it replaced), the pool (EvictAll at export), and the daemon (Stats
// in poolfs status, SetMaxBytes for a live arc.max_bytes).
//
// Thread safety: every public member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "arc/arc_buf.h"
#include "arc/buffer_pool.h"
#include "poolfs/options.h"
#include "util/mutex.h"

namespace poolfs::core::arc {

// The arc.* tunables and the cache's other options (poolfs/options.h holds
// them and their defaults).
using ArcOptions = ::poolfs::ArcOptions;

// A snapshot of the cache's counters, for `poolfs status`.
struct ArcStats {
  uint64_t max_bytes = 0;         // c
  uint64_t target_mru_bytes = 0;  // p
  uint32_t sublists = 0;
  uint64_t hits = 0, misses = 0;  // Lookup calls that found data / did not
  uint64_t mru_hits = 0, mfu_hits = 0;
  uint64_t mru_ghost_hits = 0, mfu_ghost_hits = 0;  // Inserts that found a ghost
  uint64_t evictions = 0;                           // cached blocks evicted (data freed)
  uint64_t ghost_evictions = 0;                     // ghost headers dropped
  uint64_t evict_skipped_held = 0;                  // blocks the evictor passed over: held
  uint64_t hash_lock_misses = 0;     // evictor try-locks of a hash stripe that failed
  uint64_t sublist_lock_misses = 0;  // evictor try-locks of a sublist that failed
  uint64_t uncached = 0;             // Inserts that found no room (all held)
  uint64_t read_once = 0;            // blocks read past the cache (Hold, NoteReadOnce)
  uint64_t forgotten = 0;            // blocks dropped by Forget or EvictAll
  uint64_t cached_bytes = 0;         // MRU + MFU data, always <= max_bytes
  uint64_t mru_bytes = 0, mfu_bytes = 0, mru_ghost_bytes = 0, mfu_ghost_bytes = 0;
  uint64_t mru_blocks = 0, mfu_blocks = 0, mru_ghost_blocks = 0, mfu_ghost_blocks = 0;
  uint64_t pool_retained_bytes = 0;  // free buffers the BufferPool keeps
};

// A buffer from the cache's allocator, owned until handed to Insert.
class ArcData {
 public:
  ArcData() = default;
  ArcData(ArcData&& o) noexcept : pool_(o.pool_), data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
  }
  ArcData& operator=(ArcData&& o) noexcept;
  ~ArcData();
  std::byte* data() { return data_; }
  uint32_t size() const { return size_; }
  std::span<std::byte> bytes() { return {data_, size_}; }

 private:
  friend class Arc;
  ArcData(BufferPool* pool, std::byte* data, uint32_t size)
      : pool_(pool), data_(data), size_(size) {}
  BufferPool* pool_ = nullptr;
  std::byte* data_ = nullptr;
  uint32_t size_ = 0;
};

class Arc {
 public:
  explicit Arc(const ArcOptions& options);
  // Stops the evictor and frees every block; no handle may outlive the Arc.
  ~Arc();
  Arc(const Arc&) = delete;
  Arc& operator=(const Arc&) = delete;

  // The defaults that 0 stands for.
  static uint64_t DefaultMaxBytes();
  static uint32_t DefaultSublists();

  // Returns a hold on the cached block `key`, or an empty handle on a miss
  // (never cached, evicted, or only a ghost).
  ArcHandle Lookup(const BlockKey& key);
  // Whether block `key` is cached, for a caller deciding whether to read it
  // ahead: not a hit or a miss, and the block's list does not change.
  bool Contains(const BlockKey& key);

  // A buffer of `size` bytes (> 0) to decode a block into before Insert.
  ArcData AllocData(uint32_t size);

  // Caches `data` as block `key` and returns a hold on it. If the block is
  // already cached (another reader inserted it first) returns that one and
  // frees `data`. If no room can be made (everything evictable is held),
  // returns a hold on an uncached block, freed with its last handle.
  ArcHandle Insert(const BlockKey& key, ArcData data);

  // A hold on `data` kept out of the cache: a block read for one use,
  // whose buffer goes back to the allocator (for the next read to reuse)
  // with its last handle. Neither grows the cache nor evicts from it.
  ArcHandle Hold(const BlockKey& key, ArcData data);
  // Counts `blocks` read for one use straight into a caller's buffer,
  // never in the cache's memory (with Hold's in read_once).
  void NoteReadOnce(uint64_t blocks) { read_once_.fetch_add(blocks, std::memory_order_relaxed); }

  // Drops blocks from the cache (freed on disk), ghosts included: one lock
  // round trip per hash stripe and per sublist in the batch, one allocator
  // lock. A held block leaves the cache at once and is freed with its last
  // handle. Returns how many of `keys` were in the cache.
  size_t Forget(std::span<const BlockKey> keys);
  // Forget of one block, with one round trip on each lock it needs (no batch
  // bookkeeping). Returns whether it was in the cache.
  bool Forget(const BlockKey& key);

  // Drops every block not held, sublist by sublist, a batch at a time
  // (unmount). Returns how many held blocks stayed.
  size_t EvictAll();

  // Changes c (arc.max_bytes, live; 0: the default). Evicts in the calling
  // thread until cached data fits the new bound (or only held blocks are
  // left).
  void SetMaxBytes(uint64_t max_bytes);

  // The bound in effect (c).
  uint64_t max_bytes() const { return c_.load(std::memory_order_relaxed); }
  // Cached data now (MRU + MFU), the figure the bound applies to.
  uint64_t cached_bytes() const { return cached_bytes_.load(std::memory_order_relaxed); }
  uint32_t sublists() const { return nsub_; }
  ArcStats Stats() const;

 private:
  friend class ArcHandle;
  static constexpr uint32_t kStripes = 1024;

  struct alignas(64) Stripe {
    mutable util::Mutex mu;
    uint64_t hits GUARDED_BY(mu) = 0;
    uint64_t misses GUARDED_BY(mu) = 0;
    uint64_t mru_hits GUARDED_BY(mu) = 0;
    uint64_t mfu_hits GUARDED_BY(mu) = 0;
    uint64_t mru_ghost_hits GUARDED_BY(mu) = 0;
    uint64_t mfu_ghost_hits GUARDED_BY(mu) = 0;
  };
  struct alignas(64) Sublist {
    mutable util::Mutex mu;
    ArcHeader* head GUARDED_BY(mu) = nullptr;  // most recent
    ArcHeader* tail GUARDED_BY(mu) = nullptr;  // eviction end
    // Written under mu, read without it by Stats and the eviction policy.
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> blocks{0};
    uint64_t evictions GUARDED_BY(mu) = 0;
    uint64_t skipped_held GUARDED_BY(mu) = 0;
  };

  Stripe& StripeOf(uint64_t hash) { return stripes_[hash & (kStripes - 1)]; }
  ArcHeader*& Bucket(const Stripe& s, uint64_t hash) REQUIRES(s.mu);
  Sublist& ListOf(ArcState s, uint64_t hash) { return lists_[int(s) * nsub_ + SublistIndex(hash)]; }
  uint32_t SublistIndex(uint64_t hash) const { return uint32_t(hash >> 32) % nsub_; }
  ArcHeader* Find(const Stripe& s, const BlockKey& key, uint64_t hash) REQUIRES(s.mu);
  void HashRemove(const Stripe& s, ArcHeader* h) REQUIRES(s.mu);
  static void Link(Sublist& l, ArcHeader* h) REQUIRES(l.mu);
  static void Unlink(Sublist& l, ArcHeader* h) REQUIRES(l.mu);
  // Moves `h` (state from `from`) to the head of list `to`, taking both
  // sublist locks one after the other. Caller holds h's stripe.
  void Move(ArcHeader* h, ArcState to);
  void LinkNew(ArcHeader* h, ArcState to);
  void UnlinkFrom(ArcHeader* h);

  uint64_t StateBytes(ArcState s) const;
  uint64_t StateBlocks(ArcState s) const;

  // Reserves `bytes` of cached data under c, evicting in this thread when
  // needed. False when no room could be made.
  bool Reserve(uint64_t bytes);
  void Unreserve(uint64_t bytes) { cached_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }
  void MaybeWakeEvictor();
  void AdaptOnGhostHit(ArcState ghost, uint64_t bytes);
  // A detached, uncached header for `data`: freed with its last handle.
  ArcHandle Outside(const BlockKey& key, uint64_t hash, ArcData data);

  // Evicts up to evict_batch blocks (or `goal` bytes) from one sublist of the
  // list the policy picks (then of the other live list if that freed
  // nothing), trims the ghost lists, frees the batch. Returns data bytes freed.
  uint64_t EvictSome(uint64_t goal);
  // One batch from one sublist of `state`; `drop`: remove from the cache
  // (ghosts are not kept). Returns data bytes freed; counts blocks in *n.
  // (The analysis cannot follow a lock picked by try-lock in a loop; the
  // function locks one sublist, calls EvictFrom, and unlocks it.)
  uint64_t EvictBatch(ArcState state, uint64_t goal, bool drop,
                      size_t* n) NO_THREAD_SAFETY_ANALYSIS;
  // The walk from `l`'s tail behind EvictBatch and EvictAll: evicted data goes
  // to *bufs and dropped headers to *dead, for the caller to free unlocked.
  uint64_t EvictFrom(Sublist& l, ArcState state, uint64_t goal, bool drop, size_t scan_limit,
                     std::vector<PoolBuf>* bufs, std::vector<ArcHeader*>* dead, size_t* n)
      REQUIRES(l.mu);
  void TrimGhosts();
  void EvictorMain();

  // Frees headers the cache no longer links, with one pool lock.
  void FreeHeaders(std::span<ArcHeader* const> headers);
  // The last hold on a detached header went away.
  void FreeDetached(ArcHeader* h);

  const uint32_t nsub_;
  BufferPool pool_;  // sharded like the lists: nsub_ shards
  HeaderCache headers_;
  const uint32_t evict_batch_;
  std::atomic<uint64_t> c_;
  std::atomic<uint64_t> p_;
  std::atomic<uint64_t> cached_bytes_{0};
  std::atomic<uint64_t> uncached_{0};
  std::atomic<uint64_t> read_once_{0};
  std::atomic<uint64_t> forgotten_{0};
  std::atomic<uint64_t> ghost_evictions_{0};
  std::atomic<uint64_t> hash_lock_misses_{0};
  std::atomic<uint64_t> sublist_lock_misses_{0};
  std::atomic<uint32_t> cursor_[kListStates] = {};

  std::unique_ptr<Stripe[]> stripes_;
  std::vector<ArcHeader*> buckets_;   // bucket b guarded by stripes_[b % kStripes]
  std::unique_ptr<Sublist[]> lists_;  // [state * nsub_ + index]

  util::Mutex evict_mu_;
  util::CondVar evict_cv_;
  bool evict_stop_ GUARDED_BY(evict_mu_) = false;
  std::atomic<bool> evict_wanted_{false};
  std::thread evictor_;
};

}  // namespace poolfs::core::arc
