#include "stress/runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "poolfs/pool_admin.h"
#include "stress/stress_util.h"
#include "util/text.h"

namespace poolfs::stress {

namespace {

using Clock = std::chrono::steady_clock;
using core::pool::Pool;

// Live data per object, on average: offsets are mostly below 1 MiB, and
// truncates, punches, zero and compressible writes keep most objects well
// under that in allocated bytes (measured: a few % of a 128 MiB pool).
constexpr uint64_t kBudgetPerObject = uint64_t{1} << 20;
constexpr unsigned kCycleAlarmSeconds = 600;

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kKill: return "kill";
    case Mode::kPowercut: return "powercut";
    case Mode::kBoth: return "both";
    case Mode::kMounts: return "mounts";
    case Mode::kFsyncKill:
    case Mode::kFsyncPowercut:
    case Mode::kFsync: return "fsync";  // FsyncRunner's, never a Runner's
  }
  return "?";
}

}  // namespace

Runner::Runner(const StressOptions& options) : options_(options), rng_(options.seed) {}

core::pool::PoolOptions Runner::RandomPoolOptions(std::mt19937_64& rng) const {
  // Mostly txgs every 50-200 ms and room for dirty data; one cycle in four
  // has very short txgs, and one in four a dirty maximum small enough for
  // the write throttle to delay and block writers.
  core::pool::PoolOptions o;
  o.txg.timeout_ms = rng() % 4 == 0 ? 5 + rng() % 16 : 50 + rng() % 151;
  o.txg.dirty_max_bytes = (rng() % 4 == 0 ? 2 + rng() % 7 : 16 + rng() % 113) << 20;
  o.txg.dirty_sync_percent = uint32_t(5 + rng() % 46);
  o.txg.delay_min_dirty_percent = uint32_t(30 + rng() % 61);
  o.space.allocators = uint32_t(1 + rng() % 4);
  // One cycle in eight stores every block above 8-64 KiB as a gang block,
  // so that gang writes, reads, frees and their crash safety are exercised
  // (they happen on their own only when the pool is fragmented).
  o.force_gang_above = rng() % 8 == 0 ? (uint64_t{8} << (rng() % 4)) << 10 : 0;
  // Half the cycles keep only 1-64 idle dnodes per dataset in memory, so
  // that dnodes leave memory and load again under the workload (and their
  // cache is small); one in four reads its vdevs with O_DIRECT.
  if (rng() % 2 == 0) {
    o.object_cache_limit = 1 + rng() % 64;
    o.arc.max_bytes = (1 + rng() % 8) << 20;
  }
  o.vdev.direct_reads = rng() % 4 == 0;
  return o;
}

std::string Runner::ReproCommand() const {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "poolfs-stress --dir %s.repro --seconds %.0f --threads %d --seed %llu --mode %s --damage %d",
      options_.dir.c_str(), options_.seconds, options_.threads,
      static_cast<unsigned long long>(options_.seed), ModeName(options_.mode),
      options_.damage_every);
  if (options_.cycles == 0) return buf;
  return std::string(buf) + " --cycles " + std::to_string(options_.cycles);
}

Result<std::vector<dmu::ObjectSet*>> Runner::Sets(Pool* pool) const {
  std::vector<dmu::ObjectSet*> sets(tree_.size(), nullptr);
  for (uint16_t i : tree_.Live()) {
    const std::string name = tree_.Name(i);
    sets[i] = pool->dataset(name);
    if (!sets[i]) return Status::Corruption("dataset '" + name + "' is missing");
  }
  return sets;
}

Result<std::vector<ObjectState>> Runner::Existing(Pool* pool) const {
  POOLFS_ASSIGN_OR_RETURN(std::vector<dmu::ObjectSet*> sets, Sets(pool));
  std::vector<ObjectState> objects;
  for (size_t i = 0; i < sets.size(); i++)
    if (sets[i]) POOLFS_RETURN_IF_ERROR(ScanObjects(sets[i], uint16_t(i), &objects));
  return objects;
}

Result<Runner::WorkloadStart> Runner::PrepareWorkload(Pool* pool, uint64_t seed) {
  WorkloadStart start;
  POOLFS_ASSIGN_OR_RETURN(start.log, OpLog::Open(log_path_, true));
  POOLFS_ASSIGN_OR_RETURN(start.sets, Sets(pool));
  POOLFS_ASSIGN_OR_RETURN(start.objects, Existing(pool));
  start.options = BaseWorkloadOptions(seed);
  return start;
}

