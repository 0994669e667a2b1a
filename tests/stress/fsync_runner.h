// FsyncRunner: the cycles of poolfs-stress --mode fsync-kill,
// fsync-powercut and fsync (the two in turn), which crash the filesystem
// under the fsync workload (fsync_workload.h) and check what the intent
// log's replay brings back.
//
// One pool of 256 MiB lives in the run's directory, in one file vdev or
// two (by the run's seed: the intent log is on the first, the blocks its
// indirect writes name on either), with one directory per workload
// thread, and the model of each (its verified state). A cycle:
//   fsync-kill      a forked child mounts the pool file
//                   (Filesystem::Mount, a txg timeout of 200-2000 ms chosen
//                   per cycle, so that some changes sync and some are only
//                   in the log), runs the workload with its journal, and is
//                   SIGKILLed 150-1650 ms after the fork;
//   fsync-powercut  in this process, the pool runs over a
//                   FaultInjectingDevice on each file, all on one
//                   PowerRail (Pool::ImportDevices, DatasetTreeFs::Open);
//                   after 100-1300 ms a power cut is armed to fire before
//                   one of the next 1-64 writes or flushes to any of them
//                   (PowerRail's kinds: unflushed writes all dropped, or
//                   each kept, lost or torn, or garbled); the threads are
//                   stopped (their calls fail), the filesystem dropped
//                   without a clean unmount, and the power turned on again.
// Then the pool is mounted again (the kill: the file; the cut: over the
// same device), which replays the log, and each thread's directory is
// checked against its journal (CheckThread); the root must hold the
// threads' directories and nothing else. The state found is the models'
// next S_0; the pool is unmounted cleanly, and the next cycle continues on
// it. The first failure stops the run, prints the seeds, the cycle and
// what differed, and keeps the pool and the journal.
//
// Thread safety: one thread drives a FsyncRunner.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "poolfs/fs.h"
#include "poolfs/status.h"
#include "stress/fsync_workload.h"
#include "stress/runner.h"

namespace poolfs::stress {

class FsyncRunner {
 public:
  explicit FsyncRunner(const StressOptions& options);
  // Runs cycles until --cycles or --seconds is reached. Returns 0 when
  // every cycle verified, 1 after printing the first failure.
  int Run();

 private:
  Status Setup();
  Status KillCycle(uint64_t cycle_seed);
  Status PowercutCycle(uint64_t cycle_seed);
  // The child of a kill cycle; never returns.
  [[noreturn]] void Child(const MountOptions& mo, uint64_t workload_seed);
  // Checks `fs`, just mounted after the crash, against the journal; on
  // success the models are what it holds.
  Status Verify(Filesystem* fs);
  MountOptions RandomMountOptions(std::mt19937_64& rng) const;
  fsync::WorkloadOptions Workload(uint64_t seed) const;

  const StressOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::string> paths_;   // the vdev files: one or two (by the seed)
  std::string journal_path_;         // the workload's journal
  std::vector<fsync::Tree> models_;  // one per thread: its verified directory
  uint64_t cycle_ = 0;
  std::string cycle_note_;  // what the current cycle did, for --verbose and failures
  std::string failure_detail_;
  // Totals of the verified cycles.
  uint64_t ops_ = 0, fsyncs_ = 0, files_ = 0, bytes_ = 0, replayed_ = 0;
};

}  // namespace poolfs::stress
