// Writes the seed corpora of dnode_fuzz, pool_phys_fuzz, indirect_fuzz and
// block_ptr_fuzz into <root>/dnode, <root>/pool_phys, <root>/indirect and
// <root>/block_ptr (folders that must exist):
//   dmu_corpus_gen tests/fuzz/corpus
// and, with --trace instead of a folder, prints the walk of the worked
// example of core/doc/on-disk-format.md (uberblock to byte 0 of object 5 of
// dataset "tank") on a freshly made pool of the newest format.
//
// Seeds come from two real pools "tank" made on memory devices, one of
// format 2 (the default: 128-byte block pointers, metadata in two copies,
// the MOS in three) and one of format 1 (CreateOptions::format_version = 1:
// 64-byte pointers, one copy), each with objects 1..5 of dataset tank
// (small, sparse over three levels, with a bonus, compressed over two
// levels, and object 5's text): their config, pool directories, root
// payloads, dnodes, object set roots, indirect blocks, block pointers with
// their stored bytes, and whole object set images in indirect_fuzz's chunk
// form. Each seed is framed for its format as the target's top comment
// says, and named "v1-..." or "v2-..." after it (the config, which has no
// block pointer, once). Damaged variants break each rule of the decoders
// once, the rules of format 2's copies too (in indirect_fuzz's images,
// pointers are repaired by the target unless mode bit 1 is set, so damage
// there is in the content; the images name one copy of each block, since
// the target repairs copy 0 only).
// The corpora also hold found-* files (hex names in block_ptr) kept from
// fuzzing runs (libFuzzer -merge=1); this program neither writes nor
// removes them.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dmu/dnode_phys.h"
#include "dmu/objset.h"
#include "dmu/tx.h"
#include "pool/pool.h"
#include "pool/pool_phys.h"
#include "txg/inline_executor.h"
#include "util/checksum.h"
#include "util/compress.h"
#include "util/endian.h"
#include "vdev/label.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"
#include "zio/zio.h"

namespace {

using namespace poolfs::core;
using poolfs::ObjectId;
using poolfs::Result;
using poolfs::Status;
using poolfs::Txg;
using zio::BpFormat;
namespace util = poolfs::util;

int g_count = 0;
bool g_trace = false;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "dmu_corpus_gen: %s\n", what.c_str());
  std::exit(1);
}
template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r.ok()) Die(std::string(what) + ": " + r.status().ToString());
  return std::move(r).value();
}
void Must(const Status& st, const char* what) {
  if (!st.ok()) Die(std::string(what) + ": " + st.ToString());
}

void Write(const std::string& path, const std::string& bytes) {
  if (g_trace) return;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    Die("cannot write " + path);
  std::fclose(f);
  g_count++;
}

