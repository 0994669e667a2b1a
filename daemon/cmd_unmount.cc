// `poolfs unmount MOUNTPOINT [--lazy] [--timeout SECONDS]`: unmounts a
// poolfs mount and waits until its daemon has synced and exported the pool,
// so that the pool can be mounted or checked right away.
//
// The unmount is what `fusermount3 -u` does (umount2 as root); the daemon's
// request loop then ends, it runs Filesystem::Unmount, and closes its
// control socket last: the socket no longer answering is the signal that
// the pool is exported. The pool's datasets mounted on their own beside it
// (dataset_mounts.h) are unmounted first, by its daemon; a dataset mount
// alone is unmounted the same way, and its socket goes once it has ended.
#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "command.h"
#include "control.h"
#include "dataset_request.h"
#include "dead_mount.h"
#include "mount_table.h"
#include "pool_registry.h"

namespace poolfs::daemon {
namespace {

struct UnmountArgs {
  std::string mountpoint;
  bool lazy = false;
  double timeout_s = 600;
};

bool DaemonAnswers(const std::string& mp) { return ControlCall(mp, "ping").ok(); }

int RunUnmount(const UnmountArgs& args) {
  auto target = ResolveMountTarget(args.mountpoint);
  if (!target.ok()) return ReportError("unmount", target.status());
  char buf[PATH_MAX];
  std::string mp;
  if (realpath(target->c_str(), buf) != nullptr) {
    mp = buf;
  } else if (errno == ENOTCONN) {  // a mount whose daemon is gone: unmount it all the same
    auto parent = CanonicalParentPath(*target);
    if (!parent.ok()) return ReportError("unmount", parent.status());
    mp = *parent;
  } else {
    return ReportError("unmount",
                       Status::NotFound("mount point " + *target + ": " + std::strerror(errno)));
  }
  auto mount = FindMountAt(mp);
  if (!mount.ok()) return ReportError("unmount", mount.status());
  if (!*mount) return ReportError("unmount", Status::InvalidArgument(mp + " is not mounted"));
  if ((*mount)->fstype != kPoolfsFsType) {
    return ReportError("unmount", Status::InvalidArgument(mp + " is not a poolfs mount (it is " +
                                                          (*mount)->fstype + ")"));
  }
  const bool answers = DaemonAnswers(mp);
  const bool wait = !args.lazy && answers;
  if (answers) {
    // The pool's datasets mounted on their own go first (a dataset
    // mount's daemon has none: it answers ok).
    auto reply = ControlCall(mp, args.lazy ? "unmount-datasets lazy" : "unmount-datasets");
    if (reply.ok() && !reply->starts_with("error: ")) {
      Status ds = DecodeStatus(*reply);
      if (!ds.ok()) return ReportError("unmount", ds.WithContext("a dataset mount of " + mp));
    }
  }
  Status st = UnmountPath(mp, args.lazy);
  if (!st.ok()) return ReportError("unmount", st);
  if (!wait) return kExitOk;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(args.timeout_s * 1000));
  while (DaemonAnswers(mp)) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "poolfs unmount: " << mp << " is unmounted, but its daemon has not finished "
                << "the final sync and export after " << args.timeout_s << " s\n";
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return kExitOk;
}

}  // namespace

Command AddUnmountCommand(CLI::App& parent) {
  auto args = std::make_shared<UnmountArgs>();
  CLI::App* app = parent.add_subcommand(
      "unmount",
      "Unmount a poolfs mount and wait until its daemon has synced and exported the pool");
  app->add_option("TARGET", args->mountpoint, "the pool's name, or where it is mounted")
      ->required();
  app->add_flag("-z,--lazy", args->lazy,
                "detach now even if busy; the daemon finishes once the last user leaves (no "
                "wait)");
  app->add_option("--timeout", args->timeout_s, "seconds to wait for the final sync and export")
      ->capture_default_str();
  return {app, [args] { return RunUnmount(*args); }};
}

}  // namespace poolfs::daemon