WorkloadOptions Runner::BaseWorkloadOptions(uint64_t seed) const {
  WorkloadOptions o;
  o.threads = options_.threads;
  o.seed = seed;
  o.max_objects_per_thread = objects_per_thread_;
  o.max_datasets = kMaxDatasets;
  o.tree = tree_;
  o.max_snapshots = kMaxSnapshots;
  for (const auto& [n, s] : snaps_) {
    o.snapshots[n] = s.dataset;
    if (s.generation) o.snapshot_generations[n] = s.generation;
  }
  o.next_snapshot = next_snapshot_;
  o.clones = clone_origin_;
  return o;
}

std::string Runner::History(const std::vector<OpRecord>& records, uint16_t dataset,
                            uint64_t object) const {
  // Its records, and the block clones that read it.
  std::vector<OpRecord> mine;
  for (const OpRecord& r : records) {
    if (!IsObjectOp(r.kind)) continue;
    bool source = false;
    if (r.kind == OpKind::kCloneBlocks) {
      const CloneRange c = UnpackCloneRange(r);
      source = c.src_dataset == dataset && c.src_object == object;
    }
    if ((r.dataset == dataset && r.object == object) || source) mine.push_back(r);
  }
  std::stable_sort(mine.begin(), mine.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.txg != b.txg ? a.txg < b.txg : a.seq < b.seq;
  });
  std::string s = "  this cycle's log for dataset '" +
                  (dataset < tree_.size() ? tree_.Name(dataset) : "ds" + std::to_string(dataset)) +
                  "' object " + std::to_string(object) + " (" + std::to_string(mine.size()) +
                  " records; '*': txg <= imported txg " + std::to_string(verified_txg_) + "):\n";
  const size_t from = mine.size() > 40 ? mine.size() - 40 : 0;
  if (from) s += "    ... " + std::to_string(from) + " older records\n";
  for (size_t i = from; i < mine.size(); i++)
    s += std::string("    ") + (mine[i].txg <= verified_txg_ ? "* " : "  ") +
         DescribeRecord(mine[i]) + "\n";
  if (dataset >= models_.size()) return s;
  auto it = models_[dataset].objects().find(object);
  if (it != models_[dataset].objects().end())
    s += "  the model has it with block size " + std::to_string(it->second.block_size) +
         ", compression " + std::to_string(it->second.compression) + ", length " +
         std::to_string(it->second.length) + "\n";
  return s;
}

Status Runner::Setup() {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) return Status::IOError("cannot create " + options_.dir + ": " + ec.message());
  const int n = 1 + int(rng_() % 3);
  const uint64_t vdev_size = options_.mode == Mode::kMounts ? uint64_t{2} << (30 + rng_() % 3)
                                                            : uint64_t{128} << (20 + rng_() % 3);
  core::pool::CreateOptions co;
  co.name = "stress";
  co.ashift = rng_() % 4 == 0 ? 9 : 12;
  co.force = true;
  for (int i = 0; i < n; i++) paths_.push_back(options_.dir + "/vdev" + std::to_string(i));
  log_path_ = options_.dir + "/oplog";
  const int datasets = 1 + int(rng_() % 3);
  objects_per_thread_ = int(std::clamp<uint64_t>(
      vdev_size * uint64_t(n) / 4 / (kBudgetPerObject * uint64_t(options_.threads)), 2, 16));
  std::printf(
      "poolfs-stress: pool of %d x %llu MiB file vdevs, ashift %u, %d datasets, %d objects per "
      "thread, in %s\n",
      n, static_cast<unsigned long long>(vdev_size >> 20), co.ashift, datasets, objects_per_thread_,
      options_.dir.c_str());
  POOLFS_RETURN_IF_ERROR(Pool::Create(paths_, vdev_size, co).WithContext("creating the pool"));
  {
    auto pool = Pool::Import(paths_, RandomPoolOptions(rng_));
    if (!pool.ok()) return pool.status().WithContext("importing the new pool");
    tree_ = DatasetTree((*pool)->root_dataset()->name());
    for (int i = 1; i < datasets; i++) {
      auto ds = (*pool)->CreateDataset(tree_.Name(tree_.Add()));
      if (!ds.ok()) return ds.status().WithContext("creating a dataset");
    }
    POOLFS_RETURN_IF_ERROR((*pool)->Export());
  }
  models_.resize(tree_.size());
  // The pool may sync empty txgs while it is open (freed blocks waiting out
  // their deferral): the state verified is that of the last one.
  std::atomic<uint64_t> synced{0};
  core::pool::PoolOptions opts = RandomPoolOptions(rng_);
  opts.on_synced = [&synced](Txg t, uint64_t, uint64_t) { synced = t.value(); };
  auto pool = Pool::Import(paths_, opts);
  if (!pool.ok()) return pool.status().WithContext("importing the new pool");
  POOLFS_ASSIGN_OR_RETURN(std::vector<dmu::ObjectSet*> sets, Sets(pool->get()));
  for (size_t i = 0; i < sets.size(); i++) {
    uint64_t bad = 0;
    VerifyStats vs;
    POOLFS_RETURN_IF_ERROR(models_[i].Verify(sets[i], rng_(), &vs, &bad));
  }
  POOLFS_RETURN_IF_ERROR((*pool)->Export());
  verified_txg_ = std::max((*pool)->imported_txg().value(), synced.load());
  return Status::Ok();
}

