// libFuzzer target for the block pointer decoder and the zio read pipeline
// (core/zio/block_ptr.h, core/zio/zio.h).
//
// Input: [64-byte BlockPtrPhys][mode byte][stored bytes...] (a shorter input
// is zero-padded to 64 bytes). Mode bit 0: relocate the decoded pointer to
// vdev 0 at the start of the allocatable area, where the stored bytes are
// put, so that reads reach the checksum. Mode bit 1: also replace its
// checksum with the XXH3-128 of the stored bytes, so that reads reach the
// decompressor with arbitrary bytes.
//
// Properties checked (a violation aborts):
//   - decoding never crashes and fails only with Corruption prefixed by the
//     given location; a pointer that decodes re-encodes to the same 64 bytes;
//   - Read of any decoded pointer over a memory device never crashes; it
//     returns exactly lsize bytes (the stored bytes themselves when
//     uncompressed, zeros for a hole) or Corruption, never another status;
//   - a read that fails to verify a block on the device bumps that vdev's
//     checksum_errors by exactly one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "util/checksum.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"
#include "zio/block_ptr.h"
#include "zio/zio.h"

namespace {

using namespace poolfs::core;
using poolfs::Result;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "block_ptr_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// A read-only pipeline over one minimum-size memory vdev (4 MiB allocatable).
struct Reader {
  vdev::MemoryDevice dev{vdev::kMinVdevSize, "fuzz"};
  zio::Zio zio{{{&dev, 12}}, nullptr};
  const uint64_t area = vdev::kMinVdevSize - vdev::kFrontReserved - vdev::kBackReserved;
};

Reader& TheReader() {
  static Reader* r = new Reader();  // never destroyed: libFuzzer may exit anywhere
  return *r;
}

void CheckRead(const zio::BlockPtr& bp, const std::string& stored, bool on_device) {
  Reader& r = TheReader();
  const uint64_t errors_before = r.zio.checksum_errors(0);
  Result<std::string> got = r.zio.Read(bp);
  const uint64_t errors = r.zio.checksum_errors(0) - errors_before;
  if (got.ok()) {
    if (got->size() != bp.lsize) Fail("read returned the wrong length", bp.ToString());
    if (bp.IsHole() && got->find_first_not_of('\0') != std::string::npos)
      Fail("a hole read as nonzero bytes", bp.ToString());
    if (!bp.IsHole() && !bp.IsGang() && bp.compression == poolfs::util::Compression::kOff &&
        std::memcmp(got->data(), stored.data(), std::min<size_t>(bp.psize, stored.size())) != 0)
      Fail("an uncompressed block read as other bytes than stored", bp.ToString());
    if (errors != 0) Fail("a good read counted a checksum error", bp.ToString());
    return;
  }
  if (got.status().code() != StatusCode::kCorruption)
    Fail("read failed with a status other than Corruption", got.status().ToString());
  // A gang block's header is verified on the device too (zio/gang.h).
  const bool verify_failure = got.status().message().find("checksum") != std::string::npos ||
                              got.status().message().find("gang header") != std::string::npos;
  if (errors != (verify_failure && on_device ? 1u : 0u))
    Fail("checksum_errors moved by the wrong amount", got.status().ToString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t raw[zio::kBlockPtrSize] = {};
  std::memcpy(raw, data, std::min(size, zio::kBlockPtrSize));
  Result<zio::BlockPtr> bp = zio::DecodeBlockPtr(raw, "fuzz");
  if (!bp.ok()) {
    if (!bp.status().IsCorruption())
      Fail("decode failed without Corruption", bp.status().ToString());
    if (bp.status().message().rfind("fuzz: block pointer ", 0) != 0)
      Fail("decode failure without its location", bp.status().ToString());
    return 0;
  }
  uint8_t again[zio::kBlockPtrSize];
  zio::EncodeBlockPtr(*bp, again);
  if (std::memcmp(raw, again, sizeof raw) != 0) Fail("re-encoding differs", bp->ToString());

  const uint8_t mode = size > zio::kBlockPtrSize ? data[zio::kBlockPtrSize] : 0;
  std::string stored;
  if (size > zio::kBlockPtrSize + 1)
    stored.assign(reinterpret_cast<const char*>(data) + zio::kBlockPtrSize + 1,
                  size - zio::kBlockPtrSize - 1);
  Reader& r = TheReader();

  zio::BlockPtr b = *bp;
  if ((mode & 1) && !b.IsHole() && b.dva.size <= r.area) {
    b.dva.vdev = 0;
    b.dva.offset = vdev::kFrontReserved;
    // The block's stored bytes: the input, then zeros up to asize.
    stored.resize(std::max<size_t>(stored.size(), b.dva.size), '\0');
    stored.resize(b.dva.size);
    if (!r.dev.Write(b.dva.offset, stored.data(), stored.size()).ok())
      Fail("memory device write", b.ToString());
    if (mode & 2) b.checksum = poolfs::util::Xxh3_128(stored.data(), b.psize);
  }
  const bool on_device =
      !b.IsHole() && b.dva.vdev == 0 && b.dva.offset + b.dva.size <= vdev::kFrontReserved + r.area;
  CheckRead(b, stored, on_device);
  return 0;
}
