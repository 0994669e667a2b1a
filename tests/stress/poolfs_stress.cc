// poolfs-stress: ztest-style crash-safety driver for the pool, the DMU and
// the filesystem's fsync.
//
//   poolfs-stress --dir D --seconds S [--cycles C] [--threads N] [--seed X]
//                 [--mode kill|powercut|both|mounts|fsync-kill|fsync-powercut|fsync]
//                 [--damage N] [--verbose] [--keep]
//   poolfs-stress --dump-log D/oplog [--object ID]
//
// Creates a pool of 1 to 3 file vdevs in D, then crashes it again and again
// under a random multi-threaded object workload (which also clones blocks
// between objects, through the block reference table), one of whose
// threads also creates, renames and destroys datasets, takes, reads back,
// renames, lists and destroys snapshots, rolls datasets back to them, and
// clones some of them (workload.h) — SIGKILL
// of a child process (kill) or a power cut of fault-injecting devices
// (powercut) — and checks
// after each crash that the import finds exactly the state of a synced txg
// no older than the last one known durable (its datasets, its snapshots and
// each one's content, every object); or (mounts) mounts a large pool
// briefly, hundreds of times, checks that every sync's MOS passes stay
// within a handful, and checks the state after every few mounts the same
// way (runner.h has the details). One cycle in --damage N first damages one copy of a few
// metadata blocks, and checks that the pool reads around it and heals it
// (damage.h). Exits
// 0 only when every cycle verified; the first failure prints the seed, the
// cycle, what differed and the object's history, keeps D, and exits 1. The
// last line is always
//   cycles: N, txgs: N, objects checked: N, bytes checked: N, seconds: S
//
// The fsync modes crash the filesystem (poolfs::Filesystem, as the FUSE
// daemon drives it) instead, under threads of file operations each
// followed often by an fsync: SIGKILL of a child that mounted the pool
// file (fsync-kill), a power cut of a fault-injecting device under an
// in-process mount (fsync-powercut), or the two in turn (fsync). After each
// crash the next mount replays the intent log, and every change an fsync
// returned for must be there, nothing that was never written (no byte, no
// name) may be (fsync_runner.h, fsync_workload.h). --damage does not apply;
// the last line is
//   cycles: N, files checked: N, bytes checked: N, seconds: S
// A run stops at --cycles C (when given) or --seconds S, whichever comes
// first.
// Everything random derives from --seed (default: from the clock), except
// thread timing: a rerun with the same seed makes the same choices, but the
// threads interleave differently.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <map>

#include "stress/fsync_runner.h"
#include "stress/runner.h"

int main(int argc, char** argv) {
  using poolfs::stress::Mode;
  poolfs::stress::StressOptions o;
  o.seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007;
  CLI::App app{"poolfs-stress: crash the pool under a random workload, re-import, verify"};
  app.add_option("--dir", o.dir, "directory for the pool's vdev files and the op log (required)");
  app.add_option("--seconds", o.seconds, "how long to run (whole cycles)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--cycles", o.cycles, "stop after this many cycles (0: only --seconds)")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "workload threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of every random choice (default: from the clock)");
  std::map<std::string, Mode> modes{{"kill", Mode::kKill},
                                    {"powercut", Mode::kPowercut},
                                    {"both", Mode::kBoth},
                                    {"mounts", Mode::kMounts},
                                    {"fsync-kill", Mode::kFsyncKill},
                                    {"fsync-powercut", Mode::kFsyncPowercut},
                                    {"fsync", Mode::kFsync}};
  std::string default_mode;  // the default's name, not its number
  for (const auto& [name, mode] : modes)
    if (mode == o.mode) default_mode = name;
  app.add_option("--mode", o.mode,
                 "kill (SIGKILL a child), powercut (fault devices), both, mounts (many short "
                 "clean mounts of a large pool), or fsync-kill, fsync-powercut, fsync (both in "
                 "turn): crash the filesystem under fsyncing threads")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case))
      ->default_str(default_mode);
  app.add_option("--damage", o.damage_every,
                 "one cycle in N damages one copy of a few metadata blocks first and checks "
                 "that reads heal them (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--verbose", o.verbose, "print a line per cycle");
  app.add_flag("--keep", o.keep, "keep the pool files after a clean run");
  std::string dump;
  uint64_t dump_object = 0;
  app.add_option("--dump-log", dump, "print an op log (sorted by txg, seq) and exit");
  app.add_option("--object", dump_object, "with --dump-log: only this object's records");
  CLI11_PARSE(app, argc, argv);
  if (!dump.empty()) return poolfs::stress::DumpLog(dump, dump_object);
  if (o.dir.empty()) {
    std::fprintf(stderr, "poolfs-stress: --dir is required\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (poolfs::stress::IsFsyncMode(o.mode)) return poolfs::stress::FsyncRunner(o).Run();
  poolfs::stress::Runner runner(o);
  return runner.Run();
}
