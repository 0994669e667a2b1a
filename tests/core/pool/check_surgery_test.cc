// The pool check against damage that every checksum agrees with: a space map
// that allocates a block nothing references (a leak), and two pointers to
// one block. A Surgeon edits the newest txg's tree in place, re-checksums
// every block up the path, and commits it as a new uberblock.
#include "pool/check.h"

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "dmu/dnode_phys.h"
#include "pool/pool_phys.h"
#include "space/metaslab.h"
#include "util/compress.h"
#include "util/endian.h"
#include "vdev/label.h"
#include "vdev/uberblock.h"
#include "zio/block_ref_table.h"
#include "zio/zio.h"

namespace poolfs::core::pool {
namespace {

using namespace check_test;

// Edits an exported pool's newest tree in place (blocks keep their extents,
// so the space maps stay true) and commits it as txg + 1.
class Surgeon {
 public:
  struct Objset {
    zio::BlockPtr root;
    dmu::ObjsetPhys phys;
  };

  explicit Surgeon(const std::vector<std::string>& paths) {
    for (const std::string& path : paths) {
      auto f = vdev::FileDevice::Open(path, {false, false});
      REQUIRE(f.ok());
      auto info = vdev::ReadLabels(**f);
      REQUIRE(info.ok());
      REQUIRE(info->header.vdev_index == files_.size());  // created in this order
      if (files_.empty()) config_ = DecodePoolConfig(info->config).value();
      if (!info->uberblocks.empty() && info->uberblocks.front().ub.txg > ub_.txg)
        ub_ = info->uberblocks.front().ub;
      layouts_.push_back(info->layout);
      files_.push_back(std::move(f).value());
    }
    std::vector<zio::Zio::Vdev> vdevs;
    for (size_t i = 0; i < files_.size(); i++)
      vdevs.push_back({files_[i].get(), config_.vdevs[i].ashift});
    format_ = zio::BpFormat(ub_.version);
    zio_ = std::make_unique<zio::Zio>(vdevs, nullptr, format_);
    mos_ = LoadObjset(DecodeRootPayload(ub_.root, format_).value().mos_root);
  }

  uint64_t txg() const { return ub_.txg.value(); }
  const PoolConfig& config() const { return config_; }
  const vdev::VdevLayout& layout(uint32_t vdev) const { return layouts_[vdev]; }
  Objset& mos() { return mos_; }

  PoolDirectory Directory() { return DecodePoolDirectory(ReadObject(mos_, 1), format_).value(); }
  zio::BpFormat format() const { return format_; }
  Objset Dataset(const std::string& name) {
    for (const DatasetEntry& e : Directory().datasets)
      if (e.name == name) return LoadObjset(e.root);
    FAIL("no dataset " << name);
    return {};
  }

  dmu::DnodePhys GetDnode(const Objset& os, uint64_t id) {
    const dmu::DnodePhys& md = os.phys.metadnode;
    std::string block = Leaf(md.bp, uint8_t(md.nlevels - 1), id / dmu::kDnodesPerBlock);
    auto d = dmu::DecodeDnode(reinterpret_cast<const uint8_t*>(block.data()) +
                                  (id % dmu::kDnodesPerBlock) * dmu::kDnodeSize,
                              "object " + std::to_string(id), format_);
    REQUIRE(d.ok());
    return std::move(d).value();
  }

  // Rewrites the dnode's slot, the metadnode's path to it and the root.
  void SetDnode(Objset& os, uint64_t id, const dmu::DnodePhys& d) {
    dmu::DnodePhys& md = os.phys.metadnode;
    md.bp = Replace(md.bp, uint8_t(md.nlevels - 1), id / dmu::kDnodesPerBlock, [&](std::string& s) {
      dmu::EncodeDnode(
          d, reinterpret_cast<uint8_t*>(s.data()) + (id % dmu::kDnodesPerBlock) * dmu::kDnodeSize,
          format_);
    });
    os.root = Rewrite(os.root, dmu::EncodeObjset(os.phys, format_));
  }

  std::string ReadObject(const Objset& os, uint64_t id) {
    dmu::DnodePhys d = GetDnode(os, id);
    std::string out;
    for (uint64_t b = 0; b * d.block_size < d.length; b++) {
      std::string block = Leaf(d.bp, uint8_t(d.nlevels - 1), b);
      out += block.empty() ? std::string(d.block_size, '\0') : block;
    }
    out.resize(d.length);
    return out;
  }

