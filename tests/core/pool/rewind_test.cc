// Recovery imports: a newest txg whose tree does not verify fails a normal
// import and is rewound by a read-only rewind import (and `check --rewind`)
// to the newest older txg that verifies, within the deferral window; a
// damaged label copy is rewritten by a read-write import; a pool none of
// whose uberblock slots decodes says so.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "pool/pool.h"
#include "pool/pool_phys.h"
#include "poolfs/pool_admin.h"
#include "vdev/file_device.h"
#include "vdev/label.h"
#include "vdev/uberblock.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::pool::rewind_test {

using check_test::Pattern;
using check_test::TempDir;

constexpr uint64_t kPoolFileSize = 64ull << 20;

PoolOptions RewindTestOptions() {
  PoolOptions o;
  o.txg.timeout_ms = 600000;  // only the syncs the test asks for
  o.space.allocators = 2;
  return o;
}

PoolOptions RewindImport() {
  PoolOptions o = RewindTestOptions();
  o.read_only = true;
  o.rewind = true;
  return o;
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Writes `data` to a new object of the root dataset and waits for its txg.
ObjectId WriteSynced(Pool& p, const std::string& data) {
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  auto id = p.root_dataset()->Create(tx, dmu::ObjectType::kPlain);
  REQUIRE(id.ok());
  REQUIRE(p.root_dataset()->Write(tx, *id, 0, data).ok());
  const Txg t = tx.txg();
  tx.Commit();
  REQUIRE(p.WaitSynced(t).ok());
  return *id;
}

std::vector<vdev::Uberblock> Uberblocks(const std::string& path) {
  auto dev = vdev::FileDevice::Open(path, {true, false});
  REQUIRE(dev.ok());
  auto info = vdev::ReadLabels(**dev);
  REQUIRE(info.ok());
  std::vector<vdev::Uberblock> out;
  for (const auto& f : info->uberblocks) out.push_back(f.ub);
  return out;  // newest first
}

// Flips a byte in every copy of the MOS root block of the uberblock of txg t.
void DamageMosRoot(const std::string& path, Txg t) {
  for (const vdev::Uberblock& ub : Uberblocks(path)) {
    if (ub.txg != t) continue;
    auto payload = DecodeRootPayload(ub.root, zio::BpFormat(ub.version));
    REQUIRE(payload.ok());
    const zio::BlockPtr* root = &payload->mos_root;
    auto dev = vdev::FileDevice::Open(path, {false, false});
    REQUIRE(dev.ok());
    for (int c = 0; c < root->copies(); c++) {
      char byte;
      const uint64_t at = root->copy(c).offset + 100;
      REQUIRE((*dev)->Read(at, &byte, 1).ok());
      byte ^= 0x40;
      REQUIRE((*dev)->Write(at, &byte, 1).ok());
    }
    REQUIRE((*dev)->Flush().ok());
    return;
  }
  FAIL("no uberblock of txg " << t.value());
}

// A pool whose txgs 2, 3 and 4 each wrote one object; returns the objects.
struct Written {
  std::vector<ObjectId> ids;
  std::vector<std::string> data;
  Txg newest;
};

Written MakePool(const std::string& path) {
  REQUIRE(Pool::Create({path}, kPoolFileSize, CreateOptions{"tank"}).ok());
  Written w;
  auto p = Pool::Import({path}, RewindTestOptions());
  REQUIRE(p.ok());
  for (int i = 0; i < 3; i++) {
    w.data.push_back(Pattern(40 + i, 50000));
    w.ids.push_back(WriteSynced(**p, w.data.back()));
  }
  REQUIRE((*p)->Export().ok());
  w.newest = Uberblocks(path).front().txg;
  return w;
}

TEST_CASE("A damaged newest txg fails the import and a read-only rewind opens the one before",
          "[pool][rewind]") {
  TempDir dir;
  const std::string path = dir / "v0";
  Written w = MakePool(path);
  const Txg newest = w.newest;
  DamageMosRoot(path, newest);

  auto normal = Pool::Import({path}, RewindTestOptions());
  REQUIRE_FALSE(normal.ok());
  INFO(normal.status().ToString());
  REQUIRE(normal.status().code() == StatusCode::kCorruption);
  REQUIRE(Has(normal.status().message(),
              "the newest uberblock, txg " + std::to_string(newest.value()) + ", does not verify"));
  REQUIRE(Has(normal.status().message(), "-o ro,rewind"));

  auto p = Pool::Import({path}, RewindImport());
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  REQUIRE((*p)->imported_txg().value() == newest.value() - 1);
  REQUIRE((*p)->import_notes().size() == 1);
  const std::string note = (*p)->import_notes()[0];
  INFO(note);
  REQUIRE(note.starts_with("rewound to txg " + std::to_string(newest.value() - 1) +
                           " (the newest, txg " + std::to_string(newest.value()) +
                           ", does not verify: "));
  // The older data reads back; the newest txg's object is not there.
  dmu::ObjectSet* os = (*p)->root_dataset();
  for (size_t i = 0; i + 1 < w.ids.size(); i++)
    REQUIRE(os->Read(w.ids[i], 0, 1 << 20).value() == w.data[i]);
  REQUIRE_FALSE(os->Read(w.ids.back(), 0, 1 << 20).ok());
  // Read-only: no change is taken.
  dmu::Tx tx((*p)->assigner());
  Status assign = tx.Assign();
  REQUIRE(assign.code() == StatusCode::kReadOnly);
  REQUIRE((*p)->Export().ok());
  // Nothing was written: the newest uberblock is still the damaged one.
  REQUIRE(Uberblocks(path).front().txg == newest);
  REQUIRE_FALSE(Pool::Import({path}, RewindTestOptions()).ok());
}

TEST_CASE("A rewind import must be read-only", "[pool][rewind]") {
  TempDir dir;
  const std::string path = dir / "v0";
  MakePool(path);
  PoolOptions o = RewindTestOptions();
  o.rewind = true;
  auto p = Pool::Import({path}, o);
  REQUIRE(p.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(Has(p.status().message(), "read-only"));
}

TEST_CASE("A rewind of a pool whose newest txg verifies opens the newest", "[pool][rewind]") {
  TempDir dir;
  const std::string path = dir / "v0";
  Written w = MakePool(path);
  auto p = Pool::Import({path}, RewindImport());
  REQUIRE(p.ok());
  REQUIRE((*p)->imported_txg() == w.newest);
  REQUIRE((*p)->import_notes() ==
          std::vector<std::string>{"rewind: txg " + std::to_string(w.newest.value()) +
                                   ", the newest, verifies: nothing to rewind"});
  REQUIRE((*p)->root_dataset()->Read(w.ids.back(), 0, 1 << 20).value() == w.data.back());
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("A rewind goes back no further than the free deferral window", "[pool][rewind]") {
  TempDir dir;
  const std::string path = dir / "v0";
  Written w = MakePool(path);
  // The newest and the two before it: the whole window.
  for (uint64_t back = 0; back <= kTxgDeferSize; back++)
    DamageMosRoot(path, Txg(w.newest.value() - back));
  auto p = Pool::Import({path}, RewindImport());
  INFO(p.status().ToString());
  REQUIRE(p.status().code() == StatusCode::kCorruption);
  REQUIRE(Has(p.status().message(), "no uberblock within 2 txgs of the newest verifies"));
  REQUIRE(Has(p.status().message(), "txg " + std::to_string(w.newest.value() - kTxgDeferSize - 1) +
                                        " and older are outside the rewind window"));
}

TEST_CASE("check --rewind checks the txg a rewind import opens", "[pool][rewind][check]") {
  TempDir dir;
  const std::string path = dir / "v0";
  Written w = MakePool(path);
  DamageMosRoot(path, w.newest);

  auto plain = CheckPool({path});
  REQUIRE(plain.ok());
  REQUIRE_FALSE(plain->ok());
  REQUIRE(plain->txg == w.newest.value());
  bool named = false;
  for (const auto& pr : plain->problems)
    named |= pr.where == "uberblocks" && Has(pr.what, "does not verify");
  REQUIRE(named);

  auto r = CheckPool({path}, CheckOptions{.rewind = true});
  REQUIRE(r.ok());
  std::string listing;
  for (const auto& pr : r->problems) listing += pr.where + ": " + pr.what + "\n";
  INFO(listing << r->Summary());
  REQUIRE(r->ok());
  REQUIRE(r->txg == w.newest.value() - 1);
  REQUIRE(r->newest_txg == w.newest.value());
  REQUIRE(r->rewind.starts_with("rewound to txg " + std::to_string(w.newest.value() - 1)));
  REQUIRE(r->trial_sync_txg == 0);  // a rewind import never writes
  REQUIRE(r->warnings.size() == 1);
  REQUIRE(Has(r->Summary(), "poolfs mount -o ro,rewind opens it read-only"));
}

TEST_CASE("A read-write import rewrites a damaged label copy, and check is clean after",
          "[pool][rewind][labels]") {
  TempDir dir;
  const std::string path = dir / "v0";
  MakePool(path);
  {
    // Label 1's header: its checksum fails.
    auto dev = vdev::FileDevice::Open(path, {false, false});
    REQUIRE(dev.ok());
    const char junk[] = "stray write";
    REQUIRE((*dev)->Write(vdev::kLabelSize + 200, junk, sizeof junk).ok());
    REQUIRE((*dev)->Flush().ok());
  }
  auto before = CheckPool({path});
  REQUIRE(before.ok());
  REQUIRE_FALSE(before->ok());
  REQUIRE(before->problems.size() == 1);
  REQUIRE(Has(before->problems[0].where, "label 1"));
  REQUIRE(before->problems[0].what == "checksum mismatch");

  // A read-only import leaves it.
  {
    PoolOptions o = RewindTestOptions();
    o.read_only = true;
    auto p = Pool::Import({path}, o);
    REQUIRE(p.ok());
    REQUIRE((*p)->import_notes().empty());
    REQUIRE((*p)->Export().ok());
    REQUIRE_FALSE(CheckPool({path})->ok());
  }
  {
    auto p = Pool::Import({path}, RewindTestOptions());
    REQUIRE(p.ok());
    REQUIRE((*p)->import_notes().size() == 1);
    INFO((*p)->import_notes()[0]);
    REQUIRE(Has((*p)->import_notes()[0], "rewrote the labels of vdev 0"));
    REQUIRE(Has((*p)->import_notes()[0], "label 1 (checksum mismatch)"));
    REQUIRE((*p)->Export().ok());
  }
  auto after = CheckPool({path});
  REQUIRE(after.ok());
  std::string listing;
  for (const auto& pr : after->problems) listing += pr.where + ": " + pr.what + "\n";
  INFO(listing);
  REQUIRE(after->ok());
  // The next import has nothing to repair.
  auto p = Pool::Import({path}, RewindTestOptions());
  REQUIRE(p.ok());
  REQUIRE((*p)->import_notes().empty());
  REQUIRE((*p)->Export().ok());
}

// Applies `fn` to every slot of every label's ring that is not all zeros.
void ForEachWrittenSlot(const std::string& path,
                        const std::function<void(vdev::BlockDevice&, uint64_t)>& fn) {
  auto dev = vdev::FileDevice::Open(path, {false, false});
  REQUIRE(dev.ok());
  auto layout = vdev::ComputeVdevLayout(kPoolFileSize);
  REQUIRE(layout.ok());
  for (int label = 0; label < vdev::kLabelCount; label++) {
    for (uint64_t s = 0; s < vdev::kUberblockSlots; s++) {
      const uint64_t at = layout->SlotOffset(label, s);
      std::vector<char> slot(vdev::kUberblockSlotSize);
      REQUIRE((*dev)->Read(at, slot.data(), slot.size()).ok());
      if (std::all_of(slot.begin(), slot.end(), [](char c) { return c == 0; })) continue;
      fn(**dev, at);
    }
  }
  REQUIRE((*dev)->Flush().ok());
}

TEST_CASE("A pool all of whose uberblock slots fail their checksums says so", "[pool][rewind]") {
  TempDir dir;
  const std::string path = dir / "v0";
  MakePool(path);
  ForEachWrittenSlot(path, [](vdev::BlockDevice& dev, uint64_t at) {
    char byte;
    REQUIRE(dev.Read(at + 60, &byte, 1).ok());
    byte ^= 0x01;
    REQUIRE(dev.Write(at + 60, &byte, 1).ok());
  });
  const std::string want = "no valid uberblock: every slot of every label fails its checksum";
  auto p = Pool::Import({path}, RewindTestOptions());
  INFO(p.status().ToString());
  REQUIRE(p.status().code() == StatusCode::kCorruption);
  REQUIRE(Has(p.status().message(), want));
  REQUIRE_FALSE(Has(p.status().message(), "creation never completed"));
  REQUIRE(Has(Pool::Import({path}, RewindImport()).status().message(), want));
  auto r = CheckPool({path});
  REQUIRE(r.status().code() == StatusCode::kCorruption);
  REQUIRE(Has(r.status().message(), want));
}

TEST_CASE("A pool with every uberblock slot empty never finished its creation", "[pool][rewind]") {
  TempDir dir;
  const std::string path = dir / "v0";
  MakePool(path);
  ForEachWrittenSlot(path, [](vdev::BlockDevice& dev, uint64_t at) {
    std::vector<char> zeros(vdev::kUberblockSlotSize, 0);
    REQUIRE(dev.Write(at, zeros.data(), zeros.size()).ok());
  });
  auto p = Pool::Import({path}, RewindTestOptions());
  INFO(p.status().ToString());
  REQUIRE(p.status().code() == StatusCode::kCorruption);
  REQUIRE(Has(p.status().message(), "creation never completed"));
}

}  // namespace poolfs::core::pool::rewind_test
