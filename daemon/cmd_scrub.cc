// `poolfs scrub POOL|MOUNTPOINT` and `poolfs scrub -s POOL|MOUNTPOINT`:
// start or stop the scrub of a mounted pool through its daemon's control
// socket (control.h, scrub_request.h). The scrub runs in the daemon, in
// the background; `poolfs status` shows how far it has got and what it
// found.
#include <iostream>
#include <memory>
#include <string>

#include "command.h"
#include "control.h"
#include "dataset_request.h"
#include "pool_registry.h"
#include "scrub_request.h"

namespace poolfs::daemon {

namespace {

struct ScrubArgs {
  std::string target;
  bool stop = false;
};

int RunScrub(const ScrubArgs& args) {
  auto resolved = ResolveMountTarget(args.target);
  if (!resolved.ok()) return ReportError("scrub", resolved.status());
  const std::string& target = *resolved;
  const ScrubAction action = args.stop ? ScrubAction::kStop : ScrubAction::kStart;
  auto reply = ControlCall(target, EncodeScrubRequest(action));
  if (!reply.ok()) {
    if (reply.status().IsNotFound())
      return ReportError(
          "scrub",
          Status::NotFound(args.target + ": no mounted pool by that name or mount point (poolfs "
                                         "mount POOLFILE MOUNTPOINT mounts one)"));
    return ReportError("scrub", reply.status());
  }
  if (reply->starts_with("error: ")) {
    std::cerr << "poolfs scrub: " << target << ": " << reply->substr(7);
    if (!reply->ends_with("\n")) std::cerr << "\n";
    return kExitFailure;
  }
  const Status st = DecodeStatus(*reply);
  if (!st.ok()) return ReportError("scrub", Status(st.code(), args.target + ": " + st.message()));
  if (args.stop)
    std::cout << args.target << ": scrub stopped (`poolfs status " << args.target
              << "` shows what it found)\n";
  else
    std::cout << args.target << ": scrub started (`poolfs status " << args.target
              << "` shows its progress)\n";
  return kExitOk;
}

}  // namespace

Command AddScrubCommand(CLI::App& parent) {
  auto args = std::make_shared<ScrubArgs>();
  CLI::App* app = parent.add_subcommand(
      "scrub",
      "Read and verify every copy of every block of a mounted pool in the background, rewrite "
      "bad copies from good ones, and list the files whose data no copy holds intact "
      "(`poolfs status` shows its progress)");
  app->add_option("TARGET", args->target, "the mounted pool's name, or where it is mounted")
      ->required();
  app->add_flag("-s,--stop", args->stop, "stop the running scrub (what it found is kept)");
  return {app, [args] { return RunScrub(*args); }};
}

}  // namespace poolfs::daemon
