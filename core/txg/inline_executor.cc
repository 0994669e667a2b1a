#include "txg/inline_executor.h"

namespace poolfs::core::txg {

void InlineExecutor::Run(std::vector<StrandTask> tasks) {
  for (StrandTask& t : tasks) t.fn();
}

}  // namespace poolfs::core::txg