  // Replaces the content of an object that fits in its one block.
  void RewriteSmallObject(Objset& os, uint64_t id, const std::string& content) {
    dmu::DnodePhys d = GetDnode(os, id);
    REQUIRE(d.nlevels == 1);
    REQUIRE(content.size() <= d.block_size);
    std::string block = content;
    block.resize(d.block_size, '\0');
    d.bp = Replace(d.bp, 0, 0, [&](std::string& s) { s = block; });
    d.length = content.size();
    SetDnode(os, id, d);
  }

  void SetDatasetRoot(const std::string& name, const zio::BlockPtr& root) {
    PoolDirectory dir = Directory();
    for (DatasetEntry& e : dir.datasets)
      if (e.name == name) e.root = root;
    RewriteSmallObject(mos_, 1, EncodePoolDirectory(dir, format_));
  }

  // Edits level-0 block `blkid` of object `id` (0: the metadnode) in place,
  // with every block up to the object set's root.
  void EditLeaf(Objset& os, uint64_t id, uint64_t blkid,
                const std::function<void(std::string&)>& edit) {
    if (id == 0) {
      dmu::DnodePhys& md = os.phys.metadnode;
      md.bp = Replace(md.bp, uint8_t(md.nlevels - 1), blkid, edit);
      os.root = Rewrite(os.root, dmu::EncodeObjset(os.phys, format_));
      return;
    }
    dmu::DnodePhys d = GetDnode(os, id);
    d.bp = Replace(d.bp, uint8_t(d.nlevels - 1), blkid, edit);
    SetDnode(os, id, d);
  }
  // Edits the raw bytes of the top block of object `id`'s tree.
  void EditTop(Objset& os, uint64_t id, const std::function<void(std::string&)>& edit) {
    dmu::DnodePhys d = GetDnode(os, id);
    std::string bytes = zio_->Read(d.bp).value();
    edit(bytes);
    d.bp = Rewrite(d.bp, bytes);
    SetDnode(os, id, d);
  }
  // Edits the raw bytes of the object set's root block.
  void EditRoot(Objset& os, const std::function<void(std::string&)>& edit) {
    std::string bytes = zio_->Read(os.root).value();
    edit(bytes);
    os.root = Rewrite(os.root, bytes);
  }

  // An uberblock of txg + 1 for the MOS as edited, on every vdev.
  void Commit() {
    vdev::Uberblock ub = ub_;
    ub.txg = Txg(ub_.txg.value() + 1);
    ub.root = EncodeRootPayload(mos_.root, format_);
    for (size_t i = 0; i < files_.size(); i++) {
      for (int l = 0; l < vdev::kLabelCount; l++)
        Save(uint32_t(i), layouts_[i].SlotOffset(l, vdev::UberblockSlot(ub.txg)),
             vdev::kUberblockSlotSize);
      REQUIRE(vdev::WriteUberblock(*files_[i], layouts_[i], ub).ok());
    }
  }

  // False when an edited block no longer fitted its extent (nothing of it
  // was written).
  bool fitted() const { return fitted_; }

  // Puts back every byte the surgeon wrote.
  void Undo() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it)
      REQUIRE(files_[it->vdev]->Write(it->offset, it->bytes.data(), it->bytes.size()).ok());
    undo_.clear();
  }

 private:
  Objset LoadObjset(const zio::BlockPtr& root) {
    auto bytes = zio_->Read(root);
    REQUIRE(bytes.ok());
    return {root, dmu::DecodeObjset(*bytes, "objset", format_).value()};
  }

  // The level-0 block `blkid` under `bp` (at `level`); empty for a hole.
  std::string Leaf(const zio::BlockPtr& bp, uint8_t level, uint64_t blkid) {
    if (bp.IsHole()) return "";
    auto data = zio_->Read(bp);
    REQUIRE(data.ok());
    if (level == 0) return std::move(data).value();
    const uint64_t slot = (blkid >> (dmu::kIndirectShift * (level - 1))) & 2047;
    auto child = zio::DecodeBlockPtr(
        reinterpret_cast<const uint8_t*>(data->data()) + slot * zio::BlockPtrSize(format_), "",
        format_);
    REQUIRE(child.ok());
    return Leaf(*child, uint8_t(level - 1), blkid);
  }

