// Block size changes: an object's block grows while it has one (and shrinks
// back when emptied), and every txg's sync writes a block 0 and a dnode that
// agree, whatever the txgs after it did meanwhile.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/dmu/objset_fixture.h"
#include "dmu/objset.h"

namespace poolfs::core::dmu {
namespace {

using namespace testing;  // the fixture (objset_fixture.h)

constexpr uint32_t kRecord = 128 * 1024;

// Syncs txg t, which the test closed itself (the open txg may be past it
// and hold changes already), and returns its root block.
zio::BlockPtr SyncClosed(Fixture& f, Txg t) {
  for (auto& task : f.os->SyncTasks(t, 2)) REQUIRE(task.fn().ok());
  auto root = f.os->FinishSync(t, 0);
  INFO(root.status().ToString());
  REQUIRE(root.ok());
  f.space.Sync(t, [](const space::Metaslab&) {});
  f.space.SyncDone(t);
  f.os->SyncDone(t);
  return *root;
}

// The object set as the root block `root` has it (a txg's state on disk).
std::unique_ptr<ObjectSet> OpenAt(Fixture& f, const zio::BlockPtr& root) {
  auto r = ObjectSet::Open(&f.zio, root, "as synced");
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

uint32_t BlockSizeOf(ObjectSet& os, ObjectId id) { return os.Stat(id).value().block_size; }

// Every stored data block of `id` in `os` (as of its last sync) has the
// block size the dnode records, and none lies past the length.
void CheckStoredBlocks(ObjectSet& os, ObjectId id) {
  const ObjectInfo info = os.Stat(id).value();
  const uint64_t blocks = (info.length + info.block_size - 1) / info.block_size;
  for (uint64_t b = 0; b < std::max<uint64_t>(blocks, 1) + 2; b++) {
    auto bp = os.BlockPointer(id, b);
    REQUIRE(bp.ok());
    if (bp->IsHole()) continue;
    INFO("object " << id.value() << " block " << b);
    REQUIRE(b < blocks);
    REQUIRE(bp->lsize == info.block_size);
  }
}

TEST_CASE("An object's block grows while it has one block, then keeps the largest size",
          "[dmu]") {
  Fixture f;
  ObjectId id;
  std::string m = Pattern(1, 1000);
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = f.os->Create(tx, ObjectType::kPlain, 4096).value();
    REQUIRE(f.os->Write(tx, id, 0, m).ok());
    tx.Commit();
  }
  f.Sync();
  CheckStoredBlocks(*f.os, id);
  REQUIRE(f.os->BlockPointer(id, 0)->lsize == 4096);
  {
    // 10,000 bytes: the smallest power of two that holds them is 16 KiB.
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->GrowBlockSize(tx, id, 10000, kRecord).ok());
    REQUIRE(tx.changes() == 1);
    REQUIRE(BlockSizeOf(*f.os, id) == 16384);
    REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
    const std::string more = Pattern(2, 9000);
    REQUIRE(f.os->Write(tx, id, 1000, more).ok());
    m += more;
    // Already large enough: nothing changes, nothing is counted.
    const uint64_t before = tx.changes();
    REQUIRE(f.os->GrowBlockSize(tx, id, 16384, kRecord).ok());
    REQUIRE(tx.changes() == before);
    tx.Commit();
  }
  f.Sync();
  CheckStoredBlocks(*f.os, id);
  f.Reopen();
  REQUIRE(BlockSizeOf(*f.os, id) == 16384);
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  {
    // Past the largest block: straight to it, then a second block.
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->GrowBlockSize(tx, id, 200000, kRecord).ok());
    REQUIRE(BlockSizeOf(*f.os, id) == kRecord);
    const std::string far = Pattern(3, 5000);
    REQUIRE(f.os->Write(tx, id, 195000, far).ok());
    m.resize(195000, '\0');
    m += far;
    tx.Commit();
  }
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  f.Sync();
  CheckStoredBlocks(*f.os, id);
  f.Reopen();
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  {
    // Two blocks: the size stays, whatever the largest asked for now.
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->GrowBlockSize(tx, id, 1 << 20, 1 << 20).ok());
    REQUIRE(BlockSizeOf(*f.os, id) == kRecord);
    REQUIRE(tx.changes() == 0);
    REQUIRE(f.os->SetBlockSize(tx, id, 1 << 20).code() == StatusCode::kInvalidArgument);
    REQUIRE(f.os->SetBlockSize(tx, id, 4096).code() == StatusCode::kInvalidArgument);
    REQUIRE(f.os->SetBlockSize(tx, id, 3000).code() == StatusCode::kInvalidArgument);
    REQUIRE(tx.changes() == 0);
  }
}

