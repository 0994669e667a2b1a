// TxgOptions: the txg.* tunables the txg layer reads (the config layer maps
// the keys of the same names), and their validation.
//
// Thread safety: a value type.
#pragma once

#include <cstdint>

#include "poolfs/status.h"

namespace poolfs::core::txg {

struct TxgOptions {
  // txg.timeout_ms: sync at least this often while anything is dirty. Live.
  uint64_t timeout_ms = 5000;
  // txg.dirty_max_bytes: writers block while this much data is dirty, summed
  // over every txg not yet synced. Live. Not ZFS's tenth of the memory: the
  // daemon touches its dirty data's pages afresh after each burst, and a
  // 1 GiB write through a mount went at 371-393 MiB/s with 1 GiB allowed,
  // 485-613 with 256 MiB (config/README.md has the figures).
  uint64_t dirty_max_bytes = uint64_t{256} << 20;
  // txg.dirty_sync_percent: start a sync when the open txg alone holds this
  // percentage of dirty_max_bytes (1..100). Live.
  uint32_t dirty_sync_percent = 20;
  // txg.delay_min_dirty_percent: start delaying writers when the dirty total
  // passes this percentage of dirty_max_bytes (0..100). Live.
  uint32_t delay_min_dirty_percent = 60;
  // txg.delay_scale_ns: a writer's delay is
  //   delay_scale_ns * (dirty - min) / (max - dirty)
  // so it is delay_scale_ns halfway between the start of delays and the
  // maximum. Live.
  uint64_t delay_scale_ns = 500000;
  // txg.delay_max_ns: no single writer is delayed longer than this. Live.
  uint64_t delay_max_ns = 100000000;
};

// Returns OK, or InvalidArgument naming the first key out of range.
Status ValidateTxgOptions(const TxgOptions& opts);

}  // namespace poolfs::core::txg