  // Edits level-0 block `blkid` under `bp` and rewrites the path in place;
  // returns bp's new pointer.
  zio::BlockPtr Replace(const zio::BlockPtr& bp, uint8_t level, uint64_t blkid,
                        const std::function<void(std::string&)>& edit) {
    REQUIRE_FALSE(bp.IsHole());
    std::string data = zio_->Read(bp).value();
    if (level == 0) {
      edit(data);
      return Rewrite(bp, data);
    }
    auto* p = reinterpret_cast<uint8_t*>(data.data()) +
              ((blkid >> (dmu::kIndirectShift * (level - 1))) & 2047) * zio::BlockPtrSize(format_);
    zio::BlockPtr child = zio::DecodeBlockPtr(p, "", format_).value();
    zio::EncodeBlockPtr(Replace(child, uint8_t(level - 1), blkid, edit), p, format_);
    return Rewrite(bp, data);
  }

  // Stores `data` as the block `old` names (every copy), compressed as it
  // was if that still saves space, with a new checksum.
  zio::BlockPtr Rewrite(const zio::BlockPtr& old, const std::string& data) {
    zio::BlockPtr bp = old;
    std::string stored = data;
    bp.compression = util::Compression::kOff;
    if (old.compression != util::Compression::kOff) {
      std::string buf(util::CompressLimit(data.size()), '\0');
      auto n = util::Compress(old.compression, data.data(), data.size(), buf.data(), buf.size());
      if (n.ok()) {
        stored = buf.substr(0, *n);
        bp.compression = old.compression;
      }
    }
    if (stored.size() > old.dva.size) {  // the edit does not fit where the block was
      fitted_ = false;
      return old;
    }
    bp.psize = uint32_t(stored.size());
    bp.checksum = util::Xxh3_128(stored.data(), stored.size());
    REQUIRE(zio::ValidateBlockPtr(bp).ok());
    stored.resize(old.dva.size, '\0');
    for (int c = 0; c < old.copies(); c++) {
      const space::Dva& d = old.copy(c);
      Save(d.vdev, d.offset, d.size);
      REQUIRE(files_[d.vdev]->Write(d.offset, stored.data(), stored.size()).ok());
    }
    return bp;
  }

  void Save(uint32_t vdev, uint64_t offset, uint64_t len) {
    Saved saved{vdev, offset, std::string(len, '\0')};
    REQUIRE(files_[vdev]->Read(offset, saved.bytes.data(), len).ok());
    undo_.push_back(std::move(saved));
  }

  struct Saved {
    uint32_t vdev;
    uint64_t offset;
    std::string bytes;
  };
  std::vector<Saved> undo_;
  bool fitted_ = true;
  std::vector<std::unique_ptr<vdev::FileDevice>> files_;
  std::vector<vdev::VdevLayout> layouts_;
  PoolConfig config_;
  vdev::Uberblock ub_;
  zio::BpFormat format_ = zio::BpFormat::kV2;
  std::unique_ptr<zio::Zio> zio_;
  Objset mos_;
};

TEST_CASE("Check names a leaked extent: allocated in a space map, referenced by nothing",
          "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  ChurnPool(paths);
  Surgeon s(paths);
  // A metaslab with a short map; the space layer allocates a sector in it
  // (txg + 1) that no block pointer will name.
  const SpaceMapEntry* m = nullptr;
  PoolDirectory pd = s.Directory();
  std::string map;
  for (const SpaceMapEntry& e : pd.space_maps) {
    map = s.ReadObject(s.mos(), e.object);
    if (map.size() < 8000) {
      m = &e;
      break;
    }
  }
  REQUIRE(m != nullptr);
  const VdevConfig& vc = s.config().vdevs[m->vdev];
  const vdev::VdevLayout& layout = s.layout(m->vdev);
  const uint64_t ms_size = uint64_t{1} << vc.ms_shift, sector = uint64_t{1} << vc.ashift;
  const uint64_t start = layout.alloc_start + m->metaslab * ms_size;
  const uint64_t end = layout.alloc_start + (layout.alloc_size & ~(sector - 1));
  space::Metaslab ms(m->vdev, m->metaslab, start, std::min(ms_size, end - start), vc.ashift,
                     space::SpaceOptions{});
  REQUIRE(ms.Load(map).ok());
  const Txg t(s.txg() + 1);
  auto leaked = ms.Allocate(sector, t);
  REQUIRE(leaked.ok());
  ms.Sync(t);
  s.RewriteSmallObject(s.mos(), m->object, ms.space_map());
  s.Commit();

  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.txg == t.value());
  REQUIRE(r.checksum_errors == 0);
  REQUIRE(r.problems.size() == 1);
  REQUIRE(HasProblem(r,
                     "vdev " + std::to_string(m->vdev) + " metaslab " +
                         std::to_string(m->metaslab) + " offset " + Hex(*leaked),
                     std::to_string(sector) + " bytes are allocated in the space map but "
                                              "referenced by no block (leaked)"));
  REQUIRE(r.bytes_allocated_by_maps == r.bytes_referenced + sector);
}

