// poolfs-bench sync: parallel dataset sync against the serial baseline, the
// experiment of OpenZFS's parallel dataset sync change, in process on the
// core Pool API.
//
// Each run creates a pool (on a memory device, or a file in --dir) with
// --allocators allocators, syncing on a ThreadPoolExecutor with the run's
// sync thread count and one strand per allocator, and N datasets ("ds0",
// "ds1", ...), each with one 128 KiB-record lz4 object: a zvol's shape. One
// writer thread per dataset writes --mib MiB into its object sequentially,
// 1 MiB per transaction; the run ends when the txg holding the last write
// has synced. MiB/s and blocks/s are measured from the first write to that
// sync. Each thread count runs in two modes, interleaved run by run:
// `parallel` (this project's sync: every dataset's lists at once, each
// dataset finishing on its own) and `serial` (PoolOptions::
// serial_dataset_sync: datasets one after another, each dnode written whole
// by one task, as OpenZFS synced before the change). A third case syncs one
// dataset with 64 files (4 writers, 16 files each) in parallel mode, to see
// what a second sync thread buys within one dataset (4 x --mib MiB in all).
//
// The data is compressible about 2:1, as fio's buffer_compress_percentage=50
// makes it (each 4 KiB: 2 KiB of random bytes, then 2 KiB of zeros), and
// distinct per MiB, so lz4 and the checksums do real work in the sync: with
// the memory device the sync is CPU-bound. Freed memory is kept in the
// process (mallopt below), as the daemon's tcmalloc keeps it.
//
// How the writers hand over their data (--writers). `handover` (the
// default): each writer's blocks are filled before the clock starts, and
// the writer gives each to its object as it is (ObjectSet::PutBlock, the
// buffer becoming the txg's dirty copy: ZFS's loaned ARC buffers,
// dmu_assign_arcbuf, which its zvol and NFS write paths use), so that the
// timed run is the sync's work and the transactions around it, as on the
// 32-core machine of OpenZFS's figures, where the writers' copies take
// cores the sync does not need. `copy`: each writer copies every MiB into
// its object (ObjectSet::Write), and on a machine of few cores the copies
// compete with the sync for them: what the pipeline as a whole gains.
// Columns `syncing` and `busy`: the share of the run the txg driver spent
// in syncs, and the share each sync thread spent running tasks.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "pool/pool.h"
#include "txg/thread_pool_executor.h"
#include "util/check.h"
#include "vdev/memory_device.h"

