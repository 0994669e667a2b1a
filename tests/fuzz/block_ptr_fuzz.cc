// libFuzzer target for the block pointer decoder and the zio read pipeline
// (core/zio/block_ptr.h, core/zio/zio.h), in both on-disk formats.
//
// Input: [format byte][BlockPtrPhys][mode byte][stored bytes...]. Format byte
// bit 0 clear: format 1, the pointer is 64 bytes; set: format 2, 128 bytes
// (the other bits are ignored; an empty input is format 1). A shorter input
// is zero-padded to the pointer's size. Mode bit 0: relocate the decoded
// pointer's copies to vdev 0, copy c at the start of the allocatable area
// plus c * asize, where the stored bytes are put (zero-padded or cut to
// asize), so that reads reach the checksum. Mode bit 1: also replace its
// checksum with the XXH3-128 of the stored bytes, so that reads reach the
// decompressor with arbitrary bytes. Mode bits 2, 3, 4 (with bit 0): copy 0,
// 1, 2 is put on the device with its first byte inverted, so that reads fall
// back to the next copy.
//
// Properties checked (a violation aborts):
//   - decoding never crashes and fails only with Corruption prefixed by the
//     given location; it is deterministic; a pointer that decodes is valid
//     (ValidateBlockPtr), names no more copies than its format holds, and
//     re-encodes to the same bytes;
//   - copies round-trip: in format 2 each copy is the DVA slot it was read
//     from (an absent one all zero), and the pointer with its copies
//     rotated or with its last copies dropped encodes and decodes to
//     itself; a pointer of one copy means the same in both formats (it
//     encodes in the other one and decodes to the same value);
//   - Read of any decoded pointer over a memory device never crashes; it
//     returns exactly lsize bytes or Corruption, never another status; a
//     hole reads as zeros; a block that is not a gang reads as a reference
//     reader says: the bytes of the first copy on the device whose stored
//     bytes verify (checksum, then decompression), or Corruption when none
//     does;
//   - each copy that is on the device and fails to verify before the read
//     succeeds (every one when it fails) bumps vdev 0's checksum_errors by
//     exactly one; a gang block bumps it by one when its read fails to
//     verify on the device.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "util/checksum.h"
#include "util/compress.h"
#include "util/endian.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"
#include "zio/block_ptr.h"
#include "zio/zio.h"

namespace {

using namespace poolfs::core;
using poolfs::Result;
using poolfs::StatusCode;
using zio::BpFormat;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "block_ptr_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// A read-only pipeline per format over one minimum-size memory vdev (4 MiB
// allocatable).
struct Reader {
  vdev::MemoryDevice dev{vdev::kMinVdevSize, "fuzz"};
  zio::Zio zio1{{{&dev, 12}}, nullptr, BpFormat::kV1};
  zio::Zio zio2{{{&dev, 12}}, nullptr, BpFormat::kV2};
  const uint64_t area = vdev::kMinVdevSize - vdev::kFrontReserved - vdev::kBackReserved;