TEST_CASE("A block another dataset holds is not taken for one a snapshot shares",
          "[check][snapshot]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  Known k = ChurnPool(paths);
  // Dataset b gets an object and a snapshot: its walk may share blocks
  // born before that snapshot, but only with the snapshot.
  uint64_t obj = 0;
  {
    auto p = Pool::Import(paths, QuietOptions());
    REQUIRE(p.ok());
    dmu::ObjectSet* b = (*p)->dataset("b");
    REQUIRE(b != nullptr);
    dmu::Tx tx((*p)->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = b->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    obj = id->value();
    REQUIRE(b->Write(tx, *id, 0, Pattern(9, 5000)).ok());
    tx.Commit();
    REQUIRE((*p)->WaitSynced().ok());
    REQUIRE((*p)->Snapshot({"tank/b@s"}, false).ok());
    REQUIRE((*p)->WaitSynced().ok());
    REQUIRE((*p)->Export().ok());
  }
  Surgeon s(paths);
  Surgeon::Objset a = s.Dataset("a"), b = s.Dataset("b");
  // b's object now names a's block x, born before b's snapshot.
  s.SetDnode(b, obj, s.GetDnode(a, k.x));
  s.SetDatasetRoot("b", b.root);
  s.Commit();

  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  CHECK(HasProblem(r, "dataset 'tank/b' object " + std::to_string(obj),
                   "is also referenced by dataset 'tank/a' object " + std::to_string(k.x)));
}

TEST_CASE("Check names a block two pointers share, and the block the second one dropped",
          "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  Known k = ChurnPool(paths);
  Surgeon s(paths);
  Surgeon::Objset a = s.Dataset("a");
  dmu::DnodePhys x = s.GetDnode(a, k.x), y = s.GetDnode(a, k.y);
  const zio::BlockPtr dropped = y.bp;
  REQUIRE_FALSE(dropped.IsHole());
  y.bp = x.bp;
  y.used = x.used;
  y.length = x.length;
  s.SetDnode(a, k.y, y);
  s.SetDatasetRoot("a", a.root);
  s.Commit();

  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.txg == s.txg() + 1);
  REQUIRE(r.checksum_errors == 0);
  REQUIRE(r.problems.size() == 2);
  REQUIRE(HasProblem(r, "dataset 'tank/a' object " + std::to_string(k.y) + " L0 block 0",
                     "is also referenced by dataset 'tank/a' object " + std::to_string(k.x) +
                         " L0 block 0: one block, two pointers"));
  REQUIRE(HasProblem(r, "vdev " + std::to_string(dropped.dva.vdev) + " metaslab", "leaked"));
  REQUIRE(HasProblem(r, "offset " + Hex(dropped.dva.offset), "leaked"));
  REQUIRE(r.bytes_allocated_by_maps == r.bytes_referenced + dropped.dva.size);
}

