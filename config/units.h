// Sizes as people write them: "16KiB", "512M", "1GiB", "4096".
//
// Units are binary, as in ZFS: K, KiB = 1024; M, MiB = 1024^2; G, GiB;
// T, TiB; P, PiB; E, EiB; B = bytes. Letters are case-insensitive and a
// space may separate the number from the unit. "KB", "MB", ... are refused
// rather than guessed: they mean 1000 to some readers and 1024 to others.
// Only whole numbers: "1.5GiB" is refused (write "1536MiB").
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::config {

// Returns the number of bytes `text` names, or InvalidArgument saying what
// is wrong with it ("unknown unit \"KB\"", "too large", ...). The message
// does not repeat `text`; callers add their own context.
Result<uint64_t> ParseSize(std::string_view text);

// Returns `bytes` in the largest unit that divides it exactly: "16KiB",
// "1GiB", "0", or plain digits when it is not a multiple of 1024 ("1000").
// ParseSize(FormatSize(x)) == x for every x.
std::string FormatSize(uint64_t bytes);

// Returns the unsigned decimal integer `text` spells (digits only, no sign
// or spaces), or InvalidArgument when it is not one or exceeds 2^64-1.
Result<uint64_t> ParseDecimal(std::string_view text);

// `s` without its leading and trailing spaces and tabs.
std::string_view Trim(std::string_view s);

}  // namespace poolfs::config
