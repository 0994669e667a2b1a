// The txg layer's name for the public Executor interface (poolfs/executor.h):
// the daemon implements it with Asio strands, tests with InlineExecutor or
// ThreadPoolExecutor.
#pragma once

#include "poolfs/executor.h"

namespace poolfs::core::txg {

using poolfs::Executor;
using poolfs::StrandTask;

}  // namespace poolfs::core::txg
