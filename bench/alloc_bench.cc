// poolfs-bench alloc: allocations per second from several threads that share
// one allocator, against the same threads each using their own.
//
// Each configuration gets a fresh SpaceManager over one virtual vdev (no
// I/O), fragmented the same seeded way (fill half, free a random half of
// that, let the frees pass their defer txgs), then T threads allocate blocks
// of 4 KiB–128 KiB through allocator (thread % allocators). The figure is
// total allocations / wall time, median of several runs. Thread i is pinned
// to CPU i (unless --no-pin) so both configurations really run in parallel.
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "space/allocator.h"
#include "util/check.h"

namespace poolfs::bench {
namespace {

using core::space::Dva;
using core::space::SpaceManager;
using core::space::SpaceOptions;
using core::space::VdevSpaceConfig;

constexpr uint64_t kVdevSize = uint64_t{64} << 30;

uint64_t BlockSize(std::mt19937_64& rng) {
  int k = 0;
  while (k < 5 && (rng() & 1)) k++;
  return uint64_t{4096} << k;
}

std::unique_ptr<SpaceManager> Fragmented(uint32_t allocators, uint64_t seed) {
  SpaceOptions o;
  o.allocators = allocators;
  auto sm = std::make_unique<SpaceManager>(
      std::vector<VdevSpaceConfig>{{0, 4 << 20, kVdevSize, 12, 0}}, o);
  std::mt19937_64 rng(seed);
  std::vector<Dva> blocks;
  uint64_t used = 0;
  while (used < kVdevSize / 4) {
    auto d = sm->Allocate(blocks.size() % allocators, BlockSize(rng), Txg(1));
    POOLFS_CHECK(d.ok());
    used += d->size;
    blocks.push_back(*d);
  }
  for (const Dva& d : blocks)
    if (rng() & 1) POOLFS_CHECK(sm->Free(d, Txg(2)).ok());
  for (uint64_t t = 1; t <= 4; t++) {
    sm->Sync(Txg(t), [](const core::space::Metaslab&) {});
    sm->SyncDone(Txg(t));
  }
  return sm;
}

// Pins the calling thread to one CPU, so that every configuration really
// runs its threads on different cores (otherwise the scheduler may stack
// them on one core, where a shared lock costs nothing and proves nothing).
void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

double RunOnce(uint32_t allocators, int threads, uint64_t per_thread, bool pin) {
  auto sm = Fragmented(allocators, 7);
  std::vector<std::thread> ts;
  double t0 = NowSeconds();
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      if (pin) PinToCpu(t);
      std::mt19937_64 rng(100 + t);
      for (uint64_t i = 0; i < per_thread; i++)
        POOLFS_CHECK(sm->Allocate(size_t(t) % allocators, BlockSize(rng), Txg(5)).ok());
    });
  }
  for (auto& th : ts) th.join();
  double s = NowSeconds() - t0;
  sm->Stats();  // CHECKs the accounting after the concurrent run
  return double(per_thread * threads) / s;
}

}  // namespace

int RunAllocBench(int argc, char** argv) {
  CLI::App app("poolfs-bench alloc: shared allocator vs one allocator per thread");
  std::string allocators_list = "1,2";
  int threads = 2, runs = 5;
  uint64_t per_thread = 400000;
  bool json = false, no_pin = false;
  app.add_flag("--no-pin", no_pin, "let the scheduler place the threads (default: thread i on CPU i)");
  app.add_option("--allocators", allocators_list, "allocator counts to compare, e.g. 1,2");
  app.add_option("--threads", threads, "allocating threads");
  app.add_option("--count", per_thread, "allocations per thread per run");
  app.add_option("--runs", runs, "runs per configuration (the median is reported)");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  std::vector<uint32_t> counts = ParseList(allocators_list);
  if (counts.empty()) {
    std::fprintf(stderr, "poolfs-bench alloc: --allocators needs at least one count\n");
    return 2;
  }
  // Interleave the configurations run by run, so that a noisy moment of the
  // machine hits them alike.
  std::vector<std::vector<double>> rates(counts.size());
  for (int r = 0; r < runs; r++)
    for (size_t i = 0; i < counts.size(); i++)
      rates[i].push_back(RunOnce(counts[i], threads, per_thread, !no_pin));
  std::vector<double> med;
  for (auto& v : rates) med.push_back(Median(v));
  double speedup = med.back() / med.front();
  if (json) {
    Json o;
    o["threads"] = uint64_t(threads);
    Json arr = Json::array();
    for (size_t i = 0; i < counts.size(); i++) {
      Json e;
      e["allocators"] = uint64_t(counts[i]);
      e["allocs_per_s"] = med[i];
      arr.push_back(e);
    }
    o["results"] = arr;
    o["speedup"] = speedup;
    return PrintJson(o);
  }
  std::printf("%d threads%s allocating 4 KiB-128 KiB blocks from a fragmented 64 GiB vdev\n",
              threads, no_pin ? "" : " (thread i on CPU i)");
  std::printf("%-12s %16s\n", "allocators", "allocs/s");
  for (size_t i = 0; i < counts.size(); i++) std::printf("%-12u %16.0f\n", counts[i], med[i]);
  std::printf("speedup (%u allocators vs %u): %.2fx; medians of %d runs, %llu allocs/thread\n",
              counts.back(), counts.front(), speedup, runs, (unsigned long long)per_thread);
  return 0;
}

}  // namespace poolfs::bench
