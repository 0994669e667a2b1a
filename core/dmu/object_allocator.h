// ObjectAllocator: which object ids of an object set are free, and which one
// a create gets — without the metadnode backfill pathology.
//
// Theory
// ------
// Old ZFS looked for a free dnode by probing the metadnode's on-disk fill
// counts from offset 0. Those counts do not see dnodes allocated in memory
// but not yet synced, so under a create storm every "hole" it found was
// already taken, the hold failed, and it probed the next one: up to
// thousands of failed holds per create. This allocator never probes: it
// keeps the exact set of free ids below the high-water mark in memory (a
// range tree over the B-tree, so a dense create-only history costs O(1)
// segments), and an id leaves the set the moment it is handed out, synced
// or not. A hold on an id it hands out cannot fail.
//
// Ids reach threads in chunks of up to `chunk` consecutive ids (the
// dmu.alloc_chunk tunable, 128 = 4 dnode blocks by default) cached in one of
// a few slots picked by thread, each with its own lock, so creating threads
// do not share a lock per create; the allocator's own lock is taken once
// per chunk. When backfilling, a slot whose chunk predates the latest
// release of freed ids gives it back at its next create and takes the
// lowest free ids instead (once per txg at most).
//
// Frees. An id freed in txg f must not go to a Tx of a txg before f (that
// txg would create an object that still exists), so freed ids wait in a
// pending list until Release(t) says every txg up to t has quiesced (the
// sync of t calls it), and only then join the free set.
//
// Backfill: where new ids come from.
//   off     from the high-water mark only: ids only grow, the metadnode
//           stays sparse after deletes (zfs_metadnode_backfill=0).
//   on      the lowest free id first, always.
//   auto    (default) like off while the workload only creates; once the
//           free set (with the frees still pending) holds at least
//           max(kAutoMinFree, high_water / 8) ids
//           — an eighth of the id space: dnode blocks whose refill saves
//           real metadnode space; a create-only workload, which frees
//           nothing, never gets there — it backfills lowest-first until the
//           free set is empty and no free is pending, then grows again. Backfilling costs nothing
//           per create here (no probe), only locality (new objects land
//           among old ones), which is why a few scattered frees are left
//           alone. A churn that deletes half of its objects crosses the
//           threshold at once, and the metadnode ends dense.
//   legacy  not served here: the object set reproduces the old probing
//           search on top of the synced fill counts (objset.cc) and only
//           uses this class for its statistics.
// Switching mode (SetMode) is live: cached chunks are returned to the free
// set so the next create follows the new policy.
//
// Claims. A received object keeps its sender's id (Claim): the id leaves
// whatever holds it — the free set, a slot's chunk (the rest of the chunk
// stays), the ids above the high-water mark (those between the old mark
// and the id join the free set), or the pending frees of a txg at or
// before the claim's (an object freed and made again in one txg) — so no
// create is handed it, whatever the mode. The claim takes every slot's
// lock, then the allocator's: claims are rare, and no id moves between a
// slot and the free set meanwhile.
//
// Thread safety: every public function is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "poolfs/options.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "space/range_tree.h"
#include "util/mutex.h"

namespace poolfs::core::dmu {

// dmu.metadnode_backfill (poolfs/options.h; the modes are described above).
using BackfillMode = ::poolfs::BackfillMode;
std::string_view BackfillModeName(BackfillMode m);
// Parses "auto", "on", "off", "legacy".
Result<BackfillMode> ParseBackfillMode(std::string_view s);

struct ObjectAllocStats {
  BackfillMode mode = BackfillMode::kAuto;
  uint64_t allocated = 0;     // ids handed out since the object set was opened
  uint64_t freed = 0;         // ids freed since then
  uint64_t reused = 0;        // ids handed out that were free below the high-water mark
  uint64_t failed_holds = 0;  // probes that met a taken dnode (legacy only)
  uint64_t high_water = 0;    // one past the highest id ever handed out
  uint64_t live = 0;          // allocated objects (the metadnode excluded)
  uint64_t free_below_high_water = 0;
  uint64_t dnode_blocks_in_use = 0;  // metadnode blocks holding a live object
  bool backfilling = false;          // auto: currently reusing low ids
  // live / high_water: 1 when every id below the high-water mark is in use.
  double density() const { return high_water <= 1 ? 1.0 : double(live) / double(high_water - 1); }
};

class ObjectAllocator {
 public:
  static constexpr uint64_t kFirstId = 1;  // 0 is the metadnode
  static constexpr uint64_t kMaxId = (1ull << 48) - 1;
  static constexpr uint64_t kIdsPerBlock = 32;    // 512-byte dnodes in a 16 KiB block
  static constexpr uint64_t kAutoMinFree = 4096;  // 128 dnode blocks
  static constexpr size_t kSlots = 16;

