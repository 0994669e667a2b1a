// AsioExecutor: the daemon's poolfs::Executor, where txg sync work runs.
//
// One Boost.Asio io_context served by a fixed set of threads, and one strand
// per allocator. Run() posts each task to the strand its `strand` index
// names (modulo the number of strands), so tasks of one strand never overlap
// while tasks of different strands run in parallel, up to the thread count;
// Run() returns once every task has finished. The threads start in the
// constructor and stay (blocked on the io_context, kept alive by a work
// guard) until the destructor, so repeated syncs do not create threads.
//
// Asio stays inside asio_executor.cc (pimpl): this header includes nothing
// heavy, so the mount code and tests can include it cheaply.
//
// Thread safety: Run may be called from one thread at a time (the txg
// driver), as poolfs::Executor says; the destructor must not race a Run.
// A task must not call Run (it would wait for the pool it runs on).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "poolfs/executor.h"

namespace poolfs::daemon {

class AsioExecutor : public poolfs::Executor {
 public:
  // Starts `threads` threads (txg.sync_threads; 0: one per strand) serving
  // `strands` strands (one per allocator; 0 is taken as 1).
  AsioExecutor(size_t threads, size_t strands);
  // Stops the io_context and joins the threads. Must not race a Run.
  ~AsioExecutor() override;

  AsioExecutor(const AsioExecutor&) = delete;
  AsioExecutor& operator=(const AsioExecutor&) = delete;

  // Runs every task on its strand (task.strand % strands()) and returns
  // when all have finished. An empty list returns at once. A task that
  // throws terminates the process (sync tasks report errors as values).
  void Run(std::vector<StrandTask> tasks) override;

  size_t threads() const;
  size_t strands() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poolfs::daemon
