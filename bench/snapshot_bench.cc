// poolfs-bench snapshot: what snapshots cost, each figure against a
// baseline measured in the same run, on pools in sparse files in a
// temporary folder of --dir (removed at the end; --device memory: on memory
// devices, without the host disk's noise), through the core Pool
// API and its dataset admin (pool/dataset_admin.h: each change waits for
// its txg to sync, as `poolfs snapshot` and `poolfs dataset destroy` do).
// Three parts (pool.h, "Snapshots", has the design they check):
//
// 1. Snapshot time against dataset size. A fresh pool per size N, one
//    dataset (bench/d) holding N small objects (each one Create and a few
//    bytes: a 4 KiB block, 1,000 objects per Tx, through the ObjectSet
//    API), synced; every pool of the size the largest N needs. Then --runs rounds on that pool,
//    each timing a PoolDatasetAdmin::Snapshot of another name (the snapshot and the sync of its
//    txg) and, as the baseline, an empty sync (Pool::SyncOnce), in turns (which goes first
//    alternates). Medians and snapshot/empty-sync per N: a snapshot costs one directory record, so
//    the ratio should stay flat as N grows. Each round also times a clone of its
//    snapshot (PoolDatasetAdmin::Clone and its txg's sync; pool.h, "Clones"):
//    one directory record too, flat the same way.
// 2. Create rate with snapshots held. A fresh pool per run with 1,000 base
//    objects, then as many rounds as the largest K compared, each
//    overwriting four base objects and syncing; the last K rounds sync by
//    taking a snapshot (K = 0: the baseline, 10, 100), so every K has the
//    same history. Timed: --create-count creates as
//    above, each Tx also overwriting four base objects (their old blocks,
//    born before the newest snapshot, go to the deadlist, as do the old
//    copies of the dnode blocks the creates change), to the sync of the
//    txg holding the last one. Runs take turns between the K's, after one
//    warm-up run that is not counted; creates/s and the ratio to K = 0
//    (target >= 0.95).
// 3. Destroy cost against unique blocks. A fresh pool per run and size B:
//    one object of B 128 KiB records of random bytes, synced; a snapshot;
//    then either every record overwritten (the snapshot alone holds B
//    blocks) or nothing (the baseline: a snapshot of the same size that
//    holds nothing alone); timed: the destroy of the snapshot, with its
//    sync. An empty sync of the same pool just before is printed beside
//    it. The claim: the cost follows the unique blocks (ms per 1,000 of
//    them about constant), not the dataset's size (the baseline flat).
//
// --quick: smaller sizes (N 1,000 and 10,000; 5,000 creates; B 100 and
// 1,000) and one run each, for the smoke test. No figure is asserted.
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "vdev/memory_device.h"

