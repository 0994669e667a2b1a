// What the stress cycles share: statuses from errno, reading a whole file
// (the op logs and journals a killed child left), and the cycle watchdog.
#pragma once

#include <cstdint>
#include <string>

#include "poolfs/status.h"

namespace poolfs::stress {

// IOError "<what>: <strerror(errno)>".
Status Errno(const std::string& what);

// The bytes of the file at `path`.
Result<std::string> ReadWholeFile(const std::string& path);

// The watchdog: a cycle that takes longer than `seconds` is a hang; the
// process then prints which cycle (mode, seeds, where the pool is kept) and
// exits with 1. Arm before each cycle, Disarm after it.
void ArmCycleWatchdog(unsigned seconds, uint64_t cycle, const char* mode, uint64_t cycle_seed,
                      uint64_t run_seed, const std::string& dir);
void DisarmCycleWatchdog();

}  // namespace poolfs::stress
