// libFuzzer target for indirect blocks and block trees (core/dmu/block_tree.h)
// and for opening and reading an object set from bytes on a device
// (core/dmu/objset.h), over a MemoryDevice, a SpaceManager and a Zio, in
// both on-disk formats.
//
// Input: [mode byte][rest]. Mode bit 0 selects the part; mode bit 7 the
// format: clear, format 1 (block pointers of 64 bytes, indirect blocks of
// 128 KiB); set, format 2 (128 bytes, 256 KiB). Below, P is the pointer size
// and S the indirect block size of the format.
//
// Part 1 (bit 0 clear): `rest`, zero-padded or cut to S, is an indirect
// block at level L = 1 + ((mode >> 1) & 63) % 5: 2048 block pointers.
// Each is decoded as BlockTree::Load does. The block is also written to the
// device with a matching checksum and a BlockTree of L+1 levels is built on
// it, and its Lookup must agree with the decoding:
//   - any pointer that does not decode, or a stored child whose level is not
//     L-1, makes Lookup fail with Corruption;
//   - otherwise, at L = 1 Lookup(i) returns slot i exactly; at L > 1 a hole
//     slot makes every block under it an empty hole;
//   - every pointer that decodes re-encodes to its P input bytes.
//
// Part 2 (bit 0 set): `rest` is a list of up to 16 chunks, each [u8 flags]
// [u24 LE length (cut to S and to what is left)][length bytes]: the
// logical contents of blocks. flags & 3 (% 3) is the compression to store
// the chunk with (off, lz4, zstd; stored as is when that saves less than
// 1/8); flags >> 2 & 7 picks a logical size the bytes are cut or zero-padded
// to (0: as given; 1..7: 1, 4, 16, 128 KiB, 512 B, 8 KiB, and 64 KiB in
// format 1 or 256 KiB, an indirect block, in format 2), so that a
// mostly-empty indirect or dnode block costs the fuzzer only its nonzero
// head. Chunk j is stored at vdev 0, offset 4 MiB + j * S. Chunk 0 is the
// object set's root block (ObjsetPhys), reached through a pointer the
// target makes. Unless mode bit 1 is set, the target first repairs every
// P-byte window at a multiple of 64 bytes of chunk k whose offset field
// (copy 0's, at byte 8 in both formats) names a later chunk j > k (the
// places of pointers: in indirect blocks, in dnodes at 64 of each 512-byte
// slot, in a root block at 128): it sets that pointer's sizes,
// compression and checksum to match chunk j as stored (chunks are processed
// from the last to the first, so the repairs chain up to the root); a
// format 2 pointer's further copies are left as they are. So pointers
// written by the fuzzer reach the checksum and beyond, as on a pool whose
// Merkle tree is intact but whose content is hostile. Then:
//   - ObjectSet::Open returns OK or Corruption, never crashes;
//   - Stat and Read of objects 1..4, (next-1)/2 and next-1 (two reads of at
//     most 64 KiB each: at offset 0 and near the end) return OK, NotFound or
//     Corruption; a read returns exactly min(len, length - off) bytes;
//   - everything is deterministic: a second Open on the same device gives
//     the same transcript;
//   - a reference reader written from core/doc/on-disk-format.md (below,
//     independent of dmu::Dnode and dmu::BlockTree; it shares only the
//     decoders and Zio::Read) gives the same results: the same bytes, and
//     a failure exactly where ObjectSet fails, with the same status code.
// libFuzzer's -malloc_limit_mb catches any allocation sized from the input.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dmu/block_tree.h"
#include "dmu/dnode_phys.h"
#include "dmu/objset.h"
#include "space/allocator.h"
#include "util/checksum.h"
#include "util/compress.h"
#include "util/endian.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"
#include "zio/block_ptr.h"
#include "zio/zio.h"

