// Workload: the random object operations poolfs-stress runs on a pool.
//
// Several threads, each owning a set of objects of the run's datasets
// (objects it created, or found at start, spread by id), run Txs of one to
// four random operations: create (in a random dataset, with a random block
// size and compression), write
// stamped data (stamp.h: overwrites, appends, sparse and far writes,
// compressible and zero data), truncate (shrink or grow), punch a hole, set
// the bonus, free. Each operation is logged with its txg before the Tx
// commits (op_log.h). Each thread also keeps a Model of its own objects
// (seeded from the verified models) and reads back random ranges of them
// while the pool syncs around it ("read your writes" across the dirty txgs
// and the block tree); a difference is a failure. Now and then a thread
// waits for its txg to sync and logs it as durable; a watcher thread logs
// every advance of last_synced().
//
// Failures. With `failure_expected` returning true (the power was cut), a
// failed Assign, operation or WaitSynced just ends the thread; otherwise the
// first failure is kept (status()) and ends the thread too.
//
// Thread safety: Start, Stop and the accessors from one controlling thread.
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
#include "stress/model.h"
#include "stress/op_log.h"
#include "util/mutex.h"

namespace poolfs::stress {

namespace dmu = ::poolfs::core::dmu;

struct WorkloadOptions {
  int threads = 4;
  uint64_t seed = 1;
  int max_objects_per_thread = 12;
  // Thread 0 now and then creates a dataset (DatasetName(next index))
  // until there are this many.
  int max_datasets = 0;
  // Called right after each dataset creation (a power-cut cycle arms its
  // rail, to crash while the new dataset reaches disk).
  std::function<void()> after_create_dataset;
};

// A thread's running model of its own objects, per dataset index.
using LocalModels = std::map<uint16_t, Model>;

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
  // Works on the object sets `sets` of `pool` (record dataset i is sets[i];
  // datasets the workload creates are appended).
  Workload(core::pool::Pool* pool, std::vector<dmu::ObjectSet*> sets, OpLog* log,
           const WorkloadOptions& options, std::function<bool()> failure_expected);
  ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // Starts the threads over the objects that exist now, whose contents
  // are models[dataset] (copied: the caller may change them afterwards).
  void Start(const std::vector<ObjectState>& existing, const std::vector<Model>& models);
  // Asks the threads to finish their Tx and joins them.
  void Stop();
  // True once every worker thread has ended (by Stop or by a failure).
  bool done() const { return running_.load() == 0; }

  // OK, or the first unexpected failure (with the thread and operation).
  Status status() const EXCLUDES(mu_);
  uint64_t ops() const { return ops_.load(); }
  // Read-backs that matched the thread's model.
  uint64_t reads_verified() const { return reads_.load(); }
  // The newest txg any committed Tx used.
  uint64_t max_txg() const { return max_txg_.load(); }

 private:
  void Run(int thread, std::vector<ObjectState> mine, LocalModels local);
  void Watch();
  // `sets`: how many datasets the Tx may use, those created before it was
  // assigned (a later one may belong to a later txg).
  Status OneOp(dmu::Tx& tx, size_t sets, std::mt19937_64& rng, std::vector<ObjectState>& mine,
               LocalModels& local);
  // Logs `r` and applies it to the thread's model.
  Status Record(const OpRecord& r, LocalModels& local);
  // Creates the next dataset (outside any Tx), logged before and after.
  Status CreateDataset() EXCLUDES(sets_mu_);
  dmu::ObjectSet* Set(uint16_t index) const EXCLUDES(sets_mu_);
  size_t SetCount() const EXCLUDES(sets_mu_);
  // Ends the calling thread's work: records `st` unless expected.
  void Fail(int thread, const Status& st) EXCLUDES(mu_);

  core::pool::Pool* const pool_;
  mutable util::Mutex sets_mu_;
  std::vector<dmu::ObjectSet*> sets_ GUARDED_BY(sets_mu_);
  OpLog* const log_;
  const WorkloadOptions options_;
  const std::function<bool()> failure_expected_;

  std::atomic<bool> stop_{false};
  std::atomic<int> running_{0};
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> max_txg_{0};
  std::vector<std::thread> threads_;
  std::thread watcher_;
  mutable util::Mutex mu_;
  Status first_error_ GUARDED_BY(mu_);
};

}  // namespace poolfs::stress