namespace poolfs::bench {
namespace {

constexpr char kPoolName[] = "bench";
constexpr char kDataset[] = "bench/d";
constexpr uint64_t kObjectsPerTx = 1000;
constexpr uint64_t kBaseObjects = 1000;   // part 2: the objects overwritten
constexpr uint64_t kOverwritesPerTx = 4;  // part 2: per Tx, and between snapshots
constexpr uint64_t kRecord = 128 * 1024;  // part 3: the file's records
constexpr uint64_t kRecordsPerTx = 8;     // part 3: 1 MiB per Tx
constexpr double kCreateTarget = 0.95;    // part 2: K snapshots / none

// The temporary folder of the pool files (MakeScratch).
const std::string& g_dir = ScratchDir();

[[noreturn]] void Die(const Status& st, const std::string& what) { DieOf("snapshot", st, what); }

void Must(const Status& st, const std::string& what) {
  if (!st.ok()) Die(st, what);
}

double Ms(double seconds) { return seconds * 1e3; }
double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double Max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// Where the pools live (--device): sparse files in g_dir, or memory.
bool g_memory = false;

// A fresh pool "bench" with dataset bench/d, imported, and its admin: in a
// sparse file of `size` bytes, which goes with it, or on a memory device
// of `memory_size` bytes.
class BenchPool {
 public:
  BenchPool(uint64_t size, uint64_t memory_size) : path_(g_dir + "/snapshot-bench.pool") {
    core::pool::CreateOptions co;
    co.name = kPoolName;
    if (g_memory) {
      mem_ = std::make_unique<core::vdev::MemoryDevice>(memory_size, "mem");
      // Every page touched first (as poolfs-bench sync does): the runs then
      // measure the pool, not the kernel faulting in the device's memory.
      const std::string zeros(1 << 20, '\0');
      for (uint64_t off = 0; off + zeros.size() <= memory_size; off += zeros.size())
        Must(mem_->Write(off, zeros.data(), zeros.size()), "touch the memory device");
      Must(core::pool::Pool::CreateOnDevices({mem_.get()}, {"mem"}, co), "create pool");
      auto p = core::pool::Pool::ImportDevices({mem_.get()}, core::pool::PoolOptions());
      if (!p.ok()) Die(p.status(), "import");
      pool_ = std::move(p).value();
    } else {
      std::filesystem::remove(path_);
      Must(core::pool::Pool::Create({path_}, size, co), "create pool " + path_);
      auto p = core::pool::Pool::Import({path_}, core::pool::PoolOptions());
      if (!p.ok()) Die(p.status(), "import " + path_);
      pool_ = std::move(p).value();
    }
    admin_ = std::make_unique<core::pool::PoolDatasetAdmin>(pool_.get());
    Must(admin_->Create(kDataset, false, {}), std::string("create dataset ") + kDataset);
    os_ = pool_->dataset(kDataset);
    if (os_ == nullptr) Die(Status::NotFound(kDataset), "dataset");
  }
  ~BenchPool() {
    admin_.reset();
    Must(pool_->Export(), "export");
    pool_.reset();
    mem_.reset();
    if (!g_memory) std::filesystem::remove(path_);
  }
  core::pool::Pool& pool() { return *pool_; }
  core::pool::PoolDatasetAdmin& admin() { return *admin_; }
  core::dmu::ObjectSet& os() { return *os_; }

  // Seconds of an empty sync.
  double EmptySync() {
    const double t0 = NowSeconds();
    Must(pool_->SyncOnce(), "empty sync");
    return NowSeconds() - t0;
  }
  // Seconds of `poolfs snapshot bench/d@NAME`.
  double Snapshot(const std::string& name) {
    const double t0 = NowSeconds();
    Must(admin_->Snapshot({std::string(kDataset) + "@" + name}, false), "snapshot " + name);
    return NowSeconds() - t0;
  }
  // Seconds of `poolfs clone bench/d@NAME bench/NAME`.
  double Clone(const std::string& name) {
    const double t0 = NowSeconds();
    Must(admin_->Clone(std::string(kDataset) + "@" + name, std::string(kPoolName) + "/" + name, {}),
         "clone @" + name);
    return NowSeconds() - t0;
  }
  // Seconds of `poolfs dataset destroy bench/d@NAME`.
  double DestroySnapshot(const std::string& name) {
    const double t0 = NowSeconds();
    Must(admin_->Destroy(std::string(kDataset) + "@" + name, false), "destroy @" + name);
    return NowSeconds() - t0;
  }
  core::pool::DatasetFigures Figures() {
    auto l = pool_->ListDatasets(kDataset, false);
    if (!l.ok() || l->size() != 1) Die(l.status(), "list dataset");
    return (*l)[0];
  }
  core::pool::SnapshotFigures SnapshotOf(const std::string& name) {
    auto l = pool_->ListSnapshots(kDataset, false);
    if (!l.ok()) Die(l.status(), "list snapshots");
    for (const core::pool::SnapshotFigures& f : *l)
      if (f.name == std::string(kDataset) + "@" + name) return f;
    Die(Status::NotFound(name), "snapshot");
  }

