// `poolfs check POOLFILE...`: the offline verifier. Prints every problem,
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
int RunCheck(const std::vector<std::string>& paths) {
  auto report = CheckPool(paths);
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
  CLI::App* app = parent.add_subcommand(
      "check",
      "Verify an exported pool offline: every block's checksum, every structure, and space "
      "both ways (no block unallocated, referenced twice or leaked); never writes");
  app->add_option("POOLFILE", *paths, "all the pool's vdev files, in any order")->required();
  return {app, [paths] { return RunCheck(*paths); }};
}

}  // namespace poolfs::daemon