namespace poolfs::bench {
namespace {

constexpr size_t kChunk = 1 << 20;

std::vector<std::string> CompressibleChunks(size_t n) {
  std::mt19937_64 rng(7);
  std::vector<std::string> chunks(n, std::string(kChunk, '\0'));
  for (auto& c : chunks) {
    for (size_t page = 0; page < kChunk; page += 4096) {
      auto* p = reinterpret_cast<uint64_t*>(c.data() + page);
      for (size_t i = 0; i < 2048 / 8; i++) p[i] = rng();
    }
  }
  return chunks;
}

struct Setup {
  std::string device = "memory";
  std::string writers = "handover";  // or "copy"
  std::string dir = "/var/tmp";
  uint32_t allocators = 2;
  uint64_t mib = 64;  // per dataset
};

struct Result {
  double mib_s = 0;
  double blocks_s = 0;
  double syncing = 0;  // share of the run the txg driver spent syncing
  double busy = 0;     // share of the run the strands spent in tasks, per thread
};

// One run: `datasets` datasets with `files` objects each (a writer per
// dataset, or `writers` writers over the files of one dataset), `threads`
// sync threads, serial or parallel.
Result RunOnce(const Setup& setup, const std::vector<std::string>& chunks, size_t datasets,
               size_t files, size_t writers, size_t threads, bool serial, uint64_t total_mib) {
  const uint64_t size = (total_mib + 512) << 20;  // the data compresses about 2:1
  std::unique_ptr<core::vdev::MemoryDevice> mem;
  std::string path;
  core::pool::CreateOptions co;
  co.name = "bench";
  if (setup.device == "memory") {
    mem = std::make_unique<core::vdev::MemoryDevice>(size, "mem");
    // Touch every page first: the run then measures the sync's work
    // (compression, checksums, copies), not the kernel faulting in the
    // device's memory, which a real disk does not cost.
    const std::string zeros(kChunk, '\0');
    for (uint64_t off = 0; off + kChunk <= size; off += kChunk)
      POOLFS_CHECK(mem->Write(off, zeros.data(), zeros.size()).ok());
    POOLFS_CHECK(core::pool::Pool::CreateOnDevices({mem.get()}, {"mem"}, co).ok());
  } else {
    path = setup.dir + "/sync-bench.pool";
    std::filesystem::remove(path);
    POOLFS_CHECK(core::pool::Pool::Create({path}, size, co).ok());
  }
  core::txg::ThreadPoolExecutor executor(threads, setup.allocators);
  core::pool::PoolOptions po;
  po.space.allocators = setup.allocators;
  po.executor = &executor;
  po.serial_dataset_sync = serial;
  po.txg.timeout_ms = 1000;
  // Dirty copies of written blocks are recycled from one txg to the next
  // (as a daemon that has run a while does) instead of faulting in fresh
  // pages for every txg: the kernel's page clearing would otherwise be the
  // largest cost of the run, the same in both modes.
  po.block_buffer_retain_bytes = po.txg.dirty_max_bytes * 2;
  auto pool =
      mem ? core::pool::Pool::ImportDevices({mem.get()}, po) : core::pool::Pool::Import({path}, po);
  POOLFS_CHECK(pool.ok());
  core::pool::Pool& p = **pool;
  std::vector<core::dmu::ObjectSet*> sets;
  for (size_t d = 0; d < datasets; d++) {
    auto os = p.CreateDataset("ds" + std::to_string(d));
    POOLFS_CHECK(os.ok());
    sets.push_back(*os);
  }
  POOLFS_CHECK(p.WaitSynced().ok());
  // (dataset, object) per file.
  std::vector<std::pair<core::dmu::ObjectSet*, ObjectId>> objs;
  for (core::dmu::ObjectSet* os : sets) {
    core::dmu::Tx tx(p.assigner());
    POOLFS_CHECK(tx.Assign().ok());
    for (size_t f = 0; f < files; f++)
      objs.emplace_back(os, *os->Create(tx, core::dmu::ObjectType::kPlain));
    tx.Commit();
  }
  POOLFS_CHECK(p.WaitSynced().ok());
  const core::pool::PoolSyncStats before = p.SyncStats();
  const uint64_t blocks0 = before.blocks_written;
  const uint64_t per_file = std::max<uint64_t>(1, total_mib / objs.size());
  // Handover: every block of every file, filled now, and a hold on each
  // file's dnode.
  const bool handover = setup.writers == "handover";
  constexpr size_t kBlock = core::dmu::kDefaultBlockSize;
  std::vector<std::vector<core::dmu::SharedBlock>> blocks_of(objs.size());
  std::vector<core::dmu::ObjectSet::DnodeRef> holds;
  if (handover) {
    for (size_t f = 0; f < objs.size(); f++) {
      auto held = objs[f].first->Hold(objs[f].second);
      POOLFS_CHECK(held.ok());
      holds.push_back(*held);
      for (uint64_t i = 0; i < per_file; i++) {
        const std::string& chunk = chunks[(i * 31 + f) % chunks.size()];
        for (size_t b = 0; b < kChunk / kBlock; b++)
          blocks_of[f].emplace_back(chunk.substr(b * kBlock, kBlock));
      }
    }
  }
  const double t0 = NowSeconds();
  std::vector<std::thread> ws;
  for (size_t w = 0; w < writers; w++) {
    ws.emplace_back([&, w] {
      // Writer w writes files w, w + writers, ... one MiB at a time, in turn.
      for (uint64_t i = 0; i < per_file; i++) {
        for (size_t f = w; f < objs.size(); f += writers) {
          core::dmu::Tx tx(p.assigner());
          POOLFS_CHECK(tx.Assign(kChunk).ok());
          core::dmu::ObjectSet* os = objs[f].first;
          if (handover) {
            for (size_t b = 0; b < kChunk / kBlock; b++) {
              const uint64_t blkid = i * (kChunk / kBlock) + b;
              POOLFS_CHECK(os->PutBlock(tx, *holds[f], blkid, blocks_of[f][blkid]).ok());
            }
          } else {
            POOLFS_CHECK(
                os->Write(tx, objs[f].second, i * kChunk, chunks[(i * 31 + f) % chunks.size()])
                    .ok());
          }
          tx.Commit();
        }
      }
    });
  }
  for (std::thread& t : ws) t.join();
  POOLFS_CHECK(p.WaitSynced().ok());
  const double s = NowSeconds() - t0;
  const core::pool::PoolSyncStats after = p.SyncStats();
  const uint64_t blocks = after.blocks_written - blocks0;
  uint64_t busy_ns = 0;
  for (const core::pool::SyncRecord& rec : after.recent) {
    if (rec.txg <= (before.recent.empty() ? Txg(0) : before.recent.back().txg)) continue;
    for (uint64_t b : rec.strand_busy_ns) busy_ns += b;
  }
  holds.clear();
  POOLFS_CHECK(p.Export().ok());
  pool->reset();
  if (!path.empty()) std::filesystem::remove(path);
  return {double(per_file * objs.size()) / s, double(blocks) / s,
          double(after.sync_ns_total - before.sync_ns_total) / 1e9 / s,
          double(busy_ns) / 1e9 / s / double(threads)};
}

struct Series {
  std::vector<double> mib_s, blocks_s, syncing, busy;
  void Add(const Result& r) {
    mib_s.push_back(r.mib_s);
    blocks_s.push_back(r.blocks_s);
    syncing.push_back(r.syncing);
    busy.push_back(r.busy);
  }
  double min() const { return *std::min_element(mib_s.begin(), mib_s.end()); }
  double max() const { return *std::max_element(mib_s.begin(), mib_s.end()); }
  // Its figures in a JSON case (the caller adds what the case is).
  void Fill(Json& c) const {
    c["mib_s"] = Median(mib_s);
    c["mib_s_min"] = min();
    c["mib_s_max"] = max();
    c["blocks_s"] = Median(blocks_s);
    c["syncing"] = Median(syncing);
    c["strand_busy_per_thread"] = Median(busy);
  }
};

std::vector<size_t> ParseSizes(const std::string& s) {
  const std::vector<uint32_t> v = ParseList(s);
  return {v.begin(), v.end()};
}

}  // namespace

int RunSyncBench(int argc, char** argv) {
  CLI::App app("poolfs-bench sync: parallel dataset sync against the serial baseline");
  Setup setup;
  std::string datasets_arg = "1,12", threads_arg = "1,2", modes_arg = "parallel,serial";
  bool no_files = false;
  int runs = 3;
  bool json = false;
  app.add_option("--datasets", datasets_arg, "dataset counts, comma-separated");
  app.add_option("--sync-threads", threads_arg, "sync thread counts, comma-separated");
  app.add_option("--modes", modes_arg, "parallel, serial or both (for profiling one)");
  app.add_flag("--no-files", no_files, "leave out the 64-file case");
  app.add_option("--device", setup.device, "memory or file")
      ->check(CLI::IsMember({"memory", "file"}));
  app.add_option("--writers", setup.writers,
                 "handover (blocks prepared before the clock, given to the objects as they "
                 "are) or copy (each MiB copied in)")
      ->check(CLI::IsMember({"handover", "copy"}));
  app.add_option("--dir", setup.dir, "where the pool file goes (--device file)");
  app.add_option("--runs", runs, "runs of each case (medians, min and max are reported)");
  app.add_option("--mib", setup.mib, "MiB written per dataset (and in all by the 64 files)");
  app.add_option("--allocators", setup.allocators, "alloc.allocators (strands)");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  // Freed dirty copies stay in the process for the next txg instead of
  // going back to the kernel: glibc serves 128 KiB blocks with mmap and
  // returns them with munmap by default, and faulting fresh zeroed pages in
  // for every txg then costs more than the sync's compression. The daemon
  // links tcmalloc, which keeps them; this is glibc's way to do the same.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const std::vector<size_t> dataset_counts = ParseSizes(datasets_arg);
  const std::vector<size_t> thread_counts = ParseSizes(threads_arg);
  const std::vector<std::string> chunks = CompressibleChunks(64);

  // (datasets, threads, serial) -> series; (threads) -> the 64-file case.
  std::map<std::tuple<size_t, size_t, bool>, Series> zvols;
  std::map<size_t, Series> files64;
  for (int r = 0; r < runs; r++) {
    for (size_t d : dataset_counts) {
      for (size_t t : thread_counts) {
        for (bool serial : {false, true}) {
          if (modes_arg.find(serial ? "serial" : "parallel") == std::string::npos) continue;
          zvols[{d, t, serial}].Add(RunOnce(setup, chunks, d, 1, d, t, serial, setup.mib * d));
        }
      }
    }
    for (size_t t : thread_counts) {
      if (no_files) continue;
      files64[t].Add(RunOnce(setup, chunks, 1, 64, 4, t, false, setup.mib * 4));
    }
  }
  auto median = [&](size_t d, size_t t, bool serial) {
    auto it = zvols.find({d, t, serial});
    return it == zvols.end() ? 0.0 : Median(it->second.mib_s);
  };
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double parallel_over_serial = ratio(median(12, 2, false), median(12, 2, true));
  const double threads_speedup = ratio(median(12, 2, false), median(12, 1, false));
  const double files64_speedup = files64.count(1) && files64.count(2)
                                     ? ratio(Median(files64[2].mib_s), Median(files64[1].mib_s))
                                     : 0.0;

  if (json) {
    Json o;
    o["device"] = setup.device;
    o["writers"] = setup.writers;
    o["allocators"] = setup.allocators;
    o["mib_per_dataset"] = setup.mib;
    o["runs"] = runs;
    o["data"] = "compressible about 2:1 (2 KiB random + 2 KiB zeros per 4 KiB), lz4";
    Json cases = Json::array();
    for (const auto& [key, s] : zvols) {
      const auto& [d, t, serial] = key;
      Json c;
      c["datasets"] = d;
      c["sync_threads"] = t;
      c["mode"] = serial ? "serial" : "parallel";
      s.Fill(c);
      cases.push_back(c);
    }
    for (const auto& [t, s] : files64) {
      Json c;
      c["datasets"] = 1;
      c["files"] = 64;
      c["sync_threads"] = t;
      c["mode"] = "parallel";
      s.Fill(c);
      cases.push_back(c);
    }
    o["cases"] = cases;
    o["parallel_over_serial"] = parallel_over_serial;
    o["threads_speedup"] = threads_speedup;
    o["files64_threads_speedup"] = files64_speedup;
    return PrintJson(o);
  }
  std::printf(
      "sync: %llu MiB per dataset, one writer per dataset (%s), %u allocators, %s device, data "
      "compressible ~2:1 (lz4), %d runs\n",
      (unsigned long long)setup.mib, setup.writers.c_str(), setup.allocators, setup.device.c_str(),
      runs);
  std::printf("%-9s %-8s %-9s %10s %10s %10s %12s\n", "datasets", "threads", "mode", "MiB/s", "min",
              "max", "blocks/s");
  for (const auto& [key, s] : zvols) {
    const auto& [d, t, serial] = key;
    std::printf("%-9zu %-8zu %-9s %10.0f %10.0f %10.0f %12.0f %8.2f %6.2f\n", d, t,
                serial ? "serial" : "parallel", Median(s.mib_s), s.min(), s.max(),
                Median(s.blocks_s), Median(s.syncing), Median(s.busy));
  }
  for (const auto& [t, s] : files64)
    std::printf("%-9s %-8zu %-9s %10.0f %10.0f %10.0f %12.0f %8.2f %6.2f\n", "1 (64f)", t,
                "parallel", Median(s.mib_s), s.min(), s.max(), Median(s.blocks_s),
                Median(s.syncing), Median(s.busy));
  std::printf("parallel_over_serial (12 datasets, 2 threads): %.2f\n", parallel_over_serial);
  std::printf("threads_speedup (12 datasets, parallel, 2 threads / 1): %.2f\n", threads_speedup);
  std::printf("one dataset, 64 files, 2 threads / 1: %.2f\n", files64_speedup);
  return 0;
}

}  // namespace poolfs::bench
