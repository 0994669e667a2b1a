// ThreadPoolExecutor: a pool of threads that runs a sync's tasks, honouring
// strands. Stands in for the daemon's Asio executor in tests, tools and
// programs that open a pool without the daemon (poolfs-bench).
//
// Each strand has a queue. A strand with queued tasks and none running is
// "ready"; a worker takes the first ready strand, runs one task of it, and
// puts the strand back at the end of the ready list if more are queued. So
// tasks of one strand never overlap and keep their order, while the workers
// interleave every strand with work. Wait's caller (the txg driver) only
// waits: it never runs tasks itself.
//
// The thread count asked for with SetThreads is applied by BeginSync, when
// no task is queued or running: the workers stop and the new number start.
//
// Thread safety: as Executor says (BeginSync and Wait from one thread;
// BeginSync with no batch unfinished, CHECKed).
#pragma once

#include <atomic>
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
  // Starts `threads` workers (0: one per strand) over `strands` strands (0
  // is taken as 1) until the first BeginSync says otherwise.
  explicit ThreadPoolExecutor(size_t threads, size_t strands = 1);
  // Joins the workers; the last batch must have been waited for.
  ~ThreadPoolExecutor() override;
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  void BeginSync(size_t strands) override EXCLUDES(mu_);
  void Post(size_t strand, std::function<void()> fn) override EXCLUDES(mu_);
  void Wait() override EXCLUDES(mu_);
  void SetThreads(size_t threads) override { wanted_.store(threads, std::memory_order_relaxed); }
  size_t threads() const override { return running_.load(std::memory_order_relaxed); }

 private:
  void WorkerLoop() EXCLUDES(mu_);
  // Stops the workers, then starts `n`. With no task queued or running.
  void Restart(size_t n) EXCLUDES(mu_);

  util::Mutex mu_;
  util::CondVar work_cv_;  // workers wait for a ready strand or shutdown
  util::CondVar done_cv_;  // Wait waits for pending_ to reach 0
  std::vector<std::deque<std::function<void()>>> queues_ GUARDED_BY(mu_);  // per strand
  std::vector<bool> busy_ GUARDED_BY(mu_);    // a task of the strand is running
  std::deque<size_t> ready_ GUARDED_BY(mu_);  // strands with tasks queued, none running
  size_t pending_ GUARDED_BY(mu_) = 0;        // tasks posted and not finished
  bool shutdown_ GUARDED_BY(mu_) = false;
  std::atomic<size_t> wanted_{0};     // SetThreads' count, for the next BeginSync
  std::atomic<size_t> running_{0};    // workers now
  std::vector<std::thread> workers_;  // BeginSync's thread and the destructor only
};

}  // namespace poolfs::core::txg
