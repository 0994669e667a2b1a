#include "stress/fsync_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "pool/pool.h"
#include "poolfs/pool_admin.h"
#include "posix/dataset_tree.h"
#include "stress/power_rail.h"
#include "stress/stress_util.h"
#include "vdev/fault_injecting_device.h"

namespace poolfs::stress {

namespace {

using Clock = std::chrono::steady_clock;
using core::vdev::FaultInjectingDevice;

constexpr uint64_t kPoolBytes = uint64_t{256} << 20;
constexpr unsigned kCycleAlarmSeconds = 300;
// How long an armed power cut may take to fire: the threads write and
// fsync all the time, so a cut that waits longer means they are stuck.
constexpr int64_t kCutFireMs = 20000;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

std::string DescribeWait(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("died of signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kFsyncKill: return "fsync-kill";
    case Mode::kFsyncPowercut: return "fsync-powercut";
    default: return "fsync";
  }
}

// What Filesystem::Mount gives the pool for `mo` (over a device it imports
// with Pool::ImportDevices instead).
core::pool::PoolOptions PoolOptionsOf(const MountOptions& mo) {
  core::pool::PoolOptions po;
  po.txg = mo.tunables.txg;
  po.space = mo.tunables.space;
  po.vdev = mo.tunables.vdev;
  po.arc = mo.tunables.arc;
  po.read_ahead = mo.tunables.read_ahead;
  po.repair_reads = true;
  return po;
}

// The mount that verifies a crash: it replays the log, and syncs soon.
MountOptions VerifyingOptions() {
  MountOptions mo;
  mo.tunables.txg.timeout_ms = 200;
  mo.tunables.space.allocators = 2;
  mo.atime = AtimeMode::kNone;
  return mo;
}

}  // namespace

FsyncRunner::FsyncRunner(const StressOptions& options) : options_(options), rng_(options.seed) {}

MountOptions FsyncRunner::RandomMountOptions(std::mt19937_64& rng) const {
  MountOptions mo;
  // Between the txgs, fsync writes the log; a crash finds some changes
  // synced and the rest only in the log.
  mo.tunables.txg.timeout_ms = uint32_t(200 + rng() % 1801);
  mo.tunables.space.allocators = uint32_t(1 + rng() % 2);
  mo.atime = AtimeMode::kNone;  // the checks' reads change nothing
  return mo;
}

fsync::WorkloadOptions FsyncRunner::Workload(uint64_t seed) const {
  fsync::WorkloadOptions wo;
  wo.threads = options_.threads;
  wo.seed = seed;
  wo.cycle = cycle_;
  return wo;
}

Status FsyncRunner::Setup() {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) return Status::IOError("cannot create " + options_.dir + ": " + ec.message());
  // Two vdevs half the time: the log lives on the first, while the blocks
  // an fsync writes early (indirect writes) go to either.
  const int vdevs = 1 + int(rng_() % 2);
  for (int i = 0; i < vdevs; i++) paths_.push_back(options_.dir + "/vdev" + std::to_string(i));
  journal_path_ = options_.dir + "/journal";
  CreatePoolOptions co;
  co.force = true;
  POOLFS_RETURN_IF_ERROR(
      CreatePool(paths_, kPoolBytes / uint64_t(vdevs), co).WithContext("creating the pool"));
  POOLFS_ASSIGN_OR_RETURN(auto fs, Filesystem::Mount(paths_, VerifyingOptions()));
  for (int t = 0; t < options_.threads; t++) {
    POOLFS_ASSIGN_OR_RETURN(
        Attr a, fs->Mkdir(Creds{0, 0, {}}, kRootIno, fsync::ThreadDir(uint8_t(t)), 0755));
    fs->Forget(a.ino, 1);
  }
  POOLFS_RETURN_IF_ERROR(fs->Unmount());
  models_.assign(size_t(options_.threads), fsync::Tree{});
  std::printf("poolfs-stress: pool of %d x %llu MiB file vdevs, %d thread directories, in %s\n",
              vdevs, static_cast<unsigned long long>((kPoolBytes / uint64_t(vdevs)) >> 20),
              options_.threads, options_.dir.c_str());
  return Status::Ok();
}

