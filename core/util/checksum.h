// Block checksums: XXH3-128 from libxxhash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolfs::util {

struct Checksum128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Checksum128&) const = default;
};

// Returns the XXH3-128 of [data, data+len).
Checksum128 Xxh3_128(const void* data, size_t len);

// Returns the 64-bit XXH3 of [data, data+len), for record-level checks.
uint64_t Xxh3_64(const void* data, size_t len);

}  // namespace poolfs::util
