// Writes the seed corpora of dnode_fuzz, pool_phys_fuzz and indirect_fuzz
// into <root>/dnode, <root>/pool_phys and <root>/indirect (folders that must
// exist):
//   dmu_corpus_gen tests/fuzz/corpus
// and, with --trace instead of a folder, prints the walk of the worked
// example of core/doc/on-disk-format.md (uberblock to byte 0 of object 5 of
// dataset "tank") on a freshly made pool.
//
// Seeds come from a real pool "tank" made on a memory device (objects 1..5
// of dataset tank: small, sparse over three levels, with a bonus, compressed
// over two levels, and object 5's text): its config, pool directory, root
// payload, dnodes, object set roots, indirect blocks and whole object set
// images in indirect_fuzz's chunk form. Damaged variants break each rule of
// the decoders once (in indirect_fuzz's images, pointers are repaired by the
// target unless mode bit 1 is set, so damage there is in the content).
// The corpora also hold found-* files kept from fuzzing runs (libFuzzer
// -merge=1); this program neither writes nor removes them.
#include <cinttypes>
#include <cstdarg>
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
  std::unique_ptr<zio::Zio> zio;  // read-only, for the walks
  vdev::VdevLabelInfo labels;
  vdev::Uberblock ub;
};

void MakeTank(Tank& t) {
  pool::CreateOptions co;
  co.name = "tank";
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
  t.zio = std::make_unique<zio::Zio>(std::vector<zio::Zio::Vdev>{{&t.dev, 12}}, nullptr);
}

// A minimal reader (the walk of the worked example).
struct Walker {
  zio::Zio* zio;