Status Runner::VerifyImport(Pool* pool, const std::vector<OpRecord>& records, uint64_t lower,
                            uint64_t upper) {
  const uint64_t imported = pool->imported_txg().value();
  cycle_note_ += ", imported txg " + std::to_string(imported) +
                 " (durable per log/manager >= " + std::to_string(lower) +
                 (upper ? ", <= " + std::to_string(upper) : "") + ")";
  if (rewound_from_ && imported != lower)
    return Status::Corruption("with the uberblock of txg " + std::to_string(rewound_from_) +
                              " garbled on every vdev, the import should have fallen back to txg " +
                              std::to_string(lower) + ", the newest older one, but it opened txg " +
                              std::to_string(imported));
  if (imported < lower) {
    // Say why the import passed over the newer uberblocks, as the check sees it.
    (void)pool->Export();
    auto report = CheckPool(paths_);
    if (report.ok()) {
      failure_detail_ =
          "  poolfs check of the pool as found (txg " + std::to_string(report->txg) + "):\n";
      for (const CheckProblem& p : report->warnings)
        failure_detail_ += "    warning: " + p.where + ": " + p.what + "\n";
      for (const CheckProblem& p : report->problems)
        failure_detail_ += "    problem: " + p.where + ": " + p.what + "\n";
    }
    return Status::Corruption("the import opened txg " + std::to_string(imported) + " but txg " +
                              std::to_string(lower) +
                              " had synced before the crash: durable txgs lost");
  }
  if (upper && imported > upper)
    return Status::Corruption("the import opened txg " + std::to_string(imported) +
                              ", newer than any txg that could have reached disk (" +
                              std::to_string(upper) + ")");
  if (imported < verified_txg_)
    return Status::Corruption("the import opened txg " + std::to_string(imported) +
                              ", older than txg " + std::to_string(verified_txg_) +
                              " verified in the previous cycle");
  const uint64_t previous = verified_txg_;
  POOLFS_RETURN_IF_ERROR(Advance(pool, records, imported));
  POOLFS_ASSIGN_OR_RETURN(std::vector<dmu::ObjectSet*> sets, Sets(pool));
  VerifyStats vs;
  for (size_t i = 0; i < sets.size(); i++) {
    if (!sets[i]) continue;
    const uint16_t ds = uint16_t(i);
    uint64_t bad = 0;
    Status st = models_[i].Verify(sets[i], rng_(), &vs, &bad);
    if (!st.ok()) {
      if (bad) failure_detail_ = History(records, ds, bad);
      return st.WithContext("dataset '" + tree_.Name(ds) + "': verifying txg " +
                            std::to_string(imported));
    }
  }
  VerifyStats snapshot_stats;
  POOLFS_RETURN_IF_ERROR(VerifySnapshots(pool, &snapshot_stats));
  const auto ps = pool->Stats();
  if (damage_.copies.empty()) {
    for (size_t i = 0; i < ps.checksum_errors.size(); i++)
      if (ps.checksum_errors[i])
        return Status::Corruption("vdev " + std::to_string(i) + " counted " +
                                  std::to_string(ps.checksum_errors[i]) +
                                  " checksum errors during import and verify");
  } else {
    // Each damaged copy it read failed once and was rewritten (damage.h).
    uint64_t errors = 0;
    for (uint64_t e : ps.checksum_errors) errors += e;
    const size_t read = damage_.verify->copies_read();
    if (errors > read)
      return Status::Corruption("the import and verification counted " + std::to_string(errors) +
                                " checksum errors, but read only " + std::to_string(read) +
                                " of the " + std::to_string(damage_.copies.size()) +
                                " damaged copies");
    if (ps.repairs != errors)
      return Status::Corruption("the import and verification counted " + std::to_string(errors) +
                                " checksum errors but rewrote " + std::to_string(ps.repairs) +
                                " bad copies");
  }
  stats_.txgs += imported - previous;
  stats_.objects += vs.objects;
  stats_.bytes += vs.bytes;
  cycle_note_ +=
      ", pool " +
      std::to_string(ps.space.allocated * 100 / std::max<uint64_t>(ps.space.capacity, 1)) +
      "% allocated";
  cycle_note_ += ", verified " + std::to_string(vs.objects) + " objects, " +
                 std::to_string(vs.bytes >> 10) + " KiB";
  return Status::Ok();
}