TEST_CASE("A txg that syncs after the next one grew the block writes its own block and size",
          "[dmu]") {
  Fixture f;
  const Txg n(f.txgs.open.load());
  ObjectId id;
  const std::string a = Pattern(10, 3000);
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = f.os->Create(tx, ObjectType::kPlain, 4096).value();
    REQUIRE(f.os->Write(tx, id, 0, a).ok());
    tx.Commit();
  }
  f.txgs.open++;  // n closes; n + 1 grows the block before n syncs
  std::string m = a;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->GrowBlockSize(tx, id, 40000, kRecord).ok());
    const std::string b = Pattern(11, 37000);
    REQUIRE(f.os->Write(tx, id, 3000, b).ok());
    m += b;
    tx.Commit();
  }
  REQUIRE(BlockSizeOf(*f.os, id) == 65536);
  const zio::BlockPtr root_n = SyncClosed(f, n);
  // n on disk: its 4 KiB block and its dnode, as n left them.
  {
    auto at_n = OpenAt(f, root_n);
    REQUIRE(BlockSizeOf(*at_n, id) == 4096);
    REQUIRE(at_n->Read(id, 0, 1 << 20).value() == a);
    REQUIRE(at_n->BlockPointer(id, 0)->lsize == 4096);
    CheckStoredBlocks(*at_n, id);
  }
  // The live object reads n + 1's block meanwhile, tree or no tree.
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  f.txgs.open++;
  const zio::BlockPtr root_n1 = SyncClosed(f, Txg(n.value() + 1));
  auto at_n1 = OpenAt(f, root_n1);
  REQUIRE(BlockSizeOf(*at_n1, id) == 65536);
  REQUIRE(at_n1->Read(id, 0, 1 << 20).value() == m);
  CheckStoredBlocks(*at_n1, id);
  f.Reopen();
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
}

TEST_CASE("An object emptied shrinks back to a small block, older txgs keep theirs", "[dmu]") {
  Fixture f;
  ObjectId id;
  const std::string big = Pattern(20, 300000);
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = f.os->Create(tx, ObjectType::kPlain, 4096).value();
    REQUIRE(f.os->GrowBlockSize(tx, id, big.size(), kRecord).ok());
    REQUIRE(f.os->Write(tx, id, 0, big).ok());
    tx.Commit();
  }
  f.Sync();
  // Txg n rewrites the large blocks; n + 1, before n syncs, empties the
  // object, shrinks its block and writes a little.
  const Txg n(f.txgs.open.load());
  std::string at_n = big;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    const std::string mid = Pattern(21, 150000);
    REQUIRE(f.os->Write(tx, id, 50000, mid).ok());
    at_n.replace(50000, mid.size(), mid);
    tx.Commit();
  }
  f.txgs.open++;
  const std::string small = Pattern(22, 700);
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    // Not while the data needs more than one block of the smaller size.
    REQUIRE(f.os->SetBlockSize(tx, id, 4096).code() == StatusCode::kInvalidArgument);
    REQUIRE(f.os->Truncate(tx, id, 0).ok());
    REQUIRE(f.os->SetBlockSize(tx, id, 4096).ok());
    REQUIRE(f.os->Write(tx, id, 0, small).ok());
    tx.Commit();
  }
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == small);
  const uint64_t used_before = f.os->Stat(id)->used;
  const zio::BlockPtr root_n = SyncClosed(f, n);
  {
    auto os_n = OpenAt(f, root_n);
    REQUIRE(BlockSizeOf(*os_n, id) == kRecord);
    REQUIRE(os_n->Read(id, 0, 1 << 20).value() == at_n);
    CheckStoredBlocks(*os_n, id);
  }
  f.txgs.open++;
  const zio::BlockPtr root_n1 = SyncClosed(f, Txg(n.value() + 1));
  auto os_n1 = OpenAt(f, root_n1);
  REQUIRE(BlockSizeOf(*os_n1, id) == 4096);
  REQUIRE(os_n1->Read(id, 0, 1 << 20).value() == small);
  CheckStoredBlocks(*os_n1, id);
  REQUIRE(os_n1->Stat(id)->used < used_before);
  // Block 0 takes one sector (the tree keeps the level it grew to).
  REQUIRE(os_n1->BlockPointer(id, 0)->allocated() == 4096);
}