Status FsyncRunner::Verify(Filesystem* fs) {
  const FsStatus status = fs->GetStatus();
  replayed_ += status.log.replayed;
  cycle_note_ += ", " + std::to_string(status.log.replayed) + " log records replayed (" +
                 std::to_string(status.log.replayed_indirect) + " indirect writes)";
  for (const std::string& note : status.import_notes)
    if (note.find("failed") != std::string::npos)
      return Status::Corruption("the mount says: " + note);
  // The root: the threads' directories and nothing else.
  std::vector<std::string> names;
  POOLFS_RETURN_IF_ERROR(fs->ReadDir(Creds{0, 0, {}}, kRootIno, 0, false, [&](const DirEntry& e) {
    if (e.name != "." && e.name != "..") names.push_back(e.name);
    return true;
  }));
  if (names.size() != size_t(options_.threads))
    return Status::Corruption("the root holds " + std::to_string(names.size()) + " names, not " +
                              std::to_string(options_.threads));
  POOLFS_ASSIGN_OR_RETURN(std::vector<fsync::ThreadLog> logs,
                          fsync::Journal::Read(journal_path_, options_.threads));
  uint64_t ops = 0, fsyncs = 0;
  std::vector<fsync::Tree> found(models_.size());
  for (int t = 0; t < options_.threads; t++) {
    const uint8_t thread = uint8_t(t);
    POOLFS_ASSIGN_OR_RETURN(fsync::Tree actual, fsync::ReadTree(fs, thread));
    POOLFS_RETURN_IF_ERROR(
        fsync::CheckThread(thread, models_[t], logs[t], actual, &found[t], &failure_detail_));
    ops += logs[t].ops.size();
    fsyncs += logs[t].fsyncs;
    for (const auto& [path, node] : actual.nodes) {
      files_ += !node.dir;
      bytes_ += node.data.size();
    }
  }
  ops_ += ops;
  fsyncs_ += fsyncs;
  cycle_note_ +=
      ", " + std::to_string(ops) + " changes and " + std::to_string(fsyncs) + " fsyncs journaled";
  models_ = std::move(found);
  return Status::Ok();
}

void FsyncRunner::Child(const MountOptions& mo, uint64_t workload_seed) {
  auto die = [](const Status& st, const char* what) {
    std::fprintf(stderr, "poolfs-stress child: %s: %s\n", what, st.ToString().c_str());
    std::fflush(stderr);
    _exit(2);
  };
  auto journal = fsync::Journal::Open(journal_path_, false);
  if (!journal.ok()) die(journal.status(), "opening the journal");
  auto fs = Filesystem::Mount(paths_, mo);
  if (!fs.ok()) die(fs.status(), "mount");
  fsync::Workload work(fs->get(), journal->get(), models_, Workload(workload_seed));
  work.Start();
  // Until the SIGKILL; a failure ends the child, and the parent reports it.
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Status st = work.status();
    if (!st.ok()) die(st, "workload");
  }
}

Status FsyncRunner::KillCycle(uint64_t cycle_seed) {
  std::mt19937_64 rng(cycle_seed);
  const MountOptions mo = RandomMountOptions(rng);
  const int64_t kill_ms = int64_t(150 + rng() % 1500);
  const uint64_t workload_seed = rng();
  POOLFS_RETURN_IF_ERROR(fsync::Journal::Open(journal_path_, true).status());
  std::fflush(stdout);
  std::fflush(stderr);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return Status::IOError(std::string("fork: ") + strerror(errno));
  if (pid == 0) Child(mo, workload_seed);
  int wstatus = 0;
  bool exited = false;
  while (MsSince(start) < kill_ms && !exited) {
    exited = waitpid(pid, &wstatus, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, 0);
  }
  cycle_note_ = ": txg timeout " + std::to_string(mo.tunables.txg.timeout_ms) +
                " ms, child killed after " + std::to_string(MsSince(start)) + " ms";
  if (exited)
    return Status(StatusCode::kAborted,
                  "the child " + DescribeWait(wstatus) + " (see its message above)");
  POOLFS_ASSIGN_OR_RETURN(auto fs, Filesystem::Mount(paths_, VerifyingOptions()));
  POOLFS_RETURN_IF_ERROR(Verify(fs.get()));
  return fs->Unmount().WithContext("unmount after verifying");
}

