// InlineExecutor: runs a sync's tasks one after another on the thread that
// calls Wait, in the order they were posted (a task's posts run after what
// was queued before them). Strands are trivially honoured. For tests and
// for single-threaded tools (poolfs check, create).
//
// Thread safety: as Executor says; Post also from any thread (a mutex
// guards the queue), though only Wait runs tasks.
#pragma once

#include <deque>
#include <functional>

#include "txg/executor.h"
#include "util/mutex.h"

namespace poolfs::core::txg {

class InlineExecutor : public Executor {
 public:
  void BeginSync(size_t /*strands*/) override {}
  void Post(size_t strand, std::function<void()> fn) override EXCLUDES(mu_);
  // Runs the queue on this thread until it is empty.
  void Wait() override EXCLUDES(mu_);
  void SetThreads(size_t /*threads*/) override {}
  size_t threads() const override { return 1; }

 private:
  util::Mutex mu_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
};

}  // namespace poolfs::core::txg
