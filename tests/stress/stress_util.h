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

// A log of fixed-size records (the op log, the fsync journal): opened for
// appending (emptied with `truncate`), each record one write(2), so a
// SIGKILLed writer leaves whole records but perhaps a torn last one.
// `what` names the log in errors.
Result<int> OpenRecordLog(const std::string& path, bool truncate);
Status AppendRecord(int fd, const uint8_t* record, size_t size, const std::string& what);

// The watchdog: a cycle that takes longer than `seconds` is a hang; the
// process then prints which cycle (mode, seeds, where the pool is kept) and
// exits with 1. Arm before each cycle, Disarm after it.
void ArmCycleWatchdog(unsigned seconds, uint64_t cycle, const char* mode, uint64_t cycle_seed,
                      uint64_t run_seed, const std::string& dir);
void DisarmCycleWatchdog();

}  // namespace poolfs::stress
