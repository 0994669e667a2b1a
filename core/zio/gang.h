// Gang headers: the on-disk list of the pieces of a gang block.
//
// A gang block is a block stored in pieces because no contiguous extent of
// its size was free (see zio.h, "Gang blocks"). Its BlockPtr's DVA names the
// header; the header names the children, in order. The header is
// self-checking (it has its own checksum: its parent's checksum covers the
// block's stored bytes, not the header), so a damaged header is refused
// before any child is read or freed.
//
// Layout (little-endian; core/doc/on-disk-format.md 5.5 has the table):
//   0   8  magic "POOLGANG"
//   8   4  children n, 2 .. kMaxGangChildren
//   12  4  zero
//   16  16 XXH3-128 of bytes [32, 32 + 16 n), low half then high half
//   32  16 n  children: vdev u32, asize u32, offset u64
//   rest of the header extent: zeros
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/status.h"
#include "space/allocator.h"

namespace poolfs::core::zio {

inline constexpr uint64_t kGangMagic = 0x474e41474c4f4f50;  // "POOLGANG"
inline constexpr uint32_t kGangHeaderFixed = 32;
inline constexpr uint32_t kGangChildSize = 16;
// As many children as a 64 KiB header holds (kMaxGangHeaderSize).
inline constexpr uint32_t kMaxGangChildren = 4094;

// The bytes a header naming `children` needs before padding.
inline constexpr uint64_t GangHeaderBytes(size_t children) {
  return kGangHeaderFixed + kGangChildSize * children;
}

// Writes the header of `children` into `size` bytes (zero-padded). CHECKs
// 2 <= children <= kMaxGangChildren and that it fits.
std::string EncodeGangHeader(const std::vector<space::Dva>& children, size_t size);

// Decodes a header read from its extent. Corruption "<where>: gang header
// <what is wrong>" for a bad magic, count, checksum, nonzero padding, or a
// child with size 0 or an offset or size that is not a multiple of 512.
// Whether the children fit the vdevs and the block is for the caller
// (Zio::GangChildren).
Result<std::vector<space::Dva>> DecodeGangHeader(std::string_view bytes, std::string_view where);

}  // namespace poolfs::core::zio