  zio::BlockPtr Lookup(const dmu::DnodePhys& d, uint64_t blkid, const std::string& who) {
    zio::BlockPtr bp = d.bp;
    for (unsigned level = d.nlevels - 1u; level >= 1; level--) {
      if (bp.IsHole()) return zio::BlockPtr{};
      std::string blk = Must(zio->Read(bp), "read indirect");
      const uint64_t slot = (blkid >> (11 * (level - 1))) & 2047;
      Trace("  %s L%u indirect block at vdev %u offset 0x%" PRIx64 " (%s): slot %" PRIu64
            " (byte %" PRIu64 ")\n",
            who.c_str(), level, bp.dva.vdev, bp.dva.offset, bp.ToString().c_str(), slot, slot * 64);
      bp = Must(zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(blk.data()) + slot * 64, ""),
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
    return Must(
        dmu::DecodeDnode(reinterpret_cast<const uint8_t*>(blk.data()) + (id % 32) * 512, who),
        "dnode");
  }
  dmu::ObjsetPhys Objset(const zio::BlockPtr& root) {
    return Must(dmu::DecodeObjset(Must(zio->Read(root), "read objset"), "objset"), "objset");
  }
};

void TraceExample(Tank& t) {
  Walker w{t.zio.get()};
  Trace("uberblock: txg %" PRIu64 ", found in labels mask 0x%x, slot %" PRIu64
        " (label offset 0x%" PRIx64 ")\n",
        t.ub.txg.value(), t.labels.uberblocks[0].label_mask, t.ub.txg.value() % 128,
        vdev::kRingOffset + (t.ub.txg.value() % 128) * 1024);
  zio::BlockPtr mos_root = Must(pool::DecodeRootPayload(t.ub.root), "root payload");
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
  pool::PoolDirectory dir = Must(pool::DecodePoolDirectory(dir_bytes), "directory");
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
int Relocate(zio::Zio* zio, const zio::BlockPtr& bp, Kind kind, Image* img) {
  if (img->blocks.size() >= 16) return -1;
  const int me = int(img->blocks.size());
  img->blocks.push_back({Must(zio->Read(bp), "read for image"), bp.compression});
  std::string s = img->blocks[me].logical;
  std::vector<size_t> ptrs;  // byte positions of the pointers in this block
  Kind child_kind = kind;
  if (bp.level > 0) {
    for (size_t i = 0; i < 2048; i++) ptrs.push_back(i * 64);
  } else if (kind == Kind::kObjsetRoot) {
    ptrs.push_back(128);
    child_kind = Kind::kDnodeTree;
  } else if (kind == Kind::kDnodeTree) {
    for (size_t i = 0; i * 512 < s.size(); i++)
      if (s[i * 512] != 0) ptrs.push_back(i * 512 + 64);
    child_kind = Kind::kDataTree;
  }
  for (size_t pos : ptrs) {
    auto child = zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(s.data()) + pos, "");
    if (!child.ok() || child->IsHole()) continue;
    int j = Relocate(zio, *child, child_kind, img);
    if (j < 0) break;
    // The target repairs sizes and checksums; the offset says which chunk.
    util::PutLE64(reinterpret_cast<uint8_t*>(s.data()) + pos + 8,
                  vdev::kFrontReserved + uint64_t(j) * 128 * 1024);
  }
  img->blocks[me].logical = s;
  return me;
}

std::string Encode(const Image& img, uint8_t mode) {
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
      case 65536: pad = 7; break;
      default: bytes = b.logical;
    }
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

void IndirectSeeds(Tank& t, const std::string& dir) {
  Walker w{t.zio.get()};
  zio::BlockPtr mos_root = Must(pool::DecodeRootPayload(t.ub.root), "root payload");
  dmu::ObjsetPhys mos = w.Objset(mos_root);
  dmu::DnodePhys dir_dn = w.Dnode(mos, 1, "MOS");
  std::string dir_bytes = w.ReadBlock(dir_dn, 0, "dir");
  dir_bytes.resize(dir_dn.length);
  pool::PoolDirectory pd = Must(pool::DecodePoolDirectory(dir_bytes), "directory");
  zio::BlockPtr tank_root;
  for (const auto& e : pd.datasets)
    if (e.name == "tank") tank_root = e.root;

  Image tank, mos_img;
  Relocate(t.zio.get(), tank_root, Kind::kObjsetRoot, &tank);
  Relocate(t.zio.get(), mos_root, Kind::kObjsetRoot, &mos_img);
  Write(dir + "/image-tank", Encode(tank, 1));
  Write(dir + "/image-mos", Encode(mos_img, 1));
  Write(dir + "/image-tank-unrepaired", Encode(tank, 3));
  Image one = tank;
  one.blocks.resize(1);
  Write(dir + "/image-root-only", Encode(one, 1));
  // Content damage under intact checksums: every rule of the dnode and the
  // tree, one at a time, in the first dnode block of tank.
  for (size_t j = 0; j < tank.blocks.size(); j++) {
    Image bad = tank;
    std::string& s = bad.blocks[j].logical;
    if (s.size() == 16384 && s[512] != 0) {  // the first dnode block: object 1 at 512
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
                                               {"dnode-bp-level-1", 512 + 64 + 25, 1},
                                               {"dnode-bp-type-indirect", 512 + 64 + 24, 2},
                                               {"dnode-bp-vdev-1", 512 + 64, 1},
                                               {"dnode5-free-garbage", 5 * 512 + 1, 0}}) {
        Image b2 = bad;
        b2.blocks[j].logical[p.off] = char(p.value);
        Write(dir + "/image-" + p.name, Encode(b2, 1));
      }
    }
    if (s.size() == 131072) {  // an indirect block: a child of the wrong level
      // Its first stored child becomes a valid indirect pointer one level
      // too high, which only the tree's level rule refuses.
      size_t k = 0;
      while (k < 2048 && s[k * 64 + 4] == 0 && s[k * 64 + 5] == 0 && s[k * 64 + 6] == 0) k++;
      if (k < 2048) {
        Image b2 = bad;
        b2.blocks[j].logical[k * 64 + 24] = char(zio::BlockType::kIndirect);
        b2.blocks[j].logical[k * 64 + 25] = char(s[k * 64 + 25] + 1);
        Write(dir + "/image-indirect-" + std::to_string(j) + "-child-level", Encode(b2, 1));
      }
      // Part-1 seeds: the real indirect block at its level, and one level off.
      auto bp = zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(s.data()), "");
      if (bp.ok()) {
        const uint8_t level = uint8_t(bp->IsHole() ? 1 : bp->level + 1);
        Write(dir + "/block-" + std::to_string(j) + "-L" + std::to_string(level),
              char(uint8_t((level - 1) << 1)) + Trimmed(s));
        Write(dir + "/block-" + std::to_string(j) + "-wrong-level",
              char(uint8_t(level % 5) << 1) + Trimmed(s));
        std::string flip = Trimmed(s);
        flip[28] = 1;  // a reserved byte of slot 0
        Write(dir + "/block-" + std::to_string(j) + "-reserved", char((level - 1) << 1) + flip);
      }
    }
  }
  Write(dir + "/block-zeros", std::string(1, '\0'));
  // Objects past next, and a root claiming more objects than it has.
  Image big = tank;
  util::PutLE64(reinterpret_cast<uint8_t*>(big.blocks[0].logical.data()) + 16, uint64_t{1} << 40);
  Write(dir + "/image-next-2^40", Encode(big, 1));
}