Status Runner::Advance(Pool* pool, const std::vector<OpRecord>& records, uint64_t imported) {
  verified_txg_ = imported;  // for History
  // The rollbacks, with the models of the snapshots verified before (which
  // ReconcileSnapshots may drop).
  std::map<uint16_t, uint64_t> in_flight;
  POOLFS_RETURN_IF_ERROR(CollectRollbacks(records, imported, &in_flight));
  // The block clones' sources, replayed from the models of the last
  // verified txg (before ReconcileDatasets empties those of the datasets
  // destroyed since, which a clone may have read).
  {
    std::vector<const Model*> start(models_.size(), nullptr);
    for (uint16_t d : tree_.Live()) start[d] = &models_[d];
    clone_sources_.clear();
    OpRecord bad;
    Status st =
        Model::CaptureCloneSources(start, records, imported, rollbacks_, &clone_sources_, &bad);
    if (!st.ok()) {
      failure_detail_ = History(records, bad.dataset, bad.object);
      return st.WithContext("replaying the log's block clones through txg " +
                            std::to_string(imported));
    }
  }
  POOLFS_RETURN_IF_ERROR(ReconcileDatasets(pool, records, imported));
  POOLFS_RETURN_IF_ERROR(ReconcileSnapshots(pool, records, imported));
  for (const auto& [ds, number] : in_flight)
    if (tree_.live(ds))
      POOLFS_RETURN_IF_ERROR(ResolveRollback(pool, records, imported, ds, number));
  for (uint16_t ds : tree_.Live()) {
    std::vector<OpRecord> mine;
    for (const OpRecord& r : records)
      if (IsObjectOp(r.kind) && r.dataset == ds) mine.push_back(r);
    uint64_t bad = 0;
    const auto rb = rollbacks_.find(ds);
    Status st = models_[ds].Replay(std::move(mine), imported, clone_sources_,
                                   rb == rollbacks_.end() ? nullptr : &rb->second, &bad);
    if (!st.ok()) {
      failure_detail_ = History(records, ds, bad);
      return st.WithContext("dataset '" + tree_.Name(ds) + "': replaying the op log through txg " +
                            std::to_string(imported));
    }
  }
  uint64_t clones = 0;
  for (const OpRecord& r : records) {
    if (r.kind != OpKind::kCloneBlocks || r.txg > imported) continue;
    const CloneRange c = UnpackCloneRange(r);
    clones++;
    stats_.block_clones_across += c.src_dataset != r.dataset;
    stats_.clone_blocks_shared += c.shared;
    stats_.clone_holes += c.holes;
    stats_.clone_blocks_copied += c.blocks - std::min(c.blocks, c.shared + c.holes);
  }
  stats_.block_clones += clones;
  if (clones) cycle_note_ += ", " + std::to_string(clones) + " block clones";
  return Status::Ok();
}

Status Runner::MaybeRewind(std::mt19937_64& rng, uint64_t* expect) {
  *expect = 0;
  rewound_from_ = 0;
  if (rng() % 5 != 0) return Status::Ok();
  uint64_t newest = 0, previous = 0;
  POOLFS_RETURN_IF_ERROR(DamageNewestUberblock(&newest, &previous).WithContext("rewinding"));
  if (previous == 0) return Status::Ok();
  cycle_note_ += ", rewound: uberblock " + std::to_string(newest) + " garbled, expecting " +
                 std::to_string(previous);
  *expect = previous;
  rewound_from_ = newest;
  return Status::Ok();
}