 private:
  std::string path_;
  std::unique_ptr<core::vdev::MemoryDevice> mem_;
  std::unique_ptr<core::pool::Pool> pool_;
  std::unique_ptr<core::pool::PoolDatasetAdmin> admin_;
  core::dmu::ObjectSet* os_ = nullptr;
};

// A few bytes of object i (version v: an overwrite changes them).
std::string SmallContent(uint64_t i, uint64_t v) {
  return "object " + std::to_string(i) + " version " + std::to_string(v) + "\n";
}

// Overwrites base objects [first, first + count) (mod their number).
void OverwriteBase(core::dmu::ObjectSet& os, core::dmu::Tx& tx, const std::vector<ObjectId>& base,
                   uint64_t first, uint64_t count, uint64_t version) {
  for (uint64_t j = first; j < first + count; j++) {
    const uint64_t i = j % base.size();
    Must(os.Write(tx, base[i], 0, SmallContent(i, version)), "overwrite");
  }
}

// Creates `count` small objects, kObjectsPerTx per Tx, each Tx also
// overwriting kOverwritesPerTx of `base` (when given), and waits for the
// txg holding the last to sync. Returns the new ids (when `ids`).
void CreateSmall(BenchPool& bp, uint64_t count, const std::vector<ObjectId>* base,
                 std::vector<ObjectId>* ids) {
  core::dmu::ObjectSet& os = bp.os();
  const uint32_t block = os.StartBlockSize(core::dmu::kDefaultBlockSize);
  for (uint64_t done = 0, batch = 0; done < count; batch++) {
    const uint64_t n = std::min(kObjectsPerTx, count - done);
    core::dmu::Tx tx(bp.pool().assigner());
    Must(tx.Assign(n * block), "assign");
    for (uint64_t i = done; i < done + n; i++) {
      auto id = os.Create(tx, core::dmu::ObjectType::kPlain, block);
      if (!id.ok()) Die(tx.Abandon(id.status()), "create");
      Must(os.Write(tx, *id, 0, SmallContent(i, 0)), "write");
      if (ids) ids->push_back(*id);
    }
    if (base) OverwriteBase(os, tx, *base, batch * kOverwritesPerTx, kOverwritesPerTx, 1);
    tx.Commit();
    done += n;
  }
  Must(bp.pool().WaitSynced(), "sync");
}

// ---- 1. Snapshot time against dataset size.

struct SizeResult {
  uint64_t objects = 0;
  std::vector<double> snapshot_ms, sync_ms, clone_ms;
  double populate_s = 0;
  uint64_t referenced = 0;  // the last snapshot's bytes
};

// The pool is sized for `largest` objects whatever `objects` is: the pool
// directory lists every metaslab's space map, and a larger pool's costs
// more to rewrite (which a snapshot does and an empty sync does not).
SizeResult SnapshotVsSize(uint64_t objects, uint64_t largest, int runs) {
  SizeResult r;
  r.objects = objects;
  // A 4 KiB block and two copies of a 512-byte dnode per object, and room
  // (a sparse file's room costs nothing; a memory device's is touched).
  BenchPool bp(largest * 16384 + (2ull << 30), largest * 10240 + (512ull << 20));
  const double t0 = NowSeconds();
  CreateSmall(bp, objects, nullptr, nullptr);
  r.populate_s = NowSeconds() - t0;
  bp.EmptySync();  // what the population's syncs deferred
  for (int i = 0; i < runs; i++) {
    const std::string name = "r" + std::to_string(i);
    if (i % 2 == 0) {
      r.sync_ms.push_back(Ms(bp.EmptySync()));
      r.snapshot_ms.push_back(Ms(bp.Snapshot(name)));
    } else {
      r.snapshot_ms.push_back(Ms(bp.Snapshot(name)));
      r.sync_ms.push_back(Ms(bp.EmptySync()));
    }
    r.clone_ms.push_back(Ms(bp.Clone(name)));
  }
  r.referenced = bp.SnapshotOf("r" + std::to_string(runs - 1)).referenced;
  std::fprintf(stderr,
               "snapshot: %llu objects (populated in %.1f s): snapshot %.2f ms, clone %.2f ms, "
               "empty sync %.2f ms (medians of %d)\n",
               (unsigned long long)objects, r.populate_s, Median(r.snapshot_ms), Median(r.clone_ms),
               Median(r.sync_ms), runs);
  return r;
}

// ---- 2. Create rate with snapshots held.

struct CreateRun {
  double rate = 0;
  uint64_t usedbysnapshots = 0;  // the dataset's deadlists, after the run
};

// `history`: rounds of overwrites before the timed creates, the last
// `snapshots` of them each followed by a snapshot, the others by a sync, so
// that every K compared has the same history.
CreateRun CreateWithSnapshots(uint64_t count, uint32_t snapshots, uint32_t history) {
  BenchPool bp(count * 16384 + (2ull << 30), count * 10240 + (512ull << 20));
  std::vector<ObjectId> base;
  CreateSmall(bp, kBaseObjects, nullptr, &base);
  for (uint32_t s = 0; s < history; s++) {
    core::dmu::Tx tx(bp.pool().assigner());
    Must(tx.Assign(), "assign");
    OverwriteBase(bp.os(), tx, base, uint64_t(s) * kOverwritesPerTx, kOverwritesPerTx, 2);
    tx.Commit();
    if (s + snapshots >= history)
      bp.Snapshot("s" + std::to_string(s));
    else
      Must(bp.pool().WaitSynced(), "sync");
  }
  bp.EmptySync();
  const double t0 = NowSeconds();
  CreateSmall(bp, count, &base, nullptr);
  CreateRun r;
  r.rate = double(count) / (NowSeconds() - t0);
  r.usedbysnapshots = bp.Figures().usedbysnapshots;
  return r;
}

// ---- 3. Destroy cost against unique blocks.

struct DestroyRun {
  double destroy_ms = 0;
  double sync_ms = 0;
  uint64_t held = 0;  // bytes the snapshot alone held (its `used`)
};

// 64 distinct 128 KiB records of random bytes.
std::vector<std::string> RandomRecords() {
  std::mt19937_64 rng(11);
  std::vector<std::string> recs(64, std::string(kRecord, '\0'));
  for (std::string& r : recs) {
    auto* p = reinterpret_cast<uint64_t*>(r.data());
    for (size_t i = 0; i < kRecord / 8; i++) p[i] = rng();
  }
  return recs;
}

// Writes records [0, blocks) of object `id`, record i being recs[(i + shift) % 64].
void WriteRecords(BenchPool& bp, ObjectId id, uint64_t blocks, const std::vector<std::string>& recs,
                  uint64_t shift) {
  for (uint64_t b = 0; b < blocks; b += kRecordsPerTx) {
    core::dmu::Tx tx(bp.pool().assigner());
    Must(tx.Assign(kRecordsPerTx * kRecord), "assign");
    for (uint64_t i = b; i < std::min(blocks, b + kRecordsPerTx); i++)
      Must(bp.os().Write(tx, id, i * kRecord, recs[(i + shift) % recs.size()]), "write");
    tx.Commit();
  }
  Must(bp.pool().WaitSynced(), "sync");
}

DestroyRun DestroyOne(uint64_t blocks, bool unique, const std::vector<std::string>& recs) {
  BenchPool bp(blocks * kRecord * 3 + (2ull << 30), blocks * kRecord * 5 / 2 + (512ull << 20));
  ObjectId id;
  {
    core::dmu::Tx tx(bp.pool().assigner());
    Must(tx.Assign(), "assign");
    auto created = bp.os().Create(tx, core::dmu::ObjectType::kPlain);
    if (!created.ok()) Die(tx.Abandon(created.status()), "create");
    id = *created;
    tx.Commit();
  }
  WriteRecords(bp, id, blocks, recs, 0);
  bp.Snapshot("s");
  if (unique) WriteRecords(bp, id, blocks, recs, 1);
  bp.EmptySync();
  DestroyRun r;
  r.held = bp.SnapshotOf("s").used;
  r.sync_ms = Ms(bp.EmptySync());
  r.destroy_ms = Ms(bp.DestroySnapshot("s"));
  return r;
}

struct DestroyResult {
  uint64_t blocks = 0;
  std::vector<double> unique_ms, baseline_ms, sync_ms;
  uint64_t unique_held = 0, baseline_held = 0;  // the last run's
};

std::vector<uint64_t> ParseCounts(const std::string& s) {
  const std::vector<uint32_t> v = ParseList(s);
  return {v.begin(), v.end()};
}

}  // namespace

int RunSnapshotBench(int argc, char** argv) {
  CLI::App app("poolfs-bench snapshot: snapshot, create and destroy costs against baselines");
  std::string objects_arg = "10000,100000,1000000", snapshots_arg = "0,10,100";
  std::string blocks_arg = "100,1000,10000", parts_arg = "snapshot,create,destroy";
  uint64_t create_count = 100000;
  int runs = 5;
  std::string dir = "/var/tmp", device = "file";
  bool quick = false, json = false;
  app.add_option("--objects", objects_arg,
                 "part 1: objects in the dataset snapshotted, comma-separated")
      ->capture_default_str();
  app.add_option("--snapshots", snapshots_arg,
                 "part 2: snapshots held while creating, comma-separated (the first: baseline)")
      ->capture_default_str();
  app.add_option("--create-count", create_count, "part 2: objects created per run")
      ->capture_default_str()
      ->check(CLI::Range(1000, 100000000));
  app.add_option("--blocks", blocks_arg,
                 "part 3: 128 KiB blocks of the snapshotted file, comma-separated")
      ->capture_default_str();
  app.add_option("--parts", parts_arg, "which parts run: snapshot, create, destroy")
      ->capture_default_str();
  app.add_option("--runs", runs,
                 "rounds of part 1 (on one pool per size); runs per case of parts 2 and 3 (a "
                 "fresh pool each, interleaved)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--device", device, "where the pools live: sparse files in --dir, or memory")
      ->capture_default_str()
      ->check(CLI::IsMember({"file", "memory"}));
  app.add_option("--dir", dir, "where the temporary folder of the pool files goes")
      ->capture_default_str();
  app.add_flag("--quick", quick,
               "small sizes, one run (objects 1000,10000; create-count 5000; blocks 100,1000), "
               "unless given");
  app.add_flag("--json", json, "one JSON object instead of the table");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    if (app.count("--objects") == 0) objects_arg = "1000,10000";
    if (app.count("--create-count") == 0) create_count = 5000;
    if (app.count("--blocks") == 0) blocks_arg = "100,1000";
    if (app.count("--runs") == 0) runs = 1;
  }
  const std::vector<uint64_t> object_counts = ParseCounts(objects_arg);
  const std::vector<uint64_t> block_counts = ParseCounts(blocks_arg);
  const std::vector<uint32_t> snapshot_counts = ParseList(snapshots_arg);
  const bool part_snapshot = parts_arg.find("snapshot") != std::string::npos;
  const bool part_create = parts_arg.find("create") != std::string::npos;
  const bool part_destroy = parts_arg.find("destroy") != std::string::npos;
  if ((part_snapshot && object_counts.empty()) || (part_create && snapshot_counts.empty()) ||
      (part_destroy && block_counts.empty())) {
    std::fprintf(stderr, "poolfs-bench snapshot: an empty list\n");
    return 2;
  }

