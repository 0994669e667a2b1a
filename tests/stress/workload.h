// Workload: the random object operations poolfs-stress runs on a pool.
//
// Several threads, each owning a set of objects of the run's datasets
// (objects it created, or found at start, spread by id), run Txs of one to
// four random operations: create (in a random dataset, with a random block
// size and compression), write
// stamped data (stamp.h: overwrites, appends, sparse and far writes,
// compressible and zero data), truncate (shrink or grow), punch a hole, set
// the bonus, free, and clone blocks (below). Each operation is logged with
// its txg before the Tx commits (op_log.h). Each thread also keeps a Model
// of its own objects (seeded from the verified models) and reads back
// random ranges of them while the pool syncs around it ("read your writes"
// across the dirty txgs and the block tree); a difference is a failure.
// Now and then a thread waits for its txg to sync and logs it as durable;
// a watcher thread logs every advance of last_synced().
//
// Block clones. A few % of the operations clone a random range of whole
// blocks of one of the thread's objects (within its length) to another of
// them of the same block size (one whose data fits one block may take the
// source's block size first, a kBlockSize record of its own), in the same
// dataset or another, at a random block-aligned offset: over its data, at
// its end, or past it. As copy_file_range does (posix/copy_range.cc), one
// Tx takes the source's pointers (ObjectSet::ShareBlocks), reads the bytes
// of the blocks it cannot share (changed since the last sync, gang blocks,
// a block stored at the size the source had before), and only then
// changes the destination: PutClones for the shared blocks and the holes,
// a whole-block write for each copied one, and the length cut back to
// where the source's length falls in the range (op_log.h, CloneRange). A
// failure before the first change gives the pointers back
// (Dnode::CancelShared) and changes nothing.
//
// Datasets. Between its Txs, thread 0 now and then creates a dataset (until
// max_datasets are live), renames one (a new name, below the root or below
// another dataset: its descendants follow) or destroys one with everything
// below it, each logged before and after the call (op_log.h) and kept in
// its DatasetTree. The other threads use a dataset only through their
// snapshot of the object sets, taken before each Tx. A destroy first takes
// the doomed datasets out of the sets, then waits until every other thread
// has started a new Tx (its handshake counter moved) or ended: from then on
// no thread touches them (each drops its objects there when it takes its
// snapshot), so every operation on them is in a txg no later than the
// destroy's, which syncs it before freeing their blocks (pool.h).
//
// Snapshots. Between its Txs, thread 0 also now and then takes a snapshot
// of a random live dataset (named SnapshotName(next number), op_log.h),
// while fewer than max_snapshots of the run are live (at the limit, it
// destroys the oldest instead), and now and then destroys a random one;
// before destroying a dataset it destroys the snapshots of its subtree
// (the pool refuses a dataset with snapshots). Each is logged before and
// after the call, as the dataset operations are. The other threads keep
// writing meanwhile: a snapshot's content is not thread 0's to know, but
// the log's (a snapshot of txg T holds exactly the operations of txgs <=
// T). Once a snapshot's txg has synced, thread 0 reads it back whole
// through Pool::OpenSnapshot and logs its digest (snapshot_digest.h), which
// the verifier must find again after the crash. Few snapshots live at
// once, and the oldest go first, so that what they hold of overwritten
// data stays a small share of the pool.
//
// Now and then thread 0 also renames a random snapshot (SnapshotName(number,
// next generation): it keeps its number and its dataset), logged before and
// after as the others, and lists every snapshot of the pool
// (Pool::ListSnapshots), which must be exactly the ones it has, under their
// names of the moment: it waits for each take's sync, and a destroy or
// rename shows in the list at once. A listing that matched is logged (one
// record) for the run's figures.
//
// Rollbacks. Now and then thread 0 also rolls the dataset of a random one
// of its snapshots back to it, destroying the dataset's later snapshots
// with it (unless one is a clone's origin: then it leaves it), logged
// before and after as the others (op_log.h). First it keeps every thread
// off the dataset, as a destroy does; once the rollback's txg has synced,
// the dataset's new object set must read exactly as the snapshot (their
// digests), and the threads may use it again, with new objects only: what
// the snapshot holds is nobody's until the next workload starts.
//
// Clones. Now and then thread 0 also clones a random one of its snapshots
// into the next dataset (DatasetName(index) below the root, as a create
// would name it), logged before and after as a dataset creation
// (kCloneDataset). Before any other thread sees the clone it must read
// exactly as its origin (their digests). From then on it is a dataset of
// the run like any other, but its objects are nobody's until the next
// workload starts (threads own what they find at start). The pool
// destroys no snapshot that is a clone's origin: thread 0 destroys one
// only once its clones are gone and their destroys have synced, and leaves
// a subtree holding one alone.
//
// Failures. With `failure_expected` returning true (the power was cut), a
// failed Assign, operation or WaitSynced just ends the thread; otherwise the
// first failure is kept (status()) and ends the thread too.
//
// Thread safety: Start, Stop and the accessors from one controlling thread.
// The dataset tree is thread 0's alone; the sets and the handshake counters
// are under sets_mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "pool/pool.h"
#include "stress/dataset_tree.h"
#include "stress/model.h"
#include "stress/op_log.h"
#include "util/mutex.h"