TEST_CASE("Check compares each deadlist with what the tree before it held and the next does not",
          "[check][snapshot]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  std::unique_ptr<Pool> p;
  Known k = ChurnPool(paths, &p);
  // A snapshot, then big's blocks overwritten: the dataset's deadlist gets
  // what the snapshot alone holds now.
  REQUIRE(p->Snapshot({"tank/a@s"}, false).ok());
  REQUIRE(p->WaitSynced().ok());
  {
    dmu::Tx tx(p->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(p->dataset("a")->Write(tx, ObjectId(k.big), 0, Pattern(77, 3 * 131072)).ok());
    tx.Commit();
  }
  REQUIRE(p->WaitSynced().ok());
  REQUIRE(p->Export().ok());
  p.reset();
  {
    CheckReport r = Check(paths);
    INFO(Listing(r));
    REQUIRE(r.ok());
  }
  // The deadlist's second entry made a copy of its first: the deadlist
  // then lacks one block the snapshot alone holds (never freed with it)
  // and holds the other twice.
  Surgeon s(paths);
  const PoolDirectory d = s.Directory();
  uint64_t id = 0;
  for (const DatasetEntry& e : d.datasets)
    if (e.name == "a") id = e.id;
  REQUIRE(d.head_deadlists.count(id) == 1);
  const DeadObject object = d.head_deadlists.at(id).begin()->second.objects.at(0);
  REQUIRE(object.entries >= 2);
  std::string entries = s.ReadObject(s.mos(), object.object);
  const size_t bp_size = zio::BlockPtrSize(s.format());
  const zio::BlockPtr first =
      zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(entries.data()), "", s.format()).value();
  const zio::BlockPtr second =
      zio::DecodeBlockPtr(reinterpret_cast<const uint8_t*>(entries.data()) + bp_size, "",
                          s.format())
          .value();
  entries.replace(bp_size, bp_size, entries.substr(0, bp_size));
  s.RewriteSmallObject(s.mos(), object.object, entries);
  s.Commit();
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(HasProblem(r, "dataset 'tank/a' deadlist",
                     "lacks the block at vdev " + std::to_string(second.dva.vdev) + " offset " +
                         Hex(second.dva.offset) + " born in txg " +
                         std::to_string(second.birth.value()) +
                         ", which snapshot 'tank/a@s' holds and it does not"));
  REQUIRE(HasProblem(r, "dataset 'tank/a' deadlist",
                     "holds the block at vdev " + std::to_string(first.dva.vdev) + " offset " +
                         Hex(first.dva.offset) + " born in txg " +
                         std::to_string(first.birth.value()) + ", which is not a block"));
}