Status FsyncRunner::PowercutCycle(uint64_t cycle_seed) {
  std::mt19937_64 rng(cycle_seed);
  const MountOptions mo = RandomMountOptions(rng);
  const int64_t run_ms = int64_t(100 + rng() % 1200);
  const uint64_t cut_after = rng() % 64;
  const uint64_t cut_seed = rng();
  // The vdev files under fault-injecting devices, all on one rail.
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<RailedFiles> files, OpenOnRail(paths_));
  const std::vector<core::vdev::BlockDevice*>& devs = files->devs;
  PowerRail& rail = *files->rail;
  {
    POOLFS_ASSIGN_OR_RETURN(auto pool, core::pool::Pool::ImportDevices(devs, PoolOptionsOf(mo)));
    POOLFS_ASSIGN_OR_RETURN(auto fs, core::posix::DatasetTreeFs::Open(std::move(pool), mo));
    POOLFS_ASSIGN_OR_RETURN(auto journal, fsync::Journal::Open(journal_path_, true));
    fsync::WorkloadOptions wo = Workload(rng());
    wo.crashed = [&rail] { return rail.off(); };
    fsync::Workload work(fs.get(), journal.get(), models_, wo);
    const auto start = Clock::now();
    work.Start();
    while (MsSince(start) < run_ms && work.status().ok())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    rail.ArmAfter(cut_after + 1, cut_seed);
    while (!rail.off() && MsSince(start) < run_ms + kCutFireMs && work.status().ok())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cycle_note_ = ": txg timeout " + std::to_string(mo.tunables.txg.timeout_ms) +
                  " ms, power cut (" + PowerRail::CutKind(cut_seed) + ") armed after " +
                  std::to_string(run_ms) + " ms to fire before write/flush " +
                  std::to_string(cut_after + 1) + ", fired after " +
                  std::to_string(MsSince(start)) + " ms";
    const bool fired = rail.off();
    work.Stop();
    POOLFS_RETURN_IF_ERROR(work.status().WithContext("before the power cut"));
    if (!fired)
      return Status(StatusCode::kAborted, "the armed power cut did not fire within " +
                                              std::to_string(kCutFireMs) + " ms: the threads hung");
    // Dropped without a clean unmount: its unmount fails, the power is off.
  }
  rail.On();
  POOLFS_ASSIGN_OR_RETURN(auto pool,
                          core::pool::Pool::ImportDevices(devs, PoolOptionsOf(VerifyingOptions())));
  POOLFS_ASSIGN_OR_RETURN(auto fs,
                          core::posix::DatasetTreeFs::Open(std::move(pool), VerifyingOptions()));
  POOLFS_RETURN_IF_ERROR(Verify(fs.get()));
  POOLFS_RETURN_IF_ERROR(fs->Unmount().WithContext("unmount after verifying"));
  for (FaultInjectingDevice* f : files->fault_ptrs)
    if (f->counters().pending_writes != 0)
      return Status::Corruption(f->name() + " has unflushed writes after a clean unmount");
  return Status::Ok();
}

int FsyncRunner::Run() {
  std::printf("poolfs-stress: seed %llu, mode %s, %d threads, %llu cycles or %.0f s\n",
              static_cast<unsigned long long>(options_.seed), ModeName(options_.mode),
              options_.threads, static_cast<unsigned long long>(options_.cycles), options_.seconds);
  std::fflush(stdout);
  const auto start = Clock::now();
  Status st = Setup();
  Mode mode = options_.mode;
  uint64_t kills = 0, cuts = 0;
  while (st.ok()) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed >= options_.seconds || (options_.cycles && cycle_ >= options_.cycles)) break;
    cycle_++;
    const uint64_t cycle_seed = rng_();
    // --mode fsync: a kill, then a power cut, in turn.
    mode = options_.mode != Mode::kFsync ? options_.mode
           : cycle_ % 2                  ? Mode::kFsyncKill
                                         : Mode::kFsyncPowercut;
    cycle_note_.clear();
    failure_detail_.clear();
    ArmCycleWatchdog(kCycleAlarmSeconds, cycle_, ModeName(mode), cycle_seed, options_.seed,
                     options_.dir);
    st = mode == Mode::kFsyncKill ? KillCycle(cycle_seed) : PowercutCycle(cycle_seed);
    DisarmCycleWatchdog();
    if (st.ok()) {
      (mode == Mode::kFsyncKill ? kills : cuts)++;
      if (options_.verbose)
        std::printf("cycle %llu %s%s\n", static_cast<unsigned long long>(cycle_), ModeName(mode),
                    cycle_note_.c_str());
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!st.ok()) {
    std::printf("poolfs-stress: FAILED in cycle %llu (%s) of run seed %llu:\n  %s\n",
                static_cast<unsigned long long>(cycle_), ModeName(mode),
                static_cast<unsigned long long>(options_.seed), st.ToString().c_str());
    if (!cycle_note_.empty()) std::printf("  cycle%s\n", cycle_note_.c_str());
    std::printf("%s", failure_detail_.c_str());
    std::printf(
        "  pool and journal kept in %s\n  rerun: poolfs-stress --dir %s.repro --mode %s "
        "--threads %d --seed %llu --cycles %llu\n",
        options_.dir.c_str(), options_.dir.c_str(), ModeName(options_.mode), options_.threads,
        static_cast<unsigned long long>(options_.seed), static_cast<unsigned long long>(cycle_));
  }
  std::printf(
      "fsync: %llu kill and %llu power cut cycles verified, %llu changes, %llu fsyncs, %llu log "
      "records replayed\n",
      static_cast<unsigned long long>(kills), static_cast<unsigned long long>(cuts),
      static_cast<unsigned long long>(ops_), static_cast<unsigned long long>(fsyncs_),
      static_cast<unsigned long long>(replayed_));
  std::printf("cycles: %llu, files checked: %llu, bytes checked: %llu, seconds: %.0f\n",
              static_cast<unsigned long long>(kills + cuts),
              static_cast<unsigned long long>(files_), static_cast<unsigned long long>(bytes_),
              seconds);
  std::fflush(stdout);
  if (!st.ok()) return 1;
  if (!options_.keep) {
    for (const std::string& path : paths_) std::filesystem::remove(path);
    std::filesystem::remove(journal_path_);
  }
  return 0;
}

}  // namespace poolfs::stress
