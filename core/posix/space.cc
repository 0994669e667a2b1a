// PosixFs: space — the NoSpace reservation before a change, statfs, the
// status of the mount, live tunables (the policy is in posix_fs.cc's theory
// comment, "Space").
#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {

namespace {
// How many syncs a change that the unsynced txgs' estimate keeps out waits
// for before it is NoSpace (each sync replaces the estimate of what it
// wrote with its real cost; more writers may be filling the next one).
constexpr int kMaxSpaceWaits = 3;
// The same for a removal, and for a change that fits once the frees of
// synced txgs come back: frees come back two txgs after their own, so
// these may wait for a few more.
constexpr int kMaxRemovalWaits = 8;
}  // namespace

void PosixFs::RefreshSpaceLocked() {
  space_refresh_at_.store(
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) + 10'000'000,
      std::memory_order_relaxed);
  const uint64_t synced = pool_->txgs().last_synced().value();
  if (space_synced_txg_.load() == synced) return;
  auto stats = pool_->Stats();
  space_free_ = stats.space.free;
  space_capacity_ = stats.space.capacity;
  space_deferred_ = stats.space.deferred;
  space_synced_txg_ = synced;
  if (figures_bound_.load(std::memory_order_relaxed)) RefreshQuota();
  util::MutexLock l(&removal_mu_);
  removal_charges_.erase(removal_charges_.begin(), removal_charges_.upper_bound(synced));
}

void PosixFs::MaybeRefreshSpace() {
  // Free space changes only when a txg syncs: look for a newer synced txg
  // at most every 10 ms, and let one thread do it (and take the pool's
  // figures when there is one, which costs locks) while the others go on
  // with the figures they have.
  const uint64_t now = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  if (now >= space_refresh_at_.load(std::memory_order_relaxed) && space_mu_.TryLock()) {
    RefreshSpaceLocked();
    space_mu_.Unlock();
  }
}

uint64_t PosixFs::RemovalsCharged() {
  util::MutexLock l(&removal_mu_);
  uint64_t charged = 0;
  for (const auto& [txg, n] : removal_charges_) charged += n;
  return charged;
}

Status PosixFs::ReserveRemoval() {
  MaybeRefreshSpace();
  // What one removal may make the sync write: the object's dnode block,
  // the parent's, and a leaf of the directory, each in full and in every
  // copy of metadata (the zap and the dnode blocks are metadata).
  const uint64_t copies =
      std::min<uint64_t>(props_copies_.load(std::memory_order_relaxed) + 1, zio::kMaxCopies);
  const uint64_t charge = copies * (2 * dmu::kDnodeBlockSize + zap::kMaxBlockSize);
  for (int waits = 0;; waits++) {
    const uint64_t free = space_free_.load(std::memory_order_relaxed);
    // Far from full: nothing to count.
    if (free >= charge + 2 * dirty_max_bytes_.load(std::memory_order_relaxed) + (64u << 20))
      return Status::Ok();
    const uint64_t dirty = pool_->txgs().stats().dirty_bytes;
    const uint64_t charged = RemovalsCharged();
    if (charge + 2 * dirty + charged <= free) {
      util::MutexLock l(&removal_mu_);
      removal_charges_[pool_->txgs().open_txg().value() + 1] += charge;
      return Status::Ok();
    }
    if ((dirty == 0 && charged == 0) || waits == kMaxRemovalWaits)
      return Status::NoSpace(
          "pool '" + pool_->name() + "' is full: a removal may need " + std::to_string(charge) +
          " bytes of metadata, " +
          std::to_string(free > 2 * dirty + charged ? free - 2 * dirty - charged : 0) +
          " available");
    POOLFS_RETURN_IF_ERROR(pool_->SyncOnce());
    util::MutexLock l(&space_mu_);
    RefreshSpaceLocked();
  }
}