core::pool::PoolOptions Runner::Verifying(core::pool::PoolOptions opts) {
  verifier_synced_ = 0;
  opts.on_synced = [this](Txg t, uint64_t, uint64_t) { verifier_synced_ = t.value(); };
  return opts;
}

Status Runner::CheckExported() {
  std::vector<bool> present;
  auto report = damage_.copies.empty() ? CheckPool(paths_) : CheckDamaged(&present);
  if (!report.ok()) return report.status().WithContext("poolfs check of the exported pool");
  cycle_note_ += ", check: " + std::to_string(report->blocks) + " blocks";
  if (report->cloned_blocks != 0)
    cycle_note_ += " (" + std::to_string(report->cloned_blocks) + " shared by block clones)";
  stats_.cloned_blocks_max = std::max(stats_.cloned_blocks_max, report->cloned_blocks);
  trial_passes_ = report->trial_sync_passes;
  if (!report->warnings.empty())
    cycle_note_ += " (" + std::to_string(report->warnings.size()) +
                   " warnings, first: " + report->warnings[0].where + ": " +
                   report->warnings[0].what + ")";
  const uint64_t synced = verifier_synced_.exchange(0);
  const uint64_t expect = std::max(verified_txg_, synced);
  if (report->txg != expect)
    return Status::Corruption(
        "poolfs check looked at txg " + std::to_string(report->txg) + ", the import opened txg " +
        std::to_string(verified_txg_) +
        (synced ? " and synced through txg " + std::to_string(synced) : " and synced none"));
  if (synced > verified_txg_)
    cycle_note_ += " (idle syncs through txg " + std::to_string(synced) + ")";
  verified_txg_ = expect;
  if (report->datasets != tree_.Live().size())
    return Status::Corruption("poolfs check found " + std::to_string(report->datasets) +
                              " datasets, the run has " + std::to_string(tree_.Live().size()));
  if (report->snapshots != snaps_.size())
    return Status::Corruption("poolfs check found " + std::to_string(report->snapshots) +
                              " snapshots, the run has " + std::to_string(snaps_.size()));
  if (!damage_.copies.empty()) return JudgeDamage(*report, present);
  if (!report->ok()) {
    std::string s = "poolfs check found damage:\n" + report->Summary();
    for (size_t i = 0; i < std::min<size_t>(report->problems.size(), 10); i++)
      s += "\n    " + report->problems[i].where + ": " + report->problems[i].what;
    return Status::Corruption(s);
  }
  return Status::Ok();
}

