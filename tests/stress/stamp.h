// Stamped data for poolfs-stress: every byte a write puts in an object says
// where and when it came from.
//
// An object's bytes are cut into 64-byte chunks at offsets that are
// multiples of 64. A write (object, offset, length, txg, seq, fill) gives
// every chunk it touches a 64-byte image and copies the part of the image
// the write covers, so a partial chunk at either end of the write holds a
// slice of its image. An image starts with a header
//   "PFS1" | fill | 3 check bytes | object | chunk offset | txg | seq
// (little-endian, 40 bytes) and ends with 24 filler bytes: a hash of the
// header (kRandom, incompressible), or one repeated byte (kCompressible).
// A kZeros write writes zeros, which the zio layer stores as holes.
//
// So a chunk found in a block tells which object, offset, txg and operation
// (seq) wrote it: a misdirected or stale block shows up as a wrong stamp
// rather than as "different bytes".
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace poolfs::stress {

inline constexpr uint64_t kChunk = 64;

enum class Fill : uint8_t { kRandom = 0, kCompressible = 1, kZeros = 2 };
inline constexpr uint8_t kFillCount = 3;

struct WriteSpec {
  uint64_t object = 0;
  uint64_t off = 0;
  uint64_t len = 0;
  uint64_t txg = 0;
  uint64_t seq = 0;
  Fill fill = Fill::kRandom;
};

// Writes the bytes of `w` that fall in [from, from + n) (object offsets,
// inside [w.off, w.off + w.len)) into out[0, n).
void FillStamped(const WriteSpec& w, uint64_t from, uint64_t n, char* out);

// The whole of `w`'s data.
std::string StampedData(const WriteSpec& w);

// A short description of the 64-byte-aligned chunk `chunk` (up to 64 bytes)
// found at object offset `chunk_off`: "stamp{obj 5 off 4096 txg 12 seq 88}",
// "zeros", a partial stamp, or the first bytes in hex.
std::string DescribeChunk(std::string_view chunk, uint64_t chunk_off);

// The bonus buffer operation `seq` sets on `object` (length 0 to the
// pool format's largest bonus).
std::string BonusBytes(uint64_t object, uint64_t seq, uint64_t len);

}  // namespace poolfs::stress
