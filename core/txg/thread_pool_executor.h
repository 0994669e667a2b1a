// ThreadPoolExecutor: a fixed pool of threads that runs a sync's tasks,
// strand by strand. Stands in for the daemon's Asio executor in tests and
// tools.
//
// Run groups the tasks by strand (keeping submission order within each),
// queues one job per strand, and waits until every job is done. A worker
// takes a whole strand and runs its tasks in order, so tasks of one strand
// never overlap and keep their order, while different strands run in
// parallel on different workers. Run's caller (the txg driver) only waits:
// it never runs tasks itself, and tasks must not call Run.
//
// Thread safety: Run from one thread at a time (CHECKed), as Executor says.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "txg/executor.h"
#include "util/mutex.h"

namespace poolfs::core::txg {

class ThreadPoolExecutor : public Executor {
 public:
  // Starts `threads` (at least 1) workers.
  explicit ThreadPoolExecutor(size_t threads);
  // Joins the workers; Run must have returned.
  ~ThreadPoolExecutor() override;
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  // Runs every task, honouring strands; returns when all have finished.
  void Run(std::vector<StrandTask> tasks) override;

  size_t threads() const { return workers_.size(); }

 private:
  using Job = std::vector<std::function<void()>>;  // one strand's tasks, in order

  void WorkerLoop();

  util::Mutex mu_;
  util::CondVar work_cv_;  // workers wait for jobs or shutdown
  util::CondVar done_cv_;  // Run waits for unfinished_ to reach 0
  std::deque<Job> jobs_ GUARDED_BY(mu_);
  size_t unfinished_ GUARDED_BY(mu_) = 0;  // jobs of the current Run not yet done
  bool in_run_ GUARDED_BY(mu_) = false;
  bool shutdown_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace poolfs::core::txg
