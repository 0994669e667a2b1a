// Pool::SyncTxg and its steps; see the theory comment in pool.h.
#include <atomic>
#include <chrono>
#include <memory>

#include "dmu/tx.h"
#include "pool/pool.h"
#include "util/check.h"
#include "vdev/uberblock.h"

namespace poolfs::core::pool {

namespace {
// From this pass on, the MOS sync's frees wait for the next txg (see
// Zio::DeferFrees), and only blocks already born in the txg are rewritten
// (in place), so each later pass changes at most the maps of the metaslabs
// it allocated from: a handful of passes, whatever the pool's state.
constexpr int kDeferFreesPass = 2;
// A sync that needs more is a bug; the pool suspends rather than loop.
constexpr int kMaxMosPasses = 32;
}  // namespace

namespace {

// The first failure of a batch of sync tasks, from whichever task fails.
class FirstFailure {
 public:
  void Record(const Status& st) EXCLUDES(mu_) {
    util::MutexLock l(&mu_);
    if (first_.ok()) first_ = st;
  }
  Status Get() const EXCLUDES(mu_) {
    util::MutexLock l(&mu_);
    return first_;
  }

 private:
  mutable util::Mutex mu_;
  Status first_ GUARDED_BY(mu_);
};

// One dataset's part of a sync: its tasks not yet finished, and its result.
struct DatasetSync {
  dmu::ObjectSet* os = nullptr;
  std::string name;
  std::atomic<size_t> remaining{0};
  std::atomic<bool> failed{false};
  zio::BlockPtr root;  // written by its FinishSync task, read after Wait
};

uint64_t NowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

Status Pool::SyncDatasets(Txg t, std::vector<std::atomic<uint64_t>>& busy_ns, uint32_t* datasets) {
  const size_t n = space_->allocator_count();
  std::vector<Dataset*> dirty;
  {
    util::MutexLock l(&mu_);
    for (auto& [name, ds] : datasets_) {
      // A dataset created in a later txg (while t quiesced) waits for it.
      if (ds->entry.created > t) continue;
      if (ds->os->Dirty(t) || ds->os->root().IsHole()) dirty.push_back(ds.get());
    }
  }
  *datasets = uint32_t(dirty.size());
  if (dirty.empty()) return Status::Ok();
  const bool serial = options_.serial_dataset_sync;
  FirstFailure failure;
  std::vector<std::unique_ptr<DatasetSync>> syncs;
  for (Dataset* ds : dirty) {
    auto s = std::make_unique<DatasetSync>();
    s->os = ds->os.get();
    s->name = ds->entry.name;
    syncs.push_back(std::move(s));
  }
  // Runs fn, adding its time to its strand's busy time.
  auto timed = [&busy_ns, n](size_t strand, auto&& fn) {
    const uint64_t start = NowNs();
    fn();
    busy_ns[strand % n].fetch_add(NowNs() - start, std::memory_order_relaxed);
  };
  // Posts s's FinishSync to `strand`, whose allocator it writes through.
  auto post_finish = [this, t, n, &failure, &timed](DatasetSync& s, size_t strand) {
    executor_->Post(strand, [t, n, strand, &s, &failure, &timed] {
      timed(strand, [&] {
        Result<zio::BlockPtr> root = s.os->FinishSync(t, strand % n);
        if (root.ok()) {
          s.root = *root;
        } else {
          failure.Record(root.status().WithContext(s.name));
        }
      });
    });
  };
  // Posts each of the dataset's tasks to its allocator's strand; the last
  // to finish (unless one failed) posts its FinishSync. The dataset's lists
  // start on strand `first` (rotated per dataset, so that datasets with a
  // few dirty objects spread over the strands).
  auto post_lists = [&](DatasetSync& s, std::vector<dmu::SyncTask> tasks, size_t first) {
    if (tasks.empty()) return post_finish(s, first);
    s.remaining.store(tasks.size(), std::memory_order_relaxed);
    for (dmu::SyncTask& task : tasks) {
      const size_t a = task.allocator;
      executor_->Post(a, [a, &s, &failure, &timed, &post_finish, fn = std::move(task.fn)] {
        timed(a, [&] {
          Status st = fn();
          if (!st.ok()) {
            s.failed.store(true);
            failure.Record(st);
          }
        });
        if (s.remaining.fetch_sub(1) == 1 && !s.failed.load()) post_finish(s, a);
      });
    }
  };
  if (serial) {
    for (size_t i = 0; i < syncs.size(); i++) {
      post_lists(*syncs[i], syncs[i]->os->SyncTasks(t, n, 0, /*split_large=*/false), 0);
      executor_->Wait();
      POOLFS_RETURN_IF_ERROR(failure.Get());
    }
  } else {
    // Every dataset's lists first (SyncTasks takes each large dnode's
    // frees before its shares run), then all of them at once.
    std::vector<std::vector<dmu::SyncTask>> tasks(syncs.size());
    for (size_t i = 0; i < syncs.size(); i++) tasks[i] = syncs[i]->os->SyncTasks(t, n, i % n);
    for (size_t i = 0; i < syncs.size(); i++) post_lists(*syncs[i], std::move(tasks[i]), i % n);
    executor_->Wait();
    POOLFS_RETURN_IF_ERROR(failure.Get());
  }
  util::MutexLock l(&mu_);
  for (size_t i = 0; i < dirty.size(); i++) dirty[i]->entry.root = syncs[i]->root;
  dir_dirty_ = true;
  return Status::Ok();
}

PoolSyncStats Pool::SyncStats() const {
  PoolSyncStats s;
  {
    util::MutexLock l(&sync_stats_mu_);
    s.recent.assign(recent_syncs_.begin(), recent_syncs_.end());
    s.syncs = sync_count_;
    s.sync_ns_total = sync_ns_total_;
  }
  if (zio_) {
    s.bytes_written = zio_->bytes_written();
    s.blocks_written = zio_->blocks_written();
    s.bytes_read = zio_->bytes_read();
    s.blocks_read = zio_->blocks_read();
  }
  return s;
}

Status Pool::WriteDirectory(dmu::Tx& tx) {
  dir_.datasets.clear();
  dir_.head_deadlists.clear();
  for (const auto& [name, ds] : datasets_) {
    // A dataset created after SyncDatasets listed this txg's datasets (its
    // Tx is in a later txg) has no root yet: it joins the directory of the
    // txg that first writes it. Listing it now would leave a hole root in
    // this txg's directory, which import refuses. A dataset destroyed in
    // this txg leaves it (pool_datasets.cc).
    if (!InDirectory(*ds, tx.txg())) continue;
    dir_.datasets.push_back(ds->entry);
    if (!ds->deadlist.empty()) dir_.head_deadlists[ds->entry.id] = ds->deadlist;
  }
  dir_.snapshots.clear();
  for (const auto& [id, s] : snapshots_)
    if (InDirectory(*s, tx.txg())) dir_.snapshots.push_back(s->entry);
  // Oldest first per dataset (ids grow with time, txgs too).
  std::stable_sort(dir_.snapshots.begin(), dir_.snapshots.end(),
                   [](const SnapshotEntry& a, const SnapshotEntry& b) {
                     return a.dataset != b.dataset ? a.dataset < b.dataset : a.txg < b.txg;
                   });
  std::string bytes = EncodePoolDirectory(dir_, zio_->format());
  POOLFS_RETURN_IF_ERROR(mos_->Write(tx, ObjectId(kDirectoryObject), 0, bytes));
  POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo info, mos_->Stat(ObjectId(kDirectoryObject)));
  if (info.length > bytes.size())
    POOLFS_RETURN_IF_ERROR(mos_->Truncate(tx, ObjectId(kDirectoryObject), bytes.size()));
  dir_dirty_ = false;
  return Status::Ok();
}

Status Pool::StoreSpaceMap(dmu::Tx& tx, const space::Metaslab& ms) {
  const std::string bytes = ms.space_map();
  const uint64_t generation = ms.map_generation();
  const uint64_t frozen = ms.space_map_frozen();
  util::MutexLock l(&mu_);
  StoredMap& sm = maps_[{ms.vdev(), ms.index()}];
  uint64_t from = std::min<uint64_t>(sm.frozen, bytes.size());
  if (sm.object == 0) {
    POOLFS_ASSIGN_OR_RETURN(ObjectId obj,
                            mos_->Create(tx, dmu::ObjectType::kSpaceMap, kMosBlockSize));
    sm.object = obj.value();
    dir_.space_maps.push_back({ms.vdev(), ms.index(), sm.object});
    dir_dirty_ = true;
    from = 0;
  } else if (generation != sm.generation) {
    from = 0;  // condensed: a new map
  }
  // Only what follows the part that never changes again is written.
  POOLFS_RETURN_IF_ERROR(
      mos_->Write(tx, ObjectId(sm.object), from, std::string_view(bytes).substr(from)));
  if (sm.length > bytes.size())
    POOLFS_RETURN_IF_ERROR(mos_->Truncate(tx, ObjectId(sm.object), bytes.size()));
  sm.generation = generation;
  sm.frozen = frozen;
  sm.length = bytes.size();
  return Status::Ok();
}

Status Pool::StoreRefTable(dmu::Tx& tx) {
  if (!ref_table_->TakeDirty()) return Status::Ok();
  const std::string bytes = zio::BlockRefTable::Encode(ref_table_->Snapshot());
  uint64_t object;
  {
    util::MutexLock l(&mu_);
    object = dir_.ref_table_object;
  }
  if (object == 0) {
    if (bytes.empty()) return Status::Ok();
    POOLFS_ASSIGN_OR_RETURN(ObjectId obj,
                            mos_->Create(tx, dmu::ObjectType::kRefTable, kMosBlockSize));
    object = obj.value();
    ref_table_stored_.clear();
    util::MutexLock l(&mu_);
    dir_.ref_table_object = object;
    dir_dirty_ = true;
  }
  // The blocks whose bytes changed: a count that moved changes one.
  const std::string_view now(bytes), was(ref_table_stored_);
  for (size_t off = 0; off < now.size(); off += kMosBlockSize) {
    const std::string_view chunk = now.substr(off, kMosBlockSize);
    if (off < was.size() && was.substr(off, kMosBlockSize) == chunk) continue;
    POOLFS_RETURN_IF_ERROR(mos_->Write(tx, ObjectId(object), off, chunk));
  }
  if (was.size() > now.size())
    POOLFS_RETURN_IF_ERROR(mos_->Truncate(tx, ObjectId(object), now.size()));
  ref_table_stored_ = bytes;
  return Status::Ok();
}

Status Pool::SyncOnce() {
  dmu::Tx tx(assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(0));
  const Txg t = tx.txg();
  tx.Commit();
  return WaitSynced(t);
}

Status Pool::WriteUberblocks(Txg t, const zio::BlockPtr& mos_root) {
  vdev::Uberblock ub;
  ub.txg = t;
  ub.pool_guid = pool_guid_;
  ub.guid_sum = guid_sum_;
  ub.timestamp_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
  ub.version = format_version_;
  LogState log = imported_log_;
  {
    util::MutexLock l(&log_mu_);
    if (log_state_) log = log_state_(t);
  }
  ub.root = EncodeRootPayload(mos_root, zio_->format(), log);
  for (size_t i = 0; i < devs_.size(); i++)
    POOLFS_RETURN_IF_ERROR(vdev::WriteUberblock(*devs_[i], layouts_[i], ub));
  return zio_->FlushAll();
}

Status Pool::SyncTxg(Txg t) {
  const std::string txg_name = "txg " + std::to_string(t.value());
  const uint64_t start_ns = NowNs();
  const uint64_t written_before = zio_->bytes_written();
  const uint64_t blocks_before = zio_->blocks_written();
  // The txg boundary: the executor takes a new thread count here, and has a
  // strand per allocator.
  const size_t n = space_->allocator_count();
  executor_->BeginSync(n);
  SyncRecord record;
  record.txg = t;
  record.threads = uint32_t(executor_->threads());
  record.dirty_bytes = txgs_ ? txgs_->syncing_dirty_bytes() : 0;
  std::vector<std::atomic<uint64_t>> busy_ns(n);
  // Clones made in t count before any free of t (block_ref_table.h).
  ref_table_->ApplyPending(t);
  // 1. Datasets.
  POOLFS_RETURN_IF_ERROR(SyncDatasets(t, busy_ns, &record.datasets).WithContext(txg_name));
  dmu::Tx tx = dmu::Tx::ForSync(t);
  // A received head replaces its dataset's before t's snapshots keep it.
  POOLFS_RETURN_IF_ERROR(TakeReceivedHeads(tx).WithContext(txg_name));
  // Then the snapshots of t, the blocks the datasets dropped that
  // snapshots hold, and the snapshots and datasets destroyed in t.
  POOLFS_RETURN_IF_ERROR(CaptureSnapshots(t).WithContext(txg_name));
  POOLFS_RETURN_IF_ERROR(StoreDeadlists(tx).WithContext(txg_name));
  POOLFS_RETURN_IF_ERROR(DestroySnapshots(tx).WithContext(txg_name));
  POOLFS_RETURN_IF_ERROR(RollBack(tx).WithContext(txg_name));
  POOLFS_RETURN_IF_ERROR(PromoteClones(tx).WithContext(txg_name));
  POOLFS_RETURN_IF_ERROR(FreeDestroyed(tx).WithContext(txg_name));
  // 2. The MOS, in passes until the space maps stop changing. First what
  // the previous txg's late passes left to free.
  std::vector<zio::BlockPtr> left;
  {
    util::MutexLock l(&mu_);
    left.swap(dir_.deferred_frees);
    if (!left.empty()) dir_dirty_ = true;
  }
  for (const zio::BlockPtr& bp : left)
    POOLFS_RETURN_IF_ERROR(zio_->Free(bp, t).WithContext(txg_name + ": deferred free"));
  // Blocks a clone of a later txg still needs wait for the next sync.
  if (std::vector<zio::BlockPtr> held = zio_->TakeHeldFrees(); !held.empty()) {
    util::MutexLock l(&mu_);
    dir_.deferred_frees.insert(dir_.deferred_frees.end(), held.begin(), held.end());
    dir_dirty_ = true;
  }
  std::vector<zio::BlockPtr> deferred;  // frees of this txg's late passes
  struct StopDeferring {
    zio::Zio* zio;
    ~StopDeferring() { zio->DeferFrees(Txg(0), nullptr); }
  } stop_deferring{zio_.get()};
  zio::BlockPtr mos_root = mos_->root();
  int pass = 1;
  for (;; pass++) {
    if (pass > kMaxMosPasses)
      return Status(StatusCode::kAborted, txg_name + ": the MOS sync did not converge in " +
                                              std::to_string(kMaxMosPasses) + " passes");
    std::vector<const space::Metaslab*> changed;
    space_->Sync(t, [&](const space::Metaslab& ms) { changed.push_back(&ms); });
    for (const space::Metaslab* ms : changed) POOLFS_RETURN_IF_ERROR(StoreSpaceMap(tx, *ms));
    POOLFS_RETURN_IF_ERROR(StoreRefTable(tx));
    {
      util::MutexLock l(&mu_);
      if (!deferred.empty()) {
        dir_.deferred_frees.insert(dir_.deferred_frees.end(), deferred.begin(), deferred.end());
        deferred.clear();
        dir_dirty_ = true;
      }
      if (dir_dirty_) POOLFS_RETURN_IF_ERROR(WriteDirectory(tx));
    }
    if (!mos_->Dirty(t)) break;
    if (pass == kDeferFreesPass) zio_->DeferFrees(t, &deferred);
    for (auto& task : mos_->SyncTasks(t, 1)) POOLFS_RETURN_IF_ERROR(task.fn().WithContext("MOS"));
    POOLFS_ASSIGN_OR_RETURN(mos_root, mos_->FinishSync(t, 0));
  }
  mos_passes_last_.store(uint32_t(pass), std::memory_order_relaxed);
  if (uint32_t(pass) > mos_passes_max_.load(std::memory_order_relaxed))
    mos_passes_max_.store(uint32_t(pass), std::memory_order_relaxed);
  // 3. Everything of t on disk, then the uberblock that makes t the pool.
  POOLFS_RETURN_IF_ERROR(zio_->FlushAll());
  POOLFS_RETURN_IF_ERROR(WriteUberblocks(t, mos_root));
  {
    // The tree a scrub round walks from now on.
    util::MutexLock l(&mu_);
    synced_roots_ = {t, mos_root, {}};
    for (const DatasetEntry& e : dir_.datasets) synced_roots_.datasets.emplace_back(e.id, e.root);
    for (const SnapshotEntry& e : dir_.snapshots) synced_roots_.datasets.emplace_back(e.id, e.root);
    std::sort(synced_roots_.datasets.begin(), synced_roots_.datasets.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  // 4. t is durable: release what waited for it.
  {
    util::MutexLock l(&log_mu_);
    if (log_durable_) log_durable_(t);
  }
  space_->SyncDone(t);
  mos_->SyncDone(t);
  std::vector<dmu::ObjectSet*> sets;
  {
    util::MutexLock l(&mu_);
    for (auto& [name, ds] : datasets_) sets.push_back(ds->os.get());
    for (auto& [txg, os] : rolled_back_)
      if (txg == t) sets.push_back(os.get());  // it synced in t before it was replaced
  }
  for (dmu::ObjectSet* os : sets) os->SyncDone(t);
  if (block_buffers_) block_buffers_->Trim();  // keep what this txg's writes needed
  record.duration_ns = NowNs() - start_ns;
  record.bytes_written = zio_->bytes_written() - written_before;
  record.blocks_written = zio_->blocks_written() - blocks_before;
  for (const auto& b : busy_ns) record.strand_busy_ns.push_back(b.load(std::memory_order_relaxed));
  util::MutexLock l(&sync_stats_mu_);
  sync_count_++;
  sync_ns_total_ += record.duration_ns;
  recent_syncs_.push_back(std::move(record));
  if (recent_syncs_.size() > PoolSyncStats::kRecent) recent_syncs_.pop_front();
  return Status::Ok();
}

}  // namespace poolfs::core::pool
