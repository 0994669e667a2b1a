// Block pointers: how one block of the pool's tree names another.
//
// A BlockPtr says where a block lives (its DVA: vdev, absolute byte offset,
// allocated size), how to turn the stored bytes back into the logical block
// (physical size, compression, logical size), how to know the bytes are the
// ones that were written (an XXH3-128 checksum of the psize stored bytes),
// and what the block is (type, level, birth txg, fill count). Every block of
// the pool except the uberblock is reached through exactly one BlockPtr,
// stored in its parent: an indirect block, a dnode, an object set block, the
// uberblock. A parent's checksum covers its children's pointers, so the tree
// is self-validating from the uberblock down (a Merkle tree).
//
// A gang block (gang_asize != 0) is a block stored in pieces: its DVA names
// a gang header (zio/gang.h) that lists the pieces ("children"), whose
// allocated bytes add up to gang_asize; the stored bytes are the children's
// bytes in order, and the checksum covers them as for any block. The writer
// makes one only when no contiguous extent of the block's size is free, so
// that a fragmented pool with free space never fails a write (zio.h).
//
// A hole is a BlockPtr with dva.size == 0: no storage, reads as lsize zero
// bytes. It may carry a birth txg (when the hole was made) and an lsize, type
// and level; every other field is zero. The all-zero bytes decode to the
// empty hole (birth 0, lsize 0).
//
// Copies (ditto blocks). A pointer may name up to kMaxCopies copies of the
// same stored bytes: `dva` is copy 0 and `ditto` the others, each of the
// same allocated size, on different vdevs where the pool has several and
// far apart on one (space::SpaceManager::AllocateCopy). A read that finds
// one copy bad takes the next (Zio). A gang block has one copy.
//
// On disk a BlockPtr is a BlockPtrPhys whose size is the pool's format's
// (BpFormat): 64 bytes and one copy in format 1, 128 bytes and up to three
// copies in format 2, little-endian (section 5 of core/doc/on-disk-format.md
// has the byte-level layouts and every validity rule).
// DecodeBlockPtr refuses any damage it can see with Corruption: unknown enum
// values, sizes that contradict each other, a hole with stray fields, a gang
// size that cannot hold the block. It cannot see a flipped bit that turns one valid
// pointer into another; the parent's checksum is there for that.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "space/allocator.h"
#include "util/checksum.h"
#include "util/compress.h"

namespace poolfs::core::zio {

// What a block holds. On-disk values: never renumber.
enum class BlockType : uint8_t {
  kNone = 0,  // only in holes (an empty pointer)
  kData = 1,
  kIndirect = 2,  // an array of BlockPtrPhys; the only type with level > 0
  kDnodes = 3,
  kObjset = 4,
  kSpaceMap = 5,
  kDirectory = 6,
  kConfig = 7,
  kZap = 8,
  kBonus = 9,
};
inline constexpr uint8_t kMaxBlockType = 9;

// Returns "none", "data", "indirect", "dnodes", "objset", "spacemap",
// "directory", "config", "zap", "bonus"; "unknown" for any other value.
std::string_view BlockTypeName(BlockType type);

// On-disk values: never renumber.
enum class ChecksumType : uint8_t { kXxh3_128 = 1 };

// Returns "xxh3-128"; "unknown" for any other value.
std::string_view ChecksumTypeName(ChecksumType type);

// The largest logical (and so physical and allocated) block size.
inline constexpr uint32_t kMaxBlockSize = uint32_t{16} << 20;
// The largest gang header, and so the largest sector size plus one: a gang's
// children hold at most psize + one sector (every child but the last is
// full), with sectors of at most 64 KiB.
inline constexpr uint32_t kMaxGangHeaderSize = uint32_t{64} << 10;
// The deepest indirect level a pointer may name.
inline constexpr uint8_t kMaxLevel = 31;
// Offsets and allocated sizes are multiples of the smallest sector size.
inline constexpr uint32_t kMinSectorSize = 512;
// Size of a dnode slot, for the fill bound of a dnode block.
inline constexpr uint32_t kDnodeSlotSize = 512;

// The most copies a pointer names (format 2; format 1 names one).
inline constexpr int kMaxCopies = 3;

// A pool's block pointer encoding: its on-disk format version (labels and
// uberblocks carry it).
enum class BpFormat : uint8_t {
  kV1 = 1,  // 64 bytes, one copy
  kV2 = 2,  // 128 bytes, one to three copies
};
inline constexpr size_t kBlockPtrSizeV1 = 64;
inline constexpr size_t kBlockPtrSizeV2 = 128;
// 64 or 128.
inline constexpr size_t BlockPtrSize(BpFormat f) {
  return f == BpFormat::kV1 ? kBlockPtrSizeV1 : kBlockPtrSizeV2;
}
// The copies format f can hold (1 or kMaxCopies).
inline constexpr int MaxCopies(BpFormat f) { return f == BpFormat::kV1 ? 1 : kMaxCopies; }

// In memory. A hole is a BlockPtr with dva.size == 0; see the top of the file.
struct BlockPtr {
  space::Dva dva;  // copy 0: vdev, absolute byte offset, allocated size (asize)
  // Copies 1 and 2 (size 0: absent; a present one has dva's size). Copy 2
  // only after copy 1.
  std::array<space::Dva, kMaxCopies - 1> ditto{};
  uint32_t lsize = 0;  // logical (decompressed) bytes
  uint32_t psize = 0;  // physical (stored, compressed) bytes, <= asize
  util::Compression compression = util::Compression::kOff;
  ChecksumType checksum_type = ChecksumType::kXxh3_128;
  BlockType type = BlockType::kNone;
  uint8_t level = 0;  // 0 = data; n = indirect block n levels above data
  Txg birth;          // txg in which the block was written
  // For L0: 1 (for dnode blocks: the allocated dnodes in it, at most
  // lsize / 512); for indirect blocks: the sum of the children's fill.
  // Holes: 0.
  uint64_t fill = 0;
  util::Checksum128 checksum;  // XXH3-128 of the psize stored bytes
  // A gang block: the allocated bytes of its children (dva is the header).
  // 0 for every other block.
  uint64_t gang_asize = 0;