void Trace(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Trace(const char* fmt, ...) {
  if (!g_trace) return;
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
}

std::string Bytes(const uint8_t* p, size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}
std::string Trimmed(std::string s) {
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// ---------------------------------------------------------------------------
// The pool.

struct Tank {
  vdev::MemoryDevice dev{64 * vdev::kMiB, "tank.pool"};
  zio::BpFormat format = zio::BpFormat::kV2;
  std::string prefix;             // of its seeds' names: "v1-" or "v2-"
  std::unique_ptr<zio::Zio> zio;  // read-only, for the walks
  vdev::VdevLabelInfo labels;
  vdev::Uberblock ub;

  size_t bp_size() const { return zio::BlockPtrSize(format); }
  bool v2() const { return format == zio::BpFormat::kV2; }
};

// Makes tank in on-disk format `version` (1 or 2).
void MakeTank(Tank& t, uint32_t version) {
  t.format = zio::BpFormat(version);
  t.prefix = "v" + std::to_string(version) + "-";
  pool::CreateOptions co;
  co.name = "tank";
  co.format_version = version;
  Must(pool::Pool::CreateOnDevices({&t.dev}, {"tank.pool"}, co), "create");
  txg::InlineExecutor exec;
  pool::PoolOptions po;
  po.executor = &exec;
  auto p = Must(pool::Pool::ImportDevices({&t.dev}, po), "import");
  dmu::ObjectSet* os = p->dataset("tank");
  {
    dmu::Tx tx(p->assigner());
    Must(tx.Assign(), "assign");
    // 1: a small plain object.
    ObjectId a = Must(os->Create(tx, dmu::ObjectType::kPlain, 4096), "create 1");
    Must(os->Write(tx, a, 0, "a small object"), "write 1");
    // 2: sparse, one 512-byte block at block 2053 (L2 slot 1, L1 slot 5): three
    // levels.
    ObjectId b =
        Must(os->Create(tx, dmu::ObjectType::kPlain, 512, util::Compression::kOff), "create 2");
    Must(os->Write(tx, b, 2053 * 512, std::string(512, 'S')), "write 2");
    // 3: a directory-typed object with a bonus and no data.
    Must(os->Create(tx, dmu::ObjectType::kDirectory, 16384, util::Compression::kLz4,
                    "bonus bytes of object 3"),
         "create 3");
    // 4: two 128 KiB blocks (two levels), lz4-compressed, each holding a
    // little text and then zeros (so that the seeds stay small).
    ObjectId d = Must(os->Create(tx, dmu::ObjectType::kPlain), "create 4");
    std::string text;
    while (text.size() < 300) text += "poolfs object 4 line " + std::to_string(text.size()) + "\n";
    Must(os->Write(tx, d, 0, text), "write 4");
    Must(os->Write(tx, d, 128 * 1024, text), "write 4");
    // 5: the worked example's object.
    ObjectId e =
        Must(os->Create(tx, dmu::ObjectType::kPlain, 4096, util::Compression::kOff), "create 5");
    if (e.value() != 5) Die("object 5 is " + std::to_string(e.value()));
    Must(os->Write(tx, e, 0, "Hello from object 5 of tank."), "write 5");
    tx.Commit();
  }
  Must(p->WaitSynced(), "sync");
  Must(p->Export(), "export");
  p.reset();
  t.labels = Must(vdev::ReadLabels(t.dev), "labels");
  t.ub = t.labels.uberblocks.at(0).ub;
  if (t.labels.header.version != version || t.ub.version != version)
    Die("the pool of format " + std::to_string(version) + " has labels of " +
        std::to_string(t.labels.header.version) + " and uberblocks of " +
        std::to_string(t.ub.version));
  t.zio = std::make_unique<zio::Zio>(std::vector<zio::Zio::Vdev>{{&t.dev, 12}}, nullptr, t.format);
}

// A minimal reader (the walk of the worked example).
struct Walker {
  zio::Zio* zio;
  zio::BpFormat format;

  zio::BlockPtr Lookup(const dmu::DnodePhys& d, uint64_t blkid, const std::string& who) {
    zio::BlockPtr bp = d.bp;
    for (unsigned level = d.nlevels - 1u; level >= 1; level--) {
      if (bp.IsHole()) return zio::BlockPtr{};
      std::string blk = Must(zio->Read(bp), "read indirect");
      const uint64_t slot = (blkid >> (11 * (level - 1))) & 2047;
      Trace("  %s L%u indirect block at vdev %u offset 0x%" PRIx64 " (%s): slot %" PRIu64
            " (byte %" PRIu64 ")\n",
            who.c_str(), level, bp.dva.vdev, bp.dva.offset, bp.ToString().c_str(), slot,
            slot * zio::BlockPtrSize(format));
      bp = Must(zio::DecodeBlockPtr(
                    reinterpret_cast<const uint8_t*>(blk.data()) + slot * zio::BlockPtrSize(format),
                    "", format),
                "decode");
    }
    return bp;
  }
  std::string ReadBlock(const dmu::DnodePhys& d, uint64_t blkid, const std::string& who) {
    zio::BlockPtr bp = Lookup(d, blkid, who);
    Trace("  %s block %" PRIu64 ": %s\n", who.c_str(), blkid, bp.ToString().c_str());
    return Must(zio->Read(bp), "read block");
  }
  dmu::DnodePhys Dnode(const dmu::ObjsetPhys& os, uint64_t id, const std::string& who) {
    Trace("  %s object %" PRIu64 ": metadnode block %" PRIu64 ", slot %" PRIu64 " (byte %" PRIu64
          " of the block)\n",
          who.c_str(), id, id / 32, id % 32, (id % 32) * 512);
    std::string blk = ReadBlock(os.metadnode, id / 32, who + " metadnode");
    return Must(dmu::DecodeDnode(reinterpret_cast<const uint8_t*>(blk.data()) + (id % 32) * 512,
                                 who, format),
                "dnode");
  }
  dmu::ObjsetPhys Objset(const zio::BlockPtr& root) {
    return Must(dmu::DecodeObjset(Must(zio->Read(root), "read objset"), "objset", format),
                "objset");
  }
};

Walker WalkerOf(Tank& t) { return Walker{t.zio.get(), t.format}; }

void TraceExample(Tank& t) {
  Walker w = WalkerOf(t);
  Trace("uberblock: txg %" PRIu64 ", found in labels mask 0x%x, slot %" PRIu64
        " (label offset 0x%" PRIx64 ")\n",
        t.ub.txg.value(), t.labels.uberblocks[0].label_mask, t.ub.txg.value() % 128,
        vdev::kRingOffset + (t.ub.txg.value() % 128) * 1024);
  zio::BlockPtr mos_root = Must(pool::DecodeRootPayload(t.ub.root, t.format), "root payload").mos_root;
  Trace("MOS root: %s\n", mos_root.ToString().c_str());
  dmu::ObjsetPhys mos = w.Objset(mos_root);
  Trace("MOS: next object %" PRIu64 ", live %" PRIu64 ", metadnode nlevels %u top %s\n",
        mos.next_object, mos.live_objects, mos.metadnode.nlevels,
        mos.metadnode.bp.ToString().c_str());
  dmu::DnodePhys dir_dn = w.Dnode(mos, 1, "MOS");
  Trace("MOS object 1 (pool directory): length %" PRIu64 ", block size %u, nlevels %u\n",
        dir_dn.length, dir_dn.block_size, dir_dn.nlevels);
  std::string dir_bytes;
  for (uint64_t b = 0; b * dir_dn.block_size < dir_dn.length; b++)
    dir_bytes += w.ReadBlock(dir_dn, b, "MOS object 1");
  dir_bytes.resize(dir_dn.length);
  pool::PoolDirectory dir = Must(pool::DecodePoolDirectory(dir_bytes, t.format), "directory");
  Trace("pool directory: %zu datasets, %zu space maps\n", dir.datasets.size(),
        dir.space_maps.size());
  for (const pool::DatasetEntry& e : dir.datasets) {
    Trace("  dataset '%s' id %" PRIu64 " root %s\n", e.name.c_str(), e.id,
          e.root.ToString().c_str());
    if (e.name != "tank") continue;
    dmu::ObjsetPhys os = w.Objset(e.root);
    Trace("tank: next object %" PRIu64 ", live %" PRIu64 ", metadnode nlevels %u top %s\n",
          os.next_object, os.live_objects, os.metadnode.nlevels,
          os.metadnode.bp.ToString().c_str());
    dmu::DnodePhys d5 = w.Dnode(os, 5, "tank");
    Trace("tank object 5: type %u, length %" PRIu64 ", block size %u, nlevels %u\n",
          unsigned(d5.type), d5.length, d5.block_size, d5.nlevels);
    std::string blk = w.ReadBlock(d5, 0, "tank object 5");
    Trace("byte 0 of object 5: '%c' (0x%02x); the first %" PRIu64 " bytes: \"%s\"\n", blk[0],
          unsigned(uint8_t(blk[0])), d5.length, blk.substr(0, d5.length).c_str());
  }
}

// ---------------------------------------------------------------------------
// Helpers for the seeds.

// Writes `value` little-endian in `width` bytes (1, 2, 4 or 8) at `off`.
std::string Patched(std::string s, size_t off, uint64_t value, int width) {
  auto* q = reinterpret_cast<uint8_t*>(s.data()) + off;
  switch (width) {
    case 8: util::PutLE64(q, value); break;
    case 4: util::PutLE32(q, uint32_t(value)); break;
    case 2: util::PutLE16(q, uint16_t(value)); break;
    default: *q = uint8_t(value); break;
  }
  return s;
}

// Where the fields of a block pointer of one format lie.
struct BpFields {
  size_t asize, lsize, psize, type, level, compression, gang_sectors;
};
BpFields FieldsOf(zio::BpFormat f) {
  if (f == zio::BpFormat::kV1) {
    using P = zio::BlockPtrPhys;
    return {offsetof(P, asize),       offsetof(P, lsize), offsetof(P, psize),
            offsetof(P, type),        offsetof(P, level), offsetof(P, compression),
            offsetof(P, gang_sectors)};
  }
  using P = zio::BlockPtrPhysV2;
  return {offsetof(P, asize), offsetof(P, lsize),       offsetof(P, psize),       offsetof(P, type),
          offsetof(P, level), offsetof(P, compression), offsetof(P, gang_sectors)};
}
// Format 2: where copy i's DVA and the reserved fields lie.
constexpr size_t CopyAt(int i) {
  return offsetof(zio::BlockPtrPhysV2, dva) + size_t(i) * sizeof(zio::DvaPhys);
}
constexpr size_t kReserved1 = offsetof(zio::BlockPtrPhysV2, reserved1);
constexpr size_t kReserved2 = offsetof(zio::BlockPtrPhysV2, reserved2);

std::string EncodeBp(const zio::BlockPtr& bp, zio::BpFormat f) {
  std::string s(zio::BlockPtrSize(f), '\0');
  zio::EncodeBlockPtr(bp, reinterpret_cast<uint8_t*>(s.data()), f);
  return s;
}

// The roots of a tank: the MOS, its pool directory, dataset tank.
struct Roots {
  zio::BlockPtr mos_root;
  dmu::ObjsetPhys mos;
  std::string dir_bytes;  // MOS object 1
  pool::PoolDirectory pd;
  zio::BlockPtr tank_root;
  dmu::ObjsetPhys tank;
};

Roots RootsOf(Tank& t) {
  Walker w = WalkerOf(t);
  Roots r;
  r.mos_root = Must(pool::DecodeRootPayload(t.ub.root, t.format), "root payload").mos_root;
  r.mos = w.Objset(r.mos_root);
  dmu::DnodePhys dir_dn = w.Dnode(r.mos, 1, "MOS");
  for (uint64_t b = 0; b * dir_dn.block_size < dir_dn.length; b++)
    r.dir_bytes += w.ReadBlock(dir_dn, b, "MOS object 1");
  r.dir_bytes.resize(dir_dn.length);
  r.pd = Must(pool::DecodePoolDirectory(r.dir_bytes, t.format), "directory");
  for (const auto& e : r.pd.datasets)
    if (e.name == "tank") r.tank_root = e.root;
  r.tank = w.Objset(r.tank_root);
  return r;
}

// ---------------------------------------------------------------------------
// indirect_fuzz images: the blocks under a root, relocated into chunks.

struct Image {
  struct Block {
    std::string logical;
    util::Compression compression;
  };
  std::vector<Block> blocks;
};

// What a block holds, for finding the pointers in it: the root block of an
// object set, or a block of a tree of dnode blocks (the metadnode's) or of
// data blocks (any other object's). On disk both trees' leaves are typed
// "data", so the walk has to know which tree it is in.
enum class Kind { kObjsetRoot, kDnodeTree, kDataTree };

// Appends the block of bp and (pre-order) the blocks under it; returns its
// chunk index, or -1 when there are already 16.
int Relocate(Tank& t, const zio::BlockPtr& bp, Kind kind, Image* img) {
  if (img->blocks.size() >= 16) return -1;
  const int me = int(img->blocks.size());
  img->blocks.push_back({Must(t.zio->Read(bp), "read for image"), bp.compression});
  std::string s = img->blocks[me].logical;
  std::vector<size_t> ptrs;  // byte positions of the pointers in this block
  Kind child_kind = kind;
  if (bp.level > 0) {
    for (size_t i = 0; i < dmu::kFanout; i++) ptrs.push_back(i * t.bp_size());
  } else if (kind == Kind::kObjsetRoot) {
    ptrs.push_back(128);
    child_kind = Kind::kDnodeTree;
  } else if (kind == Kind::kDnodeTree) {
    for (size_t i = 0; i * 512 < s.size(); i++)
      if (s[i * 512] != 0) ptrs.push_back(i * 512 + 64);
    child_kind = Kind::kDataTree;
  }
  for (size_t pos : ptrs) {
    auto* p = reinterpret_cast<uint8_t*>(s.data()) + pos;
    auto child = zio::DecodeBlockPtr(p, "", t.format);
    if (!child.ok() || child->IsHole()) continue;
    int j = Relocate(t, *child, child_kind, img);
    if (j < 0) break;
    // The target repairs sizes and checksums; copy 0's offset (at 8 in
    // both formats) says which chunk. The target repairs no other copy:
    // the image names one.
    util::PutLE64(p + 8, vdev::kFrontReserved + uint64_t(j) * dmu::IndirectBlockSize(t.format));
    if (t.v2()) std::memset(p + CopyAt(1), 0, CopyAt(3) - CopyAt(1));
  }
  img->blocks[me].logical = s;
  return me;
}

std::string Encode(const Image& img, uint8_t mode, zio::BpFormat format) {
  std::string out(1, char(mode));
  for (const Image::Block& b : img.blocks) {
    std::string bytes = Trimmed(b.logical);
    uint8_t pad = 0;
    switch (b.logical.size()) {
      case 1024: pad = 1; break;
      case 4096: pad = 2; break;
      case 16384: pad = 3; break;
      case 131072: pad = 4; break;
      case 512: pad = 5; break;
      case 8192: pad = 6; break;
      case 65536: pad = format == zio::BpFormat::kV1 ? 7 : 0; break;
      case 262144: pad = format == zio::BpFormat::kV2 ? 7 : 0; break;
      default: break;
    }
    if (pad == 0) bytes = b.logical;
    out += char(uint8_t(b.compression) | pad << 2);
    out += char(bytes.size() & 0xff);
    out += char(bytes.size() >> 8 & 0xff);
    out += char(bytes.size() >> 16 & 0xff);
    out += bytes;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Seeds.

// indirect_fuzz: mode bit 7 is the format.
void IndirectSeeds(Tank& t, const std::string& dir) {
  const Roots r = RootsOf(t);
  const BpFormat f = t.format;
  const BpFields bpf = FieldsOf(f);
  const size_t psz = t.bp_size();
  const uint8_t fmt = t.v2() ? 0x80 : 0;
  const std::string to = dir + "/" + t.prefix;

  Image tank, mos_img;
  Relocate(t, r.tank_root, Kind::kObjsetRoot, &tank);
  Relocate(t, r.mos_root, Kind::kObjsetRoot, &mos_img);
  Write(to + "image-tank", Encode(tank, fmt | 1, f));
  Write(to + "image-mos", Encode(mos_img, fmt | 1, f));
  Write(to + "image-tank-unrepaired", Encode(tank, fmt | 3, f));
  Image one = tank;
  one.blocks.resize(1);
  Write(to + "image-root-only", Encode(one, fmt | 1, f));
  // Content damage under intact checksums: every rule of the dnode and the
  // tree, one at a time, in the first dnode block of tank.
  for (size_t j = 0; j < tank.blocks.size(); j++) {
    const std::string& s = tank.blocks[j].logical;
    if (s.size() == dmu::kDnodeBlockSize && s[512] != 0) {  // the first: object 1 at 512
      struct Patch {
        const char* name;
        size_t off;
        uint8_t value;
      };
      for (const Patch& p : std::vector<Patch>{{"dnode-type-9", 512, 9},
                                               {"dnode-levels-0", 513, 0},
                                               {"dnode-levels-2", 513, 2},
                                               {"dnode-bs-odd", 512 + 9, 0x11},
                                               {"dnode-reserved", 512 + 40, 1},
                                               {"dnode-length-huge", 512 + 23, 0x40},
                                               {"dnode-bp-level-1", 512 + 64 + bpf.level, 1},
                                               {"dnode-bp-type-indirect", 512 + 64 + bpf.type, 2},
                                               {"dnode-bp-vdev-1", 512 + 64, 1},
                                               {"dnode5-free-garbage", 5 * 512 + 1, 0}}) {
        Image bad = tank;
        bad.blocks[j].logical[p.off] = char(p.value);
        Write(to + "image-" + p.name, Encode(bad, fmt | 1, f));
      }
    }
    if (s.size() == dmu::IndirectBlockSize(f)) {  // an indirect block: a child of the wrong level
      // Its first stored child becomes a valid indirect pointer one level
      // too high, which only the tree's level rule refuses.
      size_t k = 0;
      for (; k < dmu::kFanout; k++) {
        auto bp = zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(s.data()) + k * psz, "", f);
        if (bp.ok() && !bp->IsHole()) break;
      }
      if (k < dmu::kFanout) {
        Image bad = tank;
        bad.blocks[j].logical[k * psz + bpf.type] = char(zio::BlockType::kIndirect);
        bad.blocks[j].logical[k * psz + bpf.level] = char(s[k * psz + bpf.level] + 1);
        Write(to + "image-indirect-" + std::to_string(j) + "-child-level", Encode(bad, fmt | 1, f));
      }
      // Part-1 seeds: the real indirect block at its level, and one level off.
      auto bp = zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(s.data()), "", f);
      if (bp.ok()) {
        const uint8_t level = uint8_t(bp->IsHole() ? 1 : bp->level + 1);
        const std::string name = to + "block-" + std::to_string(j);
        Write(name + "-L" + std::to_string(level), char(fmt | (level - 1) << 1) + Trimmed(s));
        Write(name + "-wrong-level", char(fmt | (level % 5) << 1) + Trimmed(s));
        // Slot 0 with a gang size (format 1) or a reserved byte (format 2).
        const size_t at = t.v2() ? kReserved1 : bpf.gang_sectors;
        std::string flip = Trimmed(s);
        if (flip.size() <= at) flip.resize(at + 1, '\0');
        flip[at] = 1;
        Write(name + "-reserved", char(fmt | (level - 1) << 1) + flip);
      }
    }
  }
  Write(to + "block-zeros", std::string(1, char(fmt)));
  // Objects past next, and a root claiming more objects than it has.
  Image big = tank;
  util::PutLE64(reinterpret_cast<uint8_t*>(big.blocks[0].logical.data()) + 16, uint64_t{1} << 40);
  Write(to + "image-next-2^40", Encode(big, fmt | 1, f));
}

// dnode_fuzz: mode bit 0 is an object set root, bit 1 the format.
void DnodeSeeds(Tank& t, const std::string& dir) {
  Walker w = WalkerOf(t);
  const Roots r = RootsOf(t);
  const BpFields bpf = FieldsOf(t.format);
  const std::string dn(1, t.v2() ? '\x02' : '\x00');
  const std::string os(1, t.v2() ? '\x03' : '\x01');
  const std::string to = dir + "/" + t.prefix;

  Write(to + "objset-mos", os + Must(t.zio->Read(r.mos_root), "read MOS root"));
  std::string dnodes = w.ReadBlock(r.mos.metadnode, 0, "MOS metadnode");
  for (int i = 0; i < 4; i++)
    Write(to + "dnode-mos-" + std::to_string(i), dn + dnodes.substr(i * 512, 512));
  const std::string root = Must(t.zio->Read(r.tank_root), "read tank root");
  Write(to + "objset-tank", os + root);
  std::string blk = w.ReadBlock(r.tank.metadnode, 0, "tank metadnode");
  for (int i = 1; i <= 5; i++)
    Write(to + "dnode-tank-" + std::to_string(i), dn + blk.substr(i * 512, 512));
  // Damaged dnodes: each rule once.
  const std::string good = blk.substr(1 * 512, 512);
  struct Patch {
    std::string name;
    size_t off;
    uint64_t value;
    int width;
  };
  std::vector<Patch> patches = {
      {"type-9", 0, 9, 1},
      {"levels-0", 1, 0, 1},
      {"levels-7", 1, 7, 1},
      {"compression-3", 2, 3, 1},
      {"bonus-" + std::to_string(dmu::MaxBonus(t.format) + 1), 4, dmu::MaxBonus(t.format) + 1, 2},
      {"reserved-6", 6, 1, 1},
      {"reserved-12", 12, 1, 1},
      {"reserved-40", 40, 1, 1},
      {"reserved-63", 63, 1, 1},
      {"bs-not-pow2", 8, 0x1100, 4},
      {"bs-256", 8, 256, 4},
      {"bs-2MiB", 8, 2 << 20, 4},
      {"bp-type-10", 64 + bpf.type, 10, 1},
      {"past-bonus", 511, 1, 1},
      {"free-garbage", 0, 0, 1}};
  if (t.v2()) {
    patches.push_back({"bp-reserved-68", 64 + kReserved1, 1, 1});
    patches.push_back({"bp-reserved-127", 64 + zio::kBlockPtrSizeV2 - 1, 1, 1});
    patches.push_back({"bp-copy0-reserved", 64 + CopyAt(0) + 4, 1, 1});
  }
  for (const Patch& p : patches)
    Write(to + "dnode-bad-" + p.name, dn + Patched(good, p.off, p.value, p.width));
  // A gang of 512 bytes: valid for object 1's few stored bytes.
  Write(to + "dnode-bp-gang-512", dn + Patched(good, 64 + bpf.gang_sectors, 1, 1));
  if (t.v2()) {
    // The rules of copies, on a dnode whose pointer has two (metadata).
    for (int i = 1; i <= 5; i++) {
      const std::string d = blk.substr(i * 512, 512);
      const auto* q = reinterpret_cast<const uint8_t*>(d.data()) + 64;
      const zio::BlockPtr bp = Must(zio::DecodeBlockPtr(q, "", t.format), "dnode pointer");
      if (bp.copies() != 2) continue;
      const uint64_t off0 = util::GetLE64(q + CopyAt(0) + 8);
      const uint64_t off1 = util::GetLE64(q + CopyAt(1) + 8);
      const std::string copies = to + "dnode-copies-" + std::to_string(i) + "-";
      Write(copies + "3",
            dn + Patched(d, 64 + CopyAt(2) + 8, std::max(off0, off1) + bp.dva.size, 8));
      Write(copies + "overlap", dn + Patched(d, 64 + CopyAt(1) + 8, off0 + 512, 8));
      Write(copies + "unaligned", dn + Patched(d, 64 + CopyAt(1) + 8, off1 + 1, 8));
      Write(copies + "in-labels", dn + Patched(d, 64 + CopyAt(1) + 8, 8192, 8));
      std::string gap = Patched(d, 64 + CopyAt(2) + 8, off1, 8);
      Write(copies + "after-absent", dn + Patched(gap, 64 + CopyAt(1) + 8, 0, 8));
      Write(copies + "gang", dn + Patched(d, 64 + bpf.gang_sectors, bp.dva.size / 512, 4));
      break;
    }
  }
  // Damaged roots.
  struct RootPatch {
    const char* name;
    size_t off;
    uint64_t value;
    int width;
  };
  for (const RootPatch& p :
       std::vector<RootPatch>{{"magic", 0, 0x1234, 8},
                              {"version-3", 8, 3, 4},
                              {"version-1-totals", 8, 1, 4},
                              {"physical-above-referenced", 48, uint64_t{1} << 40, 8},
                              {"type-3", 12, 3, 4},
                              {"next-0", 16, 0, 8},
                              {"next-2^48+2", 16, (uint64_t{1} << 48) + 2, 8},
                              {"live-ge-next", 24, 1000, 8},
                              {"reserved-56", 56, 1, 8},
                              {"reserved-600", 600, 1, 8},
                              {"metadnode-plain", 64, 2, 1},
                              {"metadnode-bs-4k", 64 + 8, 4096, 4}})
    Write(to + "objset-bad-" + p.name, os + Patched(root, p.off, p.value, p.width));
  Write(to + "objset-short", os + root.substr(0, 1000));
  Write(to + "objset-long", os + root + std::string(8, '\0'));
  Write(to + "dnode-free", dn + std::string(512, '\0'));
}

// pool_phys_fuzz's configs (selector 0): no block pointer, no format.
void ConfigSeeds(Tank& t, const std::string& dir) {
  const std::string sel(1, '\0');
  Write(dir + "/config-tank", sel + t.labels.config);
  pool::PoolConfig three;
  three.name = "striped";
  for (uint64_t i = 1; i <= 3; i++)
    three.vdevs.push_back({i * 0x1111, 12, 24, "/pools/v" + std::to_string(i) + ".pool"});
  const std::string c3 = pool::EncodePoolConfig(three);
  Write(dir + "/config-three", sel + c3);
  struct Patch {
    const char* name;
    size_t off;
    uint64_t value;
    int width;
  };
  // Offsets in c3: name at 14 (7 bytes), vdev 0 at 21: guid 21, ashift 29,
  // ms_shift 33, path length 37.
  for (const Patch& p : std::vector<Patch>{{"magic", 0, 1, 8},
                                           {"count-0", 8, 0, 4},
                                           {"count-5000", 8, 5000, 4},
                                           {"count-4", 8, 4, 4},
                                           {"name-0", 12, 0, 2},
                                           {"name-long", 12, 60000, 2},
                                           {"guid-0", 21, 0, 8},
                                           {"guid-repeated", 21, 0x2222, 8},
                                           {"ashift-8", 29, 8, 4},
                                           {"ashift-17", 29, 17, 4},
                                           {"ms-below-ashift", 33, 11, 4},
                                           {"ms-above", 33, 45, 4},
                                           {"path-long", 37, 1000, 2}})
    Write(dir + "/config-bad-" + p.name, sel + Patched(c3, p.off, p.value, p.width));
  Write(dir + "/config-trailing", sel + c3 + "x");
  Write(dir + "/config-truncated", sel + c3.substr(0, c3.size() - 3));
}

// pool_phys_fuzz's directories and root payloads: selectors 1 and 2 in
// format 1, 4 and 5 in format 2.
void PoolPhysSeeds(Tank& t, const std::string& dir) {
  const Roots r = RootsOf(t);
  const BpFormat f = t.format;
  const BpFields bpf = FieldsOf(f);
  const size_t psz = t.bp_size();
  const std::string ds(1, t.v2() ? '\x04' : '\x01');
  const std::string rs(1, t.v2() ? '\x05' : '\x02');
  const std::string to = dir + "/" + t.prefix;

  // What follows the scrub record in a directory without snapshots or
  // clones: the snapshot and head deadlist counts (8 bytes), the clone
  // count (4) and the block reference table's object (8). Offsets from the
  // end of such a directory step over it.
  constexpr size_t kTail = 8 + 4 + 8;
  // The pool directory of tank, as stored.
  const pool::PoolDirectory& pd = r.pd;
  Write(to + "directory-tank", ds + r.dir_bytes);
  pool::PoolDirectory two = pd;
  pool::DatasetEntry second = pd.datasets.at(0);
  second.id = two.next_dataset_id++;
  second.parent = pd.datasets.at(0).id;
  second.name = "home";
  second.props = {{"compression", "zstd-3"}, {"quota", "1073741824"}};
  two.datasets.push_back(second);
  const std::string d2 = pool::EncodePoolDirectory(two, f);
  Write(to + "directory-two", ds + d2);
  pool::PoolDirectory empty;
  Write(to + "directory-empty", ds + pool::EncodePoolDirectory(empty, f));
  // Offsets: header 32 bytes; dataset 0 at 32: id 32, parent 40, created
  // 48, creation time 56, bp 64, name length 64 + P (P: the pointer's
  // size), name 66 + P ("tank"), then its property count 70 + P.
  struct Patch {
    std::string name;
    size_t off;
    uint64_t value;
    int width;
  };
  std::vector<Patch> patches = {{"magic", 0, 1, 8},
                                {"version-9", 8, 9, 4},
                                {"version-3-with-scrub", 8, 3, 4},
                                {"reserved", 12, 1, 4},
                                {"next-id-1", 16, 1, 8},
                                {"datasets-huge", 24, 0xffffffff, 4},
                                {"maps-huge", 28, 0x10000000, 4},
                                {"id-0", 32, 0, 8},
                                {"id-repeated", 32, second.id, 8},
                                {"parent-unknown", 40, 99, 8},
                                {"parent-self", 40, 1, 8},
                                {"bp-type-10", 64 + bpf.type, 10, 1},
                                {"bp-gang-1", 64 + bpf.gang_sectors, 1, 4},
                                {"name-0", 64 + psz, 0, 2},
                                {"name-256", 64 + psz, 256, 2},
                                {"name-slash", 66 + psz, '/', 1},
                                {"name-nul", 67 + psz, 0, 1},
                                {"name-at", 66 + psz, '@', 1},
                                {"props-huge", 70 + psz, 0xffff, 2}};
  if (t.v2()) {
    patches.push_back({"bp-reserved", 64 + kReserved2, 1, 1});
    patches.push_back({"bp-copy-overlap", 64 + CopyAt(1) + 8,
                       util::GetLE64(reinterpret_cast<const uint8_t*>(d2.data()) + 64 + 8), 8});
  }
  for (const Patch& p : patches)
    Write(to + "directory-bad-" + p.name, ds + Patched(d2, p.off, p.value, p.width));
  // Deferred frees (version 2): one, and the ways one goes wrong; the same
  // directory as version 1.
  pool::PoolDirectory deferred = two;
  deferred.deferred_frees.push_back(pd.datasets.at(0).root);
  const std::string dd = pool::EncodePoolDirectory(deferred, f);
  Write(to + "directory-deferred", ds + dd);
  Write(to + "directory-version-1", ds + Patched(d2, 8, 1, 4));
  Write(to + "directory-bad-deferred-huge", ds + Patched(dd, 12, 0x10000000, 4));
  std::string bad = dd;
  std::memset(bad.data() + bad.size() - kTail - 96 - psz, 0, psz);  // before the scrub record
  Write(to + "directory-bad-deferred-hole", ds + bad);
  Write(to + "directory-bad-deferred-truncated", ds + dd.substr(0, dd.size() - kTail - 96 - 10));
  Write(to + "directory-bad-v1-deferred", ds + Patched(dd, 8, 1, 4));
  // The scrub record (version 4): a running scrub with two of its five
  // errors listed, and the ways the record goes wrong.
  pool::PoolDirectory scrubbed = two;
  pool::ScrubPhys& sc = scrubbed.scrub;
  sc.state = pool::ScrubPhys::State::kRunning;
  sc.start_txg = 7;
  sc.start_time = 1700000000;
  sc.objset = second.id;
  sc.object = 33;
  sc.blkid = 4;
  sc.examined = 1 << 20;
  sc.total = 8 << 20;
  sc.blocks = 300;
  sc.repaired = 2;
  sc.errors = 5;
  sc.error_list = {{0, 5, 0, 0}, {second.id, 40, 9, 1}};
  const std::string sd = pool::EncodePoolDirectory(scrubbed, f);
  Write(to + "directory-scrub", ds + sd);
  // Where the record starts: after it, the tail.
  const size_t rec = sd.size() - kTail - (8 + 11 * 8 + 2 * 32);
  Write(to + "directory-bad-scrub-state", ds + Patched(sd, rec, 9, 1));
  Write(to + "directory-bad-scrub-reserved", ds + Patched(sd, rec + 1, 1, 1));
  Write(to + "directory-bad-scrub-count", ds + Patched(sd, rec + 4, 33, 4));
  Write(to + "directory-bad-scrub-errors-below-list", ds + Patched(sd, rec + 8 + 10 * 8, 1, 8));
  Write(to + "directory-bad-scrub-error-reserved", ds + Patched(sd, sd.size() - kTail - 1, 1, 1));
  Write(to + "directory-bad-scrub-truncated", ds + sd.substr(0, sd.size() - kTail - 5));
  pool::PoolDirectory none_but = two;
  none_but.scrub.examined = 1;  // state none with a counter: refused
  Write(to + "directory-bad-scrub-none", ds + pool::EncodePoolDirectory(none_but, f));
  // Two children of tank named alike.
  pool::PoolDirectory three = two;
  pool::DatasetEntry third = second;
  third.id = three.next_dataset_id++;
  third.name = "away";
  third.props.clear();
  three.datasets.push_back(third);
  std::string d3 = pool::EncodePoolDirectory(three, f);
  const size_t away = d3.rfind("away");
  if (away == std::string::npos) Die("no dataset 'away' in the directory");
  std::memcpy(d3.data() + away, "home", 4);
  Write(to + "directory-bad-name-repeated", ds + d3);
  if (!pd.space_maps.empty()) {
    // Before the deferred frees, the scrub record (96 bytes: none ran) and
    // the tail.
    const size_t maps_at = r.dir_bytes.size() - kTail - 96 - pd.deferred_frees.size() * psz -
                           pd.space_maps.size() * 24;
    Write(to + "directory-bad-map-pad", ds + Patched(r.dir_bytes, maps_at + 4, 1, 1));
    Write(to + "directory-bad-map-object-0", ds + Patched(r.dir_bytes, maps_at + 16, 0, 8));
    if (pd.space_maps.size() >= 2) {
      std::string m = r.dir_bytes;
      std::memcpy(m.data() + maps_at + 24, m.data() + maps_at, 16);  // repeated metaslab
      Write(to + "directory-bad-map-repeated", ds + m);
    }
  }
  // Snapshots and deadlists (version 5): two snapshots of tank, deadlists
  // on the second and on tank itself; then the ways they go wrong.
  pool::PoolDirectory snapped = two;
  const pool::DatasetEntry& root = pd.datasets.at(0);
  for (int i = 0; i < 2; i++) {
    pool::SnapshotEntry e;
    e.id = snapped.next_dataset_id++;
    e.dataset = root.id;
    e.txg = Txg(root.created.value() + 1 + 2 * uint64_t(i));
    e.creation_time = 1700000000 + i;
    e.referenced = 1 << 20;
    e.root = root.root;
    e.name = i == 0 ? "monday" : "tuesday";
    e.guid = 0x9e3779b97f4a7c15ull + uint64_t(i);  // version 8
    snapped.snapshots.push_back(e);
  }
  snapped.snapshots[1].deadlist[0] = pool::DeadBucket{8192, {{40, 2}}};
  snapped.head_deadlists[root.id][0] = pool::DeadBucket{4096, {{41, 1}}};
  snapped.head_deadlists[root.id][snapped.snapshots[0].txg.value()] =
      pool::DeadBucket{12288, {{42, 1}, {43, 2}}};
  const std::string sn = pool::EncodePoolDirectory(snapped, f);
  Write(to + "directory-snapshots", ds + sn);
  auto bad_snaps = [&](const std::string& name, auto change) {
    pool::PoolDirectory b = snapped;
    change(b);
    Write(to + "directory-bad-snapshots-" + name, ds + pool::EncodePoolDirectory(b, f));
  };
  bad_snaps("txg-order", [](pool::PoolDirectory& b) { b.snapshots[1].txg = b.snapshots[0].txg; });
  bad_snaps("unknown-dataset", [](pool::PoolDirectory& b) { b.snapshots[0].dataset = 77; });
  bad_snaps("name-repeated", [](pool::PoolDirectory& b) { b.snapshots[1].name = "monday"; });
  bad_snaps("bucket-key", [&](pool::PoolDirectory& b) {
    b.head_deadlists[root.id][5000] = pool::DeadBucket{1, {{44, 1}}};
  });
  bad_snaps("object-repeated", [&](pool::PoolDirectory& b) {
    b.head_deadlists[root.id][0].objects[0].object = 40;
  });
  bad_snaps("bucket-empty",
            [&](pool::PoolDirectory& b) { b.head_deadlists[root.id][0].objects.clear(); });
  bad_snaps("head-without-snapshots", [](pool::PoolDirectory& b) { b.snapshots.clear(); });
  // Guids (version 8): 0, or repeated within a dataset, are refused; two
  // datasets' snapshots may share one; versions 5 to 7 have none.
  bad_snaps("guid-0", [](pool::PoolDirectory& b) { b.snapshots[1].guid = 0; });
  bad_snaps("guid-repeated",
            [](pool::PoolDirectory& b) { b.snapshots[1].guid = b.snapshots[0].guid; });
  {
    pool::PoolDirectory shared = snapped;
    pool::SnapshotEntry other = shared.snapshots[0];
    other.id = shared.next_dataset_id++;
    other.dataset = shared.datasets.at(1).id;
    shared.snapshots.push_back(other);
    Write(to + "directory-snapshots-guid-shared", ds + pool::EncodePoolDirectory(shared, f));
  }
  const std::string sn5 = pool::EncodePoolDirectory(snapped, f, 5);
  Write(to + "directory-version-5-snapshots", ds + sn5);
  Write(to + "directory-bad-v8-without-guids", ds + Patched(sn5, 8, 8, 4));
  // (Into the last head deadlist, before the clone count and the table.)
  Write(to + "directory-bad-snapshots-truncated", ds + sn.substr(0, sn.size() - 12 - 3));
  Write(to + "directory-bad-snapshots-counts", ds + Patched(d2, d2.size() - kTail, 0xffffff, 4));
  // Clones (version 6): the second dataset a clone of tank@monday, with a
  // head deadlist of its origin's blocks; then the ways they go wrong.
  pool::PoolDirectory cloned = snapped;
  const uint64_t clone_id = cloned.datasets.at(1).id;
  cloned.datasets.at(1).origin = cloned.snapshots[0].id;
  cloned.head_deadlists[clone_id][0] = pool::DeadBucket{4096, {{45, 1}}};
  const std::string cl = pool::EncodePoolDirectory(cloned, f);
  Write(to + "directory-clone", ds + cl);
  auto bad_clone = [&](const std::string& name, auto change) {
    pool::PoolDirectory b = cloned;
    change(b);
    Write(to + "directory-bad-clone-" + name, ds + pool::EncodePoolDirectory(b, f));
  };
  bad_clone("unknown-origin", [](pool::PoolDirectory& b) { b.datasets.at(1).origin = 99; });
  bad_clone("own-origin", [](pool::PoolDirectory& b) {
    pool::SnapshotEntry own = b.snapshots[1];
    own.id = b.next_dataset_id++;
    own.dataset = b.datasets.at(1).id;
    own.name = "own";
    own.deadlist.clear();
    b.snapshots.push_back(own);
    b.datasets.at(1).origin = own.id;
  });
  bad_clone("cycle", [](pool::PoolDirectory& b) {
    pool::SnapshotEntry s = b.snapshots[1];
    s.id = b.next_dataset_id++;
    s.dataset = b.datasets.at(1).id;
    s.txg = Txg(s.txg.value() + 10);
    s.name = "c";
    s.deadlist.clear();
    b.snapshots.push_back(s);
    b.datasets.at(0).origin = s.id;
  });
  bad_clone("bucket-key", [&](pool::PoolDirectory& b) {
    b.head_deadlists[clone_id][4000] = pool::DeadBucket{1, {{46, 1}}};
  });
  // The clone record ends before the table's object (8 bytes).
  Write(to + "directory-bad-clone-dataset", ds + Patched(cl, cl.size() - 8 - 16, 0xff, 1));
  Write(to + "directory-bad-clone-truncated", ds + cl.substr(0, cl.size() - 8 - 4));
  // The block reference table's object (version 7), the last field; the
  // ways it goes wrong; a version 6 directory, which has none.
  pool::PoolDirectory tabled = cloned;
  tabled.ref_table_object = 47;
  const std::string tb = pool::EncodePoolDirectory(tabled, f);
  Write(to + "directory-ref-table", ds + tb);
  Write(to + "directory-bad-ref-table-1", ds + Patched(tb, tb.size() - 8, 1, 8));
  Write(to + "directory-bad-ref-table-truncated", ds + tb.substr(0, tb.size() - 3));
  Write(to + "directory-version-6", ds + Patched(d2.substr(0, d2.size() - 8), 8, 6, 4));
  const std::string tb7 = pool::EncodePoolDirectory(tabled, f, 7);
  Write(to + "directory-version-7-snapshots", ds + tb7);
  Write(to + "directory-bad-v7-with-guids", ds + Patched(tb, 8, 7, 4));
  Write(to + "directory-bad-v6-ref-table", ds + Patched(tb, 8, 6, 4));  // 8 trailing bytes
  Write(to + "directory-trailing", ds + d2 + "x");
  Write(to + "directory-truncated", ds + d2.substr(0, d2.size() - 1));

  // Root payloads.
  const std::string payload = Bytes(t.ub.root.data(), t.ub.root.size());
  Write(to + "root-tank", rs + payload);
  Write(to + "root-bad-reserved", rs + Patched(payload, psz + 36, 1, 1));
  Write(to + "root-hole", rs);
  Write(to + "root-bad-type", rs + Patched(payload, bpf.type, 0, 1));  // none, on a stored block
  if (t.v2()) Write(to + "root-bad-bp-reserved", rs + Patched(payload, kReserved2 + 3, 1, 1));
}

// block_ptr_fuzz: [format byte][pointer][mode][stored bytes], pointers of
// tank's blocks with the bytes they hold.
void BlockPtrSeeds(Tank& t, const std::string& dir) {
  Walker w = WalkerOf(t);
  const Roots r = RootsOf(t);
  const BpFormat f = t.format;
  const BpFields bpf = FieldsOf(f);
  const std::string fmt(1, t.v2() ? '\x01' : '\x00');
  const std::string to = dir + "/" + t.prefix;
  auto seed = [&](const std::string& name, const std::string& ptr, uint8_t mode,
                  const std::string& stored) { Write(to + name, fmt + ptr + char(mode) + stored); };

  struct Block {
    std::string name;
    zio::BlockPtr bp;
    std::string stored;  // empty: read from the pool
    // Also the damage to the pointer alone (the decoder's rules): for a
    // few blocks, as they do not depend on what the block holds.
    bool damage = false;
  };
  std::vector<Block> blocks;
  const dmu::DnodePhys d2 = w.Dnode(r.tank, 2, "tank");
  const dmu::DnodePhys d3 = w.Dnode(r.tank, 3, "tank");
  const dmu::DnodePhys d4 = w.Dnode(r.tank, 4, "tank");
  const dmu::DnodePhys d5 = w.Dnode(r.tank, 5, "tank");
  const dmu::DnodePhys dir_dn = w.Dnode(r.mos, 1, "MOS");
  blocks.push_back({"objset-mos", r.mos_root, "", false});
  blocks.push_back({"objset-tank", r.tank_root, "", true});
  blocks.push_back({"dnodes-tank", w.Lookup(r.tank.metadnode, 0, "tank metadnode"), "", false});
  blocks.push_back({"directory-mos", w.Lookup(dir_dn, 0, "MOS object 1"), "", false});
  blocks.push_back({"indirect-l1", d4.bp, "", false});
  const zio::BlockPtr d4_0 = w.Lookup(d4, 0, "tank object 4");
  blocks.push_back({"data-128k", d4_0, "", false});
  blocks.push_back({"data-4k", w.Lookup(d5, 0, "tank object 5"), "", true});
  blocks.push_back({"data-512", w.Lookup(d2, 2053, "tank object 2"), "", false});
  // Object 4's first block as zstd would store it (tank has no zstd block).
  {
    const std::string logical = Must(t.zio->Read(d4_0), "read object 4");
    std::string z(logical.size(), '\0');
    Result<size_t> n = util::Compress(util::Compression::kZstd, logical.data(), logical.size(),
                                      z.data(), z.size());
    if (n.ok()) {
      z.resize(*n);
      zio::BlockPtr bp = d4_0;
      bp.compression = util::Compression::kZstd;
      bp.psize = uint32_t(z.size());
      bp.checksum = util::Xxh3_128(z.data(), z.size());
      if (zio::ValidateBlockPtr(bp).ok()) blocks.push_back({"data-128k-zstd", bp, z, false});
    }
  }
  for (Block& b : blocks) {
    const zio::BlockPtr& bp = b.bp;
    if (bp.IsHole() || bp.IsGang()) Die(b.name + " is not a plain stored block");
    if (b.stored.empty()) {
      b.stored.resize(bp.psize);
      Must(t.dev.Read(bp.dva.offset, b.stored.data(), b.stored.size()), "read stored bytes");
    }
    const std::string ptr = EncodeBp(bp, f);
    std::string flip = b.stored;
    flip[flip.size() / 2] ^= 0x10;
    seed(b.name, ptr, 1, b.stored);  // relocated: reads verify
    seed(b.name + "-flip", ptr, 1, flip);
    seed(b.name + "-flip-resum", ptr, 3, flip);
    seed(b.name + "-truncated", ptr, 3, b.stored.substr(0, b.stored.size() / 2));
    seed(b.name + "-bad-psize", Patched(ptr, bpf.psize, bp.psize - 1, 4), 1, b.stored);
    if (b.damage) {
      seed(b.name + "-in-place", ptr, 0, "");  // where tank had it
      Write(to + b.name + "-bad-compression", fmt + Patched(ptr, bpf.compression, 9, 1));
      Write(to + b.name + "-bad-gang", fmt + Patched(ptr, bpf.gang_sectors + 2, 1, 1));
    }
    if (!t.v2()) continue;
    if (b.damage) {
      Write(to + b.name + "-bad-reserved", fmt + Patched(ptr, kReserved1, 1, 1));
      Write(to + b.name + "-bad-copy0-reserved", fmt + Patched(ptr, CopyAt(0) + 4, 1, 1));
    }
    if (bp.copies() >= 2) {
      seed(b.name + "-copy0-bad", ptr, 1 | 4, b.stored);
      seed(b.name + "-copies-bad", ptr, 1 | 4 | 8 | 16, b.stored);
      if (bp.copies() == 3) seed(b.name + "-copies01-bad", ptr, 1 | 4 | 8, b.stored);
      if (!b.damage) continue;
      Write(to + b.name + "-copies-overlap",
            fmt + Patched(ptr, CopyAt(1) + 8, bp.dva.offset + 512, 8));
      std::string gap = Patched(ptr, CopyAt(2) + 8, bp.copy(1).offset, 8);
      gap = Patched(gap, CopyAt(2), bp.copy(1).vdev, 4);
      Write(to + b.name + "-copy-after-absent", fmt + Patched(gap, CopyAt(1) + 8, 0, 8));
    } else if (bp.type == zio::BlockType::kData) {
      // Three copies of a data block, the first two bad on the device.
      zio::BlockPtr three = bp;
      three.ditto[0] = {0, bp.dva.offset + 2 * bp.dva.size, bp.dva.size};
      three.ditto[1] = {0, bp.dva.offset + 4 * bp.dva.size, bp.dva.size};
      seed(b.name + "-3-copies", EncodeBp(three, f), 1 | 4 | 8, b.stored);
    }
  }
  // Holes: object 3's (no data), a hole in object 2's L2 block, all zeros.
  Write(to + "hole-object-3", fmt + EncodeBp(d3.bp, f));
  const std::string l2 = Must(t.zio->Read(d2.bp), "read object 2's L2");
  const zio::BlockPtr l1_hole =
      Must(zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(l2.data()), "", f), "L2 slot 0");
  if (!l1_hole.IsHole()) Die("slot 0 of object 2's L2 block is not a hole");
  seed("hole-l1", EncodeBp(l1_hole, f), 1, "");
  Write(to + "hole-empty", fmt + std::string(t.bp_size(), '\0'));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus root, e.g. tests/fuzz/corpus> | --trace\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  g_trace = root == "--trace";
  Tank v2, v1;
  MakeTank(v2, 2);
  if (g_trace) {
    TraceExample(v2);
    return 0;
  }
  MakeTank(v1, 1);
  ConfigSeeds(v2, root + "/pool_phys");
  for (Tank* t : {&v1, &v2}) {
    DnodeSeeds(*t, root + "/dnode");
    PoolPhysSeeds(*t, root + "/pool_phys");
    IndirectSeeds(*t, root + "/indirect");
    BlockPtrSeeds(*t, root + "/block_ptr");
  }
  std::printf("wrote %d files\n", g_count);
  return 0;
}
