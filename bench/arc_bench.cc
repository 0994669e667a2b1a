// poolfs-bench arc: the cache's concurrency figures and the sync's batched
// release.
//
// 1. Cached 4 KiB random reads per second, in process: T threads read
//    uniformly random blocks of a data set twice the cache's size through
//    Lookup, and on a miss fill a buffer from the cache's allocator with a
//    4 KiB copy (standing in for the decode) and Insert it, so about half the
//    reads hit and half insert and make the evictor work. Each combination of
//    --threads and --sublists (0: the default, one per core and at least 4)
//    gets a fresh cache warmed by one pass over the data set; the figure is
//    reads / wall time, the median of --runs runs, combinations interleaved
//    run by run so a noisy moment of the shared machine hits them alike.
//    sublist_speedup = 8 threads (or the largest count) with the default
//    sublists over the same with one sublist. Thread i runs on CPU i mod
//    ncpu unless --no-pin.
//
// 2. Batched release of the dirty copies a sync wrote, the path the sync
//    takes: 2 threads (two sync strands) each make --release-batch dirty
//    block copies of 32 KiB from one dmu::BlockBuffers, then, both at once
//    (a barrier), drop them: one by one (each buffer takes the BlockBuffers
//    lock) or inside a BlockBuffers::ReleaseBatch, as the sync's tasks do
//    (one lock round trip for the batch); --release-count / --release-batch
//    rounds. The buffers are kept for reuse (as in a mount, up to the bound)
//    so the figure is the lock's, not glibc's free(); only the drops are
//    timed. batch_release_speedup = buffers/s batched over buffers/s one by
//    one, medians of --release-runs runs.
//
// 3. Batched Forget, the blocks a sync replaced leaving the cache: a cache
//    holding 2 x --release-count blocks of 512 B; 2 threads at once each
//    drop their --release-count blocks (Forget: the hash stripe, the sublist
//    and the allocator's lock), one call per block or --release-batch blocks
//    per call. forget_batch_speedup, the same ratio.
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arc/arc.h"
#include "bench_util.h"
#include "dmu/block_buffers.h"
#include "util/check.h"

namespace poolfs::bench {
namespace {

using core::arc::Arc;
using core::arc::ArcData;
using core::arc::ArcHandle;
using core::arc::ArcOptions;
using core::arc::BlockKey;
namespace dmu = core::dmu;

constexpr uint32_t kBlock = 4096;

BlockKey Key(uint64_t n, uint32_t bytes) { return {VdevId(0), VdevOffset(n * bytes), Txg(3)}; }

void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

struct ReadResult {
  double reads_per_s = 0;
  double hit_ratio = 0;
};

// Reads block n through `arc`; a miss copies `src` in as the decoded block.
inline bool ReadBlock(Arc& arc, uint64_t n, const std::byte* src, uint64_t* sink) {
  ArcHandle h = arc.Lookup(Key(n, kBlock));
  if (h) {
    *sink += uint64_t(h.data()[n & (kBlock - 1)]);
    return true;
  }
  ArcData d = arc.AllocData(kBlock);
  std::memcpy(d.data(), src, kBlock);
  d.data()[0] = std::byte(n);
  h = arc.Insert(Key(n, kBlock), std::move(d));
  *sink += uint64_t(h.data()[0]);
  return false;
}

ReadResult RunReads(uint64_t cache_bytes, uint32_t sublists, uint32_t threads, uint64_t total_ops,
                    bool pin) {
  ArcOptions o;
  o.max_bytes = cache_bytes;
  o.sublists = sublists;
  Arc arc(o);
  const uint64_t blocks = 2 * cache_bytes / kBlock;  // the data set: twice the cache
  std::vector<std::byte> src(kBlock, std::byte(0x5a));
  uint64_t sink = 0;
  for (uint64_t n = 0; n < blocks; n++) ReadBlock(arc, n, src.data(), &sink);
  std::vector<uint64_t> hits(threads);
  std::vector<std::thread> ts;
  const uint64_t per_thread = total_ops / threads;
  double t0 = NowSeconds();
  for (uint32_t t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      if (pin) PinToCpu(int(t));
      uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1), local_sink = 0, h = 0;
      for (uint64_t i = 0; i < per_thread; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        h += ReadBlock(arc, x % blocks, src.data(), &local_sink);
      }
      hits[t] = h + (local_sink == 1 ? 1 : 0);  // keeps local_sink alive
    });
  }
  for (auto& th : ts) th.join();
  double s = NowSeconds() - t0;
  uint64_t total_hits = 0;
  for (uint64_t h : hits) total_hits += h;
  POOLFS_CHECK_LE(arc.cached_bytes(), cache_bytes);
  return {double(per_thread * threads) / s, double(total_hits) / double(per_thread * threads)};
}

