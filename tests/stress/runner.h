// Runner: the cycles of poolfs-stress (see poolfs_stress.cc for the usage).
//
// Theory
// ------
// One pool lives in the run's directory for the whole run (1 to 3 file
// vdevs of 128, 256 or 512 MiB, random ashift, 1 to 3 datasets, up to 24
// live as the workload creates, renames and destroys them, and up to 4
// snapshots as it takes and destroys them and rolls datasets back), with its dataset tree
// (dataset_tree.h), a Model of each dataset, by index, and one of each
// snapshot, that are its state verified at the end of the last cycle. A
// cycle crashes the pool while a Workload runs on it and checks what an
// import then finds:
//
//   kill      a forked child imports the pool, runs the workload (logging to
//             an op log file) and is SIGKILLed at a random moment, or, one
//             cycle in five, stops and exports cleanly; one killed child in
//             four kills itself in its first rollback, before the log has
//             the txg it returned, and before or after that txg synced;
//   powercut  in this process, the pool runs on FaultInjectingDevices over
//             the vdev files, behind one PowerRail; the rail is cut at a
//             random moment or just before a random write or flush, every
//             device dropping, keeping or tearing its unflushed writes;
//   mounts    no crash: bursts of 4 to 8 short clean mounts (import,
//             10-160 ms of workload, export) of one large sparse pool (2, 4
//             or 8 GiB vdevs, ~200 metaslabs each), the pattern of a test
//             suite that mounts a scratch pool hundreds of times; the
//             models advance by each mount's log, and the import after the
//             burst verifies them (mount_cycle.cc). Each mount scatters the
//             space maps' blocks over new metaslabs; every txg's MOS sync
//             of every mount must still converge in a handful of passes (at
//             most kMaxMosPasses), and so must the check's trial sync of the
//             exported pool.
//
// Then the parent imports the pool and requires:
//   - the imported txg I is at least every txg the log says was durable
//     (and, after a power cut, at most one past the last txg whose sync
//     returned before the cut); in one cycle in five the newest uberblock
//     is garbled on every vdev first, and I must be exactly the newest
//     older one (deferred frees keep its tree intact; rewind.cc);
//   - the pool's datasets are exactly the tree that the log's dataset
//     operations leave at txg I: each create, rename and destroy that
//     returned is there when its txg is <= I and not when it began after I
//     synced, the one in flight is all there or not at all
//     (dataset_verify.cc has the rules);
//   - the pool's snapshots are exactly those that the log's snapshot
//     operations leave at txg I (one taken in txg T is there when T <= I;
//     one destroyed in txg T is gone when T <= I; one taken or destroyed in
//     flight may be there or not), and each reads back as its dataset's
//     model at its txg: the verified model of the last cycle advanced by
//     the log's operations of txgs <= its txg (snapshot_verify.cc); the
//     digest the workload logged when it read one back must match too;
//     each clone has the origin the log says, and its model starts as
//     that snapshot's;
//   - a rollback to a snapshot that returned a txg <= I makes its
//     dataset's model the snapshot's after that txg; one in flight at the
//     crash is found made or not (snapshot_verify.cc);
//   - the models, advanced by replaying the log's operations of txgs <= I,
//     match the datasets byte for byte: attributes, bonus, the set of
//     allocated ids and the live count; a destroyed dataset's model is
//     emptied; a block clone copies its source's model bytes as the
//     replay in (txg, seq) order finds them, in whichever dataset
//     (model.h);
//   - once exported, the offline pool check (poolfs::CheckPool) finds no
//     damage (so no block of a destroyed dataset or snapshot is still
//     allocated: the space maps account for exactly the blocks the tree
//     and the snapshots reference, and the block reference table for
//     exactly the pointers that block clones share), the run's datasets
//     and snapshots and no other, and looks at txg I, or at the last txg
//     the verifying import synced (an idle pool may sync empty txgs).
// One cycle in StressOptions::damage_every (in every mode) first damages
// one copy of a few metadata blocks of the pool at rest; reads must return
// the good bytes and heal them, and the check after the cycle must report
// exactly the damaged copies that no read healed (damage.h), whose bits are
// then flipped back.
// The model is then the verified state, the pool is exported, and the next
// cycle continues on it. Any failure stops the run with everything needed
// to reproduce it; the vdev files and the op log are kept.
//
// Thread safety: one thread drives a Runner.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pool/pool.h"
#include "poolfs/pool_admin.h"
#include "poolfs/status.h"
#include "stress/damage.h"
#include "stress/dataset_tree.h"
#include "stress/model.h"
#include "stress/op_log.h"
#include "stress/workload.h"
#include "vdev/fault_injecting_device.h"