namespace {

using namespace poolfs::core;
using poolfs::ObjectId;
using poolfs::Result;
using poolfs::Status;
using poolfs::StatusCode;
using poolfs::Txg;
namespace util = poolfs::util;
using util::GetLE32;
using util::GetLE64;
using util::PutLE32;
using util::PutLE64;

constexpr size_t kMaxChunks = 16;
constexpr uint64_t kFanout = 2048;
constexpr uint64_t kMaxRead = 64 * 1024;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "indirect_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// A chunk's room (part 2; part 1's block takes slot 0): an indirect block.
uint64_t SlotSize(zio::BpFormat f) { return dmu::IndirectBlockSize(f); }
uint64_t SlotOffset(size_t j, zio::BpFormat f) { return vdev::kFrontReserved + j * SlotSize(f); }
zio::BpFormat FormatOf(uint8_t mode) {
  return (mode & 0x80) ? zio::BpFormat::kV2 : zio::BpFormat::kV1;
}
uint64_t RoundUp(uint64_t v, uint64_t g) { return (v + g - 1) / g * g; }

// One minimum-size memory vdev (4 MiB allocatable: 16 slots of format 2)
// with its space manager and pipeline, per format; built once (libFuzzer
// may exit anywhere: never destroyed).
struct Pool {
  explicit Pool(zio::BpFormat f) : format(f) {}
  const zio::BpFormat format;
  vdev::MemoryDevice dev{vdev::kMinVdevSize, "fuzz"};
  space::SpaceManager space{
      {{0, vdev::kFrontReserved, vdev::kMinVdevSize - vdev::kFrontReserved - vdev::kBackReserved,
        12, 0}},
      space::SpaceOptions()};
  zio::Zio zio{{{&dev, 12}}, &space, format};
  uint64_t dirty_end = vdev::kFrontReserved;  // bytes written by the last input end here

  // Zeroes what the previous input wrote, so that every run sees only its
  // own bytes.
  void Clear() {
    static const std::string zeros(kMaxChunks * SlotSize(zio::BpFormat::kV2), '\0');
    if (dirty_end > vdev::kFrontReserved)
      MustOk(dev.Write(vdev::kFrontReserved, zeros.data(), dirty_end - vdev::kFrontReserved));
    dirty_end = vdev::kFrontReserved;
  }
  void Put(uint64_t off, const std::string& bytes) {
    MustOk(dev.Write(off, bytes.data(), bytes.size()));
    dirty_end = std::max(dirty_end, off + bytes.size());
  }
  static void MustOk(const Status& st) {
    if (!st.ok()) Fail("memory device write", st.ToString());
  }
};

Pool& ThePool(zio::BpFormat f) {
  static Pool* p1 = new Pool(zio::BpFormat::kV1);
  static Pool* p2 = new Pool(zio::BpFormat::kV2);
  return f == zio::BpFormat::kV1 ? *p1 : *p2;
}

bool AcceptableFailure(const Status& st) {
  return st.code() == StatusCode::kCorruption || st.code() == StatusCode::kNotFound;
}

// ---------------------------------------------------------------------------
// Part 1: one indirect block.

void FuzzIndirect(uint8_t mode, const uint8_t* data, size_t size) {
  const zio::BpFormat format = FormatOf(mode);
  const size_t bp_size = zio::BlockPtrSize(format);
  const uint64_t block_size = dmu::IndirectBlockSize(format);
  const uint8_t level = uint8_t(1 + ((mode >> 1) & 63) % 5);
  std::string block(reinterpret_cast<const char*>(data), std::min<size_t>(size, block_size));
  block.resize(block_size, '\0');
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());

  std::vector<zio::BlockPtr> slots(kFanout);
  bool all_good = true;
  for (uint64_t i = 0; i < kFanout && all_good; i++) {
    const std::string where = "fuzz slot " + std::to_string(i);
    Result<zio::BlockPtr> bp = zio::DecodeBlockPtr(p + i * bp_size, where, format);
    if (!bp.ok()) {
      if (bp.status().code() != StatusCode::kCorruption ||
          bp.status().message().rfind(where, 0) != 0)
        Fail("block pointer refusal", bp.status().ToString());
      all_good = false;
      break;
    }
    uint8_t again[zio::kBlockPtrSizeV2];
    zio::EncodeBlockPtr(*bp, again, format);
    if (std::memcmp(again, p + i * bp_size, bp_size) != 0)
      Fail("block pointer re-encodes to other bytes", bp->ToString());
    if (!bp->IsHole() && bp->level != level - 1) all_good = false;
    slots[i] = *bp;
  }

