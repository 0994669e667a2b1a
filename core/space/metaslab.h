// Metaslab: one power-of-two region of a vdev, its free space, and the txg
// bookkeeping that turns allocations and frees into its space map.
//
// Theory
// ------
// A metaslab covers [start, start + size) of a vdev in sectors of
// 1 << shift bytes. Its space is always in exactly one of three states, and
// the sum is checked after every txg (always on, not only in debug builds):
//
//   allocated + free + deferred == size
//
//   free       `allocatable_`: a RangeTree32 with a size index; what
//              Allocate hands out.
//   allocated  handed out and not freed. Allocations of txg T are also
//              recorded in `allocs_[T % 4]` until T syncs to the space map.
//   deferred   freed but not reusable yet: frees of txg T wait in
//              `frees_[T % 4]` until T syncs, then in `defer_[T % 2]` for
//              kTxgDeferSize (2) more txgs, so that an import that falls back
//              to the uberblock of T-1 or T-2 finds those blocks intact.
//
// Txg lifecycle (called by the pool's sync, in txg order):
//   Allocate(size, T) / Free(off, len, T)   any time while T is open or syncing
//   Sync(T)      appends T's allocs then frees to the space map; condenses
//                the map when it has grown to several times the size of its
//                condensed form
//   SyncDone(T)  returns defer_[T % 2] (freed in T-2) to the free tree, then
//                moves frees_[T % 4] into defer_[T % 2]
// While the owner holds back reuse (SyncDone's `hold`: a scrub reading a
// tree of an earlier txg), what would become free waits in `held_`, still
// deferred, and joins the free tree at the first SyncDone without it.
// After Sync(T) the map's net allocated bytes must equal what was allocated
// as of T; that too is CHECKed.
//
// Load replays the space map (fully free, then each record in order) into the
// free tree, except the frees of the last two synced txgs, which go back
// into `defer_` (the map keeps each record's txg, and Condense writes the
// deferred frees with theirs); a record that contradicts the replay so far (allocating free...
// space twice, freeing free space) is Corruption naming the record.
//
// Thread safety: every method locks `mu_`. An allocator that has activated a
// metaslab is its only allocating user; Free and the sync calls come from
// other threads and take the same lock briefly.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "poolfs/options.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "space/df_alloc.h"
#include "space/range_tree.h"
#include "space/space_map.h"
#include "util/mutex.h"

namespace poolfs::core::space {

// The alloc.* tunables the space layer reads (poolfs/options.h holds them
// and their defaults; the config layer maps the keys).
using SpaceOptions = ::poolfs::SpaceOptions;

struct MetaslabStats {
  uint64_t size = 0;
  uint64_t allocated = 0;
  uint64_t free = 0;
  uint64_t deferred = 0;  // held included
  uint64_t held = 0;      // past its deferral, held back (SyncDone's hold)
  uint64_t segments = 0;
  uint64_t largest = 0;
};

class Metaslab {
 public:
  static constexpr int kTxgSize = 4;

  Metaslab(uint32_t vdev, uint64_t index, uint64_t start, uint64_t size, uint32_t shift,
           const SpaceOptions& options);

  uint32_t vdev() const { return vdev_; }
  uint64_t index() const { return index_; }
  uint64_t start() const { return start_; }
  uint64_t size() const { return size_; }
  SpaceMapGeometry geometry() const { return {start_, size_, shift_}; }

  // Replays `space_map` (empty: a new metaslab, all free). Fails with
  // Corruption when the bytes do not verify or contradict themselves; the
  // metaslab is then left fully allocated (nothing can be handed out twice).
  // `synced` is the txg the pool was imported at: what the map says was
  // freed in it or the txg before, and is still free, stays deferred as it
  // was before the export (SyncDone of synced + 1 and synced + 2 return it),
  // so that a rewind across the import still finds those blocks intact.
  // Txg(0): everything free at once (the offline check).
  Status Load(std::string_view space_map, Txg synced = Txg(0)) EXCLUDES(mu_);

