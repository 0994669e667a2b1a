#include "txg/thread_pool_executor.h"

#include <unordered_map>
#include <utility>

#include "util/check.h"

namespace poolfs::core::txg {

ThreadPoolExecutor::ThreadPoolExecutor(size_t threads) {
  POOLFS_CHECK_GE(threads, 1u);
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; i++) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  {
    util::MutexLock l(&mu_);
    POOLFS_CHECK(!in_run_);
    shutdown_ = true;
    work_cv_.SignalAll();
  }
  for (std::thread& t : workers_) t.join();
}

void ThreadPoolExecutor::Run(std::vector<StrandTask> tasks) {
  // Group by strand, strands in order of first appearance.
  std::vector<Job> jobs;
  std::unordered_map<size_t, size_t> index;
  for (StrandTask& t : tasks) {
    auto [it, inserted] = index.try_emplace(t.strand, jobs.size());
    if (inserted) jobs.emplace_back();
    jobs[it->second].push_back(std::move(t.fn));
  }
  if (jobs.empty()) return;

  util::MutexLock l(&mu_);
  POOLFS_CHECK(!in_run_);
  in_run_ = true;
  unfinished_ = jobs.size();
  for (Job& j : jobs) jobs_.push_back(std::move(j));
  work_cv_.SignalAll();
  while (unfinished_ != 0) done_cv_.Wait(&mu_);
  in_run_ = false;
}

void ThreadPoolExecutor::WorkerLoop() {
  util::MutexLock l(&mu_);
  while (true) {
    while (jobs_.empty() && !shutdown_) work_cv_.Wait(&mu_);
    if (jobs_.empty()) return;  // shut down
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    mu_.Unlock();
    for (std::function<void()>& fn : job) fn();
    job.clear();  // destroy the tasks' captures before reporting them done
    mu_.Lock();
    if (--unfinished_ == 0) done_cv_.Signal();
  }
}

}  // namespace poolfs::core::txg
