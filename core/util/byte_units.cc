#include "util/byte_units.h"

#include <cinttypes>
#include <cstdio>

namespace poolfs::util {

namespace {
constexpr char kUnits[] = "KMGTPE";

int UnitShift(char c) {
  for (int i = 0; kUnits[i] != 0; i++)
    if (c == kUnits[i] || c == kUnits[i] + ('a' - 'A')) return 10 * (i + 1);
  return -1;
}
}  // namespace

Result<uint64_t> ParseBytes(std::string_view text) {
  size_t i = 0;
  uint64_t whole = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; i++) {
    const uint64_t d = uint64_t(text[i] - '0');
    if (whole > (UINT64_MAX - d) / 10) return Status::InvalidArgument("too large");
    whole = whole * 10 + d;
    digits = true;
  }
  // The fraction, as a numerator over a power of ten (at most 9 digits).
  uint64_t frac = 0, scale = 1;
  bool has_frac = false;
  if (i < text.size() && text[i] == '.') {
    has_frac = true;
    for (i++; i < text.size() && text[i] >= '0' && text[i] <= '9'; i++) {
      if (scale >= 1000000000) return Status::InvalidArgument("too many decimals");
      frac = frac * 10 + uint64_t(text[i] - '0');
      scale *= 10;
      digits = true;
    }
  }
  if (!digits) return Status::InvalidArgument("not a number of bytes");
  while (i < text.size() && text[i] == ' ') i++;
  const std::string_view unit = text.substr(i);
  int shift = 0;
  if (!unit.empty()) {
    shift = UnitShift(unit[0]);
    const std::string_view rest = unit.substr(1);
    const bool suffix_ok =
        rest.empty() || rest == "B" || rest == "b" || rest == "iB" || rest == "ib";
    if (unit == "B" || unit == "b") {
      shift = 0;
    } else if (shift < 0 || !suffix_ok || rest == "B" || rest == "b") {
      // "KB" and the like are refused: 1000 to some readers, 1024 to others.
      return Status::InvalidArgument("unknown unit \"" + std::string(unit) +
                                     "\" (use K, M, G, T, P, E or KiB, MiB, ...)");
    }
  }
  if (has_frac && shift == 0) return Status::InvalidArgument("a fraction of a byte");
  if (shift > 0 && whole > (UINT64_MAX >> shift)) return Status::InvalidArgument("too large");
  const uint64_t bytes = whole << shift;
  // frac / scale of a unit, rounded down; scale <= 10^9 and frac < scale,
  // so frac << shift fits for shift <= 30, and is split above that.
  uint64_t extra = 0;
  if (frac != 0) {
    if (shift <= 30) {
      extra = (frac << shift) / scale;
    } else {
      extra = ((frac << 30) / scale) << (shift - 30);
    }
  }
  if (bytes > UINT64_MAX - extra) return Status::InvalidArgument("too large");
  return bytes + extra;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes);
  int u = 0;
  while (u + 1 < 6 && (bytes >> (10 * (u + 2))) != 0) u++;
  const int shift = 10 * (u + 1);
  char buf[64];
  if ((bytes & ((uint64_t{1} << shift) - 1)) == 0)
    std::snprintf(buf, sizeof buf, "%" PRIu64 "%c", bytes >> shift, kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.2f%c", double(bytes) / double(uint64_t{1} << shift),
                  kUnits[u]);
  return buf;
}

}  // namespace poolfs::util