Status PosixFs::ReserveSpace(uint64_t bytes) {
  MaybeRefreshSpace();
  if (figures_bound_.load(std::memory_order_relaxed)) {
    // The room under the quota, or outside the other datasets'
    // reservations, as the last sync left it, less what changes since have
    // asked for, each until the txg it may land in has synced: so the
    // figures never miss what the open txgs hold, and a quota is never
    // passed.
    // What the change may add to the dataset's figures: every copy of its
    // data, and the metadata above it (block pointers in indirect blocks,
    // twice: at most an eighth of data written in blocks of 4 KiB or more).
    // Counted generously; the next sync puts the real figures in its place.
    bytes = bytes * props_copies_.load(std::memory_order_relaxed) + bytes / 8;
    const uint64_t room = quota_room_.load(std::memory_order_relaxed);
    const uint64_t lands = pool_->txgs().open_txg().value() + 1;
    uint64_t charged = 0;
    {
      util::MutexLock l(&quota_mu_);
      for (const auto& [txg, n] : quota_charges_) charged += n;
      if (charged + bytes <= room) {
        quota_charges_[lands] += bytes;
        charged = ~uint64_t{0};  // admitted
      }
    }
    if (charged != ~uint64_t{0}) {
      util::MutexLock l(&props_mu_);
      const std::string left = std::to_string(bytes) + " bytes asked, " +
                               std::to_string(room > charged ? room - charged : 0) + " left";
      if (quota_bound_.load(std::memory_order_relaxed))
        return Status(StatusCode::kQuotaExceeded,
                      "dataset " + dataset_name_ + " is at its quota (or an ancestor's): " + left);
      return Status::NoSpace("dataset " + dataset_name_ +
                             ": the space left is held by other datasets' reservations: " + left);
    }
  }
  // The pool: the free space of the last sync, less the slop, less what
  // the unsynced txgs may still take from it. A change that does not fit
  // only because of those waits for them to sync (their real cost then
  // replaces the estimate) and asks again; only a change that does not
  // fit in what the last sync left is NoSpace at once.
  for (int waits = 0;; waits++) {
    const uint64_t capacity = space_capacity_.load(std::memory_order_relaxed);
    const uint64_t slop = std::max<uint64_t>(capacity / 32, 1 << 20);
    uint64_t free = space_free_.load(std::memory_order_relaxed);
    free = free > slop ? free - slop : 0;
    // Only when the margin is thin is the dirty total (a locked read) worth
    // it.
    if (free >= bytes + 2 * dirty_max_bytes_.load(std::memory_order_relaxed) + (64u << 20))
      return Status::Ok();
    const uint64_t dirty = pool_->txgs().stats().dirty_bytes;
    // Each dirty byte may cost its block again in metadata (indirect blocks,
    // dnode blocks, space maps): count it twice. (Its extra copies, if
    // any, are left out rather than fail a sync: zio's theory comment.)
    const uint64_t held = 2 * dirty + RemovalsCharged();
    const uint64_t left = free > held ? free - held : 0;
    if (bytes <= left) return Status::Ok();
    // Frees on their way back (removals whose txgs synced) make the syncs
    // that end their deferral worth waiting for, even on an idle pool.
    const uint64_t coming = space_deferred_.load(std::memory_order_relaxed);
    const bool frees_help = coming > 0 && bytes <= left + coming && waits < kMaxRemovalWaits;
    if (!frees_help && (bytes > free || dirty == 0 || waits >= kMaxSpaceWaits))
      return Status::NoSpace("pool '" + pool_->name() + "' is full: " + std::to_string(bytes) +
                             " bytes asked, " + std::to_string(left) + " available" +
                             (coming ? " (" + std::to_string(coming) +
                                           " more once the frees of the last txgs come back)"
                                     : std::string()));
    // No Tx is held here (every caller reserves before it assigns one), so
    // waiting for a sync is what Tx::Assign's throttle does as well.
    POOLFS_RETURN_IF_ERROR(pool_->SyncOnce());
    util::MutexLock l(&space_mu_);
    RefreshSpaceLocked();
  }
}

void PosixFs::RefreshQuota() {
  std::string name;
  {
    util::MutexLock l(&props_mu_);
    name = dataset_name_;
  }
  auto figures = pool_->ListDatasets(name, /*recursive=*/false);
  if (!figures.ok() || figures->empty()) return;  // renamed meanwhile: SetProps comes
  quota_room_.store(figures->front().available, std::memory_order_relaxed);
  quota_referenced_.store(figures->front().referenced, std::memory_order_relaxed);
  // The figures hold every txg up to the one synced when they were taken
  // (or a later one: then a change is counted twice for a moment, never
  // missed).
  const uint64_t synced = space_synced_txg_.load();
  util::MutexLock l(&quota_mu_);
  quota_charges_.erase(quota_charges_.begin(), quota_charges_.upper_bound(synced));
}

