#include "util/checksum.h"

#include <xxhash.h>

namespace poolfs::util {

Checksum128 Xxh3_128(const void* data, size_t len) {
  XXH128_hash_t h = XXH3_128bits(data, len);
  return Checksum128{h.low64, h.high64};
}

uint64_t Xxh3_64(const void* data, size_t len) { return XXH3_64bits(data, len); }

}  // namespace poolfs::util
