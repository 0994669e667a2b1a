// Runner::MountCycle: a burst of short clean mounts of the pool, as a
// user's test suite makes hundreds of (import, a few operations, export),
// then one import that verifies them.
//
// Each mount of the burst (4 to 8 of them) imports the pool, which must
// open exactly the txg that the mount before last synced, runs 10-160 ms of
// workload and exports. Every txg's MOS sync of every mount must converge in
// at most kMaxMosPasses passes (Pool::Stats().mos_passes_max), and a sync
// that does not converge at all suspends the pool ("the MOS sync did not
// converge"): either fails the cycle with a message that says so and how
// many times the run had mounted the pool. Between two mounts the dataset
// tree and the models advance by the log of the first (Runner::Advance,
// which reads no object: the next workload reads back what it writes over
// them). After the burst an import verifies the models byte for byte, and
// the check's trial sync of the exported pool must converge within
// kMaxMosPasses too.
//
// Why bursts: a MOS sync stops converging only once many mounts have
// scattered the space maps' blocks over the metaslabs, so what counts is
// how many times a run mounts its one pool. The import that verifies and
// the check cost as much as several mounts; once per burst instead of once
// per mount, a 30 s run mounts the pool about twice as often.
#include <algorithm>
#include <atomic>
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

Status Runner::CheckMosPasses(uint32_t passes, const std::vector<Status>& outcomes,
                              const std::string& what) {
  stats_.mos_passes_max = std::max(stats_.mos_passes_max, passes);
  for (const Status& st : outcomes)
    if (!st.ok() && st.message().find("did not converge") != std::string::npos)
      return Status::Corruption(
          what + ": the MOS sync stopped converging and the pool suspended (" + st.message() +
          "), after " + std::to_string(stats_.mounts) + " mounts of the pool");
  if (passes > kMaxMosPasses)
    return Status::Corruption(what + ": a txg's MOS sync took " + std::to_string(passes) +
                              " passes, more than the " + std::to_string(kMaxMosPasses) +
                              " it converges in (pool.h), after " + std::to_string(stats_.mounts) +
                              " mounts of the pool");
  return Status::Ok();
}

Status Runner::MountCycle(uint64_t cycle_seed) {
  std::mt19937_64 rng(cycle_seed);
  POOLFS_RETURN_IF_ERROR(MaybeDamage(cycle_seed, {}));
  damage_.workload_watched = true;
  const int mounts = 4 + int(rng() % 5);
  uint64_t expect = verified_txg_;  // the txg the next import must open
  std::vector<OpRecord> records;    // the last mount's log
  core::pool::PoolOptions opts;
  uint32_t passes_max = 0;
  uint64_t ops = 0;
  std::string ran;
  for (int m = 1; m <= mounts; m++) {
    const std::string what = "mount " + std::to_string(m) + " of " + std::to_string(mounts);
    opts = RandomPoolOptions(rng);
    std::atomic<uint64_t> synced{0};  // the last txg this mount synced
    core::pool::PoolOptions o = opts;
    o.on_synced = [&synced](Txg t, uint64_t, uint64_t) { synced = t.value(); };
    std::vector<std::unique_ptr<core::vdev::BlockDevice>> held;
    auto pool = OpenPool(o, {}, damage_.workload.get(), &held);
    if (!pool.ok()) return pool.status().WithContext(what + ": import");
    stats_.mounts++;
    const uint64_t imported = (*pool)->imported_txg().value();
    if (imported != expect)
      return Status::Corruption(what + ": a clean import opened txg " + std::to_string(imported) +
                                ", not txg " + std::to_string(expect) + " that the " +
                                (m == 1 ? "last cycle verified" : "mount before last synced"));
    if (m > 1) {
      stats_.txgs += imported - verified_txg_;
      POOLFS_RETURN_IF_ERROR(Advance(pool->get(), records, imported).WithContext(what));
    }
    POOLFS_ASSIGN_OR_RETURN(WorkloadStart ws, PrepareWorkload(pool->get(), rng()));
    Workload work(pool->get(), ws.sets, ws.log.get(), ws.options, nullptr);
    const int64_t run_ms = int64_t(10 + rng() % 150);
    const auto start = Clock::now();
    work.Start(ws.objects, models_);
    while (MsSince(start) < run_ms && !work.done())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    work.Stop();
    const Status worked = work.status();
    const Status exported = (*pool)->Export();
    const core::pool::PoolStats ps = (*pool)->Stats();
    const uint32_t passes = ps.mos_passes_max;
    passes_max = std::max(passes_max, passes);
    ran += (m > 1 ? "+" : "") + std::to_string(run_ms);
    POOLFS_RETURN_IF_ERROR(CheckMosPasses(passes, {worked, exported}, what));
    if (!worked.ok()) return worked.WithContext(what + ": workload");
    if (!exported.ok()) return exported.WithContext(what + ": export after the workload");
    uint64_t errors = 0;
    for (uint64_t e : ps.checksum_errors) errors += e;
    if (errors > damage_.copies.size())
      return Status::Corruption(what + ": " + std::to_string(errors) + " checksum errors, " +
                                std::to_string(damage_.copies.size()) + " copies damaged");
    expect = std::max(imported, synced.load());
    if (work.max_txg() > expect)
      return Status::Corruption(what + ": the workload committed txg " +
                                std::to_string(work.max_txg()) +
                                " but the export's last sync was of txg " + std::to_string(expect));
    OpRecord r;
    r.kind = OpKind::kSynced;
    r.seq = ws.log->NextSeq();
    r.txg = expect;
    POOLFS_RETURN_IF_ERROR(ws.log->Append(r));
    pool->reset();
    held.clear();  // the files' locks
    ws.log.reset();
    bool torn = false;
    auto read = OpLog::Read(log_path_, &torn);
    if (!read.ok()) return read.status();
    records = std::move(read).value();
    for (const OpRecord& rec : records) ops += rec.kind != OpKind::kSynced;
  }
  stats_.ops += ops;
  cycle_note_ = ": " + std::to_string(mounts) + " mounts of " + ran + " ms, MOS passes at most " +
                std::to_string(passes_max) + ", " + std::to_string(ops) + " ops";
  std::vector<std::unique_ptr<core::vdev::BlockDevice>> held;
  auto after = OpenPool(Verifying(opts), {}, damage_.verify.get(), &held);
  if (!after.ok()) return after.status().WithContext("import after the burst");
  POOLFS_RETURN_IF_ERROR(VerifyImport(after->get(), records, expect, expect));
  const Status exported = (*after)->Export();
  POOLFS_RETURN_IF_ERROR(
      CheckMosPasses((*after)->Stats().mos_passes_max, {exported}, "the import that verifies"));
  POOLFS_RETURN_IF_ERROR(exported.WithContext("export after verifying"));
  after->reset();
  held.clear();
  POOLFS_RETURN_IF_ERROR(CheckExported());
  stats_.trial_passes_max = std::max(stats_.trial_passes_max, trial_passes_);
  if (trial_passes_ > kMaxMosPasses)
    return Status::Corruption("the check's trial sync of the exported pool took " +
                              std::to_string(trial_passes_) + " MOS passes, more than " +
                              std::to_string(kMaxMosPasses) + ", after " +
                              std::to_string(stats_.mounts) + " mounts of the pool");
  return Status::Ok();
}

}  // namespace poolfs::stress