TEST_CASE("Check compares the block reference table with the clones it walks", "[check][brt]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  std::unique_ptr<Pool> p;
  Known k = ChurnPool(paths, &p);
  // Object big's four blocks cloned twice into dataset a and once into b:
  // three references beyond the first to each.
  const uint64_t a1 = CloneObject(*p, "a", k.big, "a");
  const uint64_t a2 = CloneObject(*p, "a", k.big, "a");
  const uint64_t b1 = CloneObject(*p, "a", k.big, "b");
  REQUIRE(p->WaitSynced().ok());
  // The table's entry for big's block 0, which the damage below changes.
  auto bp0 = p->dataset("a")->BlockPointer(ObjectId(k.big), 0);
  REQUIRE(bp0.ok());
  const zio::BlockRefTable::Key key = zio::BlockRefTable::KeyOf(*bp0);
  REQUIRE(p->Export().ok());
  p.reset();
  {
    CheckReport r = Check(paths);
    INFO(Listing(r));
    REQUIRE(r.ok());
  }
  Surgeon s0(paths);
  const uint64_t object = s0.Directory().ref_table_object;
  REQUIRE(object != 0);
  const std::string stored = s0.ReadObject(s0.mos(), object);
  const zio::BlockRefTable::Entries table = zio::BlockRefTable::Decode(stored, 2).value();
  REQUIRE(table.size() == 4);
  for (const auto& [at, e] : table) REQUIRE(e.refs == 3);
  REQUIRE(table.count(key) == 1);
  const zio::BlockRefTable::Entry entry = table.at(key);
  REQUIRE(entry.allocated == bp0->allocated());
  const std::string table_name =
      "block reference table (MOS object " + std::to_string(object) + ")";
  // The pointers to that block: big's in a, whose walk comes first, then
  // the clones'.
  const std::string block = "vdev " + std::to_string(key.first) + " offset " + Hex(key.second);

  // Stores `bytes` as the table, checks the pool, and undoes the edit.
  auto check_with = [&](const std::string& bytes) {
    Surgeon s(paths);
    s.RewriteSmallObject(s.mos(), object, bytes);
    REQUIRE(s.fitted());
    s.Commit();
    CheckReport r = Check(paths);
    s.Undo();
    return r;
  };
  auto check_entries = [&](const zio::BlockRefTable::Entries& entries) {
    return check_with(zio::BlockRefTable::Encode(entries));
  };

  SECTION("a count above the walk's: space never freed") {
    zio::BlockRefTable::Entries t = table;
    t[key].refs = 4;
    CheckReport r = check_entries(t);
    INFO(Listing(r));
    CHECK(r.problems.size() == 1);
    CHECK(HasProblem(r, block,
                     "the block reference table counts 4 references beyond the first; the walk "
                     "found 3: dataset 'tank/a' object " +
                         std::to_string(a1) + " L0 block 0"));
    CHECK(HasProblem(r, block, "its space would never be freed"));
  }
  SECTION("a count below the walk's: a free would release a block in use") {
    zio::BlockRefTable::Entries t = table;
    t[key].refs = 2;
    CheckReport r = check_entries(t);
    INFO(Listing(r));
    CHECK(r.problems.size() == 1);
    CHECK(HasProblem(r, block,
                     "counts 2 references beyond the first; the walk found 3: dataset 'tank/a' "
                     "object " +
                         std::to_string(a1) + " L0 block 0, dataset 'tank/a' object " +
                         std::to_string(a2) + " L0 block 0, dataset 'tank/b' object " +
                         std::to_string(b1) + " L0 block 0"));
    CHECK(HasProblem(r, block, "a free would release it while a pointer still names it"));
  }
  SECTION("a block the table does not count: one block, several pointers") {
    zio::BlockRefTable::Entries t = table;
    t.erase(key);
    CheckReport r = check_entries(t);
    INFO(Listing(r));
    CHECK(r.problems.size() == 3);
    for (uint64_t clone : {a1, a2})
      CHECK(HasProblem(r, "dataset 'tank/a' object " + std::to_string(clone) + " L0 block 0",
                       "is also referenced by dataset 'tank/a' object " + std::to_string(k.big) +
                           " L0 block 0: one block, two pointers"));
    CHECK(HasProblem(r, "dataset 'tank/b' object " + std::to_string(b1) + " L0 block 0",
                     "one block, two pointers"));
  }
  SECTION("an entry for a block no pointer names") {
    zio::BlockRefTable::Entries t = table;
    // Sector-aligned for the table, not for the pool's 4 KiB sectors: no
    // block starts there.
    const zio::BlockRefTable::Key stray{1, key.second + (uint64_t{1} << 20) + 512};
    REQUIRE(t.count(stray) == 0);
    t[stray] = {1, 4096};
    CheckReport r = check_entries(t);
    INFO(Listing(r));
    CHECK(r.problems.size() == 1);
    CHECK(HasProblem(r, table_name + " entry for vdev 1 offset " + Hex(stray.second),
                     "counts 1 reference beyond the first to a block no pointer names"));
  }
  SECTION("an entry for a block that is no data block") {
    zio::BlockRefTable::Entries t = table;
    const zio::BlockPtr& mos_root = s0.mos().root;
    t[zio::BlockRefTable::KeyOf(mos_root)] = {1, mos_root.allocated()};
    CheckReport r = check_entries(t);
    INFO(Listing(r));
    CHECK(r.problems.size() == 1);
    CHECK(HasProblem(r, table_name + " entry for vdev " + std::to_string(mos_root.dva.vdev),
                     "counts 1 reference beyond the first to the extent of MOS root block, not "
                     "a dataset's data block"));
  }
  SECTION("an allocated size other than the block's") {
    zio::BlockRefTable::Entries t = table;
    t[key].allocated += 4096;
    CheckReport r = check_entries(t);
    INFO(Listing(r));
    CHECK(r.problems.size() == 1);
    CHECK(HasProblem(r, block,
                     "takes " + std::to_string(entry.allocated) +
                         " bytes; the block reference table says " +
                         std::to_string(entry.allocated + 4096)));
  }
  SECTION("a table that does not decode") {
    std::string bad = stored;
    bad[32 + 12] = 1;  // entry 1's reserved field
    CheckReport r = check_with(bad);
    INFO(Listing(r));
    REQUIRE_FALSE(r.ok());
    CHECK(HasProblem(r, table_name, "block reference table entry 1 ("));
    CHECK(HasProblem(r, table_name, "reserved field is not zero"));
    // Import refuses it too, and nothing else is wrong: the clones are
    // not taken for damage.
    CHECK(HasProblem(r, "uberblocks", "reserved field is not zero"));
    CHECK_FALSE(HasProblem(r, "", "one block, two pointers"));
  }
  // Every edit undone: the pool checks clean again.
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE(r.ok());
}

// A pool "tank" on `paths`: datasets a (an object, snapshots @one and
// @two) and b (snapshot @one). Exported.
void SnapshotPool(const std::vector<std::string>& paths) {
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  auto imported = Pool::Import(paths, QuietOptions());
  INFO(imported.status().ToString());
  REQUIRE(imported.ok());
  Pool& p = **imported;
  REQUIRE(p.CreateDataset("a").ok());
  REQUIRE(p.CreateDataset("b").ok());
  REQUIRE(p.WaitSynced().ok());
  int n = 0;
  for (const char* snap : {"tank/a@one", "tank/b@one", "tank/a@two"}) {
    dmu::Tx tx(p.assigner());
    REQUIRE(tx.Assign().ok());
    dmu::ObjectSet* a = p.dataset("a");
    auto id = a->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    REQUIRE(a->Write(tx, *id, 0, Pattern(uint64_t(++n), 20000)).ok());
    tx.Commit();
    auto txg = p.Snapshot({snap}, false);
    REQUIRE(txg.ok());
    REQUIRE(p.WaitSynced(*txg).ok());
  }
  REQUIRE(p.Export().ok());
}

