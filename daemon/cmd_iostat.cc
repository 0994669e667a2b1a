// `poolfs iostat MOUNTPOINT [INTERVAL [COUNT]]`: sync and I/O activity of a
// mounted pool, one line per interval, as `zpool iostat` prints it.
//
// Each sample is an "iostat" control request (live_config.h's
// RenderIostatCounters): the daemon keeps cumulative counters since the
// mount, and this client differences consecutive samples (IostatLine).
// Without INTERVAL it prints one line, the totals since the mount; with it
// (or with --watch, which means an INTERVAL of 1 s), a header and then a
// line every INTERVAL seconds, COUNT lines or until interrupted. The first interval line covers the
// first interval after the command starts, not the time since the mount.
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "command.h"
#include "control.h"
#include "live_config.h"
#include "pool_registry.h"

namespace poolfs::daemon {

namespace {

struct IostatArgs {
  std::string mountpoint;
  double interval = 0;  // 0: one line since the mount
  uint64_t count = 0;   // 0: until interrupted
  bool watch = false;   // --watch: INTERVAL 1 when none is given
};

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Result<IostatSample> Sample(const std::string& mountpoint) {
  POOLFS_ASSIGN_OR_RETURN(std::string reply, ControlCall(mountpoint, "iostat"));
  if (reply.starts_with("error: ")) return Status::IOError(mountpoint + ": " + reply.substr(7));
  POOLFS_ASSIGN_OR_RETURN(IostatSample s, ParseIostatCounters(reply));
  s.time_s = NowSeconds();
  return s;
}

int RunIostat(IostatArgs args) {
  if (args.watch && args.interval == 0) args.interval = 1;
  if (args.interval < 0)
    return ReportError("iostat", Status::InvalidArgument("INTERVAL must be positive"));
  auto target = ResolveMountTarget(args.mountpoint);
  if (!target.ok()) return ReportError("iostat", target.status());
  args.mountpoint = *target;
  auto first = Sample(args.mountpoint);
  if (!first.ok()) return ReportError("iostat", first.status());
  std::cout << IostatHeader();
  if (args.interval == 0) {
    std::cout << IostatLine(IostatSample(), *first) << std::flush;
    return kExitOk;
  }
  IostatSample prev = *first;
  for (uint64_t n = 0; args.count == 0 || n < args.count; n++) {
    std::this_thread::sleep_for(std::chrono::duration<double>(args.interval));
    auto cur = Sample(args.mountpoint);
    if (!cur.ok()) return ReportError("iostat", cur.status());
    std::cout << IostatLine(prev, *cur) << std::flush;
    prev = std::move(cur).value();
  }
  return kExitOk;
}

}  // namespace

Command AddIostatCommand(CLI::App& parent) {
  auto args = std::make_shared<IostatArgs>();
  CLI::App* app = parent.add_subcommand(
      "iostat",
      "Show a mounted pool's txg syncs and I/O per interval: txgs synced, bytes and blocks "
      "written and read, creates and removes, mean and max sync time");
  app->add_option("TARGET", args->mountpoint, "the pool's name, or where it is mounted")
      ->required();
  app->add_option("INTERVAL", args->interval,
                  "seconds between lines; without it, one line since the mount");
  app->add_option("COUNT", args->count, "lines to print (default: until interrupted)");
  app->add_flag("-w,--watch", args->watch, "a line every second (INTERVAL 1) until interrupted");
  return {app, [args] { return RunIostat(*args); }};
}

}  // namespace poolfs::daemon