  Pool& pool = ThePool(format);
  pool.Clear();
  pool.Put(SlotOffset(0, format), block);
  zio::BlockPtr top;
  top.dva = {0, SlotOffset(0, format), block_size};
  top.lsize = top.psize = uint32_t(block_size);
  top.type = zio::BlockType::kIndirect;
  top.level = level;
  top.birth = Txg(1);
  top.fill = 1;
  top.checksum = util::Xxh3_128(block.data(), block.size());
  dmu::BlockTree tree(&pool.zio, "fuzz", uint8_t(level + 1), top, 0);
  const uint64_t child_span = uint64_t{1} << (11 * (level - 1));
  int stored_probed = 0;
  int holes_probed = 0;
  for (uint64_t i = 0; i < kFanout; i++) {
    Result<zio::BlockPtr> got = tree.Lookup(i * child_span);
    if (!all_good) {
      if (got.ok()) Fail("a damaged indirect block was accepted", std::to_string(i));
      if (got.status().code() != StatusCode::kCorruption)
        Fail("indirect block refusal", got.status().ToString());
      return;  // a refused block is refused the same way for every slot
    }
    if (level == 1) {
      if (!got.ok()) Fail("a good indirect block was refused", got.status().ToString());
      if (!(*got == slots[i])) Fail("Lookup returned another pointer", got->ToString());
    } else if (slots[i].IsHole()) {
      if (!got.ok()) Fail("a hole's subtree was refused", got.status().ToString());
      if (!(*got == zio::BlockPtr{})) Fail("a hole's subtree is not empty", got->ToString());
      // Each hole probed below level 1 caches an empty 2048-slot indirect
      // block per level (BlockTree keeps them): probe a few.
      if (++holes_probed == 8) i = std::max(i, kFanout - 2);
    } else if (!got.ok() && got.status().code() != StatusCode::kCorruption) {
      Fail("subtree refusal", got.status().ToString());
    } else if (++stored_probed == 4) {
      break;  // each stored child costs a device read: probe a few
    }
  }
}

// ---------------------------------------------------------------------------
// Part 2: an object set.

struct Chunk {
  util::Compression compression = util::Compression::kOff;
  std::string logical;
  std::string stored;  // what goes on the device (compressed or not)
  util::Compression stored_as = util::Compression::kOff;
};

std::vector<Chunk> ParseChunks(const uint8_t* data, size_t size, zio::BpFormat format) {
  std::vector<Chunk> chunks;
  size_t pos = 0;
  while (pos + 4 <= size && chunks.size() < kMaxChunks) {
    static constexpr size_t kPad[8] = {0, 1024, 4096, 16384, 131072, 512, 8192, 65536};
    Chunk c;
    c.compression = util::Compression((data[pos] & 3) % 3);
    const size_t pick = (data[pos] >> 2) & 7;
    const size_t pad = pick == 7 && format == zio::BpFormat::kV2 ? SlotSize(format) : kPad[pick];
    size_t len = data[pos + 1] | size_t(data[pos + 2]) << 8 | size_t(data[pos + 3]) << 16;
    pos += 4;
    len = std::min({len, size_t(SlotSize(format)), size - pos});
    c.logical.assign(reinterpret_cast<const char*>(data + pos), len);
    if (pad != 0) c.logical.resize(pad, '\0');
    pos += len;
    chunks.push_back(std::move(c));
  }
  return chunks;
}

void Store(Chunk& c) {
  c.stored = c.logical;
  c.stored_as = util::Compression::kOff;
  if (c.compression == util::Compression::kOff || c.logical.empty()) return;
  std::string buf(c.logical.size(), '\0');
  Result<size_t> n =
      util::Compress(c.compression, c.logical.data(), c.logical.size(), buf.data(), buf.size());
  if (!n.ok()) return;  // does not save 1/8: stored as is
  buf.resize(*n);
  c.stored = std::move(buf);
  c.stored_as = c.compression;
}