  zio::Zio& For(BpFormat f) { return f == BpFormat::kV1 ? zio1 : zio2; }
  // Whether extent d lies in the allocatable area of vdev 0 (Zio reads it).
  bool OnDevice(const space::Dva& d) const {
    const uint64_t end = vdev::kFrontReserved + area;
    return d.vdev == 0 && d.offset >= vdev::kFrontReserved && d.offset <= end &&
           d.size <= end - d.offset;
  }
};

Reader& TheReader() {
  static Reader* r = new Reader();  // never destroyed: libFuzzer may exit anywhere
  return *r;
}

// What the read of a stored block that is not a gang should give, worked
// out from the device's bytes: see the top of the file.
struct Expected {
  bool ok = false;
  std::string bytes;  // when ok
  uint64_t checksum_errors = 0;
};

Expected ReferenceRead(const zio::BlockPtr& bp) {
  Reader& r = TheReader();
  Expected e;
  for (int c = 0; c < bp.copies(); c++) {
    const space::Dva& d = bp.copy(c);
    if (!r.OnDevice(d)) continue;  // refused before any read: not a checksum error
    std::string stored(bp.psize, '\0');
    if (!r.dev.Read(d.offset, stored.data(), stored.size()).ok())
      Fail("memory device read", bp.ToString());
    if (poolfs::util::Xxh3_128(stored.data(), stored.size()) != bp.checksum) {
      e.checksum_errors++;
      continue;
    }
    std::string out(bp.lsize, '\0');
    if (bp.compression == poolfs::util::Compression::kOff) {
      out = stored;
    } else if (!poolfs::util::Decompress(bp.compression, stored.data(), stored.size(), out.data(),
                                         out.size())
                    .ok()) {
      e.checksum_errors++;
      continue;
    }
    e.ok = true;
    e.bytes = std::move(out);
    return e;
  }
  return e;
}

void CheckRead(const zio::BlockPtr& bp, BpFormat format, bool gang_on_device) {
  Reader& r = TheReader();
  zio::Zio& z = r.For(format);
  const uint64_t errors_before = z.checksum_errors(0);
  const Expected want = bp.IsHole() || bp.IsGang() ? Expected{} : ReferenceRead(bp);
  Result<std::string> got = z.Read(bp);
  const uint64_t errors = z.checksum_errors(0) - errors_before;
  if (got.ok()) {
    if (got->size() != bp.lsize) Fail("read returned the wrong length", bp.ToString());
    if (bp.IsHole() && got->find_first_not_of('\0') != std::string::npos)
      Fail("a hole read as nonzero bytes", bp.ToString());
  } else if (got.status().code() != StatusCode::kCorruption) {
    Fail("read failed with a status other than Corruption", got.status().ToString());
  }
  if (bp.IsHole()) {
    if (!got.ok()) Fail("a hole did not read", got.status().ToString());
    if (errors != 0) Fail("a hole counted a checksum error", bp.ToString());
    return;
  }
  if (bp.IsGang()) {
    // A gang block's header is verified on the device too (zio/gang.h).
    const bool verify_failure =
        !got.ok() && (got.status().message().find("checksum") != std::string::npos ||
                      got.status().message().find("gang header") != std::string::npos);
    if (errors != (verify_failure && gang_on_device ? 1u : 0u))
      Fail("checksum_errors moved by the wrong amount", bp.ToString());
    return;
  }
  if (got.ok() != want.ok)
    Fail(got.ok() ? "a block read though no copy verifies" : "a block with a good copy failed",
         bp.ToString() + (got.ok() ? std::string() : ": " + got.status().ToString()));
  if (got.ok() && *got != want.bytes)
    Fail("a block read as other bytes than its first good copy", bp.ToString());
  if (errors != want.checksum_errors)
    Fail("checksum_errors moved by the wrong amount",
         bp.ToString() + ": " + std::to_string(errors) + " for " +
             std::to_string(want.checksum_errors) + " bad copies");
}

// Encodes bp in `format` and decodes it again: it must come back unchanged.
void CheckRoundTrip(const zio::BlockPtr& bp, BpFormat format, const char* what) {
  if (!zio::ValidateBlockPtr(bp).ok()) Fail(what, "not valid: " + bp.ToString());
  uint8_t buf[zio::kBlockPtrSizeV2];
  zio::EncodeBlockPtr(bp, buf, format);
  Result<zio::BlockPtr> back = zio::DecodeBlockPtr(buf, "", format);
  if (!back.ok()) Fail(what, back.status().ToString());
  if (!(*back == bp)) Fail(what, bp.ToString() + " came back as " + back->ToString());
}

// The copy checks of the top of the file.
void CheckCopies(const zio::BlockPtr& bp, const uint8_t* raw, BpFormat format) {
  if (bp.copies() > zio::MaxCopies(format))
    Fail("decoded more copies than the format holds", bp.ToString());
  if (format == BpFormat::kV2) {
    for (int i = 0; i < zio::kMaxCopies; i++) {
      const uint8_t* slot = raw + offsetof(zio::BlockPtrPhysV2, dva) + i * sizeof(zio::DvaPhys);
      space::Dva want{};
      if (i < bp.copies()) want = {bp.copy(i).vdev, bp.copy(i).offset, 0};
      const uint32_t vdev = poolfs::util::GetLE32(slot + offsetof(zio::DvaPhys, vdev));
      const uint64_t offset = poolfs::util::GetLE64(slot + offsetof(zio::DvaPhys, offset));
      if (vdev != want.vdev || offset != want.offset)
        Fail("a copy is not the DVA it was read from", std::to_string(i) + ": " + bp.ToString());
      if (i < bp.copies() && bp.copy(i).size != bp.dva.size)
        Fail("a copy of another size", bp.ToString());
    }
    for (int n = 1; n < bp.copies(); n++) {
      zio::BlockPtr fewer = bp;
      for (int i = n; i < zio::kMaxCopies; i++) fewer.ditto[i - 1] = space::Dva{};
      CheckRoundTrip(fewer, format, "a pointer with copies dropped");
    }
    if (bp.copies() > 1) {
      zio::BlockPtr rotated = bp;
      const int n = bp.copies();
      for (int i = 0; i < n; i++) {
        const space::Dva& from = bp.copy((i + 1) % n);
        (i == 0 ? rotated.dva : rotated.ditto[i - 1]) = from;
      }
      CheckRoundTrip(rotated, format, "a pointer with its copies rotated");
    }
  }
  if (bp.copies() <= 1)
    CheckRoundTrip(bp, format == BpFormat::kV1 ? BpFormat::kV2 : BpFormat::kV1,
                   "a pointer of one copy in the other format");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const BpFormat format = size > 0 && (data[0] & 1) ? BpFormat::kV2 : BpFormat::kV1;
  if (size > 0) {
    data++;
    size--;
  }
  const size_t bp_size = zio::BlockPtrSize(format);
  uint8_t raw[zio::kBlockPtrSizeV2] = {};
  std::memcpy(raw, data, std::min(size, bp_size));
  Result<zio::BlockPtr> bp = zio::DecodeBlockPtr(raw, "fuzz", format);
  Result<zio::BlockPtr> again = zio::DecodeBlockPtr(raw, "fuzz", format);
  if (bp.ok() != again.ok() || (bp.ok() && !(*bp == *again)) ||
      (!bp.ok() && bp.status().message() != again.status().message()))
    Fail("decoding is not deterministic", bp.ok() ? bp->ToString() : bp.status().ToString());
  if (!bp.ok()) {
    if (!bp.status().IsCorruption())
      Fail("decode failed without Corruption", bp.status().ToString());
    if (bp.status().message().rfind("fuzz: block pointer ", 0) != 0)
      Fail("decode failure without its location", bp.status().ToString());
    return 0;
  }
  if (!zio::ValidateBlockPtr(*bp).ok()) Fail("decoded an invalid pointer", bp->ToString());
  uint8_t encoded[zio::kBlockPtrSizeV2] = {};
  zio::EncodeBlockPtr(*bp, encoded, format);
  if (std::memcmp(raw, encoded, bp_size) != 0) Fail("re-encoding differs", bp->ToString());
  CheckCopies(*bp, raw, format);

  const uint8_t mode = size > bp_size ? data[bp_size] : 0;
  std::string stored;
  if (size > bp_size + 1)
    stored.assign(reinterpret_cast<const char*>(data) + bp_size + 1, size - bp_size - 1);
  Reader& r = TheReader();

  zio::BlockPtr b = *bp;
  const int copies = b.copies();
  if ((mode & 1) && !b.IsHole() && copies * b.dva.size <= r.area) {
    // The block's stored bytes: the input, then zeros up to asize.
    stored.resize(std::max<size_t>(stored.size(), b.dva.size), '\0');
    stored.resize(b.dva.size);
    for (int c = 0; c < copies; c++) {
      space::Dva& d = c == 0 ? b.dva : b.ditto[c - 1];
      d.vdev = 0;
      d.offset = vdev::kFrontReserved + c * b.dva.size;
      std::string on_disk = stored;
      if (mode & (4 << c)) on_disk[0] = char(~on_disk[0]);
      if (!r.dev.Write(d.offset, on_disk.data(), on_disk.size()).ok())
        Fail("memory device write", b.ToString());
    }
    if (mode & 2) b.checksum = poolfs::util::Xxh3_128(stored.data(), b.psize);
  }
  CheckRead(b, format, r.OnDevice(b.dva));
  return 0;
}
