// Dead poolfs mounts, and unmounting a path.
//
// A mount whose daemon is gone (kill -9, the OOM killer) stays in the mount
// table, and the kernel answers every request on it with ENOTCONN (its
// connection to the daemon is aborted) until someone unmounts it. `poolfs
// mount` clears such a mount of the calling user's own poolfs (a lazy
// unmount, saying so) before it mounts; `poolfs status` says that the
// daemon died and how to recover.
//
// Whether a mount is dead is asked of the kernel: statfs(2) on it, which the
// kernel never answers from a cache, fails with ENOTCONN once the
// connection is gone. On a live mount statfs is a request its daemon
// answers, and a hung daemon never does: so the probe runs in a child
// process, given up after a timeout. A mount that does not answer is not
// called dead and is left alone.
//
// Thread safety: free functions, reentrant. ProbeMount forks; the child
// only calls statfs and _exit, so any thread may call it.
#pragma once

#include <optional>
#include <string>

#include "mount_table.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

enum class MountState {
  kAnswers,   // statfs succeeded (a live mount, or no mount at all)
  kDead,      // ENOTCONN: the daemon is gone
  kNoAnswer,  // no answer within the timeout (a hung daemon)
  kFailed,    // another error (ProbeResult::err)
};

struct ProbeResult {
  MountState state = MountState::kAnswers;
  int err = 0;  // kFailed: the errno of statfs, or of fork
};

// Calls statfs(2) on `path` in a child process and waits at most
// `timeout_ms` for it.
ProbeResult ProbeMount(const std::string& path, int timeout_ms = 5000);

// Whether `m` is a poolfs mount (fuse.poolfs) that belongs to the calling
// user (its user_id is our uid) and whose daemon is gone (ProbeMount says
// kDead).
bool IsOwnDeadPoolfsMount(const MountEntry& m);

// Unmounts `mountpoint` as `poolfs unmount` does: umount2 as root
// (MNT_DETACH when `lazy`), else `fusermount3 -u` (with -z when `lazy`).
// Busy when the mount is busy (not lazy); IOError naming the mount
// otherwise (fusermount3 prints its own message on stderr).
Status UnmountPath(const std::string& mountpoint, bool lazy);

// When `m` is a dead poolfs mount of this user (IsOwnDeadPoolfsMount),
// unmounts it lazily and returns the line that says so ("MNT: the daemon of
// this poolfs mount of POOLFILE is gone; unmounted it lazily (fusermount3
// -u -z)"); nullopt when `m` is not one. The unmount's error otherwise.
Result<std::optional<std::string>> ClearIfDead(const MountEntry& m);

// A path for `path` that does not stat its last component: the real path of
// its parent folder plus its name (a dead mount point cannot be stat'ed).
// NotFound when the parent does not exist.
Result<std::string> CanonicalParentPath(const std::string& path);

}  // namespace poolfs::daemon