// Dirty block copies given back per second by 2 threads at once (section 2
// of the header): `per_round` copies per thread per round, `rounds` rounds.
double RunDirtyRelease(uint32_t per_round, uint64_t rounds, bool batched, bool pin) {
  constexpr uint32_t kCopy = dmu::BlockBuffers::kMinKept;
  constexpr int kReleasers = 2;
  dmu::BlockBuffers buffers(uint64_t(kReleasers) * per_round * kCopy);
  std::barrier sync_point(kReleasers);
  std::vector<double> seconds(kReleasers, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < kReleasers; t++) {
    ts.emplace_back([&, t] {
      if (pin) PinToCpu(t);
      std::vector<std::shared_ptr<std::string>> copies;
      copies.reserve(per_round);
      for (uint64_t r = 0; r < rounds; r++) {
        for (uint32_t i = 0; i < per_round; i++) {
          copies.push_back(buffers.New(kCopy));
          copies.back()->push_back(char(i));
        }
        sync_point.arrive_and_wait();
        const double t0 = NowSeconds();
        if (batched) {
          dmu::BlockBuffers::ReleaseBatch batch(&buffers);
          copies.clear();
        } else {
          copies.clear();
        }
        seconds[t] += NowSeconds() - t0;
        sync_point.arrive_and_wait();
      }
    });
  }
  for (auto& th : ts) th.join();
  const dmu::BlockBuffers::Stats st = buffers.stats();
  const uint64_t total = uint64_t(kReleasers) * per_round * rounds;
  POOLFS_CHECK_EQ(st.given_alone + st.given_batched, total);
  POOLFS_CHECK_EQ(batched ? st.given_batched : st.given_alone, total);
  double slowest = 0;
  for (double s : seconds) slowest = std::max(slowest, s);
  return double(total) / slowest;
}

