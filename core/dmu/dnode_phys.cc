#include "dmu/dnode_phys.h"

#include <cstring>

#include "util/check.h"
#include "util/endian.h"

namespace poolfs::core::dmu {

using util::GetLE16;
using util::GetLE32;
using util::GetLE64;
using util::PutLE16;
using util::PutLE32;
using util::PutLE64;

std::string_view ObjectTypeName(ObjectType t) {
  switch (t) {
    case ObjectType::kNone: return "free";
    case ObjectType::kMetadnode: return "metadnode";
    case ObjectType::kPlain: return "plain";
    case ObjectType::kDirectory: return "directory";
    case ObjectType::kSpaceMap: return "space map";
    case ObjectType::kPoolDirectory: return "pool directory";
    case ObjectType::kZap: return "zap";
    case ObjectType::kDeadlist: return "deadlist";
    case ObjectType::kRefTable: return "block reference table";
  }
  return "unknown";
}

namespace {
bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}
bool IsPow2(uint64_t v) { return v && !(v & (v - 1)); }
}  // namespace

void EncodeDnode(const DnodePhys& d, uint8_t* out, zio::BpFormat format) {
  std::memset(out, 0, kDnodeSize);
  if (d.free()) return;
  POOLFS_CHECK_LE(d.bonus.size(), MaxBonus(format));
  out[0] = uint8_t(d.type);
  out[1] = d.nlevels;
  out[2] = d.compression;
  out[3] = d.bonus_type;
  PutLE16(out + 4, uint16_t(d.bonus.size()));
  PutLE32(out + 8, d.block_size);
  PutLE64(out + 16, d.length);
  PutLE64(out + 24, d.generation);
  PutLE64(out + 32, d.used);
  zio::EncodeBlockPtr(d.bp, out + 64, format);
  std::memcpy(out + DnodeBonusOffset(format), d.bonus.data(), d.bonus.size());
}

Result<DnodePhys> DecodeDnode(const uint8_t* in, std::string_view where, zio::BpFormat format) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption(std::string(where) + ": dnode " + what);
  };
  DnodePhys d;
  if (in[0] == 0) {
    if (!AllZero(in, kDnodeSize)) return bad("is marked free but is not all zeros");
    return d;
  }
  if (in[0] > kMaxObjectType) return bad("has unknown type " + std::to_string(in[0]));
  d.type = ObjectType(in[0]);
  d.nlevels = in[1];
  if (d.nlevels < 1 || d.nlevels > kMaxLevels)
    return bad("has " + std::to_string(d.nlevels) + " levels (1.." + std::to_string(kMaxLevels) +
               ")");
  d.compression = in[2];
  if (d.compression > 2) return bad("has unknown compression " + std::to_string(d.compression));
  d.bonus_type = in[3];
  const size_t max_bonus = MaxBonus(format);
  const size_t bonus_at = DnodeBonusOffset(format);
  uint16_t bonus_len = GetLE16(in + 4);
  if (bonus_len > max_bonus)
    return bad("bonus length " + std::to_string(bonus_len) + " > " + std::to_string(max_bonus));
  if (GetLE16(in + 6) != 0 || GetLE32(in + 12) != 0 || !AllZero(in + 40, 24))
    return bad("has nonzero reserved bytes");
  d.block_size = GetLE32(in + 8);
  if (!IsPow2(d.block_size) || d.block_size < kMinBlockSize || d.block_size > kMaxBlockSize)
    return bad("has block size " + std::to_string(d.block_size));
  d.length = GetLE64(in + 16);
  d.generation = GetLE64(in + 24);
  d.used = GetLE64(in + 32);
  POOLFS_ASSIGN_OR_RETURN(d.bp, zio::DecodeBlockPtr(in + 64, std::string(where) + " top", format));
  if (!AllZero(in + bonus_at + bonus_len, max_bonus - bonus_len))
    return bad("has bytes past its bonus length");
  d.bonus.assign(reinterpret_cast<const char*>(in + bonus_at), bonus_len);
  return d;
}

std::string EncodeObjset(const ObjsetPhys& o, zio::BpFormat format) {
  std::string out(kObjsetPhysSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  PutLE64(p, kObjsetMagic);
  PutLE32(p + 8, kObjsetVersion);
  PutLE32(p + 12, uint32_t(o.type));
  PutLE64(p + 16, o.next_object);
  PutLE64(p + 24, o.live_objects);
  PutLE64(p + 32, o.space.referenced);
  PutLE64(p + 40, o.space.logical);
  PutLE64(p + 48, o.space.physical);
  EncodeDnode(o.metadnode, p + 64, format);
  return out;
}

Result<ObjsetPhys> DecodeObjset(std::string_view in, std::string_view where, zio::BpFormat format) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption(std::string(where) + ": object set " + what);
  };
  if (in.size() != kObjsetPhysSize)
    return bad("block is " + std::to_string(in.size()) + " bytes, not 1024");
  auto* p = reinterpret_cast<const uint8_t*>(in.data());
  if (GetLE64(p) != kObjsetMagic) return bad("has a bad magic number");
  const uint32_t version = GetLE32(p + 8);
  if (version < 1 || version > kObjsetVersion)
    return bad("has unknown version " + std::to_string(version));
  ObjsetPhys o;
  uint32_t type = GetLE32(p + 12);
  if (type != 1 && type != 2) return bad("has unknown type " + std::to_string(type));
  o.type = ObjsetType(type);
  o.next_object = GetLE64(p + 16);
  o.live_objects = GetLE64(p + 24);
  if (o.next_object == 0 || o.next_object > kMaxObjectId + 1 || o.live_objects >= o.next_object)
    return bad("has inconsistent object counts");
  if (version == 1) {
    o.space_known = false;
    if (!AllZero(p + 32, 32)) return bad("has nonzero reserved bytes");
  } else {
    o.space.referenced = GetLE64(p + 32);
    o.space.logical = GetLE64(p + 40);
    o.space.physical = GetLE64(p + 48);
    if (!AllZero(p + 56, 8)) return bad("has nonzero reserved bytes");
    // Stored bytes never exceed the allocated ones (psize <= asize).
    if (o.space.physical > o.space.referenced)
      return bad("says its blocks store " + std::to_string(o.space.physical) + " bytes in " +
                 std::to_string(o.space.referenced) + " allocated");
  }
  if (!AllZero(p + 576, kObjsetPhysSize - 576)) return bad("has nonzero reserved bytes");
  POOLFS_ASSIGN_OR_RETURN(o.metadnode,
                          DecodeDnode(p + 64, std::string(where) + " metadnode", format));
  if (o.metadnode.type != ObjectType::kMetadnode || o.metadnode.block_size != kDnodeBlockSize)
    return bad("has a metadnode that is not one");
  return o;
}

}  // namespace poolfs::core::dmu
