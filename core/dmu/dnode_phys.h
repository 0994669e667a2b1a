// DnodePhys: the 512-byte on-disk description of one object, and ObjsetPhys,
// the block at the root of an object set.
//
// A dnode block is 16 KiB of 32 dnode slots (object id / 32 is the block, id
// % 32 the slot) stored as the data of the metadnode, object 0 of every
// object set. A free slot is all zeros. The layout, byte by byte, is in
// core/doc/on-disk-format.md.
//
//   DnodePhys (512 bytes, little-endian)
//     0  u8   type (ObjectType; 0 = free slot, then all 512 bytes are zero)
//     1  u8   nlevels: levels of the block tree (1: the block pointer is the
//             single data block; n: it is an indirect block n-1 levels up)
//     2  u8   compression of the object's data blocks (util::Compression)
//     3  u8   bonus type (owner-defined; 0 = none)
//     4  u16  bonus length (<= 384)
//     6  u16  reserved, zero
//     8  u32  data block size in bytes (a power of two, 512 B .. 1 MiB)
//     12 u32  reserved, zero
//     16 u64  length: the object's logical size in bytes
//     24 u64  generation: the txg that created the object (a received
//             object: the txg that created it on its sender)
//     32 u64  used: bytes allocated on disk for the object's blocks
//     40 24B  reserved, zero
//     64      block pointer (zio::BlockPtr): the top of the block tree, in
//             the pool's format (64 bytes in format 1, 128 in format 2)
//     128 or 192  bonus buffer to byte 512 (384 or 320 bytes; bytes past
//             the bonus length are zero)
//
// Indirect blocks are arrays of 2048 block pointers (128 KiB in format 1,
// 256 KiB in format 2); so nlevels = 1 + ceil(log2048(blocks)): 5 levels
// reach 2^44 blocks, enough for 2^48 objects in the metadnode and
// 2^50-byte files with 128 KiB records.
//
// Thread safety: values.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "zio/block_ptr.h"

namespace poolfs::core::dmu {

inline constexpr size_t kDnodeSize = 512;
inline constexpr size_t kDnodesPerBlock = 32;
inline constexpr size_t kDnodeBlockSize = kDnodeSize * kDnodesPerBlock;  // 16 KiB
inline constexpr size_t kMaxBonus = 384;        // the most of any format (format 1's)
inline constexpr uint32_t kIndirectShift = 11;  // 2048 block pointers per indirect block
inline constexpr uint64_t kFanout = uint64_t{1} << kIndirectShift;

// Where a dnode of `format` keeps its bonus buffer, and how long it may be.
inline constexpr size_t DnodeBonusOffset(zio::BpFormat format) {
  return 64 + zio::BlockPtrSize(format);
}
inline constexpr size_t MaxBonus(zio::BpFormat format) {
  return kDnodeSize - DnodeBonusOffset(format);
}
// The bytes of an indirect block: 2048 block pointers of `format`.
inline constexpr size_t IndirectBlockSize(zio::BpFormat format) {
  return kFanout * zio::BlockPtrSize(format);
}
inline constexpr uint8_t kMaxLevels = 6;
inline constexpr uint32_t kMinBlockSize = 512;
inline constexpr uint32_t kMaxBlockSize = 1 << 20;
inline constexpr uint64_t kMaxObjectId = (uint64_t{1} << 48) - 1;

enum class ObjectType : uint8_t {
  kNone = 0,           // a free slot
  kMetadnode = 1,      // object 0: the dnode blocks
  kPlain = 2,          // plain bytes (files' data, test objects)
  kDirectory = 3,      // a directory (zap), for the POSIX layer
  kSpaceMap = 4,       // a metaslab's space map (MOS)
  kPoolDirectory = 5,  // the MOS's table of datasets and space maps
  kZap = 6,            // a generic name -> value object
  kDeadlist = 7,       // block pointers of a deadlist bucket (MOS)
  kRefTable = 8,       // the block reference table (MOS; zio/block_ref_table.h)
};
inline constexpr uint8_t kMaxObjectType = 8;
std::string_view ObjectTypeName(ObjectType t);

// A decoded dnode.
struct DnodePhys {
  ObjectType type = ObjectType::kNone;
  uint8_t nlevels = 1;
  uint8_t compression = 0;
  uint8_t bonus_type = 0;
  uint32_t block_size = 0;
  uint64_t length = 0;
  uint64_t generation = 0;
  uint64_t used = 0;
  zio::BlockPtr bp;
  std::string bonus;  // at most MaxBonus(format) bytes
  bool free() const { return type == ObjectType::kNone; }
};

// Writes the 512-byte encoding of `d` in `format` (a free dnode: zeros) to
// `out`. CHECKs that the bonus and the pointer fit the format.
void EncodeDnode(const DnodePhys& d, uint8_t* out, zio::BpFormat format);
// Decodes 512 bytes of `format`. Refuses damage (an unknown type, a bad
// level count or block size, a bonus that overflows, nonzero reserved
// bytes, a free slot that is not all zeros, a bad block pointer) with
// Corruption prefixed by `where` ("object 17").
Result<DnodePhys> DecodeDnode(const uint8_t* in, std::string_view where, zio::BpFormat format);

// The root block of an object set.
//   0  u64 magic "PFSOBJST"    8 u32 version (2; 1 is read too)
//   12 u32 type (1 MOS, 2 dataset)
//   16 u64 next object id (every id at or above it is free)
//   24 u64 live objects
//   32 u64 referenced bytes: the allocated bytes (asize, gang children
//      included) of every block below this root block (the metadnode's
//      tree and every object's), the root block itself excluded
//   40 u64 logical bytes (lsize) of those blocks   48 u64 their stored bytes
//      (psize)   56 u64 reserved, zero   (version 1: 32..63 reserved, zero;
//      its totals are unknown, and ObjectSet::Open counts them by a walk)
//   64 512B the metadnode's DnodePhys   576 .. 1024 reserved, zero
inline constexpr uint64_t kObjsetMagic = 0x54534a424f534650ull;  // "PFSOBJST"
inline constexpr uint32_t kObjsetVersion = 2;
inline constexpr size_t kObjsetPhysSize = 1024;
enum class ObjsetType : uint32_t { kMos = 1, kDataset = 2 };

// The blocks below an object set's root block, summed (see above).
struct ObjsetSpace {
  uint64_t referenced = 0;
  uint64_t logical = 0;
  uint64_t physical = 0;
  bool operator==(const ObjsetSpace&) const = default;
};

struct ObjsetPhys {
  ObjsetType type = ObjsetType::kDataset;
  uint64_t next_object = 1;
  uint64_t live_objects = 0;
  // Decoded from a version 1 block: `space` is unknown (zeros).
  bool space_known = true;
  ObjsetSpace space;
  DnodePhys metadnode;
};

std::string EncodeObjset(const ObjsetPhys& o, zio::BpFormat format);
Result<ObjsetPhys> DecodeObjset(std::string_view in, std::string_view where, zio::BpFormat format);

}  // namespace poolfs::core::dmu
