// Helpers shared by the subcommands: error reporting and size parsing.
#include "command.h"

#include <cctype>
#include <iostream>
#include <limits>
#include <string>

namespace poolfs::daemon {

int ReportError(std::string_view command, const Status& st) {
  std::cerr << "poolfs " << command << ": " << st.message() << "\n";
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kBusy:
    case StatusCode::kPermissionDenied: return kExitUsage;
    default: return kExitFailure;
  }
}

Result<uint64_t> ParseSize(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("bad size '" + std::string(text) + "': " + why +
                                   " (examples: 20G, 512M, 1T, 1048576)");
  };
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t digit = uint64_t(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - digit) / 10) return bad("too large");
    n = n * 10 + digit;
    i++;
  }
  if (i == 0) return bad("it must start with a whole number");
  std::string suffix;
  for (; i < text.size(); i++) suffix += char(std::toupper(static_cast<unsigned char>(text[i])));
  int shift = 0;
  if (!suffix.empty() && suffix != "B") {
    static constexpr std::string_view kUnits = "KMGTPE";
    const size_t unit = kUnits.find(suffix[0]);
    const std::string_view rest = std::string_view(suffix).substr(1);
    if (unit == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "IB"))
      return bad("unknown unit '" + std::string(text.substr(text.size() - suffix.size())) + "'");
    shift = 10 * int(unit + 1);
  }
  if (n == 0) return bad("it must be more than zero");
  if (n > (std::numeric_limits<uint64_t>::max() >> shift)) return bad("too large");
  return n << shift;
}

}  // namespace poolfs::daemon