// The snapshots of the pool's directory as full names ("tank/a@one").
std::map<std::string, SnapshotEntry> SnapshotsByName(const PoolDirectory& pd) {
  std::map<uint64_t, std::string> names;
  for (const DatasetEntry& e : pd.datasets) names[e.id] = e.parent == 0 ? e.name : "tank/" + e.name;
  std::map<std::string, SnapshotEntry> out;
  for (const SnapshotEntry& e : pd.snapshots) out[names.at(e.dataset) + "@" + e.name] = e;
  return out;
}

std::map<std::string, uint64_t> ListedGuids(Pool& p) {
  auto l = p.ListSnapshots("", true);
  INFO(l.status().ToString());
  REQUIRE(l.ok());
  std::map<std::string, uint64_t> out;
  for (const SnapshotFigures& f : *l) out[f.name] = f.guid;
  return out;
}

TEST_CASE("A version 7 pool directory imports with a guid per snapshot, stored as the current",
          "[check][snapshot][guid]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0"};
  SnapshotPool(paths);
  {
    // The directory as a build from before guids wrote it.
    Surgeon s(paths);
    const PoolDirectory pd = s.Directory();
    REQUIRE(pd.snapshots.size() == 3);
    s.RewriteSmallObject(s.mos(), 1, EncodePoolDirectory(pd, s.format(), 7));
    REQUIRE(s.fitted());
    s.Commit();
    const std::string bytes = s.ReadObject(s.mos(), 1);
    REQUIRE(util::GetLE32(reinterpret_cast<const uint8_t*>(bytes.data()) + 8) == 7);
    for (const SnapshotEntry& e : s.Directory().snapshots) REQUIRE(e.guid == 0);
  }
  {
    // Sound, with a word that the guids come with the next import.
    CheckReport r = Check(paths);
    INFO(Listing(r));
    REQUIRE(r.ok());
    bool told = false;
    for (const CheckProblem& w : r.warnings)
      told |= w.what.find("no guids yet") != std::string::npos;
    CHECK(told);
  }
  std::map<std::string, uint64_t> guids;
  {
    auto p = Pool::Import(paths, QuietOptions());
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    guids = ListedGuids(**p);
    REQUIRE(guids.size() == 3);
    for (const auto& [name, guid] : guids) CHECK(guid != 0);
    CHECK(guids["tank/a@one"] != guids["tank/a@two"]);
    REQUIRE((*p)->SyncOnce().ok());
    REQUIRE((*p)->Export().ok());
  }
  {
    Surgeon s(paths);
    const std::string bytes = s.ReadObject(s.mos(), 1);
    CHECK(util::GetLE32(reinterpret_cast<const uint8_t*>(bytes.data()) + 8) ==
          kPoolDirectoryVersion);
    for (const auto& [name, e] : SnapshotsByName(s.Directory())) CHECK(e.guid == guids[name]);
  }
  CheckReport r = Check(paths);
  INFO(Listing(r));
  CHECK(r.ok());
  for (const CheckProblem& w : r.warnings) CHECK(w.what.find("guid") == std::string::npos);
  auto p = Pool::Import(paths, QuietOptions());
  REQUIRE(p.ok());
  CHECK(ListedGuids(**p) == guids);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Check and import refuse a snapshot guid of 0 or one repeated in its dataset",
          "[check][snapshot][guid]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0"};
  SnapshotPool(paths);
  struct Case {
    const char* name;
    std::function<void(std::map<std::string, SnapshotEntry>&)> change;
    std::string refusal;  // "": sound
  };
  std::map<std::string, SnapshotEntry> was;
  {
    Surgeon s(paths);
    was = SnapshotsByName(s.Directory());
  }
  const std::string one = std::to_string(was.at("tank/a@one").guid);
  const std::vector<Case> cases = {
      {"zero", [](auto& m) { m.at("tank/a@two").guid = 0; }, "('@two') of dataset"},
      {"repeated", [](auto& m) { m.at("tank/a@two").guid = m.at("tank/a@one").guid; },
       "has guid " + one + ", as snapshot '@one' of that dataset has"},
      // Another dataset's snapshot may share one.
      {"shared", [](auto& m) { m.at("tank/b@one").guid = m.at("tank/a@one").guid; }, ""},
  };
  // Read-only imports: the surgeon's edits are undone after each case, and
  // nothing may have been written over them.
  PoolOptions read_only = QuietOptions();
  read_only.read_only = true;
  for (const Case& c : cases) {
    INFO(c.name);
    Surgeon s(paths);
    PoolDirectory pd = s.Directory();
    std::map<std::string, SnapshotEntry> by_name = SnapshotsByName(pd);
    c.change(by_name);
    for (SnapshotEntry& e : pd.snapshots)
      for (const auto& [name, changed] : by_name)
        if (changed.id == e.id) e.guid = changed.guid;
    s.RewriteSmallObject(s.mos(), 1, EncodePoolDirectory(pd, s.format()));
    REQUIRE(s.fitted());
    s.Commit();
    CheckReport r = Check(paths);
    INFO(Listing(r));
    auto p = Pool::Import(paths, read_only);
    if (c.refusal.empty()) {
      CHECK(r.ok());
      REQUIRE(p.ok());
      CHECK(ListedGuids(**p)["tank/b@one"] == was.at("tank/a@one").guid);
      REQUIRE((*p)->Export().ok());
    } else {
      CHECK(HasProblem(r, "pool directory", c.refusal));
      REQUIRE_FALSE(p.ok());
      CHECK(p.status().message().find(c.refusal) != std::string::npos);
      if (std::string(c.name) == "zero") CHECK(HasProblem(r, "pool directory", "has guid 0"));
    }
    s.Undo();
  }
  REQUIRE(Check(paths).ok());
}

