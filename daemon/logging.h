// Logging: the daemon's spdlog set-up.
//
// In the foreground the log goes to stderr; in the background to
// $XDG_STATE_HOME/poolfs/<stem>-<hash>.log (~/.local/state/poolfs/... when
// XDG_STATE_HOME is unset or not absolute), created with its folder (mode
// 0700) when missing, appended to otherwise. <stem> is the pool file's name
// without its extension and <hash> 8 hex digits of a hash of the file's
// canonical path, so that two pools whose files have one name in different
// folders (~/a/tank.pool, ~/b/tank.pool) have a log each; `poolfs status`
// shows the path. Every line carries the time, the level and the stem. The level follows the
// log.level tunable and may change live (SetLogLevel, from a reload or `poolfs tune`).
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

// Installs the default logger: stderr when `foreground`, else the log file
// of the pool in `pool_file` (canonical; see above); at `level` ("trace",
// "debug", "info", "warn", "error", "critical", "off"). Fails with
// InvalidArgument for an unknown level, and with IOError (naming the path)
// when the log folder or file cannot be created.
Status SetupLogging(bool foreground, const std::string& pool_file, std::string_view level);

// Returns the path SetupLogging uses in the background for `pool_file`.
std::string LogFilePath(const std::string& pool_file);

// The name log lines carry for `pool_file`: its name without extension
// ("pool" when that is empty).
std::string LogName(const std::string& pool_file);

// Sets the default logger's level; an unknown name is ignored (log.level is
// validated by config/ before it gets here).
void SetLogLevel(std::string_view level);

}  // namespace poolfs::daemon
