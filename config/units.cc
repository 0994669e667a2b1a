#include "config/units.h"

#include <array>
#include <cctype>
#include <utility>

namespace poolfs::config {
namespace {

struct Unit {
  std::string_view name;  // lower case
  int shift;
};

constexpr std::array<Unit, 14> kUnits = {{
    {"", 0},
    {"b", 0},
    {"k", 10},
    {"kib", 10},
    {"m", 20},
    {"mib", 20},
    {"g", 30},
    {"gib", 30},
    {"t", 40},
    {"tib", 40},
    {"p", 50},
    {"pib", 50},
    {"e", 60},
    {"eib", 60},
}};

// The canonical spelling FormatSize writes for each shift.
constexpr std::array<std::pair<int, std::string_view>, 6> kFormatUnits = {{
    {60, "EiB"},
    {50, "PiB"},
    {40, "TiB"},
    {30, "GiB"},
    {20, "MiB"},
    {10, "KiB"},
}};

}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Result<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("no digits");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Status::InvalidArgument("not a whole number");
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return Status::InvalidArgument("too large");
    v = v * 10 + d;
  }
  return v;
}

Result<uint64_t> ParseSize(std::string_view text) {
  text = Trim(text);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') digits++;
  if (digits == 0) return Status::InvalidArgument("no number");
  if (digits < text.size() && (text[digits] == '.' || text[digits] == ',')) {
    return Status::InvalidArgument("only whole numbers (write \"1536MiB\", not \"1.5GiB\")");
  }
  POOLFS_ASSIGN_OR_RETURN(uint64_t number, ParseDecimal(text.substr(0, digits)));
  const std::string_view unit_text = Trim(text.substr(digits));
  std::string unit;
  for (char c : unit_text) unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  int shift = -1;
  for (const Unit& u : kUnits) {
    if (u.name == unit) shift = u.shift;
  }
  if (shift < 0) {
    if (unit.size() == 2 && unit[1] == 'b') {
      return Status::InvalidArgument("unit \"" + std::string(unit_text) +
                                     "\" is ambiguous (1000 or 1024?); write \"" +
                                     static_cast<char>(std::toupper(unit[0])) + "iB\"");
    }
    return Status::InvalidArgument("unknown unit \"" + std::string(unit_text) +
                                   "\" (accepted: B, K/KiB, M/MiB, G/GiB, T/TiB, P/PiB, E/EiB)");
  }
  if (shift > 0 && number > (UINT64_MAX >> shift)) {
    return Status::InvalidArgument("too large (at most 16EiB - 1)");
  }
  return number << shift;
}

std::string FormatSize(uint64_t bytes) {
  if (bytes == 0) return "0";
  for (const auto& [shift, name] : kFormatUnits) {
    const uint64_t unit = uint64_t{1} << shift;
    if (bytes % unit == 0) return std::to_string(bytes >> shift) + std::string(name);
  }
  return std::to_string(bytes);
}

}  // namespace poolfs::config
