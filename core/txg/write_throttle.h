// The write throttle's arithmetic, as pure functions so that tests can check
// the curve without clocks.
//
// Below delay_min_dirty_percent of the maximum, writers are not delayed.
// Above it, each writer waits
//
//   delay = delay_scale_ns * (dirty - min) / (max - dirty),  at most delay_max_ns
//
// which is 0 at the start of the curve, delay_scale_ns halfway to the maximum
// (500 us by default: about 2,000 transactions a second in total) and grows
// without bound (up to the cap) as dirty data nears the maximum. At the
// maximum writers no longer wait a delay: they block until a sync finishes.
//
// Delays queue: a writer's delay starts when the previous delayed writer's
// ends (DelayWakeupNs), so that the rate at which writers get through depends
// on the dirty level and not on how many threads are writing.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "txg/txg_options.h"

namespace poolfs::core::txg {

// Returns the dirty bytes at which writers start to be delayed.
uint64_t DelayMinBytes(const TxgOptions& opts);

// Returns the dirty bytes of the open txg at which a sync starts.
uint64_t SyncTriggerBytes(const TxgOptions& opts);

// Returns how long one writer is delayed, in ns, when `dirty` bytes are
// dirty: 0 up to DelayMinBytes, then the curve above, capped at
// delay_max_ns (also the value at and past the maximum).
uint64_t ThrottleDelayNs(uint64_t dirty, const TxgOptions& opts);

// Returns when a writer delayed by `delay_ns` at `now_ns` wakes, given that
// the previous delayed writer wakes at `last_wakeup_ns`: its delay is queued
// behind that one.
uint64_t DelayWakeupNs(uint64_t now_ns, uint64_t last_wakeup_ns, uint64_t delay_ns);

}  // namespace poolfs::core::txg
