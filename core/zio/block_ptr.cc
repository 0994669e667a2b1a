#include "zio/block_ptr.h"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "util/check.h"
#include "util/endian.h"
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

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string U(uint64_t v) { return std::to_string(v); }

Status Bad(std::string what) { return Status::Corruption("block pointer " + std::move(what)); }

Status ValidateHole(const BlockPtr& bp) {
  if (bp.dva.vdev != 0 || bp.dva.offset != 0)
    return Bad("is a hole (asize 0) with vdev " + U(bp.dva.vdev) + " offset " + Hex(bp.dva.offset));
  if (bp.psize != 0) return Bad("is a hole with psize " + U(bp.psize));
  if (bp.compression != util::Compression::kOff)
    return Bad("is a hole with compression " + std::string(util::CompressionName(bp.compression)));
  if (bp.fill != 0) return Bad("is a hole with fill " + U(bp.fill));
  if (bp.checksum != util::Checksum128{}) return Bad("is a hole with a nonzero checksum");
  if (bp.gang_asize != 0) return Bad("is a hole with gang size " + U(bp.gang_asize));
  return Status::Ok();
}

// Rules on the type, level and fill of a block that exists.
Status ValidateKind(const BlockPtr& bp) {
  if (bp.type == BlockType::kNone) return Bad("of a stored block has type none");
  if (bp.level > 0 && bp.type != BlockType::kIndirect)
    return Bad("at level " + U(bp.level) + " has type " + std::string(BlockTypeName(bp.type)) +
               " (only indirect blocks have a level above 0)");
  if (bp.level == 0 && bp.type == BlockType::kIndirect)
    return Bad("of an indirect block has level 0");
  if (bp.level == 0 && bp.type == BlockType::kData && bp.fill != 1)
    return Bad("of a data block has fill " + U(bp.fill) + " (must be 1)");
  if (bp.level == 0 && bp.type == BlockType::kDnodes && bp.fill > bp.lsize / kDnodeSlotSize)
    return Bad("of a dnode block of " + U(bp.lsize) + " bytes has fill " + U(bp.fill) +
               " (at most " + U(bp.lsize / kDnodeSlotSize) + " dnodes)");
  return Status::Ok();
}

Status ValidateSizes(const BlockPtr& bp) {
  const uint64_t asize = bp.dva.size;
  if (bp.lsize == 0) return Bad("has lsize 0");
  if (bp.lsize > kMaxBlockSize)
    return Bad("has lsize " + U(bp.lsize) + " above the maximum " + U(kMaxBlockSize));
  if (bp.psize == 0) return Bad("has psize 0");
  if (bp.psize > bp.lsize) return Bad("has psize " + U(bp.psize) + " above lsize " + U(bp.lsize));
  if (bp.compression == util::Compression::kOff && bp.psize != bp.lsize)
    return Bad("is uncompressed but psize " + U(bp.psize) + " != lsize " + U(bp.lsize));
  if (bp.compression != util::Compression::kOff && bp.psize > util::CompressLimit(bp.lsize))
    return Bad("is " + std::string(util::CompressionName(bp.compression)) + " with psize " +
               U(bp.psize) + " saving less than 1/8 of lsize " + U(bp.lsize));
  if (bp.IsGang()) {
    // asize is the header's; the children hold the stored bytes.
    const uint64_t g = bp.gang_asize;
    if (g % kMinSectorSize != 0)
      return Bad("has gang size " + U(g) + " that is not a multiple of " + U(kMinSectorSize));
    if (g < bp.psize || g - bp.psize >= kMaxGangHeaderSize)
      return Bad("has gang size " + U(g) + " that does not fit psize " + U(bp.psize) +
                 " (at least psize, less than psize + " + U(kMaxGangHeaderSize) + ")");
    if (asize > kMaxGangHeaderSize)
      return Bad("is a gang block whose header has asize " + U(asize) + " above " +
                 U(kMaxGangHeaderSize));
  } else if (asize < bp.psize) {
    return Bad("has asize " + U(asize) + " below psize " + U(bp.psize));
  }
  if (asize > kMaxBlockSize)
    return Bad("has asize " + U(asize) + " above the maximum " + U(kMaxBlockSize));
  if (asize % kMinSectorSize != 0)
    return Bad("has asize " + U(asize) + " that is not a multiple of " + U(kMinSectorSize));
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
  std::string s = "L" + U(level) + " " + std::string(BlockTypeName(type));
  if (IsHole()) return s + " hole lsize " + U(lsize) + " birth " + U(birth.value());
  s += " vdev " + U(dva.vdev) + " off " + Hex(dva.offset) + " asize " + U(dva.size) + " lsize " +
       U(lsize) + " psize " + U(psize) + " " + std::string(util::CompressionName(compression)) +
       " birth " + U(birth.value()) + " fill " + U(fill);
  if (IsGang()) s += " gang " + U(gang_asize);
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
  if (uint8_t(bp.type) > kMaxBlockType) return Bad("has unknown type " + U(uint8_t(bp.type)));
  if (bp.level > kMaxLevel)
    return Bad("has level " + U(bp.level) + " above the maximum " + U(kMaxLevel));
  if (!util::IsValidCompression(uint8_t(bp.compression)))
    return Bad("has unknown compression " + U(uint8_t(bp.compression)));
  if (bp.checksum_type != ChecksumType::kXxh3_128)
    return Bad("has unknown checksum type " + U(uint8_t(bp.checksum_type)));
  if (bp.IsHole()) {
    if (bp.lsize > kMaxBlockSize)
      return Bad("is a hole with lsize " + U(bp.lsize) + " above the maximum " + U(kMaxBlockSize));
    return ValidateHole(bp);
  }
  POOLFS_RETURN_IF_ERROR(ValidateSizes(bp));
  if (bp.dva.offset % kMinSectorSize != 0)
    return Bad("has offset " + Hex(bp.dva.offset) + " that is not a multiple of " +
               U(kMinSectorSize));
  if (bp.dva.offset < vdev::kFrontReserved)
    return Bad("has offset " + Hex(bp.dva.offset) + " inside the front labels (below " +
               Hex(vdev::kFrontReserved) + ")");
  if (bp.dva.offset >= kMaxOffset) return Bad("has offset " + Hex(bp.dva.offset) + " past 2^62");
  if (bp.birth.value() == 0) return Bad("of a stored block has birth txg 0");
  return ValidateKind(bp);
}

