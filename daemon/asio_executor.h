// AsioExecutor: the daemon's poolfs::Executor, where txg sync work runs.
//
// One Boost.Asio io_context served by a set of threads, and one strand per
// allocator: the pool passes its allocator count to each BeginSync, and the
// strands follow it. Post() posts each task to its strand as its own
// handler, so one strand runs one allocator's tasks in order while the
// threads interleave every strand; a task may post more (a dataset's
// FinishSync, posted by its last list). Wait() returns once every task
// posted since BeginSync has finished. The threads stay (blocked on the
// io_context, kept alive by a work guard) from one sync to the next, so
// repeated syncs do not create threads; a thread count asked for with
// SetThreads (txg.sync_threads, live) is applied by the next BeginSync,
// with nothing queued or running: the threads stop and the new number
// start.
//
// Asio stays inside asio_executor.cc (pimpl): this header includes nothing
// heavy, so the mount code and tests can include it cheaply.
//
// Thread safety: as poolfs::Executor says; the destructor must not race a
// batch. A task must not Wait (it would wait for the pool it runs on).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "poolfs/executor.h"

namespace poolfs::daemon {

class AsioExecutor : public poolfs::Executor {
 public:
  // Starts `threads` threads (txg.sync_threads; 0: one per strand) serving
  // `strands` strands (0 is taken as 1) until the first BeginSync, which
  // sets the strands to the pool's allocator count.
  explicit AsioExecutor(size_t threads, size_t strands = 1);
  // Stops the io_context and joins the threads. Must not race a batch.
  ~AsioExecutor() override;

  AsioExecutor(const AsioExecutor&) = delete;
  AsioExecutor& operator=(const AsioExecutor&) = delete;

  void BeginSync(size_t strands) override;
  // A task that throws terminates the process (sync tasks report errors as
  // values).
  void Post(size_t strand, std::function<void()> fn) override;
  void Wait() override;
  void SetThreads(size_t threads) override;
  size_t threads() const override;
  size_t strands() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poolfs::daemon
