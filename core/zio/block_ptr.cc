#include "zio/block_ptr.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "util/check.h"
#include "util/endian.h"
#include "util/text.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::zio {
namespace {

using util::GetLE32;
using util::GetLE64;
using util::PutLE32;
using util::PutLE64;

// Offsets beyond this are refused so that offset + asize can never overflow
// (no device is 2^62 bytes).
constexpr uint64_t kMaxOffset = uint64_t{1} << 62;

Status Bad(std::string what) { return Status::Corruption("block pointer " + std::move(what)); }

Status ValidateHole(const BlockPtr& bp) {
  if (bp.dva.vdev != 0 || bp.dva.offset != 0)
    return Bad("is a hole (asize 0) with vdev " + std::to_string(bp.dva.vdev) + " offset " +
               util::Hex(bp.dva.offset));
  for (const space::Dva& d : bp.ditto)
    if (d != space::Dva{}) return Bad("is a hole with a further copy");
  if (bp.psize != 0) return Bad("is a hole with psize " + std::to_string(bp.psize));
  if (bp.compression != util::Compression::kOff)
    return Bad("is a hole with compression " + std::string(util::CompressionName(bp.compression)));
  if (bp.fill != 0) return Bad("is a hole with fill " + std::to_string(bp.fill));
  if (bp.checksum != util::Checksum128{}) return Bad("is a hole with a nonzero checksum");
  if (bp.gang_asize != 0) return Bad("is a hole with gang size " + std::to_string(bp.gang_asize));
  return Status::Ok();
}

// Rules on the type, level and fill of a block that exists.
Status ValidateKind(const BlockPtr& bp) {
  if (bp.type == BlockType::kNone) return Bad("of a stored block has type none");
  if (bp.level > 0 && bp.type != BlockType::kIndirect)
    return Bad("at level " + std::to_string(bp.level) + " has type " +
               std::string(BlockTypeName(bp.type)) +
               " (only indirect blocks have a level above 0)");
  if (bp.level == 0 && bp.type == BlockType::kIndirect)
    return Bad("of an indirect block has level 0");
  if (bp.level == 0 && bp.type == BlockType::kData && bp.fill != 1)
    return Bad("of a data block has fill " + std::to_string(bp.fill) + " (must be 1)");
  if (bp.level == 0 && bp.type == BlockType::kDnodes && bp.fill > bp.lsize / kDnodeSlotSize)
    return Bad("of a dnode block of " + std::to_string(bp.lsize) + " bytes has fill " +
               std::to_string(bp.fill) + " (at most " + std::to_string(bp.lsize / kDnodeSlotSize) +
               " dnodes)");
  return Status::Ok();
}

// Where one copy may lie.
Status ValidateOffset(uint64_t offset, const char* which) {
  if (offset % kMinSectorSize != 0)
    return Bad("has " + std::string(which) + "offset " + util::Hex(offset) +
               " that is not a multiple of " + std::to_string(kMinSectorSize));
  if (offset < vdev::kFrontReserved)
    return Bad("has " + std::string(which) + "offset " + util::Hex(offset) +
               " inside the front labels (below " + util::Hex(vdev::kFrontReserved) + ")");
  if (offset >= kMaxOffset)
    return Bad("has " + std::string(which) + "offset " + util::Hex(offset) + " past 2^62");
  return Status::Ok();
}

// The further copies of a stored block: each where copy 0 may lie, of its
// size, none after an absent one, none overlapping another on its vdev.
Status ValidateCopies(const BlockPtr& bp) {
  bool absent = false;
  for (size_t i = 0; i < bp.ditto.size(); i++) {
    const space::Dva& d = bp.ditto[i];
    if (d.size == 0) {
      if (d.vdev != 0 || d.offset != 0)
        return Bad("names copy " + std::to_string(i + 1) + " with size 0");
      absent = true;
      continue;
    }
    if (absent) return Bad("names copy " + std::to_string(i + 1) + " after an absent one");
    if (bp.IsGang()) return Bad("is a gang block with more than one copy");
    if (d.size != bp.dva.size)
      return Bad("has copy " + std::to_string(i + 1) + " of asize " + std::to_string(d.size) +
                 ", copy 0 of " + std::to_string(bp.dva.size));
    POOLFS_RETURN_IF_ERROR(ValidateOffset(d.offset, "a copy's "));
    for (int j = 0; j <= int(i); j++) {
      const space::Dva& e = bp.copy(j);
      if (e.vdev == d.vdev && e.offset < d.offset + d.size && d.offset < e.offset + e.size)
        return Bad("has copies " + std::to_string(j) + " and " + std::to_string(i + 1) +
                   " overlapping on vdev " + std::to_string(d.vdev));
    }
  }
  return Status::Ok();
}

Status ValidateSizes(const BlockPtr& bp) {
  const uint64_t asize = bp.dva.size;
  if (bp.lsize == 0) return Bad("has lsize 0");
  if (bp.lsize > kMaxBlockSize)
    return Bad("has lsize " + std::to_string(bp.lsize) + " above the maximum " +
               std::to_string(kMaxBlockSize));
  if (bp.psize == 0) return Bad("has psize 0");
  if (bp.psize > bp.lsize)
    return Bad("has psize " + std::to_string(bp.psize) + " above lsize " +
               std::to_string(bp.lsize));
  if (bp.compression == util::Compression::kOff && bp.psize != bp.lsize)
    return Bad("is uncompressed but psize " + std::to_string(bp.psize) + " != lsize " +
               std::to_string(bp.lsize));
  if (bp.compression != util::Compression::kOff && bp.psize > util::CompressLimit(bp.lsize))
    return Bad("is " + std::string(util::CompressionName(bp.compression)) + " with psize " +
               std::to_string(bp.psize) + " saving less than 1/8 of lsize " +
               std::to_string(bp.lsize));
  if (bp.IsGang()) {
    // asize is the header's; the children hold the stored bytes.
    const uint64_t g = bp.gang_asize;
    if (g % kMinSectorSize != 0)
      return Bad("has gang size " + std::to_string(g) + " that is not a multiple of " +
                 std::to_string(kMinSectorSize));
    if (g < bp.psize || g - bp.psize >= kMaxGangHeaderSize)
      return Bad("has gang size " + std::to_string(g) + " that does not fit psize " +
                 std::to_string(bp.psize) + " (at least psize, less than psize + " +
                 std::to_string(kMaxGangHeaderSize) + ")");
    if (asize > kMaxGangHeaderSize)
      return Bad("is a gang block whose header has asize " + std::to_string(asize) + " above " +
                 std::to_string(kMaxGangHeaderSize));
  } else if (asize < bp.psize) {
    return Bad("has asize " + std::to_string(asize) + " below psize " + std::to_string(bp.psize));
  }
  if (asize > kMaxBlockSize)
    return Bad("has asize " + std::to_string(asize) + " above the maximum " +
               std::to_string(kMaxBlockSize));
  if (asize % kMinSectorSize != 0)
    return Bad("has asize " + std::to_string(asize) + " that is not a multiple of " +
               std::to_string(kMinSectorSize));
  return Status::Ok();
}

}  // namespace