TEST_CASE("Check survives structures garbled under valid checksums", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  Known k = ChurnPool(paths);
  std::mt19937_64 rng(11);
  // A few random bytes of `s` from `from` for `len` bytes set to random values.
  auto garble = [&](std::string& s, size_t from, size_t len) {
    for (int n = 1 + int(rng() % 4); n > 0; n--)
      s[from + rng() % std::min(len, s.size() - from)] = char(rng());
  };
  int runs = 0, damaged = 0;
  for (int iter = 0; iter < 60; iter++) {
    Surgeon s(paths);
    Surgeon::Objset a = s.Dataset("a");
    switch (iter % 5) {
      case 0: {  // a dataset dnode
        uint64_t id = 1 + rng() % 12;
        s.EditLeaf(a, 0, id / 32, [&](std::string& b) { garble(b, (id % 32) * 512, 512); });
        s.SetDatasetRoot("a", a.root);
        break;
      }
      case 1: {  // a MOS dnode
        uint64_t id = 1 + rng() % 8;
        s.EditLeaf(s.mos(), 0, id / 32, [&](std::string& b) { garble(b, (id % 32) * 512, 512); });
        break;
      }
      case 2: {  // the pool directory
        const size_t len = s.ReadObject(s.mos(), 1).size();
        s.EditLeaf(s.mos(), 1, 0, [&](std::string& b) { garble(b, 0, len); });
        break;
      }
      case 3:  // a dataset's root block
        s.EditRoot(a, [&](std::string& b) { garble(b, 0, b.size()); });
        s.SetDatasetRoot("a", a.root);
        break;
      default:  // the block pointers in an indirect block
        REQUIRE(s.GetDnode(a, k.big).nlevels == 2);
        s.EditTop(a, k.big,
                  [&](std::string& b) { garble(b, 0, 4 * zio::BlockPtrSize(s.format())); });
        s.SetDatasetRoot("a", a.root);
        break;
    }
    if (!s.fitted()) {
      s.Undo();
      continue;
    }
    s.Commit();
    auto r = CheckPool(paths);  // must not crash; a verdict or a clear error
    if (r.ok()) {
      runs++;
      damaged += !r->ok();
    } else {
      REQUIRE_FALSE(r.status().message().empty());
    }
    s.Undo();
  }
  INFO(runs << " checks, " << damaged << " found damage");
  REQUIRE(runs > 30);
  REQUIRE(damaged > runs / 2);
  // Every edit undone: the pool checks clean again.
  REQUIRE(Check(paths).ok());
}

}  // namespace
}  // namespace poolfs::core::pool
