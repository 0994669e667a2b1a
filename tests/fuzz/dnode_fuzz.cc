// libFuzzer target for the dnode and object set root decoders
// (core/dmu/dnode_phys.h): DecodeDnode on 512-byte slots and DecodeObjset on
// 1024-byte root blocks, in both on-disk formats.
//
// Input: [mode byte][bytes...]. Mode bit 1 picks the format the block
// pointers inside are decoded in: clear, format 1 (64-byte pointers, the
// bonus at 128, at most 384 bytes); set, format 2 (128-byte pointers, the
// bonus at 192, at most 320 bytes). Mode bit 0 clear: the bytes (zero-padded
// or cut to 512) are one dnode slot. Mode bit 0 set: the bytes (zero-padded
// or cut to 1024) are an object set root block; the unpadded bytes are also
// decoded as they are, so that every length other than 1024 is tried. The
// other bits are ignored.
//
// Properties checked (a violation aborts):
//   - decoding never crashes and fails only with Corruption whose message
//     starts with the location it was given;
//   - decoding is deterministic (twice the same bytes, twice the same value);
//   - the encoding is canonical: whatever decodes re-encodes (in the same
//     format) to exactly the input bytes (every reserved byte, every byte
//     past the bonus length and every field of a free slot must be zero, so
//     no two inputs may decode to the same value);
//   - what decodes obeys the rules of core/doc/on-disk-format.md, checked
//     here with separate arithmetic: type 1..8 (or an all-zero free slot),
//     1..6 levels, a power-of-two block size from 512 B to 1 MiB, a bonus of
//     at most 384 bytes in format 1 and 320 in format 2, compression
//     off/lz4/zstd, a valid block pointer of no more copies than the format
//     holds (1 or 3); for a root block, object counts with
//     0 <= live < next <= 2^48 and a metadnode of 16 KiB blocks;
//   - a dnode means the same in both formats where it fits both (a pointer
//     of one copy, a bonus of at most 320 bytes): encoded in the other
//     format, it decodes to the same value.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dmu/dnode_phys.h"
#include "zio/block_ptr.h"

namespace {

using namespace poolfs::core;
using poolfs::Result;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "dnode_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void CheckRefusal(const poolfs::Status& st, const std::string& where) {
  if (st.code() != StatusCode::kCorruption) Fail("unexpected status", st.ToString());
  if (st.message().rfind(where, 0) != 0) Fail("message does not name its place", st.ToString());
}

bool Same(const dmu::DnodePhys& a, const dmu::DnodePhys& b) {
  return a.type == b.type && a.nlevels == b.nlevels && a.compression == b.compression &&
         a.bonus_type == b.bonus_type && a.block_size == b.block_size && a.length == b.length &&
         a.generation == b.generation && a.used == b.used && a.bp == b.bp && a.bonus == b.bonus;
}

// The rules of a decoded dnode, restated.
void CheckDnodeRules(const dmu::DnodePhys& d, const uint8_t* in, zio::BpFormat format) {
  if (d.free()) {
    for (size_t i = 0; i < dmu::kDnodeSize; i++)
      if (in[i] != 0) Fail("a free dnode decoded from nonzero bytes", std::to_string(i));
    return;
  }
  const unsigned type = unsigned(d.type);
  if (type < 1 || type > 8) Fail("decoded type out of range", std::to_string(type));
  if (d.nlevels < 1 || d.nlevels > 6) Fail("decoded level count", std::to_string(d.nlevels));
  if (d.compression > 2) Fail("decoded compression", std::to_string(d.compression));
  bool pow2 = false;
  for (uint32_t s = 512; s <= (1u << 20); s <<= 1) pow2 |= d.block_size == s;
  if (!pow2) Fail("decoded block size", std::to_string(d.block_size));
  const size_t max_bonus = format == zio::BpFormat::kV1 ? 512 - 64 - 64 : 512 - 64 - 128;
  if (d.bonus.size() > max_bonus) Fail("decoded bonus length", std::to_string(d.bonus.size()));
  if (!zio::ValidateBlockPtr(d.bp).ok()) Fail("decoded an invalid block pointer", d.bp.ToString());
  if (d.bp.copies() > (format == zio::BpFormat::kV1 ? 1 : 3))
    Fail("decoded more copies than the format holds", d.bp.ToString());
}

