#include "txg/txg_options.h"

#include <string>

namespace poolfs::core::txg {

Status ValidateTxgOptions(const TxgOptions& opts) {
  if (opts.timeout_ms == 0) {
    return Status::InvalidArgument("txg.timeout_ms must be at least 1");
  }
  if (opts.dirty_max_bytes == 0) {
    return Status::InvalidArgument("txg.dirty_max_bytes must be at least 1");
  }
  if (opts.dirty_sync_percent < 1 || opts.dirty_sync_percent > 100) {
    return Status::InvalidArgument("txg.dirty_sync_percent must be between 1 and 100 (got " +
                                   std::to_string(opts.dirty_sync_percent) + ")");
  }
  if (opts.delay_min_dirty_percent > 100) {
    return Status::InvalidArgument("txg.delay_min_dirty_percent must be between 0 and 100 (got " +
                                   std::to_string(opts.delay_min_dirty_percent) + ")");
  }
  return Status::Ok();
}

}  // namespace poolfs::core::txg
