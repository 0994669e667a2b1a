// Pool::SyncTxg and its steps; see the theory comment in pool.h.
#include <chrono>

#include "pool/pool.h"
#include "util/check.h"
#include "vdev/uberblock.h"

namespace poolfs::core::pool {

namespace {
constexpr uint64_t kDirectoryObject = 1;
constexpr uint32_t kMosBlockSize = 16 * 1024;
// From this pass on, the MOS sync's frees wait for the next txg (see
// Zio::DeferFrees), and only blocks already born in the txg are rewritten
// (in place), so each later pass changes at most the maps of the metaslabs
// it allocated from: a handful of passes, whatever the pool's state.
constexpr int kDeferFreesPass = 2;
// A sync that needs more is a bug; the pool suspends rather than loop.
constexpr int kMaxMosPasses = 32;
}  // namespace

Status Pool::RunTasks(std::vector<dmu::SyncTask> tasks) {
  if (tasks.empty()) return Status::Ok();
  util::Mutex err_mu;
  Status first;
  std::vector<txg::StrandTask> strand_tasks;
  strand_tasks.reserve(tasks.size());
  for (auto& t : tasks) {
    strand_tasks.push_back({t.allocator, [&err_mu, &first, fn = std::move(t.fn)] {
                              Status st = fn();
                              if (st.ok()) return;
                              util::MutexLock l(&err_mu);
                              if (first.ok()) first = st;
                            }});
  }
  executor_->Run(std::move(strand_tasks));
  util::MutexLock l(&err_mu);
  return first;
}

Status Pool::SyncDatasets(Txg t) {
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
  if (dirty.empty()) return Status::Ok();
  // Every dataset's dnode lists at once, one strand per allocator.
  std::vector<dmu::SyncTask> tasks;
  for (Dataset* ds : dirty)
    for (auto& task : ds->os->SyncTasks(t, n)) tasks.push_back(std::move(task));
  POOLFS_RETURN_IF_ERROR(RunTasks(std::move(tasks)));
  // Then each dataset's metadnode and root block, datasets in parallel.
  std::vector<zio::BlockPtr> roots(dirty.size());
  std::vector<dmu::SyncTask> finish;
  for (size_t i = 0; i < dirty.size(); i++) {
    size_t a = i % n;
    finish.push_back({a, [&, i, a]() -> Status {
                        auto root = dirty[i]->os->FinishSync(t, a);
                        if (!root.ok()) return root.status().WithContext(dirty[i]->entry.name);
                        roots[i] = *root;
                        return Status::Ok();
                      }});
  }
  POOLFS_RETURN_IF_ERROR(RunTasks(std::move(finish)));
  util::MutexLock l(&mu_);
  for (size_t i = 0; i < dirty.size(); i++) dirty[i]->entry.root = roots[i];
  dir_dirty_ = true;
  return Status::Ok();
}

Status Pool::WriteDirectory(dmu::Tx& tx) {
  dir_.datasets.clear();
  for (const auto& [name, ds] : datasets_) {
    // A dataset created after SyncDatasets listed this txg's datasets (its
    // Tx is in a later txg) has no root yet: it joins the directory of the
    // txg that first writes it. Listing it now would leave a hole root in
    // this txg's directory, which import refuses. A dataset destroyed in
    // this txg leaves it (pool_datasets.cc).
    if (!InDirectory(*ds, tx.txg())) continue;
    dir_.datasets.push_back(ds->entry);
  }
  std::string bytes = EncodePoolDirectory(dir_);
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

Status Pool::WriteUberblocks(Txg t, const zio::BlockPtr& mos_root) {
  vdev::Uberblock ub;
  ub.txg = t;
  ub.pool_guid = pool_guid_;
  ub.guid_sum = guid_sum_;
  ub.timestamp_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
  ub.root = EncodeRootPayload(mos_root);
  for (size_t i = 0; i < devs_.size(); i++)
    POOLFS_RETURN_IF_ERROR(vdev::WriteUberblock(*devs_[i], layouts_[i], ub));
  return zio_->FlushAll();
}

Status Pool::SyncTxg(Txg t) {
  const std::string txg_name = "txg " + std::to_string(t.value());
  // 1. Datasets.
  POOLFS_RETURN_IF_ERROR(SyncDatasets(t).WithContext(txg_name));
  POOLFS_RETURN_IF_ERROR(FreeDestroyed(t).WithContext(txg_name));
  // 2. The MOS, in passes until the space maps stop changing. First what
  // the previous txg's late passes left to free.
  dmu::Tx tx = dmu::Tx::ForSync(t);
  std::vector<zio::BlockPtr> left;
  {
    util::MutexLock l(&mu_);
    left.swap(dir_.deferred_frees);
    if (!left.empty()) dir_dirty_ = true;
  }
  for (const zio::BlockPtr& bp : left)
    POOLFS_RETURN_IF_ERROR(zio_->Free(bp, t).WithContext(txg_name + ": deferred free"));
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
  // 4. t is durable: release what waited for it.
  space_->SyncDone(t);
  mos_->SyncDone(t);
  std::vector<dmu::ObjectSet*> sets;
  {
    util::MutexLock l(&mu_);
    for (auto& [name, ds] : datasets_) sets.push_back(ds->os.get());
  }
  for (dmu::ObjectSet* os : sets) os->SyncDone(t);
  if (block_buffers_) block_buffers_->Trim();  // keep what this txg's writes needed
  return Status::Ok();
}

}  // namespace poolfs::core::pool