TEST_CASE("A block that reads as zeros changes size without a copy", "[dmu]") {
  Fixture f;
  ObjectId id;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = f.os->Create(tx, ObjectType::kPlain, 8192).value();
    REQUIRE(f.os->Write(tx, id, 0, Pattern(30, 6000)).ok());
    tx.Commit();
  }
  f.Sync();
  std::string m(6000, '\0');
  {
    // The whole block punched: it reads as zeros, so growing it dirties no
    // block; the length stays.
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Punch(tx, id, 0, 8192).ok());
    REQUIRE(f.os->GrowBlockSize(tx, id, 20000, kRecord).ok());
    REQUIRE(f.os->Hold(id).value()->DirtyBlocks(tx.txg()) == 0);
    REQUIRE(BlockSizeOf(*f.os, id) == 32768);
    REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
    tx.Commit();
  }
  f.Sync();
  REQUIRE(f.os->BlockPointer(id, 0)->IsHole());
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  {
    // A partial punch keeps the block's other bytes through the growth.
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    const std::string d = Pattern(31, 6000);
    REQUIRE(f.os->Write(tx, id, 0, d).ok());
    m = d;
    tx.Commit();
  }
  f.Sync();
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Punch(tx, id, 1000, 2000).ok());
    std::fill(m.begin() + 1000, m.begin() + 3000, '\0');
    REQUIRE(f.os->GrowBlockSize(tx, id, 100000, kRecord).ok());
    REQUIRE(BlockSizeOf(*f.os, id) == kRecord);
    tx.Commit();
  }
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  f.Sync();
  f.Reopen();
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  CheckStoredBlocks(*f.os, id);
}

// Random writes (each growing the block first, as a file does), truncates
// (an emptied object shrinks back), punches and grows, with each txg's
// successor making its changes before the txg syncs; after each sync the
// txg's own state is opened from its root block and compared with the
// model as the txg left it.
TEST_CASE("Block size changes agree with a model across overlapping txgs and reopens",
          "[dmu][single-threaded]") {
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    Fixture f;
    std::mt19937_64 rng(seed);
    std::map<uint64_t, std::string> model;
    std::map<uint64_t, std::string> closed;  // the model as the closed txg left it
    bool pending = false;                    // a closed txg waits for its sync
    Txg closed_txg;
    for (int round = 0; round < 80; round++) {
      INFO("seed " << seed << " round " << round);
      {
        Tx tx(&f.txgs);
        REQUIRE(tx.Assign().ok());
        for (int op = 0; op < 6; op++) {
          const int what = int(rng() % 10);
          if (model.size() < 3 || what == 0) {
            auto id = f.os->Create(tx, ObjectType::kPlain, 4096);
            REQUIRE(id.ok());
            model[id->value()] = "";
            continue;
          }
          auto it = model.begin();
          std::advance(it, rng() % model.size());
          const ObjectId id(it->first);
          std::string& m = it->second;
          const uint32_t max = 4096u << (rng() % 6);  // 4 KiB .. 128 KiB
          if (what <= 5) {
            // Mostly small, sometimes past the largest block.
            const uint64_t off = rng() % 4 == 0 ? rng() % 300000 : rng() % 9000;
            const uint64_t len = 1 + rng() % (rng() % 4 == 0 ? 70000 : 3000);
            const std::string d = Pattern(rng(), len);
            REQUIRE(f.os->GrowBlockSize(tx, id, off + len, max).ok());
            REQUIRE(f.os->Write(tx, id, off, d).ok());
            if (m.size() < off + len) m.resize(off + len, '\0');
            m.replace(off, len, d);
          } else if (what == 6) {
            const uint64_t len = rng() % 3 == 0 ? 0 : rng() % 20000;
            if (len > m.size()) REQUIRE(f.os->GrowBlockSize(tx, id, len, max).ok());
            REQUIRE(f.os->Truncate(tx, id, len).ok());
            m.resize(len, '\0');
            if (len == 0) REQUIRE(f.os->SetBlockSize(tx, id, 4096).ok());
          } else if (what == 7) {
            const uint64_t off = rng() % 20000, len = rng() % 20000;
            REQUIRE(f.os->Punch(tx, id, off, len).ok());
            if (off < m.size())
              std::fill(m.begin() + off, m.begin() + std::min<uint64_t>(m.size(), off + len),
                        '\0');
          } else if (what == 8) {
            REQUIRE(f.os->GrowBlockSize(tx, id, m.size() + rng() % 50000, max).ok());
          } else {
            REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
          }
        }
        tx.Commit();
      }
      // Sometimes the closed txg syncs now (after its successor changed
      // things); sometimes the open one closes.
      if (pending && rng() % 2 == 0) {
        const zio::BlockPtr root = SyncClosed(f, closed_txg);
        pending = false;
        auto at = OpenAt(f, root);
        for (const auto& [id, m] : closed) {
          INFO("object " << id << " as txg " << closed_txg.value() << " left it");
          REQUIRE(at->Read(ObjectId(id), 0, 1 << 20).value() == m);
          CheckStoredBlocks(*at, ObjectId(id));
        }
      }
      if (!pending && rng() % 2 == 0) {
        closed_txg = Txg(f.txgs.open.load());
        closed = model;
        f.txgs.open++;
        pending = true;
      }
      for (const auto& [id, m] : model) REQUIRE(f.os->Read(ObjectId(id), 0, 1 << 20).value() == m);
      if (round % 20 == 19) {
        if (pending) SyncClosed(f, closed_txg);
        pending = false;
        f.Sync();
        f.Reopen();
        for (const auto& [id, m] : model) {
          REQUIRE(f.os->Read(ObjectId(id), 0, 1 << 20).value() == m);
          CheckStoredBlocks(*f.os, ObjectId(id));
        }
      }
    }
  }
}