// Points the pointer (of `format`) at `w` at chunk c as stored (see the
// top).
template <typename Phys>
void RepairAs(uint8_t* w, const Chunk& c) {
  PutLE32(w + offsetof(Phys, asize), uint32_t(RoundUp(c.stored.size(), 4096)));
  PutLE32(w + offsetof(Phys, lsize), uint32_t(c.logical.size()));
  PutLE32(w + offsetof(Phys, psize), uint32_t(c.stored.size()));
  w[offsetof(Phys, compression)] = uint8_t(c.stored_as);
  util::Checksum128 sum = util::Xxh3_128(c.stored.data(), c.stored.size());
  PutLE64(w + offsetof(Phys, checksum_lo), sum.lo);
  PutLE64(w + offsetof(Phys, checksum_hi), sum.hi);
}
void Repair(uint8_t* w, const Chunk& c, zio::BpFormat format) {
  if (format == zio::BpFormat::kV1)
    RepairAs<zio::BlockPtrPhys>(w, c);
  else
    RepairAs<zio::BlockPtrPhysV2>(w, c);
}

// The reference reader: object set -> dnode -> block, as
// core/doc/on-disk-format.md describes it.
class RefReader {
 public:
  explicit RefReader(zio::Zio* zio) : zio_(zio), format_(zio->format()) {}

  Status Open(const zio::BlockPtr& root) {
    if (root.IsHole() || root.type != zio::BlockType::kObjset)
      return Status::Corruption("root is not an object set block");
    POOLFS_ASSIGN_OR_RETURN(std::string bytes, zio_->Read(root));
    POOLFS_ASSIGN_OR_RETURN(os_, dmu::DecodeObjset(bytes, "ref", format_));
    return Status::Ok();
  }

  // The dnode of object id (free when past the metadnode's length).
  Result<dmu::DnodePhys> Dnode(uint64_t id) {
    POOLFS_ASSIGN_OR_RETURN(std::string slot, ReadObject(os_.metadnode, id * 512, 512));
    if (slot.size() < 512) return dmu::DnodePhys();
    return dmu::DecodeDnode(reinterpret_cast<const uint8_t*>(slot.data()), "ref", format_);
  }