namespace poolfs::stress {

// The fsync modes (kFsyncKill, kFsyncPowercut, and kFsync: the two in turn)
// crash the filesystem rather than the pool; FsyncRunner runs them
// (fsync_runner.h).
enum class Mode { kKill, kPowercut, kBoth, kMounts, kFsyncKill, kFsyncPowercut, kFsync };
inline bool IsFsyncMode(Mode m) {
  return m == Mode::kFsyncKill || m == Mode::kFsyncPowercut || m == Mode::kFsync;
}

// The most MOS sync passes a mounts cycle accepts for any txg: 3 to 4 is
// usual; a vdev change of the MOS's allocator, or a block of a late pass
// that outgrows its extent (it moves once, stored uncompressed), adds one.
// With frees chaining across metaslabs (what the pool's deferred frees
// prevent), 40 s of mounts reached 8; with a block moving again in every
// pass, growing by the deferred free of its last move, 10 s reached 7.
// Now that a moved block stays put, runs peak at 6; several blocks that
// each move once, in successive passes, could add one more each, so the
// bound leaves room for two: a sync that does not converge runs to the
// pool's limit of 32.
inline constexpr uint32_t kMaxMosPasses = 8;

// Live datasets a run has at most (the workload creates them as it goes,
// and destroys some).
inline constexpr int kMaxDatasets = 24;
// Live snapshots a run has at most (the workload takes them as it goes and
// destroys the oldest): each holds what was overwritten since it was
// taken, so a few keep the pool's space use near what it was without.
inline constexpr int kMaxSnapshots = 4;

struct StressOptions {
  std::string dir;
  double seconds = 60;
  uint64_t cycles = 0;  // stop after this many cycles too (0: only --seconds)
  int threads = 4;
  uint64_t seed = 0;
  Mode mode = Mode::kKill;
  bool verbose = false;
  bool keep = false;  // keep the pool files after a clean run
  // One cycle in this many (by its seed) first damages one copy of a few
  // metadata blocks of the pool at rest, and checks they heal (damage.h);
  // 0: never.
  int damage_every = 4;
};

struct RunStats {
  uint64_t cycles = 0;
  uint64_t txgs = 0;
  uint64_t objects = 0;
  uint64_t bytes = 0;
  uint64_t ops = 0;
  // Dataset operations that the verified txgs hold.
  uint64_t datasets_created = 0;
  uint64_t datasets_renamed = 0;
  uint64_t datasets_destroyed = 0;
  // Snapshots that the verified txgs hold (taken, destroyed), and how many
  // times a snapshot was read back whole against its model, and against
  // the digest the workload logged.
  uint64_t snapshots_taken = 0;
  uint64_t snapshots_destroyed = 0;
  uint64_t snapshots_verified = 0;
  uint64_t snapshot_digests = 0;
  // Snapshot renames that the verified txgs hold (generations a snapshot
  // moved by), and the listings the workload logged as matching.
  uint64_t snapshots_renamed = 0;
  uint64_t snapshot_listings = 0;
  // Rollbacks that the verified txgs hold, and those in flight at a crash
  // that the pool was found to have made, and not.
  uint64_t rollbacks = 0;
  uint64_t rollbacks_in_flight_made = 0;
  uint64_t rollbacks_in_flight_not = 0;
  // Of the datasets created, those made as clones of a snapshot.
  uint64_t datasets_cloned = 0;
  // Block clones that the verified txgs hold, those between two datasets,
  // their blocks (shared, holes in the source, copied), and the most blocks
  // the check of a verified txg found the block reference table counting
  // (CheckReport::cloned_blocks).
  uint64_t block_clones = 0;
  uint64_t block_clones_across = 0;
  uint64_t clone_blocks_shared = 0;
  uint64_t clone_holes = 0;
  uint64_t clone_blocks_copied = 0;
  uint64_t cloned_blocks_max = 0;
  // Mounts mode: how many times the pool was mounted, and the most MOS
  // passes a sync of any of them and a trial sync of the check took.
  uint64_t mounts = 0;
  uint32_t mos_passes_max = 0;
  uint32_t trial_passes_max = 0;
  // Metadata damage (damage.h): the cycles that damaged, the copies they
  // damaged, and what became of them.
  uint64_t damage_cycles = 0;
  uint64_t copies_damaged = 0;
  uint64_t copies_healed = 0;    // rewritten by a read
  uint64_t copies_reported = 0;  // not read, and reported by the check
  uint64_t copies_gone = 0;      // their block rewritten or freed
  // Writes of read repairs that a clean export left unflushed (power cut
  // cycles see them).
  uint64_t repairs_unflushed = 0;
};

class Runner {
 public:
  explicit Runner(const StressOptions& options);
  // Runs cycles until the time is up. Returns 0 when every cycle verified,
  // 1 after printing the first failure.
  int Run();