std::string_view BlockTypeName(BlockType type) {
  switch (type) {
    case BlockType::kNone: return "none";
    case BlockType::kData: return "data";
    case BlockType::kIndirect: return "indirect";
    case BlockType::kDnodes: return "dnodes";
    case BlockType::kObjset: return "objset";
    case BlockType::kSpaceMap: return "spacemap";
    case BlockType::kDirectory: return "directory";
    case BlockType::kConfig: return "config";
    case BlockType::kZap: return "zap";
    case BlockType::kBonus: return "bonus";
  }
  return "unknown";
}

std::string_view ChecksumTypeName(ChecksumType type) {
  return type == ChecksumType::kXxh3_128 ? "xxh3-128" : "unknown";
}

std::string BlockPtr::ToString() const {
  std::string s = "L" + std::to_string(level) + " " + std::string(BlockTypeName(type));
  if (IsHole())
    return s + " hole lsize " + std::to_string(lsize) + " birth " + std::to_string(birth.value());
  s += " vdev " + std::to_string(dva.vdev) + " off " + util::Hex(dva.offset) + " asize " +
       std::to_string(dva.size) + " lsize " + std::to_string(lsize) + " psize " +
       std::to_string(psize) + " " + std::string(util::CompressionName(compression)) + " birth " +
       std::to_string(birth.value()) + " fill " + std::to_string(fill);
  if (IsGang()) s += " gang " + std::to_string(gang_asize);
  for (int i = 1; i < copies(); i++)
    s += " copy vdev " + std::to_string(copy(i).vdev) + " off " + util::Hex(copy(i).offset);
  return s;
}

BlockPtr MakeHole(BlockType type, uint8_t level, uint32_t lsize, Txg birth) {
  BlockPtr bp;
  bp.type = type;
  bp.level = level;
  bp.lsize = lsize;
  bp.birth = birth;
  return bp;
}