  Result<std::string> ReadObject(const dmu::DnodePhys& d, uint64_t off, uint64_t len) {
    if (off >= d.length) return std::string();
    const uint64_t end = off + std::min(len, d.length - off);
    const uint64_t bs = d.block_size;
    std::string out(end - off, '\0');
    for (uint64_t b = off / bs; b * bs < end; b++) {
      POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr bp, Lookup(d, b));
      if (bp.IsHole()) continue;
      POOLFS_ASSIGN_OR_RETURN(std::string blk, zio_->Read(bp));
      if (blk.size() != bs) return Status::Corruption("data block of the wrong size");
      const uint64_t lo = std::max(off, b * bs), hi = std::min(end, (b + 1) * bs);
      std::memcpy(out.data() + (lo - off), blk.data() + (lo - b * bs), hi - lo);
    }
    return out;
  }

 private:
  // Level-0 pointer of block b: descend from the top, one slot per level.
  Result<zio::BlockPtr> Lookup(const dmu::DnodePhys& d, uint64_t b) {
    const unsigned top_level = d.nlevels - 1u;
    if (top_level * 11 < 64 && (b >> (11 * top_level)) != 0) return zio::BlockPtr{};
    zio::BlockPtr bp = d.bp;
    for (unsigned level = top_level; level >= 1; level--) {
      if (bp.IsHole()) return zio::BlockPtr{};
      if (bp.level != level || bp.lsize != kFanout * zio::BlockPtrSize(format_))
        return Status::Corruption("indirect pointer of the wrong level or size");
      POOLFS_ASSIGN_OR_RETURN(const std::vector<zio::BlockPtr>* kids, Children(bp));
      bp = (*kids)[(b >> (11 * (level - 1))) & (kFanout - 1)];
    }
    return bp;
  }

  // The 2048 pointers of the indirect block at bp (read once: the same
  // pointer always names the same bytes).
  Result<const std::vector<zio::BlockPtr>*> Children(const zio::BlockPtr& bp) {
    uint8_t key[zio::kBlockPtrSizeV2];
    zio::EncodeBlockPtr(bp, key, format_);
    auto [it, fresh] =
        indirect_.try_emplace(std::string(reinterpret_cast<char*>(key), zio::BlockPtrSize(format_)),
                              Status::Corruption("unset"));
    if (fresh) it->second = ReadChildren(bp);
    if (!it->second.ok()) return it->second.status();
    return &it->second.value();
  }
  Result<std::vector<zio::BlockPtr>> ReadChildren(const zio::BlockPtr& bp) {
    POOLFS_ASSIGN_OR_RETURN(std::string blk, zio_->Read(bp));
    // Every pointer of an indirect block must decode and sit one level
    // below it, or the whole block is refused.
    std::vector<zio::BlockPtr> kids(kFanout);
    for (uint64_t i = 0; i < kFanout; i++) {
      POOLFS_ASSIGN_OR_RETURN(kids[i],
                              zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(blk.data()) +
                                                      i * zio::BlockPtrSize(format_),
                                                  "", format_));
      if (!kids[i].IsHole() && kids[i].level != bp.level - 1)
        return Status::Corruption("child of the wrong level");
    }
    return kids;
  }

  zio::Zio* zio_;
  const zio::BpFormat format_;
  dmu::ObjsetPhys os_;
  std::map<std::string, Result<std::vector<zio::BlockPtr>>> indirect_;
};

std::string Code(const Status& st) { return std::to_string(int(st.code())); }

// Opens the object set at root and probes it; returns a transcript of
// everything seen. With `ref`, also runs the reference reader alongside and
// aborts where they disagree.
std::string Probe(zio::Zio* zio, const zio::BlockPtr& root, bool ref_check) {
  std::string log;
  RefReader ref(zio);
  Status ref_open = ref.Open(root);
  Result<std::unique_ptr<dmu::ObjectSet>> os = dmu::ObjectSet::Open(zio, root, "fuzz");
  if (ref_check && os.ok() != ref_open.ok())
    Fail("Open and the reference reader disagree",
         os.ok() ? ref_open.ToString() : os.status().ToString());
  if (!os.ok()) {
    if (os.status().code() != StatusCode::kCorruption) Fail("Open status", os.status().ToString());
    return "open " + Code(os.status());
  }
  const uint64_t next = (*os)->next_object();
  log += "next " + std::to_string(next) + " live " + std::to_string((*os)->live_objects());
  std::vector<uint64_t> ids = {1, 2, 3, 4, (next - 1) / 2, next - 1};
  for (uint64_t id : ids) {
    if (id == 0 || id > dmu::kMaxObjectId) continue;
    log += "\nobject " + std::to_string(id) + ": ";
    Result<dmu::ObjectInfo> info = (*os)->Stat(ObjectId(id));
    Result<dmu::DnodePhys> rd = ref.Dnode(id);
    if (ref_check) {
      // The reference sees a free dnode where ObjectSet says NotFound.
      const bool ref_ok = rd.ok() && !rd->free();
      if (info.ok() != ref_ok)
        Fail(
            "Stat and the reference reader disagree",
            "object " + std::to_string(id) + ": " +
                (info.ok() ? rd.ok() ? "free" : rd.status().ToString() : info.status().ToString()));
      if (!info.ok() && !rd.ok() && info.status().code() != rd.status().code())
        Fail("Stat and the reference reader fail differently",
             info.status().ToString() + " / " + rd.status().ToString());
      if (!info.ok() && rd.ok() && !info.status().IsNotFound())
        Fail("a free object is not NotFound", info.status().ToString());
    }
    if (!info.ok()) {
      if (!AcceptableFailure(info.status())) Fail("Stat status", info.status().ToString());
      log += "stat " + Code(info.status());
      continue;
    }
    if (ref_check && (info->type != rd->type || info->length != rd->length ||
                      info->block_size != rd->block_size || info->bonus != rd->bonus ||
                      info->used != rd->used || info->generation != rd->generation))
      Fail("Stat and the reference reader see other attributes", std::to_string(id));
    log += "len " + std::to_string(info->length) + " bs " + std::to_string(info->block_size);
    const uint64_t len = info->length;
    for (uint64_t off : {uint64_t{0}, len > kMaxRead ? len - kMaxRead + 1 : 0}) {
      Result<std::string> got = (*os)->Read(ObjectId(id), off, kMaxRead);
      if (got.ok()) {
        const uint64_t want = off >= len ? 0 : std::min(kMaxRead, len - off);
        if (got->size() != want) Fail("Read returned the wrong length", std::to_string(id));
      } else if (!AcceptableFailure(got.status())) {
        Fail("Read status", got.status().ToString());
      }
      if (ref_check) {
        Result<std::string> want = ref.ReadObject(*rd, off, kMaxRead);
        if (got.ok() != want.ok())
          Fail("Read and the reference reader disagree",
               "object " + std::to_string(id) + " off " + std::to_string(off) + ": " +
                   (got.ok() ? want.status().ToString() : got.status().ToString()));
        if (got.ok() && *got != *want)
          Fail("Read and the reference reader return other bytes", std::to_string(id));
      }
      log += got.ok() ? " read " + std::to_string(util::Xxh3_64(got->data(), got->size()))
                      : " read " + Code(got.status());
    }
  }
  return log;
}

