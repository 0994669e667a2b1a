#include "txg/inline_executor.h"

#include <utility>

namespace poolfs::core::txg {

void InlineExecutor::Post(size_t /*strand*/, std::function<void()> fn) {
  util::MutexLock l(&mu_);
  queue_.push_back(std::move(fn));
}

void InlineExecutor::Wait() {
  while (true) {
    std::function<void()> fn;
    {
      util::MutexLock l(&mu_);
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace poolfs::core::txg