namespace poolfs::stress {

namespace dmu = ::poolfs::core::dmu;
namespace zio = ::poolfs::core::zio;

// Dataset indices a run hands out at most: the pool numbers at most 65,535
// datasets over its life (README, "Known limits"), and the log's index is 16
// bits.
inline constexpr size_t kMaxDatasetIndices = 60000;

struct WorkloadOptions {
  int threads = 4;
  uint64_t seed = 1;
  int max_objects_per_thread = 12;
  // Thread 0 now and then creates a dataset (DatasetName(next index))
  // while fewer than this many are live, and renames and destroys some;
  // 0: none of that.
  int max_datasets = 0;
  // The run's datasets when the workload starts (Workload's `sets` match).
  DatasetTree tree;
  // Thread 0 now and then takes a snapshot while fewer than this many of
  // the run's are live, and destroys some; 0: none of that.
  int max_snapshots = 0;
  // The run's live snapshots when the workload starts: number -> dataset.
  std::map<uint64_t, uint16_t> snapshots;
  // The number of the next snapshot taken (numbers are never reused).
  uint64_t next_snapshot = 1;
  // Their generations (number -> how many times it was renamed; none: 0).
  std::map<uint64_t, uint32_t> snapshot_generations;
  // The live clones when the workload starts: dataset -> the number of
  // its origin snapshot.
  std::map<uint16_t, uint64_t> clones;
  // Called right after each dataset creation, rename and destroy, and each
  // snapshot taken or destroyed (a power-cut cycle arms its rail, to crash
  // while the change reaches disk).
  std::function<void()> after_dataset_change;
  // Called by thread 0 when a rollback returned its txg, before it logs
  // that (a kill cycle's child may die there, leaving the rollback in
  // flight in the log, with its txg synced or not).
  std::function<void(Txg)> rollback_returned;
};

// A thread's running model of its own objects, per dataset index.
using LocalModels = std::map<uint16_t, Model>;

// The datasets a Tx may use: live dataset index -> object set.
using SetMap = std::map<uint16_t, dmu::ObjectSet*>;

struct ObjectState {
  uint16_t dataset = 0;  // index into the workload's object sets
  uint64_t id = 0;
  uint64_t length = 0;
  uint32_t block_size = 0;
};

// The objects of `os` (ids below next_object() that Stat finds), appended
// to *out as dataset `dataset`.
Status ScanObjects(dmu::ObjectSet* os, uint16_t dataset, std::vector<ObjectState>* out);

class Workload {
 public:
  // Works on the object sets `sets` of `pool` (record dataset i is sets[i],
  // nullptr for a dead index; datasets the workload creates are appended).
  Workload(core::pool::Pool* pool, std::vector<dmu::ObjectSet*> sets, OpLog* log,
           const WorkloadOptions& options, std::function<bool()> failure_expected);
  ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // Starts the threads over the objects that exist now, whose contents
  // are models[dataset] (copied: the caller may change them afterwards).
  void Start(const std::vector<ObjectState>& existing, const std::vector<Model>& models);
  // Asks the threads to finish their Tx (a sync of the open txg is asked
  // for, so that none waits long for its txg) and joins them. Idempotent:
  // once stopped, the pool is not touched again.
  void Stop();
  // True once every worker thread has ended (by Stop or by a failure).
  bool done() const { return running_.load() == 0; }