Status ValidateBlockPtr(const BlockPtr& bp) {
  if (uint8_t(bp.type) > kMaxBlockType)
    return Bad("has unknown type " + std::to_string(uint8_t(bp.type)));
  if (bp.level > kMaxLevel)
    return Bad("has level " + std::to_string(bp.level) + " above the maximum " +
               std::to_string(kMaxLevel));
  if (!util::IsValidCompression(uint8_t(bp.compression)))
    return Bad("has unknown compression " + std::to_string(uint8_t(bp.compression)));
  if (bp.checksum_type != ChecksumType::kXxh3_128)
    return Bad("has unknown checksum type " + std::to_string(uint8_t(bp.checksum_type)));
  if (bp.IsHole()) {
    if (bp.lsize > kMaxBlockSize)
      return Bad("is a hole with lsize " + std::to_string(bp.lsize) + " above the maximum " +
                 std::to_string(kMaxBlockSize));
    return ValidateHole(bp);
  }
  POOLFS_RETURN_IF_ERROR(ValidateSizes(bp));
  POOLFS_RETURN_IF_ERROR(ValidateOffset(bp.dva.offset, ""));
  POOLFS_RETURN_IF_ERROR(ValidateCopies(bp));
  if (bp.birth.value() == 0) return Bad("of a stored block has birth txg 0");
  return ValidateKind(bp);
}

void EncodeBlockPtr(const BlockPtr& bp, uint8_t* out, BpFormat format) {
  Status valid = ValidateBlockPtr(bp);
  if (!valid.ok()) util::CheckFailed(__FILE__, __LINE__, "encoding " + valid.message());
  if (bp.copies() > MaxCopies(format))
    util::CheckFailed(__FILE__, __LINE__,
                      "encoding a block pointer of " + std::to_string(bp.copies()) +
                          " copies in format " + std::to_string(int(format)));
  // A hole has no checksum, so it names no checksum type.
  const uint8_t checksum_type = bp.IsHole() ? 0 : uint8_t(bp.checksum_type);
  const uint32_t gang_sectors = uint32_t(bp.gang_asize / kMinSectorSize);
  if (format == BpFormat::kV1) {
    PutLE32(out + offsetof(BlockPtrPhys, vdev), bp.dva.vdev);
    PutLE32(out + offsetof(BlockPtrPhys, asize), uint32_t(bp.dva.size));
    PutLE64(out + offsetof(BlockPtrPhys, offset), bp.dva.offset);
    PutLE32(out + offsetof(BlockPtrPhys, lsize), bp.lsize);
    PutLE32(out + offsetof(BlockPtrPhys, psize), bp.psize);
    out[offsetof(BlockPtrPhys, type)] = uint8_t(bp.type);
    out[offsetof(BlockPtrPhys, level)] = bp.level;
    out[offsetof(BlockPtrPhys, compression)] = uint8_t(bp.compression);
    out[offsetof(BlockPtrPhys, checksum_type)] = checksum_type;
    PutLE32(out + offsetof(BlockPtrPhys, gang_sectors), gang_sectors);
    PutLE64(out + offsetof(BlockPtrPhys, birth), bp.birth.value());
    PutLE64(out + offsetof(BlockPtrPhys, fill), bp.fill);
    PutLE64(out + offsetof(BlockPtrPhys, checksum_lo), bp.checksum.lo);
    PutLE64(out + offsetof(BlockPtrPhys, checksum_hi), bp.checksum.hi);
    return;
  }
  std::memset(out, 0, kBlockPtrSizeV2);
  for (int i = 0; i < bp.copies(); i++) {
    uint8_t* d = out + offsetof(BlockPtrPhysV2, dva) + i * sizeof(DvaPhys);
    PutLE32(d + offsetof(DvaPhys, vdev), bp.copy(i).vdev);
    PutLE64(d + offsetof(DvaPhys, offset), bp.copy(i).offset);
  }
  PutLE32(out + offsetof(BlockPtrPhysV2, asize), uint32_t(bp.dva.size));
  PutLE32(out + offsetof(BlockPtrPhysV2, gang_sectors), gang_sectors);
  PutLE32(out + offsetof(BlockPtrPhysV2, lsize), bp.lsize);
  PutLE32(out + offsetof(BlockPtrPhysV2, psize), bp.psize);
  out[offsetof(BlockPtrPhysV2, type)] = uint8_t(bp.type);
  out[offsetof(BlockPtrPhysV2, level)] = bp.level;
  out[offsetof(BlockPtrPhysV2, compression)] = uint8_t(bp.compression);
  out[offsetof(BlockPtrPhysV2, checksum_type)] = checksum_type;
  PutLE64(out + offsetof(BlockPtrPhysV2, birth), bp.birth.value());
  PutLE64(out + offsetof(BlockPtrPhysV2, fill), bp.fill);
  PutLE64(out + offsetof(BlockPtrPhysV2, checksum_lo), bp.checksum.lo);
  PutLE64(out + offsetof(BlockPtrPhysV2, checksum_hi), bp.checksum.hi);
}

