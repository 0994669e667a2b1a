// MountPlan: everything `poolfs mount` decides before it starts the
// daemon, checked while errors can still go straight to the terminal (no
// fork, no thread yet): the pool file and the mount point, the -o options,
// and the config file with the core and FUSE options it yields. A dead
// mount of this user's poolfs in the way (dead_mount.h) is the one thing it
// changes: it unmounts it (lazily), and says so in MountPlan::notes.
//
// Thread safety: values and free functions.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "dataset_request.h"
#include "fuse/fuse_server.h"
#include "poolfs/fs.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

// The command line of `poolfs mount`.
struct MountArgs {
  // The pool's file; with --pool (pool_option), the dataset to mount.
  std::string pool_file;
  std::string pool_option;  // --pool FILE
  std::string mountpoint;
  std::vector<std::string> options;  // each "-o a,b,c"
  std::string config_path;           // --config; "" to search
  bool foreground = false;           // -f
};

struct MountPlan {
  std::string pool_file;   // canonical
  std::string mountpoint;  // canonical
  std::string log_path;    // where the daemon logs in the background (logging.h)
  config::Config config;
  std::string config_path;  // the file read; "" for the defaults
  // The config's core tunables as they are, and the -o options; executor
  // and callback left for the daemon to fill.
  MountOptions core;
  fuse::FuseOptions fuse;
  size_t sync_threads = 0;        // of the Asio executor (txg.sync_threads; 0: one per strand)
  uint64_t read_ahead_bytes = 0;  // fuse.read_ahead_bytes; 0: the kernel's
  // One line per dead mount cleared on the way, for the terminal.
  std::vector<std::string> notes;
};

// `poolfs mount POOL/PATH MNT` while POOL is mounted: the mount the pool's
// daemon is asked for (dataset_mounts.h), checked here first.
struct DatasetMountPlan {
  std::string pool;             // POOL
  std::string pool_mountpoint;  // where POOL is mounted: its daemon's control socket
  DatasetMountRequest request;
  std::vector<std::string> notes;  // as MountPlan::notes
};

// Whether `poolfs mount SOURCE MNT` names a dataset of a mounted pool: no
// --pool, SOURCE is POOL/PATH and no such file exists.
bool IsDatasetMount(const MountArgs& args);

// Checks a dataset mount's arguments: NotFound when POOL is not mounted
// by this user (saying how to mount the dataset: poolfs mount --pool FILE
// POOL/PATH MNT), InvalidArgument for -f, --config or an access-time -o
// (the pool's daemon serves the mount, with its settings), and the mount
// point's and -o's errors as PlanMount.
Result<DatasetMountPlan> PlanDatasetMount(const MountArgs& args);

// Checks the arguments and reads the config. Fails with NotFound (no such
// pool file, mount point or --config file), InvalidArgument (a mount point
// that is not an empty directory, an empty -o option, a bad config file
// with its file:line errors), Busy (the pool is already mounted, or the
// mount point already has a mount, other than a dead one of this user's
// poolfs, which is unmounted), IOError (the mount table, or the unmount of
// a dead mount).
Result<MountPlan> PlanMount(const MountArgs& args);

}  // namespace poolfs::daemon
