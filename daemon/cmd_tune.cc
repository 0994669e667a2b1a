// `poolfs tune MOUNTPOINT KEY=VALUE...` and `poolfs tune MOUNTPOINT --reload`:
// change tunables of a mounted pool through its daemon's control socket
// (control.h, live_config.h). Live tunables change at once; at-mount ones
// are accepted and wait for the next mount (the daemon says so). Each
// assignment is checked here first, so a typo is reported (with the nearest
// name) even when nothing is mounted, and a bad one among several applies
// none.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "config/config.h"
#include "control.h"
#include "pool_registry.h"

namespace poolfs::daemon {

namespace {

struct TuneArgs {
  std::string mountpoint;
  std::vector<std::string> assignments;
  bool reload = false;
};

// Sends one request; prints the daemon's notes. Returns the exit code.
int Send(const TuneArgs& args, const std::string& request, const std::string& what) {
  auto reply = ControlCall(args.mountpoint, request);
  if (!reply.ok()) return ReportError("tune", reply.status());
  if (reply->starts_with("error: ")) {
    std::cerr << "poolfs tune: " << args.mountpoint << ": " << reply->substr(7);
    if (!reply->ends_with("\n")) std::cerr << "\n";
    return kExitUsage;
  }
  const std::string note = reply->starts_with("ok\n") ? reply->substr(3) : *reply;
  if (note.empty())
    std::cout << args.mountpoint << ": " << what << "\n";
  else
    std::cout << args.mountpoint << ": " << note << (note.ends_with("\n") ? "" : "\n");
  return kExitOk;
}

int RunTune(TuneArgs args) {
  if (args.assignments.empty() && !args.reload)
    return ReportError(
        "tune", Status::InvalidArgument("nothing to do: give KEY=VALUE (see `poolfs tunables`) or "
                                        "--reload"));
  auto target = ResolveMountTarget(args.mountpoint);
  if (!target.ok()) return ReportError("tune", target.status());
  args.mountpoint = *target;
  for (const std::string& a : args.assignments) {
    auto checked = config::ApplyAssignment(config::Config(), a);
    if (!checked.ok()) return ReportError("tune", checked.status());
  }
  if (args.reload) {
    const int rc = Send(args, "reload", "config file reloaded");
    if (rc != kExitOk) return rc;
  }
  for (const std::string& a : args.assignments) {
    const int rc = Send(args, "tune " + a, a + " (in effect)");
    if (rc != kExitOk) return rc;
  }
  return kExitOk;
}

}  // namespace

Command AddTuneCommand(CLI::App& parent) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* app = parent.add_subcommand(
      "tune",
      "Change tunables of a mounted pool: live ones at once, the others at the next mount "
      "(not saved: put them in the config file to keep them)");
  app->add_option("TARGET", args->mountpoint, "the pool's name, or where it is mounted")
      ->required();
  app->add_option("KEY=VALUE", args->assignments,
                  "e.g. txg.timeout_ms=1000 (`poolfs tunables` lists the keys)");
  app->add_flag("--reload", args->reload,
                "re-read the config file first, as SIGHUP does (a bad file changes nothing)");
  return {app, [args] { return RunTune(*args); }};
}

}  // namespace poolfs::daemon