void EncodeBlockPtr(const BlockPtr& bp, uint8_t* out) {
  Status valid = ValidateBlockPtr(bp);
  if (!valid.ok()) util::CheckFailed(__FILE__, __LINE__, "encoding " + valid.message());
  PutLE32(out + offsetof(BlockPtrPhys, vdev), bp.dva.vdev);
  PutLE32(out + offsetof(BlockPtrPhys, asize), uint32_t(bp.dva.size));
  PutLE64(out + offsetof(BlockPtrPhys, offset), bp.dva.offset);
  PutLE32(out + offsetof(BlockPtrPhys, lsize), bp.lsize);
  PutLE32(out + offsetof(BlockPtrPhys, psize), bp.psize);
  out[offsetof(BlockPtrPhys, type)] = uint8_t(bp.type);
  out[offsetof(BlockPtrPhys, level)] = bp.level;
  out[offsetof(BlockPtrPhys, compression)] = uint8_t(bp.compression);
  // A hole has no checksum, so it names no checksum type.
  out[offsetof(BlockPtrPhys, checksum_type)] = bp.IsHole() ? 0 : uint8_t(bp.checksum_type);
  PutLE32(out + offsetof(BlockPtrPhys, gang_sectors), uint32_t(bp.gang_asize / kMinSectorSize));
  PutLE64(out + offsetof(BlockPtrPhys, birth), bp.birth.value());
  PutLE64(out + offsetof(BlockPtrPhys, fill), bp.fill);
  PutLE64(out + offsetof(BlockPtrPhys, checksum_lo), bp.checksum.lo);
  PutLE64(out + offsetof(BlockPtrPhys, checksum_hi), bp.checksum.hi);
}

Result<BlockPtr> DecodeBlockPtr(const uint8_t* in, std::string_view where) {
  auto fail = [&](const Status& s) { return where.empty() ? s : s.WithContext(where); };
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
  const uint8_t checksum_type = in[offsetof(BlockPtrPhys, checksum_type)];
  if (bp.IsHole()) {
    if (checksum_type != 0) return fail(Bad("is a hole with checksum type " + U(checksum_type)));
    bp.checksum_type = ChecksumType::kXxh3_128;  // the in-memory default
  } else {
    bp.checksum_type = ChecksumType(checksum_type);
  }
  bp.birth = Txg(GetLE64(in + offsetof(BlockPtrPhys, birth)));
  bp.fill = GetLE64(in + offsetof(BlockPtrPhys, fill));
  bp.checksum.lo = GetLE64(in + offsetof(BlockPtrPhys, checksum_lo));
  bp.checksum.hi = GetLE64(in + offsetof(BlockPtrPhys, checksum_hi));
  Status valid = ValidateBlockPtr(bp);
  if (!valid.ok()) return fail(valid);
  return bp;
}

}  // namespace poolfs::core::zio
