// libFuzzer target for the uberblock decoder (core/vdev/uberblock.h).
//
// Input: [mode byte][slot bytes...]. Mode bit 0: when the slot is at least
// 1 KiB, recompute its checksum first so that inputs reach the version and
// field checks behind it.
//
// Properties checked (a violation aborts): decoding never crashes; it fails
// only with NotFound (an all-zero slot), Corruption, or NotSupported (a
// format version outside 1..2 with a valid checksum); an uberblock that
// decodes (of either version: it is in the input) re-encodes to one that
// decodes to the same value, version included.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/checksum.h"
#include "util/endian.h"
#include "vdev/uberblock.h"

namespace {

using namespace poolfs::core::vdev;
using poolfs::Result;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "uberblock_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::vector<uint8_t> slot(data + 1, data + size);
  if ((mode & 1) && slot.size() >= kUberblockSlotSize) {
    poolfs::util::Checksum128 sum = poolfs::util::Xxh3_128(slot.data(), 1008);
    poolfs::util::PutLE64(&slot[1008], sum.lo);
    poolfs::util::PutLE64(&slot[1016], sum.hi);
  }
  Result<Uberblock> ub = DecodeUberblock(slot.data(), slot.size());
  if (!ub.ok()) {
    StatusCode c = ub.status().code();
    if (c != StatusCode::kCorruption && c != StatusCode::kNotSupported &&
        c != StatusCode::kNotFound) {
      Fail("unexpected status", ub.status().ToString());
    }
    return 0;
  }
  UberblockBytes again = EncodeUberblock(*ub);
  Result<Uberblock> back = DecodeUberblock(again.data(), again.size());
  if (!back.ok()) Fail("re-encoded uberblock does not decode", back.status().ToString());
  if (!(*back == *ub)) Fail("re-encoded uberblock", "decodes to a different value");
  return 0;
}
