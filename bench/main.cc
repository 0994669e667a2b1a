// poolfs-bench: benchmark programs that print their figures and compare
// against a baseline measured in the same run.
//   poolfs-bench space [--segments N] [--seed S] [--json]
//   poolfs-bench alloc [--allocators 1,2] [--threads 2] [--json]
//   poolfs-bench pool [--mib 1024] [--dir D] [--json]
//   poolfs-bench create [--backfill auto,on,off,legacy] [--runs 3] [--count N] [--churn] [--json]
//   poolfs-bench arc [--threads 1,2,8] [--sublists 1,0] [--json]
//   poolfs-bench sync [--datasets 1,12] [--sync-threads 1,2] [--device memory|file] [--runs 3]
//                     [--json]
//   poolfs-bench snapshot [--objects N,...] [--snapshots 0,10,100] [--blocks B,...] [--runs 5]
//                         [--quick] [--json]
//   poolfs-bench send [--size MiB] [--files N] [--small-files N] [--change-pct P] [--pipe-mib M]
//                     [--cases read,send,receive,pipe] [--runs 3]
//                     [--parts full,small,incremental] [--quick] [--json]
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_util.h"

int main(int argc, char** argv) {
  const char* usage =
      "usage: poolfs-bench space|alloc|pool|create|arc|sync|snapshot|send [options]   "
      "(poolfs-bench "
      "SUBCOMMAND "
      "--help)\n";
  if (argc < 2) {
    std::fputs(usage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "space") return poolfs::bench::RunSpaceBench(argc - 1, argv + 1);
  if (cmd == "alloc") return poolfs::bench::RunAllocBench(argc - 1, argv + 1);
  if (cmd == "pool") return poolfs::bench::RunPoolBench(argc - 1, argv + 1);
  if (cmd == "create") return poolfs::bench::RunCreateBench(argc - 1, argv + 1);
  if (cmd == "arc") return poolfs::bench::RunArcBench(argc - 1, argv + 1);
  if (cmd == "sync") return poolfs::bench::RunSyncBench(argc - 1, argv + 1);
  if (cmd == "snapshot") return poolfs::bench::RunSnapshotBench(argc - 1, argv + 1);
  if (cmd == "send") return poolfs::bench::RunSendBench(argc - 1, argv + 1);
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(usage, stdout);
    return 0;
  }
  std::fprintf(stderr, "poolfs-bench: unknown subcommand '%s'\n%s", cmd.c_str(), usage);
  return 2;
}