namespace {

// The fields both formats share, from format 1's offsets.
BlockPtr DecodeV1(const uint8_t* in) {
  BlockPtr bp;
  bp.gang_asize = uint64_t{GetLE32(in + offsetof(BlockPtrPhys, gang_sectors))} * kMinSectorSize;
  bp.dva.vdev = GetLE32(in + offsetof(BlockPtrPhys, vdev));
  bp.dva.size = GetLE32(in + offsetof(BlockPtrPhys, asize));
  bp.dva.offset = GetLE64(in + offsetof(BlockPtrPhys, offset));
  bp.lsize = GetLE32(in + offsetof(BlockPtrPhys, lsize));
  bp.psize = GetLE32(in + offsetof(BlockPtrPhys, psize));
  bp.type = BlockType(in[offsetof(BlockPtrPhys, type)]);
  bp.level = in[offsetof(BlockPtrPhys, level)];
  bp.compression = util::Compression(in[offsetof(BlockPtrPhys, compression)]);
  bp.birth = Txg(GetLE64(in + offsetof(BlockPtrPhys, birth)));
  bp.fill = GetLE64(in + offsetof(BlockPtrPhys, fill));
  bp.checksum.lo = GetLE64(in + offsetof(BlockPtrPhys, checksum_lo));
  bp.checksum.hi = GetLE64(in + offsetof(BlockPtrPhys, checksum_hi));
  return bp;
}

// Format 2; Corruption for nonzero reserved bytes.
Result<BlockPtr> DecodeV2(const uint8_t* in) {
  BlockPtr bp;
  const uint64_t asize = GetLE32(in + offsetof(BlockPtrPhysV2, asize));
  for (int i = 0; i < kMaxCopies; i++) {
    const uint8_t* d = in + offsetof(BlockPtrPhysV2, dva) + i * sizeof(DvaPhys);
    if (GetLE32(d + offsetof(DvaPhys, reserved)) != 0)
      return Bad("has nonzero reserved bytes in copy " + std::to_string(i));
    space::Dva dva{GetLE32(d + offsetof(DvaPhys, vdev)), GetLE64(d + offsetof(DvaPhys, offset)), 0};
    // Copy 0 always carries the size (0: a hole); a further copy is
    // present when it names a place.
    if (i == 0 || dva.vdev != 0 || dva.offset != 0) dva.size = asize;
    if (i == 0) {
      bp.dva = dva;
    } else {
      bp.ditto[i - 1] = dva;
    }
  }
  bp.gang_asize = uint64_t{GetLE32(in + offsetof(BlockPtrPhysV2, gang_sectors))} * kMinSectorSize;
  bp.lsize = GetLE32(in + offsetof(BlockPtrPhysV2, lsize));
  bp.psize = GetLE32(in + offsetof(BlockPtrPhysV2, psize));
  bp.type = BlockType(in[offsetof(BlockPtrPhysV2, type)]);
  bp.level = in[offsetof(BlockPtrPhysV2, level)];
  bp.compression = util::Compression(in[offsetof(BlockPtrPhysV2, compression)]);
  if (GetLE32(in + offsetof(BlockPtrPhysV2, reserved1)) != 0)
    return Bad("has nonzero reserved bytes at 68");
  for (size_t i = 0; i < sizeof(BlockPtrPhysV2::reserved2); i++)
    if (in[offsetof(BlockPtrPhysV2, reserved2) + i] != 0)
      return Bad("has nonzero reserved bytes at " +
                 std::to_string(offsetof(BlockPtrPhysV2, reserved2) + i));
  bp.birth = Txg(GetLE64(in + offsetof(BlockPtrPhysV2, birth)));
  bp.fill = GetLE64(in + offsetof(BlockPtrPhysV2, fill));
  bp.checksum.lo = GetLE64(in + offsetof(BlockPtrPhysV2, checksum_lo));
  bp.checksum.hi = GetLE64(in + offsetof(BlockPtrPhysV2, checksum_hi));
  return bp;
}

}  // namespace

Result<BlockPtr> DecodeBlockPtr(const uint8_t* in, std::string_view where, BpFormat format) {
  auto fail = [&](const Status& s) { return where.empty() ? s : s.WithContext(where); };
  BlockPtr bp;
  uint8_t checksum_type;
  if (format == BpFormat::kV1) {
    bp = DecodeV1(in);
    checksum_type = in[offsetof(BlockPtrPhys, checksum_type)];
  } else {
    Result<BlockPtr> v2 = DecodeV2(in);
    if (!v2.ok()) return fail(v2.status());
    bp = *v2;
    checksum_type = in[offsetof(BlockPtrPhysV2, checksum_type)];
  }
  if (bp.IsHole()) {
    if (checksum_type != 0)
      return fail(Bad("is a hole with checksum type " + std::to_string(checksum_type)));
    bp.checksum_type = ChecksumType::kXxh3_128;  // the in-memory default
  } else {
    bp.checksum_type = ChecksumType(checksum_type);
  }
  Status valid = ValidateBlockPtr(bp);
  if (!valid.ok()) return fail(valid);
  return bp;
}

}  // namespace poolfs::core::zio