  // Returns the offset of a free, naturally aligned block of `size` bytes
  // (a multiple of the sector size) allocated in txg, or NoSpace.
  Result<uint64_t> Allocate(uint64_t size, Txg txg) EXCLUDES(mu_);

  // Frees [off, off+len), allocated earlier, in txg. A range that is not
  // wholly allocated is Corruption (a double free or a damaged pointer) and
  // changes nothing.
  Status Free(uint64_t off, uint64_t len, Txg txg) EXCLUDES(mu_);

  // Marks [off, off+len) allocated in txg (used when a caller knows an exact
  // extent is in use, e.g. a pool check rebuilding the map). Corruption if
  // any of it is not free.
  Status Claim(uint64_t off, uint64_t len, Txg txg) EXCLUDES(mu_);

  // Appends txg's records not yet appended to the space map. Returns true
  // when the map changed (the caller stores space_map()). May be called
  // again for the same txg (the pool's sync passes): each call appends what
  // the txg allocated and freed since the last. Condenses only on the first
  // call of a txg.
  bool Sync(Txg txg) EXCLUDES(mu_);
  // Ends txg: frees of txg-2 become allocatable (with `hold`, they stay
  // deferred, and become allocatable at the first SyncDone without it);
  // frees of txg start waiting.
  void SyncDone(Txg txg, bool hold = false) EXCLUDES(mu_);

  // The encoded space map, as of the last Sync.
  std::string space_map() const EXCLUDES(mu_);
  // Bytes of space_map() that no later Sync will change (until a condense,
  // which bumps map_generation()).
  uint64_t space_map_frozen() const EXCLUDES(mu_);
  uint64_t map_generation() const EXCLUDES(mu_);

  // Length of the largest free segment that allocation can use at once
  // (lock-free; refreshed after every change): the allocator's weight.
  uint64_t weight() const { return weight_.load(std::memory_order_relaxed); }

  MetaslabStats Stats() const EXCLUDES(mu_);
  // CHECKs allocated + free + deferred == size.
  void CheckAccounting() const EXCLUDES(mu_);
  // Verifies the free tree's structure and the accounting; Corruption if not.
  Status Verify() const EXCLUDES(mu_);

  // Which allocator has this metaslab active (-1: none). Guarded by the
  // owning group's mutex.
  int owner = -1;

 private:
  RangeTree32 MakeTree(bool by_size) const {
    return RangeTree32(start_, size_, shift_, options_.size_tree_floor, by_size);
  }
  void UpdateWeight() REQUIRES(mu_);
  void CheckAccountingLocked() const REQUIRES(mu_);
  uint64_t DeferredBytes() const REQUIRES(mu_);
  bool NeedsCondense() const REQUIRES(mu_);
  void Condense(Txg txg) REQUIRES(mu_);

  const uint32_t vdev_;
  const uint64_t index_;
  const uint64_t start_;
  const uint64_t size_;
  const uint32_t shift_;
  const SpaceOptions options_;
  DfPolicy policy_;

  mutable util::Mutex mu_;
  RangeTree32 allocatable_ GUARDED_BY(mu_);
  std::array<RangeTree32, kTxgSize> allocs_ GUARDED_BY(mu_);
  std::array<RangeTree32, kTxgSize> frees_ GUARDED_BY(mu_);
  // The part of frees_ not yet appended to the map (for repeated passes).
  std::array<RangeTree32, kTxgSize> frees_unsynced_ GUARDED_BY(mu_);
  uint64_t map_generation_ GUARDED_BY(mu_) = 0;
  std::array<RangeTree32, kTxgDeferSize> defer_ GUARDED_BY(mu_);
  RangeTree32 held_ GUARDED_BY(mu_);  // past their deferral, held back (SyncDone)
  DfCursors cursors_ GUARDED_BY(mu_){};
  uint64_t allocated_ GUARDED_BY(mu_) = 0;
  SpaceMapWriter map_ GUARDED_BY(mu_);
  Txg last_synced_ GUARDED_BY(mu_);
  std::atomic<uint64_t> weight_{0};
};

}  // namespace poolfs::core::space
