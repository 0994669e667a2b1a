// Helpers shared by the subcommands: the exit code of a Status, and error
// reporting.
#include "command.h"

#include <iostream>

namespace poolfs::daemon {

int ExitCodeFor(const Status& st) {
  switch (st.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kBusy:
    case StatusCode::kPermissionDenied: return kExitUsage;
    default: return kExitFailure;
  }
}

int ReportError(std::string_view command, const Status& st) {
  std::cerr << "poolfs " << command << ": " << st.message() << "\n";
  return ExitCodeFor(st);
}

}  // namespace poolfs::daemon