 private:
  Status Setup();
  Status KillCycle(uint64_t cycle_seed);
  Status PowercutCycle(uint64_t cycle_seed);
  Status MountCycle(uint64_t cycle_seed);
  // Fails the cycle when a sync of the pool took more than kMaxMosPasses
  // MOS passes (`passes`: Pool::Stats().mos_passes_max) or when one of
  // `outcomes` says the MOS sync did not converge at all; `what` names the
  // mount.
  Status CheckMosPasses(uint32_t passes, const std::vector<Status>& outcomes,
                        const std::string& what);
  // Where a kill cycle's child may kill itself: in its first rollback,
  // once the call returned (before the log has it), at once or after the
  // rollback's txg synced.
  enum class RollbackCrash { kNone, kBeforeSync, kAfterSync };
  // The child of a kill cycle; never returns.
  [[noreturn]] void Child(const core::pool::PoolOptions& opts, uint64_t workload_seed,
                          int64_t run_ms, RollbackCrash crash);
  // Checks `pool` (just imported after a crash) against the model advanced
  // by `records`: lower <= imported txg <= upper (upper 0: no bound). On
  // success the model is the new verified state.
  Status VerifyImport(core::pool::Pool* pool, const std::vector<OpRecord>& records, uint64_t lower,
                      uint64_t upper);
  // Its first half: makes the dataset tree and the models those of txg
  // `imported` of `pool` (ReconcileDatasets, then each live dataset's
  // replay of `records`), without reading the objects.
  Status Advance(core::pool::Pool* pool, const std::vector<OpRecord>& records, uint64_t imported);
  // Makes tree_ the dataset tree of `pool` at txg `imported` as the log's
  // dataset operations explain it (dataset_verify.cc): adds the datasets
  // created (with empty models), follows renames, kills the destroyed ones
  // and empties their models. Corruption when no prefix of the operations
  // explains the pool's datasets, or an object operation of the log is on
  // a dataset that cannot have it.
  Status ReconcileDatasets(core::pool::Pool* pool, const std::vector<OpRecord>& records,
                           uint64_t imported);
  // Makes snaps_ the snapshots of `pool` at txg `imported` as the log's
  // snapshot operations explain them (snapshot_verify.cc), with the models
  // of the new ones, and starts the model of each new clone as its
  // origin's (models_ must still be those of the last verified txg, tree_
  // that of txg `imported`). Corruption when the pool has a snapshot the
  // run did not take, lacks one it must have, has one at another txg, or
  // a dataset's origin is not the one the log says.
  Status ReconcileSnapshots(core::pool::Pool* pool, const std::vector<OpRecord>& records,
                            uint64_t imported);
  // Makes rollbacks_ the rollbacks of `records` that txg `imported` holds
  // (those that returned a txg <= imported), with what their replays must
  // know of the snapshots, and *in_flight the one of each dataset in flight
  // at the crash that began while txg `imported` was open or before
  // (dataset -> snapshot number): it may have been made or not. Corruption
  // for a rollback to a snapshot that the run does not have, or a second
  // record without its first. Needs snaps_ as verified before.
  Status CollectRollbacks(const std::vector<OpRecord>& records, uint64_t imported,
                          std::map<uint16_t, uint64_t>* in_flight);
  // Whether dataset `dataset`'s rollback to snapshot `number`, in flight at
  // the crash, was made: the dataset's model as replayed with it through
  // txg `imported` is compared with `pool`; when it matches, the rollback
  // joins rollbacks_. (Without it, the model is then checked as usual.)
  Status ResolveRollback(core::pool::Pool* pool, const std::vector<OpRecord>& records,
                         uint64_t imported, uint16_t dataset, uint64_t number);
  // Its last step: forgets the clones destroyed, adds the new ones
  // (dataset -> origin number) with their origins' models, and checks
  // every dataset's origin against the pool's list.
  Status ReconcileClones(core::pool::Pool* pool, const std::map<uint16_t, uint64_t>& new_clones);
  // Reads every snapshot of snaps_ back against its model (and the
  // digest the workload logged, once). Corruption saying what differs.
  Status VerifySnapshots(core::pool::Pool* pool, VerifyStats* stats);
  // Garbles the newest uberblock (txg *newest) in every label of every vdev,
  // so that an import must fall back to *previous, the newest older one
  // (rewind.cc). Does nothing, and sets *previous to 0, when there is none
  // or when no txg synced since the last verified one.
  Status DamageNewestUberblock(uint64_t* newest, uint64_t* previous);
  // Before the import that verifies a crash: one cycle in five (by `rng`)
  // damages the newest uberblock; then the import must open exactly
  // *expect (0: no rewind, the usual bounds apply).
  Status MaybeRewind(std::mt19937_64& rng, uint64_t* expect);
  // `opts` for the import that verifies a cycle: notes the txgs it syncs
  // (an idle pool may sync empty txgs while freed blocks wait out their
  // deferral; they change nothing).
  core::pool::PoolOptions Verifying(core::pool::PoolOptions opts);
  // The offline pool check of the exported pool: it must look at the txg
  // the verifying import opened, or the last it synced; that is then the
  // verified txg. In a damage cycle it must report exactly what damage.h
  // says.
  Status CheckExported();
  // Metadata damage (damage.cc). One cycle in options_.damage_every (by
  // `cycle_seed`): damages one copy each of 1 to 4 metadata blocks of the
  // exported pool, through `devs` (the vdevs in paths_ order; empty: the
  // files, opened here). Resets damage_ in every cycle.
  Status MaybeDamage(uint64_t cycle_seed,
                     const std::vector<core::vdev::FaultInjectingDevice*>& devs);
  // Imports the pool: Pool::Import of the files (`over` empty) or
  // ImportDevices over `over` (paths_ order); with `watch` (a damage cycle),
  // through WatchedDevices telling it of reads of the damaged copies. What
  // it opens goes to *held, which must outlive the pool (and be emptied
  // before the check takes the files' locks).
  Result<std::unique_ptr<core::pool::Pool>> OpenPool(
      const core::pool::PoolOptions& opts, const std::vector<core::vdev::BlockDevice*>& over,
      DamageWatch* watch, std::vector<std::unique_ptr<core::vdev::BlockDevice>>* held);
  // The check of a damage cycle: *present[i] says whether the pool still
  // references damaged copy i's block unchanged.
  Result<CheckReport> CheckDamaged(std::vector<bool>* present);
  // Whether the check reports exactly what damage.h says.
  Status JudgeDamage(const CheckReport& report, const std::vector<bool>& present);
  // The run's datasets in `pool`, by dataset index (nullptr: dead).
  Result<std::vector<dmu::ObjectSet*>> Sets(core::pool::Pool* pool) const;
  // Their objects, for a workload's start.
  Result<std::vector<ObjectState>> Existing(core::pool::Pool* pool) const;
  // What a workload on `pool` starts from, in this process: the op log,
  // emptied; the run's datasets and their objects (Sets, Existing); and the
  // run's workload options, with `seed` (the caller may add to them).
  struct WorkloadStart {
    std::unique_ptr<OpLog> log;
    std::vector<dmu::ObjectSet*> sets;
    std::vector<ObjectState> objects;
    WorkloadOptions options;
  };
  Result<WorkloadStart> PrepareWorkload(core::pool::Pool* pool, uint64_t seed);
  // The run's workload options (datasets, snapshots, sizes), with `seed`.
  WorkloadOptions BaseWorkloadOptions(uint64_t seed) const;
  core::pool::PoolOptions RandomPoolOptions(std::mt19937_64& rng) const;
  std::string History(const std::vector<OpRecord>& records, uint16_t dataset,
                      uint64_t object) const;
  std::string ReproCommand() const;