  // OK, or the first unexpected failure (with the thread and operation).
  Status status() const EXCLUDES(mu_);
  uint64_t ops() const { return ops_.load(); }
  // Read-backs that matched the thread's model.
  uint64_t reads_verified() const { return reads_.load(); }
  // Snapshots taken and read back; clones made and found to read as their
  // origins.
  uint64_t snapshots_read() const { return snapshots_read_.load(); }
  uint64_t clones_made() const { return clones_made_.load(); }
  // The newest txg any committed Tx used.
  uint64_t max_txg() const { return max_txg_.load(); }

 private:
  void Run(int thread, std::vector<ObjectState> mine, LocalModels local);
  void Watch();
  // `sets`: the datasets the Tx may use, those created before it was
  // assigned (a later one may belong to a later txg) and not being destroyed.
  Status OneOp(dmu::Tx& tx, const SetMap& sets, std::mt19937_64& rng,
               std::vector<ObjectState>& mine, LocalModels& local);
  // Logs `r` and applies it to the thread's model.
  Status Record(const OpRecord& r, LocalModels& local);
  // Reads back a range of object o (the whole object when small) and its
  // attributes against the thread's model.
  Status ReadBack(dmu::Tx& tx, dmu::ObjectSet* os, const ObjectState& o, std::mt19937_64& rng,
                  LocalModels& local);
  // A block clone between two of the thread's objects (above); a read-back
  // instead when no two of them can clone.
  Status CloneBlocks(dmu::Tx& tx, const SetMap& sets, std::mt19937_64& rng,
                     std::vector<ObjectState>& mine, LocalModels& local);
  // Grows object o's block to hold `end` bytes (GrowBlockSize, up to 128
  // KiB) or, with `set_to`, sets it (SetBlockSize); logs a kBlockSize
  // record when the size changed.
  Status ChangeBlockSize(dmu::Tx& tx, dmu::ObjectSet* os, ObjectState& o, uint64_t end,
                         uint32_t set_to, LocalModels& local);
  // Thread 0, between Txs: maybe one dataset operation (below).
  Status MaybeChangeDatasets(std::mt19937_64& rng, std::vector<ObjectState>& mine,
                             LocalModels& local);
  // Creates the next dataset (outside any Tx), logged before and after.
  Status CreateDataset() EXCLUDES(sets_mu_);
  // Renames dataset `i` below `parent` (its next generation), logged
  // before and after.
  Status RenameDataset(uint16_t i, uint16_t parent);
  // Destroys dataset `i` and its subtree once no other thread uses them;
  // returns OK without doing it when the workload stops meanwhile.
  Status DestroyDataset(uint16_t i, std::vector<ObjectState>& mine, LocalModels& local)
      EXCLUDES(sets_mu_);
  // The first record of a dataset operation (a, b: see op_log.h).
  OpRecord DatasetRecord(OpKind kind, uint16_t dataset);
  // Takes `datasets` out of the sets, drops thread 0's objects there, and
  // waits until no other thread uses them (their handshakes moved, or they
  // ended). False when the workload stops meanwhile.
  bool Quiesce(const std::vector<uint16_t>& datasets, std::vector<ObjectState>& mine,
               LocalModels& local) EXCLUDES(sets_mu_);
  // Thread 0, between Txs: maybe one snapshot operation (above).
  Status MaybeChangeSnapshots(std::mt19937_64& rng, std::vector<ObjectState>& mine,
                              LocalModels& local);
  // Rolls the dataset of snapshot `number` back to it (above), logged
  // before and after; returns OK without doing it when a later snapshot is
  // a clone's origin or the workload stops meanwhile.
  Status RollbackDataset(uint64_t number, std::vector<ObjectState>& mine, LocalModels& local)
      EXCLUDES(sets_mu_);
  // Takes the next snapshot of dataset `i`, logged before and after, then
  // once its txg has synced reads it back and logs its digest.
  Status TakeSnapshot(uint16_t i);
  // Destroys snapshot `number`, logged before and after.
  Status DestroySnapshot(uint64_t number);
  // Renames snapshot `number` to its next generation's name (same
  // dataset), logged before and after.
  Status RenameSnapshot(uint64_t number);
  // Lists the pool's snapshots and compares them with snapshots_ (their
  // full names); logs the listing once it matched.
  Status ListSnapshots();
  // Clones snapshot `number` into the next dataset, logged before and
  // after; checks that the clone reads as its origin before any other
  // thread may write it.
  Status CloneSnapshot(uint64_t number) EXCLUDES(sets_mu_);
  // Corruption (beginning with `what`) unless `os` reads exactly as
  // snapshot `snapshot` (a full name): their digests.
  Status ReadsAs(dmu::ObjectSet* os, const std::string& snapshot, const std::string& what);
  // Whether snapshot `number` is the origin of a live clone, or of one
  // whose destroy has not synced yet (the pool destroys no such snapshot).
  bool HasClones(uint64_t number);
  // Snapshot `number`'s full name now.
  std::string SnapshotFullName(uint64_t number) const;
  // Before each Tx: moves the thread's handshake counter, refreshes its
  // snapshot of the sets (*version: the sets_version_ it holds) and drops
  // its objects in datasets taken out.
  void Snapshot(int thread, SetMap* sets, uint64_t* version, std::vector<ObjectState>& mine,
                LocalModels& local) EXCLUDES(sets_mu_);
  // Ends the calling thread's work: records `st` unless expected.
  void Fail(int thread, const Status& st) EXCLUDES(mu_);