  if (!MakeScratch(dir, "snapshot")) return 1;
  g_memory = device == "memory";
  const double t_start = NowSeconds();

  std::vector<SizeResult> sizes;
  if (part_snapshot)
    for (uint64_t n : object_counts)
      sizes.push_back(
          SnapshotVsSize(n, *std::max_element(object_counts.begin(), object_counts.end()), runs));

  std::map<uint32_t, std::vector<CreateRun>> creates;
  if (part_create) {
    const uint32_t history = *std::max_element(snapshot_counts.begin(), snapshot_counts.end());
    // A warm-up run, not counted: the process's first pool pays for the
    // heap's growth, which would fall on the baseline alone.
    CreateWithSnapshots(create_count, snapshot_counts[0], history);
    for (int run = 0; run < runs; run++) {
      for (uint32_t k : snapshot_counts) {
        CreateRun r = CreateWithSnapshots(create_count, k, history);
        creates[k].push_back(r);
        std::fprintf(stderr, "create: run %d/%d, %u snapshots: %.0f creates/s\n", run + 1, runs, k,
                     r.rate);
      }
    }
  }

  std::vector<DestroyResult> destroys;
  if (part_destroy) {
    const std::vector<std::string> recs = RandomRecords();
    for (uint64_t b : block_counts) destroys.push_back({b, {}, {}, {}, 0, 0});
    for (int run = 0; run < runs; run++) {
      for (DestroyResult& d : destroys) {
        // Which goes first alternates run by run.
        for (int k = 0; k < 2; k++) {
          const bool unique = (k + run) % 2 == 0;
          DestroyRun r = DestroyOne(d.blocks, unique, recs);
          (unique ? d.unique_ms : d.baseline_ms).push_back(r.destroy_ms);
          (unique ? d.unique_held : d.baseline_held) = r.held;
          d.sync_ms.push_back(r.sync_ms);
          std::fprintf(stderr, "destroy: run %d/%d, %llu blocks, %s: %.2f ms\n", run + 1, runs,
                       (unsigned long long)d.blocks, unique ? "unique" : "baseline", r.destroy_ms);
        }
      }
    }
  }
  const double elapsed = NowSeconds() - t_start;
  RemoveScratch();

