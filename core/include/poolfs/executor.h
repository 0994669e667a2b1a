// Executor: where the txg sync runs its parallel work.
//
// The core never creates threads for sync itself: it posts tasks to an
// Executor. A task names a strand (an allocator index); tasks of one strand
// never run at the same time and run in the order they were posted, tasks of
// different strands may run at once, interleaved over the executor's
// threads. The daemon implements this with Boost.Asio (one io_context,
// txg.sync_threads threads, one strand per allocator); tests use the core's
// InlineExecutor or ThreadPoolExecutor (core/txg).
//
// One sync's work is a batch: BeginSync(strands) opens it (the txg
// boundary), Post queues tasks (from the caller, or from a task of the batch:
// a task that finishes a dataset's last list posts that dataset's
// FinishSync), and Wait returns once every task posted since BeginSync,
// including those posted by tasks, has finished. The strand count is the
// pool's allocator count, passed by the pool at each BeginSync; the executor
// has no formula of its own. A thread count asked for with SetThreads
// (txg.sync_threads, live) takes effect at the next BeginSync: never in the
// middle of a sync.
//
// Thread safety: BeginSync, Wait and Run from one thread at a time (the txg
// driver), BeginSync never while a batch is unfinished; Post from that
// thread or from a task of the batch; SetThreads and threads() from any
// thread. A task never waits for another task, so any number of threads
// (even one) can run them.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace poolfs {

struct StrandTask {
  size_t strand = 0;
  std::function<void()> fn;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Opens a batch over `strands` strands (0 is taken as 1): applies a
  // thread count asked for by SetThreads, and resizes the strands.
  virtual void BeginSync(size_t strands) = 0;
  // Queues `fn` on strand `strand % strands`.
  virtual void Post(size_t strand, std::function<void()> fn) = 0;
  // Returns when every task posted since BeginSync has finished.
  virtual void Wait() = 0;
  // Asks for `threads` threads (0: one per strand) from the next BeginSync
  // on. Executors without threads of their own ignore it.
  virtual void SetThreads(size_t threads) = 0;
  // The threads in effect (those of the last BeginSync, or construction).
  virtual size_t threads() const = 0;

  // Posts every task (in order) and waits for them: a batch in one call,
  // on the strands of the last BeginSync.
  void Run(std::vector<StrandTask> tasks) {
    for (StrandTask& t : tasks) Post(t.strand, std::move(t.fn));
    Wait();
  }
};

}  // namespace poolfs