void FuzzDnode(const uint8_t* in, zio::BpFormat format) {
  const std::string where = "fuzz slot";
  Result<dmu::DnodePhys> d = dmu::DecodeDnode(in, where, format);
  Result<dmu::DnodePhys> again = dmu::DecodeDnode(in, where, format);
  if (d.ok() != again.ok()) Fail("dnode decoding is not deterministic", "");
  if (!d.ok()) {
    CheckRefusal(d.status(), where);
    if (d.status().message() != again.status().message())
      Fail("dnode refusal is not deterministic", d.status().ToString());
    return;
  }
  if (!Same(*d, *again)) Fail("dnode decoding is not deterministic", "");
  CheckDnodeRules(*d, in, format);
  uint8_t out[dmu::kDnodeSize];
  dmu::EncodeDnode(*d, out, format);
  if (std::memcmp(out, in, dmu::kDnodeSize) != 0)
    Fail("dnode re-encodes to other bytes", "the encoding is not canonical");
  const zio::BpFormat other =
      format == zio::BpFormat::kV1 ? zio::BpFormat::kV2 : zio::BpFormat::kV1;
  if (d->bp.copies() <= 1 && d->bonus.size() <= dmu::MaxBonus(other)) {
    dmu::EncodeDnode(*d, out, other);
    Result<dmu::DnodePhys> back = dmu::DecodeDnode(out, where, other);
    if (!back.ok()) Fail("a dnode does not decode in the other format", back.status().ToString());
    if (!Same(*d, *back)) Fail("a dnode means something else in the other format", "");
  }
}

void FuzzObjset(const std::string& block, const std::string& raw, zio::BpFormat format) {
  const std::string where = "fuzz objset";
  Result<dmu::ObjsetPhys> o = dmu::DecodeObjset(block, where, format);
  Result<dmu::ObjsetPhys> again = dmu::DecodeObjset(block, where, format);
  if (o.ok() != again.ok()) Fail("objset decoding is not deterministic", "");
  if (o.ok()) {
    if (o->type != again->type || o->next_object != again->next_object ||
        o->live_objects != again->live_objects || !(o->space == again->space) ||
        o->space_known != again->space_known || !Same(o->metadnode, again->metadnode))
      Fail("objset decoding is not deterministic", "");
    if (o->space.physical > o->space.referenced)
      Fail("decoded space totals", "more stored bytes than allocated");
    if (o->type != dmu::ObjsetType::kMos && o->type != dmu::ObjsetType::kDataset)
      Fail("decoded objset type", std::to_string(uint32_t(o->type)));
    if (o->next_object == 0 || o->next_object > (uint64_t{1} << 48) ||
        o->live_objects >= o->next_object)
      Fail("decoded object counts", std::to_string(o->next_object));
    if (o->metadnode.type != dmu::ObjectType::kMetadnode || o->metadnode.block_size != 16384)
      Fail("decoded metadnode", "not a metadnode of 16 KiB blocks");
    CheckDnodeRules(o->metadnode, reinterpret_cast<const uint8_t*>(block.data()) + 64, format);
    // A version 1 block (no space totals) is written back as version 2: the
    // same bytes but for the version and the totals (zero when unknown).
    std::string expect = block;
    if (!o->space_known) expect[8] = char(dmu::kObjsetVersion);
    if (dmu::EncodeObjset(*o, format) != expect) Fail("objset re-encodes to other bytes", "");
  } else {
    CheckRefusal(o.status(), where);
  }
  if (raw.size() != dmu::kObjsetPhysSize) {
    Result<dmu::ObjsetPhys> r = dmu::DecodeObjset(raw, where, format);
    if (r.ok()) Fail("an objset block of the wrong size decoded", std::to_string(raw.size()));
    CheckRefusal(r.status(), where);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const zio::BpFormat format = (mode & 2) ? zio::BpFormat::kV2 : zio::BpFormat::kV1;
  std::string raw(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode & 1) {
    std::string block = raw;
    block.resize(dmu::kObjsetPhysSize, '\0');
    FuzzObjset(block, raw, format);
  } else {
    std::vector<uint8_t> slot(data + 1, data + size);
    slot.resize(dmu::kDnodeSize, 0);
    FuzzDnode(slot.data(), format);
  }
  return 0;
}
