// LiveConfig: the running configuration of a mount, and how it changes.
//
// A mount starts with the Config it was mounted with (`running`). A reload
// (SIGHUP) re-reads the config file; `poolfs tune MNT KEY=VALUE` applies one
// assignment. Either way the new Config is validated first (config/): a bad
// file or value is logged and returned as an error, and the running values
// stay. Otherwise config::Diff splits the changes: live tunables apply at
// once (Filesystem::SetLive, and SetLogLevel for log.level) and become part
// of running(); at-mount ones are logged as pending (they take effect at the
// next mount, which reads the file again) and are not part of running().
//
// HandleControlRequest is what the control socket (control.h) serves for a
// mount: "status", "tune KEY=VALUE", "reload".
//
// Thread safety: every member may be called from any thread; Reload and
// Tune may come at once from the signal-handling thread and the control
// thread (an internal mutex serializes them). running() returns a reference
// that a concurrent Reload or Tune may change: use Snapshot() from threads
// other than the one that changes it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "config/config.h"
#include "poolfs/fs.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

// The live tunables of a Tunables, as the Filesystem takes them.
poolfs::LiveTunables ToLiveTunables(const config::Tunables& t);

class LiveConfig {
 public:
  // `config_path`: the file Reload re-reads. "" = the mount found none:
  // Reload then looks again where a mount would (config::FindConfigFile
  // with `search`) and reads the file it finds from then on, or goes back to
  // the defaults while there is none. `fs` must outlive this object; may be
  // nullptr in tests (no SetLive then).
  LiveConfig(config::Config running, std::string config_path, poolfs::Filesystem* fs,
             config::ConfigSearchPaths search = config::ConfigSearchPaths::FromEnvironment());

  // Re-reads the config file. Returns OK when it parsed (live changes are
  // applied, at-mount ones logged as pending); InvalidArgument, NotFound or
  // IOError (with the loader's file:line message) when it did not, and then
  // nothing changes.
  poolfs::Status Reload();

  // Applies one "KEY=VALUE" (txg.timeout_ms=1000). InvalidArgument for a
  // malformed assignment, an unknown key (with a suggestion) or a value the
  // key does not accept; an at-mount key is accepted and reported pending
  // in `*note` (when not null), e.g. "alloc.allocators: 0 -> 4 (at the next
  // mount)".
  poolfs::Status Tune(std::string_view assignment, std::string* note = nullptr);

  // The values in effect. See the thread-safety note above.
  const config::Config& running() const;
  // A copy of the values in effect, safe from any thread.
  config::Config Snapshot() const;
  // The at-mount changes waiting for the next mount ("" when none), one per
  // line as config::ConfigDiff::ToString writes them.
  std::string Pending() const;
  // The file Reload reads; "" while there is none.
  std::string config_path() const;

 private:
  // Puts `loaded` into effect as described above; `what` names the source
  // for the log ("reload of F", "poolfs tune K=V").
  void ApplyLocked(const config::Config& loaded, std::string_view what, std::string* note);

  mutable std::mutex mu_;
  config::Config running_;  // guarded by mu_
  // The last accepted values, at-mount ones included: differs from running_
  // only in at-mount tunables (the pending changes). Guarded by mu_.
  config::Config wanted_;
  std::string config_path_;  // guarded by mu_; set by the first Reload that finds a file
  const config::ConfigSearchPaths search_;
  poolfs::Filesystem* const fs_;
};

// Serves one control request for a mount: "status" returns the status text
// (RenderStatus); "tune KEY=VALUE" returns "ok" (plus a line per pending
// at-mount change) or "error: <message>"; "reload" returns "ok" or
// "error: <message>"; "ping" returns "pong" (is the daemon still there?);
// anything else "error: unknown request ...".
std::string HandleControlRequest(LiveConfig& live, poolfs::Filesystem& fs,
                                 std::string_view request);

// Returns `bytes` for people, to 3 significant digits: "512B", "1.5KiB",
// "20.0GiB".
std::string FormatBytesHuman(uint64_t bytes);

// Renders what `poolfs status` prints for a mounted pool: the FsStatus
// fields, space in human units, the datasets, then the tunables in effect
// and any pending at-mount changes.
std::string RenderStatus(const poolfs::FsStatus& status, const config::Config& running,
                         std::string_view pending);

}  // namespace poolfs::daemon
