// Runner::MountCycle: a short clean mount of the pool, as a user's test
// suite makes hundreds of: import, a few operations, export.
#include <chrono>
#include <thread>

#include "stress/runner.h"
#include "stress/workload.h"

namespace poolfs::stress {

namespace {

using Clock = std::chrono::steady_clock;
using core::pool::Pool;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

Status Runner::MountCycle(uint64_t cycle_seed) {
  std::mt19937_64 rng(cycle_seed);
  const core::pool::PoolOptions opts = RandomPoolOptions(rng);
  POOLFS_RETURN_IF_ERROR(MaybeDamage(cycle_seed, {}));
  damage_.workload_watched = true;
  std::vector<std::unique_ptr<core::vdev::BlockDevice>> held;
  auto pool = OpenPool(opts, {}, damage_.workload.get(), &held);
  if (!pool.ok()) return pool.status().WithContext("import before the workload");
  if ((*pool)->imported_txg().value() != verified_txg_)
    return Status::Corruption("a clean import opened txg " +
                              std::to_string((*pool)->imported_txg().value()) + ", not txg " +
                              std::to_string(verified_txg_) +
                              " that the last cycle verified and exported");
  auto log = OpLog::Open(log_path_, true);
  if (!log.ok()) return log.status();
  POOLFS_ASSIGN_OR_RETURN(std::vector<dmu::ObjectSet*> sets, Sets(pool->get()));
  POOLFS_ASSIGN_OR_RETURN(std::vector<ObjectState> objects, Existing(pool->get()));
  WorkloadOptions wo;
  wo.threads = options_.threads;
  wo.seed = rng();
  wo.max_objects_per_thread = objects_per_thread_;
  wo.max_datasets = kMaxDatasets;
  wo.tree = tree_;
  Workload work(pool->get(), sets, log->get(), wo, nullptr);
  const int64_t run_ms = int64_t(10 + rng() % 150);
  const auto start = Clock::now();
  work.Start(objects, models_);
  while (MsSince(start) < run_ms && !work.done())
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  work.Stop();
  if (!work.status().ok()) return work.status().WithContext("workload");
  POOLFS_RETURN_IF_ERROR((*pool)->Export().WithContext("export after the workload"));
  // Every txg's MOS sync converges in a handful of passes, however the
  // mounts before scattered the space maps (pool.h); past kMaxMosPasses
  // the pool would have suspended.
  const uint32_t passes = (*pool)->Stats().mos_passes_max;
  cycle_note_ = ": ran " + std::to_string(run_ms) + " ms, txg timeout " +
                std::to_string(opts.txg.timeout_ms) + " ms, MOS passes at most " +
                std::to_string(passes);
  if (passes > kMaxMosPasses)
    return Status::Corruption("a txg's MOS sync took " + std::to_string(passes) +
                              " passes; it should converge in at most " +
                              std::to_string(kMaxMosPasses));
  OpRecord synced;
  synced.kind = OpKind::kSynced;
  synced.seq = (*log)->NextSeq();
  synced.txg = work.max_txg();
  POOLFS_RETURN_IF_ERROR((*log)->Append(synced));
  pool->reset();
  held.clear();  // the files' locks
  log->reset();

  bool torn = false;
  auto records = OpLog::Read(log_path_, &torn);
  if (!records.ok()) return records.status();
  uint64_t ops = 0;
  for (const OpRecord& r : *records) ops += r.kind != OpKind::kSynced;
  stats_.ops += ops;
  cycle_note_ += ", " + std::to_string(ops) + " ops";
  auto after = OpenPool(Verifying(opts), {}, damage_.verify.get(), &held);
  if (!after.ok()) return after.status().WithContext("import after the clean export");
  POOLFS_RETURN_IF_ERROR(VerifyImport(after->get(), *records, work.max_txg(), 0));
  POOLFS_RETURN_IF_ERROR((*after)->Export().WithContext("export after verifying"));
  after->reset();
  held.clear();
  return CheckExported();
}

}  // namespace poolfs::stress
