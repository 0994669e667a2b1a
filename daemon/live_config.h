// LiveConfig: the running configuration of a mount, and how it changes.
//
// A mount starts with the Config it was mounted with (`running`). A reload
// (SIGHUP) re-reads the config file; `poolfs tune MNT KEY=VALUE` applies one
// assignment. Either way the new Config is validated first (config/): a bad
// file or value is logged and returned as an error, and the running values
// stay. Otherwise config::Diff splits the changes: live tunables apply at
// once (Filesystem::SetLive gets the core's tunables as they are,
// config::Tunables::core, and SetLogLevel takes log.level) and become part
// of the running values; at-mount ones are logged as pending (they take
// effect at the next mount, which reads the file again) and are not. When
// the Filesystem refuses the live values (SetLive's error), nothing
// changes either and the error is logged and returned.
//
// HandleControlRequest is what the control socket (control.h) serves for a
// mount: "status", "tune KEY=VALUE", "reload".
//
// Thread safety: every member may be called from any thread; Reload and
// Tune may come at once from the signal-handling thread and the control
// thread (an internal mutex serializes them, and SetLive is called under
// it, so the Filesystem sees the changes in the order they were accepted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "poolfs/executor.h"
#include "poolfs/fs.h"
#include "poolfs/mutex.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

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
  // IOError (with the loader's file:line message) when it did not, and
  // SetLive's error when the Filesystem refused the live values; then
  // nothing changes.
  poolfs::Status Reload() EXCLUDES(mu_);

  // Applies one "KEY=VALUE" (txg.timeout_ms=1000). InvalidArgument for a
  // malformed assignment, an unknown key (with a suggestion) or a value the
  // key does not accept; an at-mount key is accepted and reported pending
  // in `*note` (when not null), e.g. "alloc.allocators: 0 -> 4 (at the next
  // mount)". SetLive's error, changing nothing, when the Filesystem
  // refuses the live values.
  poolfs::Status Tune(std::string_view assignment, std::string* note = nullptr) EXCLUDES(mu_);

  // A copy of the values in effect.
  config::Config Snapshot() const EXCLUDES(mu_);
  // The at-mount changes waiting for the next mount ("" when none), one per
  // line as config::ConfigDiff::ToString writes them.
  std::string Pending() const EXCLUDES(mu_);
  // The file Reload reads; "" while there is none.
  std::string config_path() const EXCLUDES(mu_);
  // The sync executor that txg.sync_threads (live) resizes: each accepted
  // change calls its SetThreads, which it applies at the next txg boundary.
  // Must outlive this object; nullptr (the default): none.
  void UseExecutor(poolfs::Executor* executor) EXCLUDES(mu_);

 private:
  // Puts `loaded` into effect as described above; `what` names the source
  // for the log ("reload of F", "poolfs tune K=V"). Returns SetLive's error
  // (and changes nothing) when the Filesystem refuses the live values.
  poolfs::Status ApplyLocked(const config::Config& loaded, std::string_view what, std::string* note)
      REQUIRES(mu_);

  mutable util::Mutex mu_;
  config::Config running_ GUARDED_BY(mu_);
  // The last accepted values, at-mount ones included: differs from running_
  // only in at-mount tunables (the pending changes).
  config::Config wanted_ GUARDED_BY(mu_);
  // Set by the first Reload that finds a file.
  std::string config_path_ GUARDED_BY(mu_);
  const config::ConfigSearchPaths search_;
  poolfs::Filesystem* const fs_;
  poolfs::Executor* executor_ GUARDED_BY(mu_) = nullptr;
};

// Serves one control request for a mount: "status" returns the status text
// (RenderStatus); "iostat" the cumulative counters (RenderIostatCounters);
// "tune KEY=VALUE" returns "ok" (plus a line per pending
// at-mount change) or "error: <message>"; "reload" returns "ok" or
// "error: <message>"; "scrub start" and "scrub stop" start or stop the
// pool's scrub (scrub_request.h); "ping" returns "pong" (is the daemon still there?);
// anything else "error: unknown request ...".
std::string HandleControlRequest(LiveConfig& live, poolfs::Filesystem& fs,
                                 std::string_view request);

// Returns `bytes` for people, to 3 significant digits: "512B", "1.5KiB",
// "20.0GiB".
std::string FormatBytesHuman(uint64_t bytes);

// Renders what `poolfs status` prints for a mounted pool: the FsStatus
// fields (the scrub's "scan:" line after the state), space in human units,
// the datasets, then the tunables in effect
// and any pending at-mount changes. `log`, when not empty, is where the
// daemon logs, and `dataset_mounts` the pool's datasets mounted on their
// own ("tank/home on /mnt/home"): lines after the state.
std::string RenderStatus(const poolfs::FsStatus& status, const config::Config& running,
                         std::string_view pending, std::string_view log = {},
                         const std::vector<std::string>& dataset_mounts = {});

// `poolfs iostat`: the daemon keeps cumulative counters, the client
// differences two samples. A sample as the "iostat" request sends it.
struct IostatSample {
  double time_s = 0;  // when it was taken (the client's monotonic clock)
  uint64_t syncs = 0, sync_ns = 0;
  uint64_t bytes_written = 0, blocks_written = 0;
  uint64_t bytes_read = 0, blocks_read = 0;
  uint64_t creates = 0, removes = 0;  // objects allocated and freed
  uint64_t last_synced_txg = 0;
  std::vector<std::pair<uint64_t, uint64_t>> recent;  // (txg, sync ns), oldest first
};
// The "iostat" reply: "key value" lines, then "sync TXG NS" per recent sync.
std::string RenderIostatCounters(const poolfs::FsStatus& status);
// Parses that reply (InvalidArgument for anything else); time_s stays 0.
poolfs::Result<IostatSample> ParseIostatCounters(std::string_view text);
// The column header, and the line for the interval from `prev` to `cur`:
// txgs synced, bytes and blocks written and read, creates and removes,
// mean and max sync time of the txgs synced in it. A `prev` of all zeros
// (no earlier sample) gives the totals since the mount.
std::string IostatHeader();
std::string IostatLine(const IostatSample& prev, const IostatSample& cur);

}  // namespace poolfs::daemon
