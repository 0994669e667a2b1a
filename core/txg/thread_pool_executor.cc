#include "txg/thread_pool_executor.h"

#include <utility>

#include "util/check.h"

namespace poolfs::core::txg {

ThreadPoolExecutor::ThreadPoolExecutor(size_t threads, size_t strands) {
  if (strands == 0) strands = 1;
  {
    util::MutexLock l(&mu_);
    queues_.resize(strands);
    busy_.assign(strands, false);
  }
  wanted_.store(threads, std::memory_order_relaxed);
  Restart(threads != 0 ? threads : strands);
}

ThreadPoolExecutor::~ThreadPoolExecutor() { Restart(0); }

void ThreadPoolExecutor::Restart(size_t n) {
  {
    util::MutexLock l(&mu_);
    POOLFS_CHECK_EQ(pending_, 0u);
    shutdown_ = true;
    work_cv_.SignalAll();
  }
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  {
    util::MutexLock l(&mu_);
    shutdown_ = false;
  }
  workers_.reserve(n);
  for (size_t i = 0; i < n; i++) workers_.emplace_back([this] { WorkerLoop(); });
  running_.store(n, std::memory_order_relaxed);
}

void ThreadPoolExecutor::BeginSync(size_t strands) {
  if (strands == 0) strands = 1;
  {
    util::MutexLock l(&mu_);
    POOLFS_CHECK_EQ(pending_, 0u);
    if (queues_.size() != strands) {
      queues_.assign(strands, {});
      busy_.assign(strands, false);
    }
  }
  const size_t wanted = wanted_.load(std::memory_order_relaxed);
  const size_t n = wanted != 0 ? wanted : strands;
  if (n != workers_.size()) Restart(n);
}

void ThreadPoolExecutor::Post(size_t strand, std::function<void()> fn) {
  util::MutexLock l(&mu_);
  const size_t s = strand % queues_.size();
  queues_[s].push_back(std::move(fn));
  pending_++;
  if (!busy_[s] && queues_[s].size() == 1) {
    ready_.push_back(s);
    work_cv_.Signal();
  }
}

void ThreadPoolExecutor::Wait() {
  util::MutexLock l(&mu_);
  while (pending_ != 0) done_cv_.Wait(&mu_);
}

void ThreadPoolExecutor::WorkerLoop() {
  util::MutexLock l(&mu_);
  while (true) {
    while (ready_.empty() && !shutdown_) work_cv_.Wait(&mu_);
    if (ready_.empty()) return;  // shut down (only ever with nothing queued)
    const size_t s = ready_.front();
    ready_.pop_front();
    busy_[s] = true;
    std::function<void()> fn = std::move(queues_[s].front());
    queues_[s].pop_front();
    mu_.Unlock();
    fn();
    fn = nullptr;  // destroy the task's captures before reporting it done
    mu_.Lock();
    busy_[s] = false;
    if (!queues_[s].empty()) {
      ready_.push_back(s);
      work_cv_.Signal();
    }
    if (--pending_ == 0) done_cv_.SignalAll();
  }
}

}  // namespace poolfs::core::txg