  bool IsHole() const { return dva.size == 0; }
  bool IsGang() const { return gang_asize != 0; }
  // The copies it names: 0 for a hole, else 1..kMaxCopies.
  int copies() const {
    if (IsHole()) return 0;
    int n = 1;
    while (n < kMaxCopies && ditto[n - 1].size != 0) n++;
    return n;
  }
  // Copy i (0 <= i < copies()).
  const space::Dva& copy(int i) const { return i == 0 ? dva : ditto[i - 1]; }
  // Every byte the block holds on disk: each copy, and a gang's children.
  uint64_t allocated() const {
    uint64_t n = dva.size + gang_asize;
    for (const space::Dva& d : ditto) n += d.size;
    return n;
  }
  bool operator==(const BlockPtr&) const = default;

  // "L1 indirect vdev 0 off 0x400000 asize 4096 lsize 131072 psize 2048 lz4
  // birth 17 fill 12", with " copy vdev 1 off 0x9000" per further copy; a
  // hole: "L0 data hole lsize 131072 birth 17".
  std::string ToString() const;
};

// Returns a hole of `lsize` logical bytes born in `birth`.
BlockPtr MakeHole(BlockType type, uint8_t level, uint32_t lsize, Txg birth);

// The on-disk forms. Documentation of the layouts: the encoder and decoder
// use these offsets and write every field explicitly little-endian.
//
// Format 1 (64 bytes, one copy):
struct BlockPtrPhys {
  uint32_t vdev;          // 0   DVA: vdev index
  uint32_t asize;         // 4   DVA: allocated bytes (0: a hole)
  uint64_t offset;        // 8   DVA: absolute byte offset on the vdev
  uint32_t lsize;         // 16  logical bytes
  uint32_t psize;         // 20  stored bytes
  uint8_t type;           // 24  BlockType
  uint8_t level;          // 25
  uint8_t compression;    // 26  util::Compression
  uint8_t checksum_type;  // 27  ChecksumType (0 in a hole)
  uint32_t gang_sectors;  // 28  a gang block: gang_asize / 512; else 0
  uint64_t birth;         // 32  txg
  uint64_t fill;          // 40
  uint64_t checksum_lo;   // 48  XXH3-128 of the stored bytes, low half
  uint64_t checksum_hi;   // 56  high half
};
static_assert(sizeof(BlockPtrPhys) == kBlockPtrSizeV1);
static_assert(offsetof(BlockPtrPhys, gang_sectors) == 28);
static_assert(offsetof(BlockPtrPhys, checksum_hi) == 56);

// Format 2 (128 bytes, one to three copies): the fields of format 1, each
// copy a DVA of its own, and room to grow.
struct DvaPhys {
  uint32_t vdev;      // 0
  uint32_t reserved;  // 4   zero
  uint64_t offset;    // 8   absolute byte offset; 0 with vdev 0: no such copy
};
struct BlockPtrPhysV2 {
  DvaPhys dva[3];         // 0   copies 0, 1, 2 (copy 0 is the block; a hole: zero)
  uint32_t asize;         // 48  allocated bytes of each copy (0: a hole)
  uint32_t gang_sectors;  // 52  as format 1 (a gang block has one copy)
  uint32_t lsize;         // 56
  uint32_t psize;         // 60
  uint8_t type;           // 64
  uint8_t level;          // 65
  uint8_t compression;    // 66
  uint8_t checksum_type;  // 67
  uint32_t reserved1;     // 68  zero
  uint64_t birth;         // 72
  uint64_t fill;          // 80
  uint64_t checksum_lo;   // 88
  uint64_t checksum_hi;   // 96
  uint8_t reserved2[24];  // 104 zero
};
static_assert(sizeof(DvaPhys) == 16);
static_assert(sizeof(BlockPtrPhysV2) == kBlockPtrSizeV2);
static_assert(offsetof(BlockPtrPhysV2, asize) == 48);
static_assert(offsetof(BlockPtrPhysV2, birth) == 72);
static_assert(offsetof(BlockPtrPhysV2, reserved2) == 104);

// Returns OK when `bp` satisfies every rule DecodeBlockPtr enforces (see
// on-disk-format.md 5.2), else Corruption saying which rule it breaks (no
// location prefix). The pipeline checks pointers with it before using them.
Status ValidateBlockPtr(const BlockPtr& bp);

// Writes the on-disk form of `bp` in `format` (BlockPtrSize(format) bytes)
// to out. CHECKs that bp is valid (ValidateBlockPtr) and names no more
// copies than the format holds: writing a pointer that cannot be read back
// would damage the pool.
void EncodeBlockPtr(const BlockPtr& bp, uint8_t* out, BpFormat format);

// Decodes BlockPtrSize(format) bytes. Corruption "<where>: block pointer
// <what is wrong>" for any damage it can see (unknown enum values,
// inconsistent sizes, a hole with stray fields, a gang size that cannot
// hold the block, copies that overlap, nonzero reserved bytes, ...).
// `where` names the pointer's place for the message, e.g. "object 17 L1
// blkid 3 slot 12".
Result<BlockPtr> DecodeBlockPtr(const uint8_t* in, std::string_view where, BpFormat format);

}  // namespace poolfs::core::zio
