// InlineExecutor: runs a sync's tasks one after another on the calling
// thread, in submission order. Strands are trivially honoured. For tests and
// for single-threaded tools (poolfs check, create).
//
// Thread safety: stateless; Run may be called from any number of threads.
#pragma once

#include <vector>

#include "txg/executor.h"

namespace poolfs::core::txg {

class InlineExecutor : public Executor {
 public:
  // Runs every task in order on this thread and returns when the last ends.
  void Run(std::vector<StrandTask> tasks) override;
};

}  // namespace poolfs::core::txg
