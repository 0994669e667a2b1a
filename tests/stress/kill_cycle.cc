// Runner::KillCycle: a child process runs the workload and is SIGKILLed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "stress/runner.h"
#include "stress/workload.h"

namespace poolfs::stress {

namespace {

using Clock = std::chrono::steady_clock;
using core::pool::Pool;

constexpr int64_t kCleanExitGraceMs = 180000;

std::string DescribeWait(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("died of signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

void Runner::Child(const core::pool::PoolOptions& opts, uint64_t workload_seed, int64_t run_ms,
                   RollbackCrash crash) {
  auto die = [](int code, const Status& st, const char* what) {
    std::fprintf(stderr, "poolfs-stress child: %s: %s\n", what, st.ToString().c_str());
    std::fflush(stderr);
    _exit(code);
  };
  auto log = OpLog::Open(log_path_, false);
  if (!log.ok()) die(3, log.status(), "opening the op log");
  auto pool = Pool::Import(paths_, opts);
  if (!pool.ok()) die(3, pool.status(), "import");
  auto sets = Sets(pool->get());
  if (!sets.ok()) die(3, sets.status(), "datasets");
  auto objects = Existing(pool->get());
  if (!objects.ok()) die(3, objects.status(), "listing objects");
  WorkloadOptions wo = BaseWorkloadOptions(workload_seed);
  if (crash != RollbackCrash::kNone)
    wo.rollback_returned = [p = pool->get(), crash](Txg t) {
      if (crash == RollbackCrash::kAfterSync) (void)p->WaitSynced(t);
      kill(getpid(), SIGKILL);
    };
  Workload work(pool->get(), *sets, log->get(), wo, nullptr);
  const auto start = Clock::now();
  work.Start(*objects, models_);
  while (!work.done() && (run_ms < 0 || MsSince(start) < run_ms))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  work.Stop();
  if (!work.status().ok()) die(2, work.status(), "workload");
  if (run_ms < 0)
    die(2, Status(StatusCode::kAborted, "the workload stopped by itself"), "workload");
  Status st = (*pool)->Export();
  if (!st.ok()) die(2, st, "export");
  OpRecord r;
  r.kind = OpKind::kSynced;
  r.seq = (*log)->NextSeq();
  r.txg = work.max_txg();
  st = (*log)->Append(r);
  if (!st.ok()) die(2, st, "logging the export");
  _exit(0);
}

Status Runner::KillCycle(uint64_t cycle_seed) {
  std::mt19937_64 rng(cycle_seed);
  const core::pool::PoolOptions opts = RandomPoolOptions(rng);
  const bool clean = rng() % 5 == 0;
  const int64_t run_ms = clean ? int64_t(200 + rng() % 2500) : -1;
  const int64_t kill_ms = int64_t(150 + rng() % 3000);
  const uint64_t workload_seed = rng();
  // One killed child in four dies in its first rollback instead, if it
  // makes one, before or after the rollback's txg synced.
  const RollbackCrash crash = clean || rng() % 4 != 0 ? RollbackCrash::kNone
                              : rng() % 2             ? RollbackCrash::kAfterSync
                                                      : RollbackCrash::kBeforeSync;
  POOLFS_RETURN_IF_ERROR(MaybeDamage(cycle_seed, {}));
  {
    auto log = OpLog::Open(log_path_, true);  // empty, before the child appends
    if (!log.ok()) return log.status();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return Status::IOError(std::string("fork: ") + strerror(errno));
  if (pid == 0) Child(opts, workload_seed, run_ms, crash);
  const int64_t deadline = clean ? run_ms + kCleanExitGraceMs : kill_ms;
  int wstatus = 0;
  bool exited = false;
  while (MsSince(start) < deadline) {
    pid_t w = waitpid(pid, &wstatus, WNOHANG);
    if (w == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const int64_t lived = MsSince(start);
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, 0);
  }
  // A child that died of SIGKILL before its time killed itself in a rollback.
  const bool in_rollback = exited && crash != RollbackCrash::kNone && WIFSIGNALED(wstatus) &&
                           WTERMSIG(wstatus) == SIGKILL;
  cycle_note_ = ": txg timeout " + std::to_string(opts.txg.timeout_ms) + " ms, dirty max " +
                std::to_string(opts.txg.dirty_max_bytes >> 20) + " MiB, child " +
                (clean         ? "ran " + std::to_string(run_ms) + " ms then exported"
                 : in_rollback ? std::string("killed itself in a rollback, ") +
                                     (crash == RollbackCrash::kAfterSync ? "after" : "before") +
                                     " its txg synced, after " + std::to_string(lived) + " ms"
                               : "killed after " + std::to_string(lived) + " ms") +
                (opts.force_gang_above != 0
                     ? ", gang blocks above " + std::to_string(opts.force_gang_above >> 10) + " KiB"
                     : std::string());
  if (clean && !exited)
    return Status(StatusCode::kAborted,
                  "the child did not finish its clean run and export within " +
                      std::to_string(deadline) + " ms: hung (SIGKILLed)");
  if (exited && !in_rollback && !(clean && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0))
    return Status(StatusCode::kAborted,
                  "the child " + DescribeWait(wstatus) + " (see its message above)");
  bool torn = false;
  auto records = OpLog::Read(log_path_, &torn);
  if (!records.ok()) return records.status();
  uint64_t durable = 0, ops = 0;
  for (const OpRecord& r : *records) {
    if (r.kind == OpKind::kSynced)
      durable = std::max(durable, r.txg);
    else
      ops++;
  }
  stats_.ops += ops;
  cycle_note_ += ", " + std::to_string(ops) + " ops logged";
  uint64_t rewind = 0;
  POOLFS_RETURN_IF_ERROR(MaybeRewind(rng, &rewind));
  std::vector<std::unique_ptr<core::vdev::BlockDevice>> held;
  auto pool = OpenPool(Verifying(opts), {}, damage_.verify.get(), &held);
  if (!pool.ok()) return pool.status().WithContext("import after the kill");
  POOLFS_RETURN_IF_ERROR(rewind ? VerifyImport(pool->get(), *records, rewind, rewind)
                                : VerifyImport(pool->get(), *records, durable, 0));
  POOLFS_RETURN_IF_ERROR((*pool)->Export().WithContext("export after verifying"));
  pool->reset();
  held.clear();
  return CheckExported();
}

}  // namespace poolfs::stress
