// libFuzzer target for the gang header decoder (core/zio/gang.h).
//
// Input: [mode byte][header bytes...]. Mode bit 0: before decoding, put the
// XXH3-128 of the children area (as the count field says it is) into the
// checksum field, so that the fuzzer reaches the checks after the checksum.
//
// Properties checked (a violation aborts):
//   - decoding never crashes and fails only with Corruption that starts
//     with the given location and says "gang header";
//   - a header that decodes names 2 .. kMaxGangChildren children, each a
//     nonzero multiple of 512 bytes at a multiple of 512, and re-encodes to
//     exactly the input bytes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "util/checksum.h"
#include "util/endian.h"
#include "zio/block_ptr.h"
#include "zio/gang.h"

namespace {

using namespace poolfs::core;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gang_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto* p = reinterpret_cast<uint8_t*>(bytes.data());
  if ((mode & 1) && bytes.size() >= zio::kGangHeaderFixed) {
    const uint64_t n = poolfs::util::GetLE32(p + 8);
    if (zio::GangHeaderBytes(n) <= bytes.size()) {
      const poolfs::util::Checksum128 sum =
          poolfs::util::Xxh3_128(p + zio::kGangHeaderFixed, zio::kGangChildSize * n);
      poolfs::util::PutLE64(p + 16, sum.lo);
      poolfs::util::PutLE64(p + 24, sum.hi);
    }
  }
  poolfs::Result<std::vector<space::Dva>> kids = zio::DecodeGangHeader(bytes, "fuzz");
  if (!kids.ok()) {
    if (!kids.status().IsCorruption()) Fail("failed without Corruption", kids.status().ToString());
    if (kids.status().message().rfind("fuzz: gang header ", 0) != 0)
      Fail("failure without its location", kids.status().ToString());
    return 0;
  }
  if (kids->size() < 2 || kids->size() > zio::kMaxGangChildren)
    Fail("decoded a bad child count", std::to_string(kids->size()));
  for (const space::Dva& k : *kids)
    if (k.size == 0 || k.size % zio::kMinSectorSize != 0 || k.offset % zio::kMinSectorSize != 0)
      Fail("decoded a bad child", std::to_string(k.offset) + " " + std::to_string(k.size));
  if (zio::EncodeGangHeader(*kids, bytes.size()) != bytes) Fail("re-encoding differs", "");
  return 0;
}