void FuzzObjectSet(uint8_t mode, const uint8_t* data, size_t size) {
  const zio::BpFormat format = FormatOf(mode);
  const size_t bp_size = zio::BlockPtrSize(format);
  std::vector<Chunk> chunks = ParseChunks(data, size, format);
  if (chunks.empty() || chunks[0].logical.empty()) return;
  const bool repair = !(mode & 2);
  for (size_t k = chunks.size(); k-- > 0;) {
    if (repair) {
      std::string& s = chunks[k].logical;
      // 64-byte steps: a dnode's pointer is at 64 in its 512-byte slot.
      for (size_t w = 0; w + bp_size <= s.size(); w += 64) {
        auto* p = reinterpret_cast<uint8_t*>(s.data() + w);
        const uint64_t off = GetLE64(p + 8);
        for (size_t j = k + 1; j < chunks.size(); j++)
          if (off == SlotOffset(j, format) && !chunks[j].logical.empty())
            Repair(p, chunks[j], format);
      }
    }
    Store(chunks[k]);
  }
  Pool& pool = ThePool(format);
  pool.Clear();
  for (size_t j = 0; j < chunks.size(); j++) pool.Put(SlotOffset(j, format), chunks[j].stored);

  zio::BlockPtr root;
  root.dva = {0, SlotOffset(0, format), RoundUp(chunks[0].stored.size(), 4096)};
  root.lsize = uint32_t(chunks[0].logical.size());
  root.psize = uint32_t(chunks[0].stored.size());
  root.compression = chunks[0].stored_as;
  root.type = zio::BlockType::kObjset;
  root.birth = Txg(1);
  root.fill = 1;
  root.checksum = util::Xxh3_128(chunks[0].stored.data(), chunks[0].stored.size());

  const std::string first = Probe(&pool.zio, root, true);
  if (std::getenv("INDIRECT_FUZZ_VERBOSE")) std::fprintf(stderr, "%s\n", first.c_str());
  const std::string second = Probe(&pool.zio, root, false);
  if (first != second) Fail("object set reads are not deterministic", first + "\n---\n" + second);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1)
    FuzzObjectSet(data[0], data + 1, size - 1);
  else
    FuzzIndirect(data[0], data + 1, size - 1);
  return 0;
}