uint64_t PosixFs::QuotaCharged() {
  util::MutexLock l(&quota_mu_);
  uint64_t charged = 0;
  for (const auto& [txg, n] : quota_charges_) charged += n;
  return charged;
}

Result<FsStats> PosixFs::StatFs(uint64_t /*ino*/) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  auto stats = pool_->Stats();
  FsStats s;
  s.block_size = 4096;
  s.blocks = stats.space.capacity / s.block_size;
  s.blocks_free = stats.space.free / s.block_size;
  const uint64_t slop = std::max<uint64_t>(stats.space.capacity / 32, 1 << 20);
  s.blocks_available = stats.space.free > slop ? (stats.space.free - slop) / s.block_size : 0;
  if (figures_bound_.load(std::memory_order_relaxed)) {
    // As df shows a ZFS dataset under a quota: its size is what it holds
    // plus the room left, so the quota (or an ancestor's) is its size.
    const uint64_t charged = QuotaCharged();
    const uint64_t room = quota_room_.load(std::memory_order_relaxed);
    const uint64_t left = room > charged ? room - charged : 0;
    const uint64_t held = quota_referenced_.load(std::memory_order_relaxed) + charged;
    s.blocks = std::min(s.blocks, (held + left) / s.block_size);
    s.blocks_free = std::min(s.blocks_free, left / s.block_size);
    s.blocks_available = std::min(s.blocks_available, left / s.block_size);
  }
  const uint64_t live = os_->live_objects();
  // Each new file costs at least a 512-byte dnode.
  const uint64_t by_ids = dmu::kMaxObjectId - std::min(os_->next_object(), dmu::kMaxObjectId);
  s.files_free =
      std::min(s.blocks_available * (s.block_size / dmu::kDnodeSize),
               by_ids + (os_->next_object() - 1 - std::min(live, os_->next_object() - 1)));
  s.files = live + s.files_free;
  s.name_max = kNameMax;
  return s;
}