// Blocks forgotten per second by 2 threads at once, one call per block
// (batch == 1) or `batch` blocks per call (section 3 of the header).
double RunForget(uint64_t count, uint32_t batch, bool pin) {
  constexpr uint32_t kSmall = 512;
  constexpr int kReleasers = 2;
  ArcOptions o;
  o.max_bytes = uint64_t(kReleasers) * count * kSmall * 2;
  o.sublists = 0;
  o.evict_thread = false;
  o.pool_retain_bytes = o.max_bytes;
  Arc arc(o);
  for (uint64_t n = 0; n < kReleasers * count; n++) {
    ArcData d = arc.AllocData(kSmall);
    d.data()[0] = std::byte(n);
    arc.Insert(Key(n, kSmall), std::move(d));
  }
  POOLFS_CHECK_EQ(arc.cached_bytes(), kReleasers * count * kSmall);
  std::vector<std::thread> ts;
  double t0 = NowSeconds();
  for (int t = 0; t < kReleasers; t++) {
    ts.emplace_back([&, t] {
      if (pin) PinToCpu(t);
      // Thread t releases blocks t, t+2, t+4...: both threads' blocks share
      // every sublist and the allocator.
      if (batch <= 1) {
        for (uint64_t i = 0; i < count; i++) arc.Forget(Key(i * kReleasers + t, kSmall));
        return;
      }
      std::vector<BlockKey> keys;
      keys.reserve(batch);
      for (uint64_t i = 0; i < count; i++) {
        keys.push_back(Key(i * kReleasers + t, kSmall));
        if (keys.size() == batch || i + 1 == count) {
          arc.Forget(keys);
          keys.clear();
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  double s = NowSeconds() - t0;
  POOLFS_CHECK_EQ(arc.cached_bytes(), 0u);
  POOLFS_CHECK_EQ(arc.Stats().forgotten, kReleasers * count);
  return double(kReleasers * count) / s;
}

}  // namespace

int RunArcBench(int argc, char** argv) {
  CLI::App app("poolfs-bench arc: ARC reads per second by threads and sublists; batched release");
  std::string threads_list = "1,2,8", sublists_list = "1,0";
  uint64_t cache_mib = 32, ops = 4000000, release_count = 1000000;
  uint32_t release_batch = 1024;
  int runs = 5, release_runs = 5;
  bool json = false, no_pin = false, no_release = false;
  app.add_option("--threads", threads_list, "reader thread counts, e.g. 1,2,8");
  app.add_option("--sublists", sublists_list, "sublist counts (0: the default), e.g. 1,0");
  app.add_option("--cache-mib", cache_mib, "arc.max_bytes in MiB (the data set is twice that)");
  app.add_option("--ops", ops, "reads per run, split over the threads");
  app.add_option("--runs", runs, "runs per combination (the median is reported)");
  app.add_option("--release-count", release_count,
                 "blocks each of the 2 threads releases (dirty copies: in rounds of --release-batch)");
  app.add_option("--release-batch", release_batch,
                 "blocks per batch (per call of Forget; per round of dirty copies)");
  app.add_option("--release-runs", release_runs, "runs of each release mode");
  app.add_flag("--no-release", no_release, "skip the batched release and Forget measurements");
  app.add_flag("--no-pin", no_pin, "let the scheduler place the threads");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  std::vector<uint32_t> threads = ParseList(threads_list);
  std::vector<uint32_t> sublists = ParseList(sublists_list);
  if (threads.empty() || sublists.empty() || runs < 1 || release_runs < 1 || cache_mib < 1 ||
      release_batch < 1) {
    std::fprintf(stderr,
                 "poolfs-bench arc: --threads and --sublists need values; --runs, "
                 "--release-runs, --cache-mib and --release-batch must be at least 1\n");
    return 2;
  }
  const uint64_t cache = cache_mib << 20;
  const bool pin = !no_pin;

  struct Combo {
    uint32_t threads, sublists;
    std::vector<double> rates, hit_ratios;
  };
  std::vector<Combo> combos;
  for (uint32_t t : threads)
    for (uint32_t s : sublists) combos.push_back({t, s, {}, {}});
  for (int r = 0; r < runs; r++) {
    for (Combo& c : combos) {
      ReadResult rr = RunReads(cache, c.sublists, c.threads, ops, pin);
      c.rates.push_back(rr.reads_per_s);
      c.hit_ratios.push_back(rr.hit_ratio);
    }
  }
  // sublist_speedup: 8 threads (or the most), default sublists (0, or the
  // largest count given) over one sublist (or the smallest count given).
  uint32_t tmax = 0;
  for (uint32_t t : threads) tmax = (t == 8 || (tmax != 8 && t > tmax)) ? t : tmax;
  const Combo* one = nullptr;
  const Combo* dflt = nullptr;
  for (const Combo& c : combos) {
    if (c.threads != tmax) continue;
    if (!one || (c.sublists != 0 && (one->sublists == 0 || c.sublists < one->sublists))) one = &c;
    if (!dflt || c.sublists == 0 || (dflt->sublists != 0 && c.sublists > dflt->sublists)) dflt = &c;
  }
  double sublist_speedup = Median(dflt->rates) / Median(one->rates);

  std::vector<double> one_by_one, batched, forget_one, forget_batched;
  const uint64_t rounds = std::max<uint64_t>(1, release_count / std::max(1u, release_batch));
  if (!no_release) {
    for (int r = 0; r < release_runs; r++) {
      one_by_one.push_back(RunDirtyRelease(release_batch, rounds, false, pin));
      batched.push_back(RunDirtyRelease(release_batch, rounds, true, pin));
      forget_one.push_back(RunForget(release_count, 1, pin));
      forget_batched.push_back(RunForget(release_count, release_batch, pin));
    }
  }
  double batch_speedup = no_release ? 0 : Median(batched) / Median(one_by_one);
  double forget_speedup = no_release ? 0 : Median(forget_batched) / Median(forget_one);

  if (json) {
    Json o;
    o["cache_mib"] = cache_mib;
    o["data_set_mib"] = 2 * cache_mib;
    o["default_sublists"] = uint64_t(Arc::DefaultSublists());
    o["runs"] = uint64_t(runs);
    Json arr = Json::array();
    for (size_t i = 0; i < combos.size(); i++) {
      Json e;
      e["threads"] = uint64_t(combos[i].threads);
      e["sublists"] = uint64_t(combos[i].sublists);
      e["reads_per_s"] = Median(combos[i].rates);
      e["hit_ratio"] = Median(combos[i].hit_ratios);
      arr.push_back(e);
    }
    o["results"] = arr;
    o["sublist_speedup"] = sublist_speedup;
    if (!no_release) {
      o["release_count_per_thread"] = release_count;
      o["release_batch"] = uint64_t(release_batch);
      o["release_rounds"] = rounds;
      o["release_one_by_one_per_s"] = Median(one_by_one);
      o["release_batched_per_s"] = Median(batched);
      o["batch_release_speedup"] = batch_speedup;
      o["forget_one_by_one_per_s"] = Median(forget_one);
      o["forget_batched_per_s"] = Median(forget_batched);
      o["forget_batch_speedup"] = forget_speedup;
    }
    return PrintJson(o);
  }
  std::printf("cached 4 KiB random reads, cache %llu MiB, data set %llu MiB, %llu reads/run%s\n",
              (unsigned long long)cache_mib, (unsigned long long)(2 * cache_mib),
              (unsigned long long)ops, pin ? " (thread i on CPU i mod ncpu)" : "");
  std::printf("%-8s %-9s %14s %10s\n", "threads", "sublists", "reads/s", "hit ratio");
  for (const Combo& c : combos) {
    std::printf("%-8u %-9s %14.0f %10.3f\n", c.threads,
                c.sublists ? std::to_string(c.sublists).c_str()
                           : ("0=" + std::to_string(Arc::DefaultSublists())).c_str(),
                Median(c.rates), Median(c.hit_ratios));
  }
  std::printf("sublist_speedup (%u threads, sublists %u vs %u): %.2fx (target >= 1.3)\n", tmax,
              dflt->sublists, one->sublists, sublist_speedup);
  if (!no_release) {
    std::printf(
        "dirty copies a sync wrote, given back by 2 threads, %u each x %llu rounds: one by one "
        "%.0f/s, in a ReleaseBatch %.0f/s\n",
        release_batch, (unsigned long long)rounds, Median(one_by_one), Median(batched));
    std::printf("batch_release_speedup: %.2fx (target >= 2); medians of %d runs\n", batch_speedup,
                release_runs);
    std::printf(
        "cached blocks forgotten by 2 threads, %llu each: one by one %.0f/s, batches of %u "
        "%.0f/s\n",
        (unsigned long long)release_count, Median(forget_one), release_batch,
        Median(forget_batched));
    std::printf("forget_batch_speedup: %.2fx; medians of %d runs\n", forget_speedup,
                release_runs);
  }
  return 0;
}

}  // namespace poolfs::bench
