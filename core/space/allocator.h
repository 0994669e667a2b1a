// SpaceManager: the pool's allocatable space — one MetaslabGroup per vdev,
// and `alloc.allocators` allocators that hand out blocks from them.
//
// Theory
// ------
// Each vdev's allocatable area is cut into power-of-two metaslabs, about 200
// of them (ChooseMetaslabShift). An allocator owns, per vdev, at most one
// active metaslab, and no two allocators ever have the same metaslab active:
// activation happens under the group's mutex, which the allocation path
// takes only when its active metaslab cannot serve a request. So the
// allocation path of allocator i takes allocator i's mutex and the mutex of
// a metaslab that only allocator i allocates from — two allocators never
// share a lock there. (Frees and txg sync take the metaslab's lock too, but
// briefly and off the allocation path.) Callers pick an allocator by index;
// the txg sync gives each Asio strand its own.
//
// Rotor: an allocator stays on one vdev for `aliquot` bytes, then moves to
// the next, so writes stripe across vdevs; each allocator has its own rotor.
//
// Copies (ditto blocks, zio/block_ptr.h). The further copies of a block
// come from allocators of their own, one set per copy number, whose active
// metaslabs are never another's: copy 1 of a block allocated through
// allocator i comes from copy allocator (1, i). A copy goes to the vdev
// after the previous copy's where the pool has several (so that two copies
// share a vdev only when the others are full), and on a vdev that holds an
// earlier copy, to a metaslab at least an eighth of the vdev's metaslabs
// away from it (ZFS's old ditto distance), else to any other metaslab;
// only a vdev full but for those metaslabs gives a copy beside another.
//
// Activation picks the metaslab with the highest weight (largest free
// segment) that no other allocator has active and that can hold the
// request; when none can, the allocator borrows ("steals") a metaslab active
// elsewhere rather than fail while space remains, and only then moves to the
// next vdev; NoSpace means no metaslab of any vdev has a free block of the
// requested size.
//
// Space accounting (allocated + free + deferred = capacity) is CHECKed per
// metaslab at every SyncDone and summed by Stats().
//
// Thread safety: all methods are thread-safe. Lock order: allocator mutex,
// then group mutex, then metaslab mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "space/metaslab.h"
#include "util/mutex.h"

namespace poolfs::core::space {

// A data virtual address: where a block lives.
struct Dva {
  uint32_t vdev = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const Dva&) const = default;
};

// The allocatable area of one vdev and how it is cut into metaslabs.
struct VdevSpaceConfig {
  uint32_t vdev = 0;
  uint64_t alloc_start = 0;  // bytes, a multiple of 1 << ashift
  uint64_t alloc_size = 0;
  uint32_t ashift = 12;
  uint32_t ms_shift = 0;  // 0: ChooseMetaslabShift(alloc_size, ashift)
};

// Returns the metaslab shift that cuts `alloc_size` bytes into about 200
// metaslabs (never more), at least 16 MiB each unless the vdev is smaller, and
// at most 2^32 sectors each (so segments fit in 32 bits).
uint32_t ChooseMetaslabShift(uint64_t alloc_size, uint32_t ashift);

// The allocator count for `alloc.allocators = 0`: one per core, 1 to 8.
uint32_t DefaultAllocatorCount();

// The metaslabs of one vdev.
class MetaslabGroup {
 public:
  MetaslabGroup(const VdevSpaceConfig& config, const SpaceOptions& options);

  const VdevSpaceConfig& config() const { return config_; }
  size_t count() const { return metaslabs_.size(); }
  Metaslab& metaslab(size_t i) { return *metaslabs_[i]; }
  const Metaslab& metaslab(size_t i) const { return *metaslabs_[i]; }
  // The metaslab holding [off, off+len), or nullptr when the extent is not
  // inside one metaslab of this vdev.
  Metaslab* ForExtent(uint64_t off, uint64_t len);

  // Activates for allocator `a` the unowned metaslab of highest weight that
  // is at least `size`, skipping those in `skip`. nullptr when none.
  Metaslab* Activate(int a, uint64_t size, const std::vector<Metaslab*>& skip) EXCLUDES(mu_);
  void Passivate(Metaslab* ms) EXCLUDES(mu_);
  // A metaslab active in another allocator that might hold `size`, not in
  // `skip`; nullptr when none.
  Metaslab* StealCandidate(uint64_t size, const std::vector<Metaslab*>& skip) EXCLUDES(mu_);

 private:
  const VdevSpaceConfig config_;
  std::vector<std::unique_ptr<Metaslab>> metaslabs_;
  util::Mutex mu_;  // guards Metaslab::owner of every metaslab here
};

