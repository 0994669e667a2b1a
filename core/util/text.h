// Numbers in error messages and reports: the one spelling of each.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace poolfs::util {

// "0x1f": a block address, a magic number, a checksum word.
std::string Hex(uint64_t v);
// "0x000000000000001f": a GUID, always 16 digits.
std::string HexPadded(uint64_t v);

}  // namespace poolfs::util