  explicit ObjectAllocator(BackfillMode mode = ObjectAllocOptions().backfill,
                           uint32_t chunk = ObjectAllocOptions().chunk);
  ~ObjectAllocator();

  // Import: `high_water` is one past the highest id in use, `in_use` the
  // ids below it that hold objects, as ranges [first, end) in ascending
  // order (built from the metadnode's fill counts). Everything else below
  // the high-water mark is free. Corruption for ranges out of order or past
  // high_water.
  Status Load(uint64_t high_water, const std::vector<std::pair<uint64_t, uint64_t>>& in_use);

  // An id for a new object in txg `txg`; `slot_hint` spreads threads over
  // chunk slots (the CPU). NoSpace when the 2^48 ids are used up.
  Result<ObjectId> Allocate(size_t slot_hint);
  // `id` was freed in some txg f; it becomes allocatable after Release(t)
  // with t >= f.
  void Free(ObjectId id, Txg f);
  // Every txg up to t has quiesced: ids freed in them join the free set.
  void Release(Txg t);
  // Marks an id taken outside Allocate (the legacy search found it).
  // InvalidArgument when it is not free.
  Status Take(ObjectId id);
  // Takes `id` for an object made in txg `t` (see Claims above), in any
  // mode. InvalidArgument for an id out of range, AlreadyExists when it is
  // in use, Busy when it was freed in a txg after t (not yet allocatable
  // to t).
  Status Claim(ObjectId id, Txg t) EXCLUDES(mu_);
  // True when `id` is free now (not handed out, not pending).
  bool IsFree(ObjectId id) const;
  void CountFailedHold() { failed_holds_.fetch_add(1, std::memory_order_relaxed); }

  void SetMode(BackfillMode mode);
  BackfillMode mode() const { return mode_now_.load(std::memory_order_relaxed); }
  void SetChunk(uint32_t chunk);
  ObjectAllocStats Stats() const;
  // The highest id handed out + 1 (1 when none).
  uint64_t high_water() const;
  // Free-set segments (for tests: a dense create-only history is 1 or 0).
  size_t free_segments() const;

 private:
  struct Slot {
    util::Mutex mu;
    uint64_t next GUARDED_BY(mu) = 0;  // [next, end): ids this slot hands out
    uint64_t end GUARDED_BY(mu) = 0;
    bool reuse GUARDED_BY(mu) = false;  // the chunk came from the free set
    uint64_t gen GUARDED_BY(mu) = 0;    // free_gen_ when the chunk was taken
    uint64_t allocated GUARDED_BY(mu) = 0;
    uint64_t reused GUARDED_BY(mu) = 0;
  };
  // Fills `s` with a new chunk.
  Status Refill(Slot& s) REQUIRES(s.mu) EXCLUDES(mu_);
  // Takes id `v` when it is past the high-water mark or in the free set;
  // false when it is neither.
  bool TakeFreeLocked(uint64_t v) REQUIRES(mu_);
  // Whether new ids come from the free set now; updates backfill_ready_.
  bool Backfilling() REQUIRES(mu_);
  // Returns every slot's unused ids to the free set.
  void DrainSlots() EXCLUDES(mu_);

  std::array<Slot, kSlots> slots_;

  mutable util::Mutex mu_;
  BackfillMode mode_ GUARDED_BY(mu_);
  uint32_t chunk_ GUARDED_BY(mu_);
  uint64_t high_water_ GUARDED_BY(mu_) = kFirstId;
  // Free ids below high_water_ not cached in a slot.
  space::BasicRangeTree<space::Seg64> free_ GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> pending_ GUARDED_BY(mu_);  // (txg freed, id)
  bool backfilling_ GUARDED_BY(mu_) = false;
  uint64_t loaded_live_ GUARDED_BY(mu_) = 0;  // objects found by Load
  uint64_t freed_ GUARDED_BY(mu_) = 0;
  uint64_t taken_ GUARDED_BY(mu_) = 0;         // by Take
  uint64_t taken_reused_ GUARDED_BY(mu_) = 0;  // by Take, below the high-water mark
  std::atomic<uint64_t> failed_holds_{0};
  // Backfilling() as last computed: read without mu_ by Allocate, so that a
  // slot holding new ids gives them back when backfill starts.
  std::atomic<bool> backfill_ready_{false};
  std::atomic<BackfillMode> mode_now_;  // mode_, readable without mu_
  // Counts Releases that freed ids; a slot whose chunk is older gives it
  // back when backfilling, so "lowest first" holds across chunks.
  std::atomic<uint64_t> free_gen_{0};
};

}  // namespace poolfs::core::dmu
