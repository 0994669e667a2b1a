// Logging: the daemon's spdlog set-up.
//
// In the foreground the log goes to stderr; in the background to
// $XDG_STATE_HOME/poolfs/<pool>.log (~/.local/state/poolfs/<pool>.log when
// XDG_STATE_HOME is unset or not absolute), created with its folder (mode
// 0700) when missing, appended to otherwise. Every line carries the time,
// the level and the pool name. The level follows the log.level tunable and
// may change live (SetLogLevel, from a reload or `poolfs tune`).
//
// What is logged (by the callers): one info line per mount, unmount and
// reload, one debug line per txg sync, every error with its context.
//
// Thread safety: SetupLogging once, from main's thread, before other
// threads log; SetLogLevel and logging itself from any thread.
#pragma once

#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::daemon {

// Installs the default logger: stderr when `foreground`, else the pool's log
// file (see above); at `level` ("trace", "debug", "info", "warn", "error",
// "critical", "off"). Fails with InvalidArgument for an unknown level, and
// with IOError (naming the path) when the log folder or file cannot be
// created.
Status SetupLogging(bool foreground, const std::string& pool_name, std::string_view level);

// Returns the path SetupLogging uses in the background for `pool_name`.
std::string LogFilePath(const std::string& pool_name);

// Sets the default logger's level; an unknown name is ignored (log.level is
// validated by config/ before it gets here).
void SetLogLevel(std::string_view level);

}  // namespace poolfs::daemon