  core::pool::Pool* const pool_;
  mutable util::Mutex sets_mu_;
  SetMap sets_ GUARDED_BY(sets_mu_);
  uint64_t sets_version_ GUARDED_BY(sets_mu_) = 1;  // moves with every change of sets_
  // Per thread: Txs started (the destroy's handshake), and whether it ended.
  std::vector<uint64_t> handshakes_ GUARDED_BY(sets_mu_);
  std::vector<bool> ended_ GUARDED_BY(sets_mu_);
  OpLog* const log_;
  const WorkloadOptions options_;
  const std::function<bool()> failure_expected_;
  // Thread 0's: what it did to the datasets, and the live snapshots
  // (number -> dataset).
  DatasetTree tree_;
  std::map<uint64_t, uint16_t> snapshots_;
  std::map<uint64_t, uint32_t> generations_;  // number -> renames so far (none: 0)
  uint64_t next_snapshot_;
  std::map<uint16_t, uint64_t> clones_;  // live clone -> its origin's number
  // Origins whose last clone was destroyed -> the txg of that destroy.
  std::map<uint64_t, uint64_t> released_;

  std::atomic<bool> stop_{false};
  std::atomic<int> running_{0};
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> snapshots_read_{0};
  std::atomic<uint64_t> clones_made_{0};
  std::atomic<uint64_t> max_txg_{0};
  std::vector<std::thread> threads_;
  std::thread watcher_;
  mutable util::Mutex mu_;
  Status first_error_ GUARDED_BY(mu_);
};

}  // namespace poolfs::stress