void DnodeSeeds(Tank& t, const std::string& dir) {
  Walker w{t.zio.get()};
  zio::BlockPtr mos_root = Must(pool::DecodeRootPayload(t.ub.root), "root payload");
  std::string mos_block = Must(t.zio->Read(mos_root), "read MOS root");
  Write(dir + "/objset-mos", "\x01" + mos_block);
  dmu::ObjsetPhys mos = w.Objset(mos_root);
  std::string dnodes = w.ReadBlock(mos.metadnode, 0, "MOS metadnode");
  for (int i = 0; i < 4; i++)
    Write(dir + "/dnode-mos-" + std::to_string(i),
          std::string(1, '\0') + dnodes.substr(i * 512, 512));
  dmu::DnodePhys dir_dn = w.Dnode(mos, 1, "MOS");
  std::string dir_bytes = w.ReadBlock(dir_dn, 0, "dir");
  dir_bytes.resize(dir_dn.length);
  pool::PoolDirectory pd = Must(pool::DecodePoolDirectory(dir_bytes), "directory");
  for (const auto& e : pd.datasets) {
    if (e.name != "tank") continue;
    std::string root = Must(t.zio->Read(e.root), "read tank root");
    Write(dir + "/objset-tank", "\x01" + root);
    dmu::ObjsetPhys os = w.Objset(e.root);
    std::string blk = w.ReadBlock(os.metadnode, 0, "tank metadnode");
    for (int i = 1; i <= 5; i++)
      Write(dir + "/dnode-tank-" + std::to_string(i),
            std::string(1, '\0') + blk.substr(i * 512, 512));
    // Damaged dnodes: each rule once.
    const std::string good = blk.substr(1 * 512, 512);
    struct Patch {
      const char* name;
      size_t off;
      uint8_t value;
    };
    for (const Patch& p : std::vector<Patch>{{"type-7", 0, 7},
                                             {"levels-0", 1, 0},
                                             {"levels-7", 1, 7},
                                             {"compression-3", 2, 3},
                                             {"bonus-385", 5, 1},
                                             {"reserved-6", 6, 1},
                                             {"reserved-12", 12, 1},
                                             {"reserved-40", 40, 1},
                                             {"reserved-63", 63, 1},
                                             {"bs-not-pow2", 9, 0x11},
                                             {"bs-256", 9, 1},
                                             {"bs-2MiB", 10, 0x20},
                                             {"bp-reserved", 64 + 28, 1},
                                             {"bp-type-10", 64 + 24, 10},
                                             {"past-bonus", 511, 1},
                                             {"free-garbage", 0, 0}}) {
      std::string d = good;
      d[p.off] = char(p.value);
      if (std::string(p.name) == "bonus-385") d[4] = char(0x81);
      if (std::string(p.name) == "bs-2MiB") d[9] = 0, d[8] = 0;
      if (std::string(p.name) == "bs-256") d[8] = 0, d[9] = 1, d[10] = 0;
      Write(dir + "/dnode-bad-" + p.name, std::string(1, '\0') + d);
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
                                {"metadnode-bs-4k", 64 + 8, 4096, 4}}) {
      std::string r = root;
      auto* q = reinterpret_cast<uint8_t*>(r.data()) + p.off;
      if (p.width == 8)
        util::PutLE64(q, p.value);
      else if (p.width == 4)
        util::PutLE32(q, uint32_t(p.value));
      else
        *q = uint8_t(p.value);
      Write(dir + "/objset-bad-" + p.name, "\x01" + r);
    }
    Write(dir + "/objset-short", "\x01" + root.substr(0, 1000));
    Write(dir + "/objset-long", "\x01" + root + std::string(8, '\0'));
  }
  Write(dir + "/dnode-free", std::string(513, '\0'));
}