  const StressOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::string> paths_;
  // Objects a workload thread may own (2 to 16): scaled to the pool's size
  // so that live data stays well under a quarter of it (small pools reuse
  // freed space within a few txgs, which tests the deferral of frees).
  int objects_per_thread_ = 12;
  std::string log_path_;
  DatasetTree tree_;
  std::vector<Model> models_;  // one per dataset index (empty for a dead one)
  // The run's live snapshots, by number, as verified: each one's dataset,
  // txg and model (its content), and the digest the workload logged of it
  // while no verification has compared it yet.
  struct SnapshotState {
    uint16_t dataset = 0;
    uint64_t txg = 0;
    uint32_t generation = 0;  // its renames: named SnapshotName(number, generation)
    Model model;
    bool digest_pending = false;
    uint64_t digest = 0;
    uint64_t digest_objects = 0;
  };
  std::map<uint64_t, SnapshotState> snaps_;
  uint64_t next_snapshot_ = 1;  // past every number any log used
  // The sources of the block clones of the log being replayed
  // (Model::CaptureCloneSources), made by Advance for its replays.
  CloneSources clone_sources_;
  // The rollbacks of the log being replayed (CollectRollbacks), made by
  // Advance for its replays.
  DatasetRollbacks rollbacks_;
  // The live clones, as verified: dataset -> its origin snapshot's number.
  std::map<uint16_t, uint64_t> clone_origin_;
  uint64_t verified_txg_ = 0;                 // the txg the model is the state of
  std::atomic<uint64_t> verifier_synced_{0};  // the last txg the verifying import synced
  // This cycle's metadata damage (damage.h): the copies damaged (none: not
  // a damage cycle), the vdev index of each of paths_, and which copies the
  // reads of the workload's imports and of the verifying import touched.
  struct Damage {
    std::vector<DamagedCopy> copies;
    std::vector<uint32_t> vdev_of_path;
    std::unique_ptr<DamageWatch> workload;
    std::unique_ptr<DamageWatch> verify;
    // Every import of the cycle read through `workload` or `verify` (not so
    // in a kill cycle: its child imports the files itself).
    bool workload_watched = false;
  };
  Damage damage_;
  uint64_t cycle_ = 0;
  uint64_t rewound_from_ = 0;  // this cycle garbled that txg's uberblock (0: none)
  std::string cycle_note_;     // what the current cycle did, for --verbose and failures
  std::string damage_note_;    // what the damage came to, appended to it
  uint32_t trial_passes_ = 0;  // MOS passes of the last check's trial sync
  std::string failure_detail_;
  RunStats stats_;
};

}  // namespace poolfs::stress