struct SpaceStats {
  uint64_t capacity = 0;
  uint64_t allocated = 0;
  uint64_t free = 0;
  uint64_t deferred = 0;  // held included
  uint64_t held = 0;      // past its deferral, held back (HoldReuse)
  uint64_t metaslabs = 0;
  uint64_t segments = 0;
};

class SpaceManager {
 public:
  SpaceManager(std::vector<VdevSpaceConfig> vdevs, const SpaceOptions& options);
  ~SpaceManager();

  size_t allocator_count() const { return allocators_.size(); }
  size_t vdev_count() const { return groups_.size(); }
  MetaslabGroup& group(uint32_t vdev) { return *groups_[vdev]; }

  // Loads one metaslab's space map (import). Corruption when it is damaged.
  // Metaslab::Load of metaslab `index` of `vdev`.
  Status LoadMetaslab(uint32_t vdev, uint64_t index, std::string_view space_map,
                      Txg synced = Txg(0));

  // Allocates `size` bytes (a multiple of the vdev's sector size) in txg
  // through allocator `a` (taken modulo the count). NoSpace when no vdev has
  // a free block that large.
  Result<Dva> Allocate(size_t a, uint64_t size, Txg txg);
  // Allocates copy number `copy` (1 or 2) of a block whose earlier copies
  // are `earlier` (copy 0 first), `size` bytes in txg, through the copy
  // allocators of allocator `a` (see the top of the file for where it
  // goes). NoSpace when no vdev has a free block that large.
  Result<Dva> AllocateCopy(size_t a, int copy, uint64_t size, Txg txg,
                           std::span<const Dva> earlier);
  // Frees a block allocated earlier, in txg. Corruption for an extent that
  // is not wholly allocated (double free, damaged pointer); nothing changes.
  Status Free(const Dva& dva, Txg txg);
  // Marks a known extent allocated in txg. Corruption if any of it is free.
  Status Claim(const Dva& dva, Txg txg);

  // Appends txg's allocations and frees (those not appended yet: the pool
  // calls it once per sync pass) to every metaslab's space map and calls
  // `changed` for each metaslab whose map changed (to be stored). Returns
  // how many changed.
  size_t Sync(Txg txg, const std::function<void(const Metaslab&)>& changed);
  // Ends txg: deferred frees of txg-2 become allocatable (not while reuse
  // is held back: see HoldReuse). CHECKs accounting.
  void SyncDone(Txg txg);
  // While a HoldReuse is in effect (they nest), no freed block becomes
  // allocatable: every block of a tree of a synced txg stays as it is, so
  // a reader of that tree (scrub) never meets bytes written since. Freed
  // space keeps counting as deferred, and returns at the first SyncDone
  // after the last ReleaseReuse.
  void HoldReuse() { reuse_holds_.fetch_add(1, std::memory_order_acq_rel); }
  void ReleaseReuse() { reuse_holds_.fetch_sub(1, std::memory_order_acq_rel); }
  bool reuse_held() const { return reuse_holds_.load(std::memory_order_acquire) > 0; }

  // Sums over every metaslab; CHECKs allocated + free + deferred = capacity.
  SpaceStats Stats() const;

 private:
  // One allocator: its lock, its active metaslab per vdev, and its rotor.
  // On its own cache lines so that allocators do not share them.
  struct alignas(64) AllocatorState {
    util::Mutex mu;
    std::vector<Metaslab*> active GUARDED_BY(mu);  // per vdev
    uint32_t rotor GUARDED_BY(mu) = 0;
    uint64_t rotor_bytes GUARDED_BY(mu) = 0;
  };
  Metaslab* MetaslabFor(const Dva& dva);
  // Allocates `size` on vdev v through allocator `st` (owner id `id`):
  // its active metaslab, else another it activates, else one borrowed
  // from another allocator; never one in `skip`. NoSpace when none fits.
  Result<uint64_t> AllocateOn(AllocatorState& st, int id, uint32_t v, uint64_t size, Txg txg,
                              std::vector<Metaslab*> skip) REQUIRES(st.mu);
  Status NoSpaceFor(uint64_t size) const;

  SpaceOptions options_;
  std::vector<std::unique_ptr<MetaslabGroup>> groups_;
  std::vector<std::unique_ptr<AllocatorState>> allocators_;
  // The copy allocators: set c - 1 for copy c, allocator_count() each.
  std::vector<std::unique_ptr<AllocatorState>> copy_allocators_;
  std::atomic<int> reuse_holds_{0};
};

}  // namespace poolfs::core::space
