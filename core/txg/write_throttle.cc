#include "txg/write_throttle.h"

#include <algorithm>

namespace poolfs::core::txg {
namespace {

// a * pct / 100 without overflow for any 64-bit a.
uint64_t PercentOf(uint64_t a, uint32_t pct) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * pct / 100);
}

}  // namespace

uint64_t DelayMinBytes(const TxgOptions& opts) {
  return PercentOf(opts.dirty_max_bytes, opts.delay_min_dirty_percent);
}

uint64_t SyncTriggerBytes(const TxgOptions& opts) {
  return PercentOf(opts.dirty_max_bytes, opts.dirty_sync_percent);
}

uint64_t ThrottleDelayNs(uint64_t dirty, const TxgOptions& opts) {
  const uint64_t min = DelayMinBytes(opts);
  const uint64_t max = opts.dirty_max_bytes;
  if (dirty <= min) return 0;
  if (dirty >= max) return opts.delay_max_ns;
  const unsigned __int128 delay =
      static_cast<unsigned __int128>(opts.delay_scale_ns) * (dirty - min) / (max - dirty);
  return static_cast<uint64_t>(std::min<unsigned __int128>(delay, opts.delay_max_ns));
}

uint64_t DelayWakeupNs(uint64_t now_ns, uint64_t last_wakeup_ns, uint64_t delay_ns) {
  return std::max(now_ns, last_wakeup_ns) + delay_ns;
}

}  // namespace poolfs::core::txg
