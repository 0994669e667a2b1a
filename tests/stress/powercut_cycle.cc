// Runner::PowercutCycle: the workload runs in this process on
// FaultInjectingDevices behind one PowerRail, which is cut under it.
#include <chrono>
#include <thread>

#include "stress/power_rail.h"
#include "stress/runner.h"
#include "stress/workload.h"
#include "vdev/fault_injecting_device.h"

namespace poolfs::stress {

namespace {

using Clock = std::chrono::steady_clock;
using core::pool::Pool;
using core::vdev::FaultInjectingDevice;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

Status Runner::PowercutCycle(uint64_t cycle_seed) {
  std::mt19937_64 rng(cycle_seed);
  const core::pool::PoolOptions opts = RandomPoolOptions(rng);
  // The vdev files under fault-injecting devices, all on one rail.
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<RailedFiles> files, OpenOnRail(paths_));
  const std::vector<FaultInjectingDevice*>& fault_ptrs = files->fault_ptrs;
  const std::vector<core::vdev::BlockDevice*>& devs = files->devs;
  PowerRail& rail = *files->rail;
  POOLFS_RETURN_IF_ERROR(MaybeDamage(cycle_seed, fault_ptrs));
  damage_.workload_watched = true;

  std::vector<std::unique_ptr<core::vdev::BlockDevice>> held;  // outlives both pools
  auto pool = OpenPool(opts, devs, damage_.workload.get(), &held);
  if (!pool.ok()) return pool.status().WithContext("import before the workload");
  if ((*pool)->imported_txg().value() != verified_txg_)
    return Status::Corruption("a clean import opened txg " +
                              std::to_string((*pool)->imported_txg().value()) + ", not txg " +
                              std::to_string(verified_txg_) +
                              " that the last cycle verified and exported");
  POOLFS_ASSIGN_OR_RETURN(WorkloadStart ws, PrepareWorkload(pool->get(), rng()));
  // Half the time, a dataset's creation, rename or destroy is followed by
  // a cut within a few hundred I/Os: while it reaches disk.
  const uint64_t dataset_cut_seed = rng();
  ws.options.after_dataset_change = [&rail, dataset_cut_seed, n = uint64_t(0)]() mutable {
    const uint64_t h = dataset_cut_seed + 0x9e3779b97f4a7c15ull * ++n;
    if (h % 2 == 0 && !rail.armed()) rail.ArmAfter(1 + (h >> 8) % 300, h >> 16);
  };
  Workload work(pool->get(), ws.sets, ws.log.get(), ws.options, [&rail] { return rail.off(); });
  const int64_t run_ms = int64_t(100 + rng() % 3000);
  const bool armed = rng() % 2;
  const uint64_t cut_seed = rng();
  const uint64_t arm_after = 1 + rng() % 3000;
  const auto start = Clock::now();
  work.Start(ws.objects, models_);
  Status cut;
  if (!armed) {
    while (MsSince(start) < run_ms && !work.done() && !rail.off())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    cut = rail.Cut(cut_seed);
    cycle_note_ = ": cut after " + std::to_string(MsSince(start)) + " ms";
  } else {
    while (MsSince(start) < run_ms / 4 && !work.done())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    rail.ArmAfter(arm_after, cut_seed);
    while (!rail.off() && MsSince(start) < run_ms + 5000 && !work.done())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool fired = rail.off();
    cut = rail.Cut(cut_seed);
    cycle_note_ = ": cut " +
                  std::string(fired ? "before write/flush " : "(armed, not reached) after ") +
                  (fired ? std::to_string(arm_after) : std::to_string(MsSince(start)) + " ms");
  }
  cycle_note_ +=
      std::string(" (") + PowerRail::CutKind(cut_seed) + "), txg timeout " +
      std::to_string(opts.txg.timeout_ms) + " ms, dirty max " +
      std::to_string(opts.txg.dirty_max_bytes >> 20) + " MiB" +
      (opts.force_gang_above != 0
           ? ", gang blocks above " + std::to_string(opts.force_gang_above >> 10) + " KiB"
           : std::string());
  work.Stop();
  if (!cut.ok()) return cut.WithContext("cutting the power");
  if (!work.status().ok()) return work.status().WithContext("before the power cut");
  const uint64_t last_synced = (*pool)->txgs().last_synced().value();
  (void)(*pool)->Export();  // fails: the power is off
  pool->reset();
  ws.log.reset();
  rail.On();

  bool torn = false;
  auto records = OpLog::Read(log_path_, &torn);
  if (!records.ok()) return records.status();
  uint64_t logged = 0, ops = 0;
  for (const OpRecord& r : *records) {
    if (r.kind == OpKind::kSynced)
      logged = std::max(logged, r.txg);
    else
      ops++;
  }
  stats_.ops += ops;
  cycle_note_ += ", " + std::to_string(ops) + " ops, " + std::to_string(work.reads_verified()) +
                 " read-backs, last synced " + std::to_string(last_synced);
  if (logged > last_synced)
    return Status::Corruption("the log says txg " + std::to_string(logged) +
                              " synced but the txg manager's last_synced() is " +
                              std::to_string(last_synced));
  uint64_t rewind = 0;
  POOLFS_RETURN_IF_ERROR(MaybeRewind(rng, &rewind));
  auto after = OpenPool(Verifying(opts), devs, damage_.verify.get(), &held);
  if (!after.ok()) return after.status().WithContext("import after the power cut");
  POOLFS_RETURN_IF_ERROR(rewind
                             ? VerifyImport(after->get(), *records, rewind, rewind)
                             : VerifyImport(after->get(), *records, last_synced, last_synced + 1));
  POOLFS_RETURN_IF_ERROR((*after)->Export().WithContext("export after verifying"));
  const uint64_t repairs = (*after)->Stats().repairs;
  after->reset();
  for (FaultInjectingDevice* f : fault_ptrs) {
    const uint64_t pending = f->counters().pending_writes;
    if (pending == 0) continue;
    // Export flushes the vdevs only with a txg it syncs, so the rewrites of
    // bad copies that reads made since (damage.h) may still be in the
    // devices' caches: those are flushed here and counted (RunStats), any
    // other unflushed write is a failure.
    if (repairs == 0)
      return Status::Corruption(f->name() + " has unflushed writes after a clean export");
    stats_.repairs_unflushed += pending;
    damage_note_ +=
        ", " + std::to_string(pending) + " repair writes left unflushed on " + f->name();
    POOLFS_RETURN_IF_ERROR(f->Flush());
  }
  files.reset();
  return CheckExported();
}

}  // namespace poolfs::stress