void PoolPhysSeeds(Tank& t, const std::string& dir) {
  const std::string config = t.labels.config;
  Write(dir + "/config-tank", "\x00" + config);
  pool::PoolConfig three;
  three.name = "striped";
  for (uint64_t i = 1; i <= 3; i++)
    three.vdevs.push_back({i * 0x1111, 12, 24, "/pools/v" + std::to_string(i) + ".pool"});
  const std::string c3 = pool::EncodePoolConfig(three);
  Write(dir + "/config-three", std::string(1, '\0') + c3);
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
                                           {"path-long", 37, 1000, 2}}) {
    std::string c = c3;
    auto* q = reinterpret_cast<uint8_t*>(c.data()) + p.off;
    if (p.width == 8)
      util::PutLE64(q, p.value);
    else if (p.width == 4)
      util::PutLE32(q, uint32_t(p.value));
    else
      util::PutLE16(q, uint16_t(p.value));
    Write(dir + "/config-bad-" + p.name, std::string(1, '\0') + c);
  }
  Write(dir + "/config-trailing", std::string(1, '\0') + c3 + "x");
  Write(dir + "/config-truncated", std::string(1, '\0') + c3.substr(0, c3.size() - 3));

  // The pool directory of tank, as stored.
  Walker w{t.zio.get()};
  zio::BlockPtr mos_root = Must(pool::DecodeRootPayload(t.ub.root), "root payload");
  dmu::ObjsetPhys mos = w.Objset(mos_root);
  dmu::DnodePhys dir_dn = w.Dnode(mos, 1, "MOS");
  std::string dir_bytes = w.ReadBlock(dir_dn, 0, "dir");
  dir_bytes.resize(dir_dn.length);
  pool::PoolDirectory pd = Must(pool::DecodePoolDirectory(dir_bytes), "directory");
  Write(dir + "/directory-tank", "\x01" + dir_bytes);
  pool::PoolDirectory two = pd;
  pool::DatasetEntry second = pd.datasets.at(0);
  second.id = two.next_dataset_id++;
  second.parent = pd.datasets.at(0).id;
  second.name = "home";
  second.props = {{"compression", "zstd-3"}, {"quota", "1073741824"}};
  two.datasets.push_back(second);
  const std::string d2 = pool::EncodePoolDirectory(two);
  Write(dir + "/directory-two", "\x01" + d2);
  pool::PoolDirectory empty;
  Write(dir + "/directory-empty", "\x01" + pool::EncodePoolDirectory(empty));
  // Offsets: header 32 bytes; dataset 0 at 32: id 32, parent 40, created
  // 48, creation time 56, bp 64, name length 128, name 130 ("tank"), then
  // its property count 134.
  for (const Patch& p : std::vector<Patch>{{"magic", 0, 1, 8},
                                           {"version-4", 8, 4, 4},
                                           {"reserved", 12, 1, 4},
                                           {"next-id-1", 16, 1, 8},
                                           {"datasets-huge", 24, 0xffffffff, 4},
                                           {"maps-huge", 28, 0x10000000, 4},
                                           {"id-0", 32, 0, 8},
                                           {"id-repeated", 32, second.id, 8},
                                           {"parent-unknown", 40, 99, 8},
                                           {"parent-self", 40, 1, 8},
                                           {"bp-reserved", 64 + 28, 1, 4},
                                           {"name-0", 128, 0, 2},
                                           {"name-256", 128, 256, 2},
                                           {"name-slash", 130, '/', 1},
                                           {"name-nul", 131, 0, 1},
                                           {"name-at", 130, '@', 1},
                                           {"props-huge", 134, 0xffff, 2}}) {
    std::string d = d2;
    auto* q = reinterpret_cast<uint8_t*>(d.data()) + p.off;
    if (p.width == 8)
      util::PutLE64(q, p.value);
    else if (p.width == 4)
      util::PutLE32(q, uint32_t(p.value));
    else if (p.width == 2)
      util::PutLE16(q, uint16_t(p.value));
    else
      *q = uint8_t(p.value);
    Write(dir + "/directory-bad-" + p.name, "\x01" + d);
  }
  // Deferred frees (version 2): one, and the ways one goes wrong; the same
  // directory as version 1.
  pool::PoolDirectory deferred = two;
  deferred.deferred_frees.push_back(pd.datasets.at(0).root);
  const std::string dd = pool::EncodePoolDirectory(deferred);
  Write(dir + "/directory-deferred", "\x01" + dd);
  std::string v1 = d2;
  util::PutLE32(reinterpret_cast<uint8_t*>(v1.data()) + 8, 1);
  Write(dir + "/directory-version-1", "\x01" + v1);
  std::string bad = dd;
  util::PutLE32(reinterpret_cast<uint8_t*>(bad.data()) + 12, 0x10000000);
  Write(dir + "/directory-bad-deferred-huge", "\x01" + bad);
  bad = dd;
  std::memset(bad.data() + bad.size() - zio::kBlockPtrSize, 0, zio::kBlockPtrSize);
  Write(dir + "/directory-bad-deferred-hole", "\x01" + bad);
  Write(dir + "/directory-bad-deferred-truncated", "\x01" + dd.substr(0, dd.size() - 10));
  bad = dd;
  util::PutLE32(reinterpret_cast<uint8_t*>(bad.data()) + 8, 1);
  Write(dir + "/directory-bad-v1-deferred", "\x01" + bad);

  std::string d = d2;
  std::memcpy(d.data() + d.size() - two.space_maps.size() * 24 - 4, "tank", 4);  // home -> tank
  Write(dir + "/directory-bad-name-repeated", "\x01" + d);
  if (!pd.space_maps.empty()) {
    const size_t maps_at = dir_bytes.size() - pd.space_maps.size() * 24;
    std::string m = dir_bytes;
    m[maps_at + 4] = 1;  // pad
    Write(dir + "/directory-bad-map-pad", "\x01" + m);
    m = dir_bytes;
    std::memset(m.data() + maps_at + 16, 0, 8);  // object 0
    Write(dir + "/directory-bad-map-object-0", "\x01" + m);
    if (pd.space_maps.size() >= 2) {
      m = dir_bytes;
      std::memcpy(m.data() + maps_at + 24, m.data() + maps_at, 16);  // repeated metaslab
      Write(dir + "/directory-bad-map-repeated", "\x01" + m);
    }
  }
  Write(dir + "/directory-trailing", "\x01" + d2 + "x");
  Write(dir + "/directory-truncated", "\x01" + d2.substr(0, d2.size() - 1));

  // Root payloads.
  Write(dir + "/root-tank", "\x02" + Bytes(t.ub.root.data(), t.ub.root.size()));
  std::string r = Bytes(t.ub.root.data(), t.ub.root.size());
  r[100] = 1;
  Write(dir + "/root-bad-reserved", "\x02" + r);
  Write(dir + "/root-hole", "\x02");
  r = Bytes(t.ub.root.data(), t.ub.root.size());
  r[24] = 0;  // type none on a stored block
  Write(dir + "/root-bad-type", "\x02" + r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus root, e.g. tests/fuzz/corpus> | --trace\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  g_trace = root == "--trace";
  Tank tank;
  MakeTank(tank);
  if (g_trace) {
    TraceExample(tank);
    return 0;
  }
  DnodeSeeds(tank, root + "/dnode");
  PoolPhysSeeds(tank, root + "/pool_phys");
  IndirectSeeds(tank, root + "/indirect");
  std::printf("wrote %d files\n", g_count);
  return 0;
}