int Runner::Run() {
  std::printf("poolfs-stress: seed %llu, mode %s, %d threads, %.0f s\n",
              static_cast<unsigned long long>(options_.seed), ModeName(options_.mode),
              options_.threads, options_.seconds);
  std::fflush(stdout);
  const auto start = Clock::now();
  Status st = Setup();
  Mode mode = options_.mode;
  while (st.ok()) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed >= options_.seconds || (options_.cycles && cycle_ >= options_.cycles)) break;
    cycle_++;
    const uint64_t cycle_seed = rng_();
    mode =
        options_.mode != Mode::kBoth ? options_.mode : (rng_() % 2 ? Mode::kKill : Mode::kPowercut);
    cycle_note_.clear();
    damage_note_.clear();
    ArmCycleWatchdog(kCycleAlarmSeconds, cycle_, ModeName(mode), cycle_seed, options_.seed,
                     options_.dir);
    st = mode == Mode::kKill     ? KillCycle(cycle_seed)
         : mode == Mode::kMounts ? MountCycle(cycle_seed)
                                 : PowercutCycle(cycle_seed);
    DisarmCycleWatchdog();
    if (st.ok()) {
      stats_.cycles++;
      if (options_.verbose)
        std::printf("cycle %llu %s%s%s\n", static_cast<unsigned long long>(cycle_), ModeName(mode),
                    cycle_note_.c_str(), damage_note_.c_str());
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!st.ok()) {
    std::printf("poolfs-stress: FAILED in cycle %llu (%s) of run seed %llu:\n  %s\n",
                static_cast<unsigned long long>(cycle_), ModeName(mode),
                static_cast<unsigned long long>(options_.seed), st.ToString().c_str());
    if (!cycle_note_.empty())
      std::printf("  cycle:%s%s\n", cycle_note_.c_str(), damage_note_.c_str());
    if (!damage_.copies.empty() && damage_note_.empty()) {
      std::printf("  this cycle damaged, before it began:\n");
      for (const DamagedCopy& d : damage_.copies)
        std::printf("    %s, %u bits at %s\n", d.Describe().c_str(), d.bits,
                    util::Hex(d.offset).c_str());
    }
    std::printf("%s", failure_detail_.c_str());
    std::printf("  pool and op log kept in %s\n  rerun: %s\n", options_.dir.c_str(),
                ReproCommand().c_str());
  }
  std::printf(
      "damage: %llu cycles damaged %llu metadata copies: %llu healed by reads, %llu reported by "
      "the check, %llu gone with their blocks; %llu repair writes a clean export left "
      "unflushed\n",
      static_cast<unsigned long long>(stats_.damage_cycles),
      static_cast<unsigned long long>(stats_.copies_damaged),
      static_cast<unsigned long long>(stats_.copies_healed),
      static_cast<unsigned long long>(stats_.copies_reported),
      static_cast<unsigned long long>(stats_.copies_gone),
      static_cast<unsigned long long>(stats_.repairs_unflushed));
  if (stats_.mounts)
    std::printf(
        "mounts: %llu of the pool, MOS passes at most %u in a sync, %u in the check's trial "
        "syncs\n",
        static_cast<unsigned long long>(stats_.mounts), stats_.mos_passes_max,
        stats_.trial_passes_max);
  std::printf(
      "datasets: %llu created (%llu of them clones), %llu renamed, %llu destroyed (in verified "
      "txgs)\n",
      static_cast<unsigned long long>(stats_.datasets_created),
      static_cast<unsigned long long>(stats_.datasets_cloned),
      static_cast<unsigned long long>(stats_.datasets_renamed),
      static_cast<unsigned long long>(stats_.datasets_destroyed));
  std::printf(
      "snapshots: %llu taken, %llu destroyed (in verified txgs), %llu read back against their "
      "models, %llu against the digest the workload read\n",
      static_cast<unsigned long long>(stats_.snapshots_taken),
      static_cast<unsigned long long>(stats_.snapshots_destroyed),
      static_cast<unsigned long long>(stats_.snapshots_verified),
      static_cast<unsigned long long>(stats_.snapshot_digests));
  std::printf(
      "snapshot renames: %llu (in verified txgs); listings: %llu checked by the workload against "
      "its snapshots\n",
      static_cast<unsigned long long>(stats_.snapshots_renamed),
      static_cast<unsigned long long>(stats_.snapshot_listings));
  std::printf(
      "rollbacks: %llu (in verified txgs); in flight at a crash: %llu found made, %llu not\n",
      static_cast<unsigned long long>(stats_.rollbacks),
      static_cast<unsigned long long>(stats_.rollbacks_in_flight_made),
      static_cast<unsigned long long>(stats_.rollbacks_in_flight_not));
  std::printf(
      "block clones: %llu (in verified txgs, %llu between two datasets) of %llu blocks: %llu "
      "shared, %llu holes, %llu copied; the check found at most %llu blocks shared\n",
      static_cast<unsigned long long>(stats_.block_clones),
      static_cast<unsigned long long>(stats_.block_clones_across),
      static_cast<unsigned long long>(stats_.clone_blocks_shared + stats_.clone_holes +
                                      stats_.clone_blocks_copied),
      static_cast<unsigned long long>(stats_.clone_blocks_shared),
      static_cast<unsigned long long>(stats_.clone_holes),
      static_cast<unsigned long long>(stats_.clone_blocks_copied),
      static_cast<unsigned long long>(stats_.cloned_blocks_max));
  std::printf(
      "cycles: %llu, txgs: %llu, objects checked: %llu, bytes checked: %llu, seconds: %.0f\n",
      static_cast<unsigned long long>(stats_.cycles), static_cast<unsigned long long>(stats_.txgs),
      static_cast<unsigned long long>(stats_.objects),
      static_cast<unsigned long long>(stats_.bytes), seconds);
  std::fflush(stdout);
  if (!st.ok()) return 1;
  if (!options_.keep) {
    for (const std::string& p : paths_) std::filesystem::remove(p);
    std::filesystem::remove(log_path_);
  }
  return 0;
}

}  // namespace poolfs::stress
