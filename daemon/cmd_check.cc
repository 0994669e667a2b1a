// `poolfs check [--rewind] POOLFILE...`: the offline verifier. Prints every problem,
// then a summary; exits 0 only for a healthy pool, 1 for damage (or a file
// that is not a pool), 2 for usage errors (see command.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "poolfs/pool_admin.h"

namespace poolfs::daemon {

namespace {
int RunCheck(const std::vector<std::string>& paths, const CheckOptions& options) {
  auto report = CheckPool(paths, options);
  if (!report.ok()) return ReportError("check", report.status());
  for (const CheckProblem& p : report->problems)
    std::cout << "problem: " << p.where << ": " << p.what << "\n";
  if (report->problems_omitted > 0)
    std::cout << "problem: ... and " << report->problems_omitted << " more not listed\n";
  for (const CheckProblem& w : report->warnings)
    std::cout << "warning: " << w.where << ": " << w.what << "\n";
  std::cout << report->Summary();
  return report->ok() ? kExitOk : kExitFailure;
}
}  // namespace

Command AddCheckCommand(CLI::App& parent) {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto options = std::make_shared<CheckOptions>();
  CLI::App* app = parent.add_subcommand(
      "check",
      "Verify an exported pool offline: every block's checksum, every structure, and space "
      "both ways (no block unallocated, referenced twice or leaked); never writes");
  app->add_option("POOLFILE", *paths, "all the pool's vdev files, in any order")->required();
  app->add_flag("--rewind", options->rewind,
                "check the txg poolfs mount -o ro,rewind would open: when the newest txg's tree "
                "does not verify, the newest older one (within two txgs) that does; the newer "
                "txgs' damage is then a warning, and the exit status is the older tree's");
  return {app, [paths, options] { return RunCheck(*paths, *options); }};
}

}  // namespace poolfs::daemon
