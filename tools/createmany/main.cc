// build/bin/createmany: Lustre's createmany, with threads. See
// createmany_options.h for the command line and create_runner.h for how the
// run is timed and split between threads.
//
// Output: progress lines, then "total: N creates in S seconds: R
// creates/second" on stdout; each failure "createmany: open(DIR/f3): ... (errno
// N)" on stderr. Exit code 0 when every operation succeeded, 1 when any
// failed (or the setup did), 2 for bad arguments.
#include <cstdio>
#include <string>
#include <vector>

#include "create_runner.h"
#include "createmany_options.h"

int main(int argc, char** argv) {
  using namespace poolfs::createmany;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string prog = "createmany";
  auto options = ParseArgs(args);
  if (!options.ok()) {
    std::fprintf(stderr, "%s: %s\n%s", prog.c_str(), options.status().message().c_str(),
                 Usage(prog).c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(Usage(prog).c_str(), stdout);
    return 0;
  }
  auto report = RunCreatemany(*options, stdout);
  if (!report.ok()) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), report.status().message().c_str());
    return 1;
  }
  for (const std::string& error : report->errors) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), error.c_str());
  }
  std::printf("%s\n", TotalLine(*options, *report).c_str());
  return report->ok() ? 0 : 1;
}