FsStatus PosixFs::GetStatus() {
  FsStatus s;
  CallGuard g;
  if (!Enter(&g, false).ok()) {
    s.state = "unmounted";
    return s;
  }
  auto stats = pool_->Stats();
  s.pool = pool_->name();
  // A suspended pool (a failed sync, or an operation that failed halfway)
  // still serves reads: say why it takes no changes.
  if (Status why = pool_->txgs().suspended(); !why.ok()) {
    constexpr std::string_view kPrefix = "pool suspended: ";
    std::string_view m = why.message();
    if (m.starts_with(kPrefix)) m.remove_prefix(kPrefix.size());
    s.state = "suspended: " + std::string(m);
  } else {
    s.state = "online";
  }
  s.imported_txg = stats.imported.value();
  s.import_notes = pool_->import_notes();
  s.last_synced_txg = stats.last_synced.value();
  s.open_txg = stats.open.value();
  s.syncs = stats.syncs;
  s.mos_passes_last = stats.mos_passes_last;
  s.mos_passes_max = stats.mos_passes_max;
  s.space_total = stats.space.capacity;
  s.space_allocated = stats.space.allocated;
  s.space_free = stats.space.free;
  s.space_deferred = stats.space.deferred;
  s.cloned_blocks = stats.clones.entries;
  s.clone_saved_bytes = stats.clones.saved_bytes;
  for (uint64_t e : stats.checksum_errors) s.checksum_errors += e;
  s.repaired_copies = stats.repairs;
  s.copy_shortfalls = stats.copy_shortfalls;
  s.format_version = stats.format_version;
  s.datasets = stats.datasets;
  s.objects = os_->live_objects();
  {
    util::MutexLock ul(&unlinked_mu_);
    s.unlinked_pending = unlinked_->Count();
  }
  const dmu::ObjectAllocStats a = os_->AllocStats();
  s.backfill = std::string(dmu::BackfillModeName(a.mode));
  s.objects_allocated = a.allocated;
  s.objects_freed = a.freed;
  s.objects_reused = a.reused;
  s.failed_holds = a.failed_holds;
  s.object_high_water = a.high_water;
  s.density = a.density();
  s.dnode_blocks_in_use = a.dnode_blocks_in_use;
  const arc::ArcStats& c = stats.arc;
  s.arc_max_bytes = c.max_bytes;
  s.arc_bytes = c.cached_bytes;
  s.arc_mru_bytes = c.mru_bytes;
  s.arc_mfu_bytes = c.mfu_bytes;
  s.arc_mru_ghost_bytes = c.mru_ghost_bytes;
  s.arc_mfu_ghost_bytes = c.mfu_ghost_bytes;
  s.arc_hits = c.hits;
  s.arc_misses = c.misses;
  s.arc_evictions = c.evictions;
  s.arc_sublist_lock_misses = c.sublist_lock_misses;
  s.object_cache_limit = pool_->object_cache_limit();
  s.cached_dnodes = os_->cached_dnodes();
  s.dnode_evictions = os_->dnode_evictions();
  s.cached_inodes = table_.size();
  s.inode_evictions = table_.evictions();
  s.kernel_inodes = table_.kernel_inodes();
  s.arc_sublists = c.sublists;
  s.arc_read_once = c.read_once;
  const dmu::ReadAheadStats& ra = stats.read_ahead;
  s.prefetch_requested = ra.requested;
  s.prefetch_hits = ra.hits;
  s.prefetch_waits = ra.waits;
  s.prefetch_dropped = ra.dropped;
  s.prefetch_failed = ra.failed;
  s.cached_leaves = leaves_.size();
  s.leaf_cache_limit = leaves_.limit();
  s.leaf_hits = leaves_.hits();
  s.leaf_misses = leaves_.misses();
  const pool::PoolSyncStats sync = pool_->SyncStats();
  for (const pool::SyncRecord& r : sync.recent) {
    s.recent_syncs.push_back({.txg = r.txg.value(),
                              .duration_ns = r.duration_ns,
                              .dirty_bytes = r.dirty_bytes,
                              .bytes_written = r.bytes_written,
                              .blocks_written = r.blocks_written,
                              .threads = r.threads,
                              .datasets = r.datasets,
                              .strand_busy_ns = r.strand_busy_ns});
  }
  s.sync_ns_total = sync.sync_ns_total;
  s.bytes_written = sync.bytes_written;
  s.blocks_written = sync.blocks_written;
  s.bytes_read = sync.bytes_read;
  s.blocks_read = sync.blocks_read;
  // Errors in other datasets are named by number here; a mount of the
  // pool's tree names them all (DatasetTreeFs::GetStatus).
  s.scrub = DescribeScrub([this](uint64_t id, uint64_t object) -> Result<std::string> {
    if (pool_->dataset_by_id(id) != os_) return Status::NotFound("not this mount's dataset");
    return FindPath(object);
  });
  return s;
}

Status PosixFs::SetLive(const CoreTunables& t) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  // What may not change while mounted: everything but the live fields
  // (fs.h lists them), compared with the mount's values.
  const CoreTunables& mounted = opts_.tunables;
  const auto at_mount = [](std::string_view what) {
    return Status::InvalidArgument(std::string(what) +
                                   " applies at the next mount only; nothing changed");
  };
  if (t.space != mounted.space) return at_mount("alloc.* (SpaceOptions)");
  if (t.vdev != mounted.vdev) return at_mount("vdev.* (VdevOptions)");
  if (t.read_ahead != mounted.read_ahead) return at_mount("dmu.prefetch_* (ReadAheadOptions)");
  if (t.zil != mounted.zil) return at_mount("zil.* (IntentLogOptions)");
  ArcOptions arc = t.arc;
  arc.max_bytes = mounted.arc.max_bytes;  // the one live field of ArcOptions
  if (arc != mounted.arc) return at_mount("arc.* other than arc.max_bytes (ArcOptions)");
  POOLFS_RETURN_IF_ERROR(txg::ValidateTxgOptions(t.txg));
  pool_->txgs().SetOptions(t.txg);
  dirty_max_bytes_.store(t.txg.dirty_max_bytes, std::memory_order_relaxed);
  os_->SetBackfill(t.objects.backfill);
  os_->SetAllocChunk(t.objects.chunk);
  pool_->SetCacheBytes(t.arc.max_bytes);
  cache_whole_reads_.store(t.cache_whole_reads, std::memory_order_relaxed);
  FollowCacheBound();
  return Status::Ok();
}

void PosixFs::FollowCacheBound() {
  table_.SetLimit(pool_->object_cache_limit());
  leaves_.SetLimit(pool_->leaf_cache_limit());
}

}  // namespace poolfs::core::posix
