// Byte counts as dataset properties take them: "131072", "128K", "1.5G",
// "2MiB". Units are binary (K = 1024, M, G, T, P, E), letters
// case-insensitive, with an optional "B" or "iB" after the letter; a
// fraction is allowed with a unit and rounds down to a whole byte. The
// config layer has its own, stricter parser (config/units.h: whole numbers
// only) for its file; the core cannot use it and keeps this small one.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::util {

// The bytes `text` names, or InvalidArgument saying what is wrong ("not a
// number", "unknown unit \"KB\"", "too large"); the message does not repeat
// `text`.
Result<uint64_t> ParseBytes(std::string_view text);

// `bytes` for people: "0", "512", "128K", "1.50G" (two decimals, binary
// units) — exact below 1 KiB and for whole multiples of a unit.
std::string FormatBytes(uint64_t bytes);

}  // namespace poolfs::util