  auto rate_of = [&](uint32_t k) {
    std::vector<double> v;
    for (const CreateRun& r : creates[k]) v.push_back(r.rate);
    return v;
  };
  const double base_rate = creates.empty() ? 0 : Median(rate_of(snapshot_counts[0]));
  const double flatness =
      sizes.size() < 2 ? 1.0 : Median(sizes.back().snapshot_ms) / Median(sizes[0].snapshot_ms);
  const double clone_flatness =
      sizes.size() < 2 ? 1.0 : Median(sizes.back().clone_ms) / Median(sizes[0].clone_ms);

  if (json) {
    Json o;
    o["benchmark"] = std::string("snapshot");
    o["runs"] = runs;
    o["quick"] = quick;
    o["device"] = device;
    o["seconds"] = elapsed;
    Json s = Json::array();
    for (const SizeResult& r : sizes) {
      Json e;
      e["objects"] = r.objects;
      e["snapshot_ms"] = Median(r.snapshot_ms);
      e["snapshot_ms_samples"] = r.snapshot_ms;
      e["empty_sync_ms"] = Median(r.sync_ms);
      e["empty_sync_ms_samples"] = r.sync_ms;
      e["snapshot_over_empty_sync"] = Median(r.snapshot_ms) / Median(r.sync_ms);
      e["clone_ms"] = Median(r.clone_ms);
      e["clone_ms_samples"] = r.clone_ms;
      e["clone_over_empty_sync"] = Median(r.clone_ms) / Median(r.sync_ms);
      e["snapshot_referenced_bytes"] = r.referenced;
      e["populate_s"] = r.populate_s;
      s.push_back(e);
    }
    o["snapshot_vs_size"] = s;
    if (!sizes.empty()) {
      o["snapshot_ms_largest_over_smallest"] = flatness;
      o["clone_ms_largest_over_smallest"] = clone_flatness;
    }
    Json c = Json::array();
    for (uint32_t k : snapshot_counts) {
      if (!creates.count(k)) continue;
      const std::vector<double> v = rate_of(k);
      Json e;
      e["snapshots"] = k;
      e["creates_per_s"] = Median(v);
      e["creates_per_s_min"] = Min(v);
      e["creates_per_s_max"] = Max(v);
      e["creates_per_s_samples"] = v;
      e["usedbysnapshots_bytes"] = creates[k].back().usedbysnapshots;
      e["ratio"] = Median(v) / base_rate;
      if (k != snapshot_counts[0]) {
        e["target"] = kCreateTarget;
        e["met"] = Median(v) / base_rate >= kCreateTarget;
      }
      c.push_back(e);
    }
    o["create_count"] = create_count;
    o["create_with_snapshots"] = c;
    Json d = Json::array();
    for (const DestroyResult& r : destroys) {
      Json e;
      e["blocks"] = r.blocks;
      e["unique_ms"] = Median(r.unique_ms);
      e["unique_ms_samples"] = r.unique_ms;
      e["unique_held_bytes"] = r.unique_held;
      e["unique_ms_per_1000_blocks"] = Median(r.unique_ms) * 1000.0 / double(r.blocks);
      e["baseline_ms"] = Median(r.baseline_ms);
      e["baseline_ms_samples"] = r.baseline_ms;
      e["baseline_held_bytes"] = r.baseline_held;
      e["empty_sync_ms"] = Median(r.sync_ms);
      e["unique_over_baseline"] = Median(r.unique_ms) / Median(r.baseline_ms);
      d.push_back(e);
    }
    o["destroy_vs_unique"] = d;
    return PrintJson(o);
  }