TEST_CASE("Readers of an object see whole data while its block grows and txgs sync", "[dmu]") {
  Fixture f;
  ObjectId id;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = f.os->Create(tx, ObjectType::kPlain, 4096).value();
    tx.Commit();
  }
  f.Sync();
  // The object only grows by appends of a known pattern: any read returns a
  // prefix of it.
  const std::string all = Pattern(40, 600000);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad_reads{0}, reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; r++) {
    readers.emplace_back([&] {
      while (!done.load()) {
        auto got = f.os->Read(id, 0, 1 << 20);
        if (!got.ok() || got->size() > all.size() || *got != all.substr(0, got->size()))
          bad_reads++;
        reads++;
      }
    });
  }
  // Each round appends in the open txg while the previous one syncs on
  // another thread; the appends grow 1 KiB, 2 KiB, ... so the block grows
  // through every size before the object passes one block.
  uint64_t length = 0;
  std::atomic<int> sync_failures{0};
  for (int round = 0; length < all.size(); round++) {
    const Txg t(f.txgs.open.load());
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      const uint64_t len = std::min<uint64_t>(all.size() - length, 1024u << std::min(round, 7));
      REQUIRE(f.os->GrowBlockSize(tx, id, length + len, kRecord).ok());
      REQUIRE(f.os->Write(tx, id, length, std::string_view(all).substr(length, len)).ok());
      length += len;
      tx.Commit();
    }
    f.txgs.open++;
    std::thread syncer([&] {
      for (auto& task : f.os->SyncTasks(t, 2))
        if (!task.fn().ok()) sync_failures++;
      if (!f.os->FinishSync(t, 0).ok()) sync_failures++;
    });
    {
      // The next txg's change goes on beside the sync: a rewrite of the
      // same bytes, which grows nothing but dirties block 0 again.
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      REQUIRE(f.os->Write(tx, id, 0, std::string_view(all).substr(0, std::min<uint64_t>(length, 100)))
                  .ok());
      tx.Commit();
    }
    syncer.join();
    REQUIRE(sync_failures.load() == 0);
    f.space.Sync(t, [](const space::Metaslab&) {});
    f.space.SyncDone(t);
    f.os->SyncDone(t);
  }
  // Let the readers see the last state for a while too.
  while (reads.load() < 200) std::this_thread::yield();
  done = true;
  for (auto& r : readers) r.join();
  REQUIRE(bad_reads.load() == 0);
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == all);
  f.Sync();
  f.Reopen();
  REQUIRE(BlockSizeOf(*f.os, id) == kRecord);
  REQUIRE(f.os->Read(id, 0, 1 << 20).value() == all);
  CheckStoredBlocks(*f.os, id);
}

}  // namespace
}  // namespace poolfs::core::dmu
