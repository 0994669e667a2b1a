// Executor: where the txg sync runs its parallel work.
//
// The core never creates threads for sync itself: it hands lists of tasks to
// an Executor. A task names a strand (an allocator index); tasks of one strand
// never run at the same time, tasks of different strands may. The daemon
// implements this with Boost.Asio (one io_context, txg.sync_threads threads,
// one strand per allocator); tests use the core's InlineExecutor or
// ThreadPoolExecutor (core/txg).
//
// Thread safety: Run may be called from one thread at a time (the txg
// driver); tasks run on the executor's threads. A task never waits for
// another task, so any number of threads (even one) can run them.
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
  // Runs every task, honouring strands, and returns when all have finished.
  virtual void Run(std::vector<StrandTask> tasks) = 0;
};

}  // namespace poolfs