  std::printf("poolfs-bench snapshot: pools %s, %d run%s%s; %.0f s\n",
              g_memory ? "on memory devices" : ("in sparse files in " + dir).c_str(), runs,
              runs == 1 ? "" : "s", quick ? ", --quick" : "", elapsed);
  if (!sizes.empty()) {
    std::printf(
        "\n1. snapshot and clone (each with its txg's sync) against dataset size; baseline: an "
        "empty sync of the same pool, same round (medians of %d)\n",
        runs);
    std::printf("%10s %12s %10s %14s %12s %12s %14s\n", "objects", "snapshot ms", "clone ms",
                "empty-sync ms", "snap/empty", "clone/empty", "snapshot MiB");
    for (const SizeResult& r : sizes)
      std::printf("%10llu %12.2f %10.2f %14.2f %12.2f %12.2f %14.1f\n",
                  (unsigned long long)r.objects, Median(r.snapshot_ms), Median(r.clone_ms),
                  Median(r.sync_ms), Median(r.snapshot_ms) / Median(r.sync_ms),
                  Median(r.clone_ms) / Median(r.sync_ms), double(r.referenced) / (1 << 20));
    if (sizes.size() > 1)
      std::printf("%llu objects over %llu: snapshot ms %.2f, clone ms %.2f (flat: about 1)\n",
                  (unsigned long long)sizes.back().objects, (unsigned long long)sizes[0].objects,
                  flatness, clone_flatness);
  }
  if (!creates.empty()) {
    std::printf(
        "\n2. creates/s (%llu objects, %llu per Tx, each Tx overwriting %llu of %llu older "
        "ones, to the sync of the last) with snapshots held; baseline: %u snapshots\n",
        (unsigned long long)create_count, (unsigned long long)kObjectsPerTx,
        (unsigned long long)kOverwritesPerTx, (unsigned long long)kBaseObjects, snapshot_counts[0]);
    std::printf("%10s %10s %10s %10s %16s %8s\n", "snapshots", "median/s", "min/s", "max/s",
                "usedbysnaps MiB", "ratio");
    for (uint32_t k : snapshot_counts) {
      if (!creates.count(k)) continue;
      const std::vector<double> v = rate_of(k);
      const double ratio = Median(v) / base_rate;
      std::printf("%10u %10.0f %10.0f %10.0f %16.2f %8.3f", k, Median(v), Min(v), Max(v),
                  double(creates[k].back().usedbysnapshots) / (1 << 20), ratio);
      if (k != snapshot_counts[0])
        std::printf("   target >= %.2f: %s", kCreateTarget,
                    ratio >= kCreateTarget ? "met" : "NOT MET");
      std::printf("\n");
    }
  }
  if (!destroys.empty()) {
    std::printf(
        "\n3. destroy of a snapshot (with its sync) of a file of B 128 KiB blocks: all B "
        "overwritten (unique) against none (baseline) (medians of %d)\n",
        runs);
    std::printf("%8s %10s %11s %13s %12s %13s %14s %10s\n", "blocks", "unique ms", "unique MiB",
                "ms/1k blocks", "baseline ms", "baseline MiB", "empty-sync ms", "uniq/base");
    for (const DestroyResult& r : destroys)
      std::printf("%8llu %10.2f %11.1f %13.2f %12.2f %13.2f %14.2f %10.2f\n",
                  (unsigned long long)r.blocks, Median(r.unique_ms),
                  double(r.unique_held) / (1 << 20),
                  Median(r.unique_ms) * 1000.0 / double(r.blocks), Median(r.baseline_ms),
                  double(r.baseline_held) / (1 << 20), Median(r.sync_ms),
                  Median(r.unique_ms) / Median(r.baseline_ms));
    std::printf("(unique/baseline MiB: what the snapshot alone held, its `used`)\n");
  }
  return 0;
}

}  // namespace poolfs::bench
