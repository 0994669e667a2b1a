// The pool check (poolfs::CheckPool / CheckDevices): a healthy pool checks
// clean; each kind of damage is found and named; nothing is ever written.
// (check_surgery_test.cc builds the damage that checksums cannot see.)
#include "pool/check.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "check_test_util.h"
#include "pool/pool.h"
#include "poolfs/pool_admin.h"
#include "vdev/label.h"
#include "vdev/memory_device.h"

namespace poolfs::core::pool {
namespace {

using namespace check_test;

TEST_CASE("Check finds a pool clean after txgs of churn in several datasets", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  ChurnPool(paths);
  std::string h0 = FileHash(paths[0]), h1 = FileHash(paths[1]);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE(r.ok());
  REQUIRE(r.warnings.empty());
  REQUIRE(r.pool == "tank");
  REQUIRE(r.vdevs == 2);
  REQUIRE(r.datasets == 3);
  REQUIRE(r.txg > 9);
  REQUIRE(r.objects > 30);
  REQUIRE(r.blocks > r.objects);
  REQUIRE(r.bytes_referenced > 2000000);
  REQUIRE(r.bytes_referenced == r.bytes_allocated_by_maps);
  // Nothing written.
  REQUIRE(FileHash(paths[0]) == h0);
  REQUIRE(FileHash(paths[1]) == h1);
}

TEST_CASE("Check finds a crash image clean: the maps leave out frees still deferred", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  std::unique_ptr<Pool> pool;
  ChurnPool(paths, &pool);
  // One more txg that frees and overwrites, synced; then copy the files while
  // the pool is still imported, as a crash would leave them.
  {
    dmu::Tx tx(pool->assigner());
    REQUIRE(tx.Assign().ok());
    dmu::ObjectSet* a = pool->dataset("a");
    REQUIRE(a->Write(tx, ObjectId(1), 0, Pattern(99, 50000)).ok());
    for (uint64_t id = 5; id < 9; id++) a->Free(tx, ObjectId(id)).ok();
    tx.Commit();
  }
  REQUIRE(pool->WaitSynced().ok());
  std::vector<std::string> copies = {dir / "c0", dir / "c1"};
  for (size_t i = 0; i < 2; i++) std::filesystem::copy_file(paths[i], copies[i]);
  // The original is in use: refused, clearly.
  auto busy = CheckPool(paths);
  REQUIRE(busy.status().code() == StatusCode::kBusy);
  REQUIRE(busy.status().message().find("in use") != std::string::npos);
  REQUIRE(pool->Export().ok());
  CheckReport r = Check(copies);
  INFO(Listing(r));
  REQUIRE(r.ok());
  REQUIRE(r.bytes_referenced == r.bytes_allocated_by_maps);
}

TEST_CASE("Check names a data block whose bit flipped", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  Known k = ChurnPool(paths);
  auto blocks = Blocks(paths);
  const CheckedBlock& b = Find(blocks, [&](const CheckedBlock& c) {
    return c.dataset == "tank/a" && c.object == k.small && c.level == 0;
  });
  FlipBit(paths, b.bp);
  std::string h0 = FileHash(paths[0]), h1 = FileHash(paths[1]);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.checksum_errors == uint64_t(b.bp.copies()));  // each copy read once
  REQUIRE(r.problems.size() == 1);
  REQUIRE(HasProblem(r,
                     "dataset 'tank/a' object " + std::to_string(k.small) + " L0 block 0 (vdev " +
                         std::to_string(b.bp.dva.vdev) + " offset " + Hex(b.bp.dva.offset) + ")",
                     "checksum mismatch"));
  REQUIRE(FileHash(paths[0]) == h0);
  REQUIRE(FileHash(paths[1]) == h1);
}

TEST_CASE("Check names an indirect block whose bit flipped, and the subtree it lost", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  Known k = ChurnPool(paths);
  auto blocks = Blocks(paths);
  const CheckedBlock& b = Find(blocks, [&](const CheckedBlock& c) {
    return c.dataset == "tank/a" && c.object == k.big && c.level == 1;
  });
  FlipBit(paths, b.bp);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.checksum_errors == uint64_t(b.bp.copies()));  // each copy read once
  REQUIRE(HasProblem(r, "dataset 'tank/a' object " + std::to_string(k.big) + " L1 block 0",
                     "checksum mismatch"));
  // Its four data blocks are allocated but unreachable: said once, not one
  // leak per block.
  REQUIRE(HasProblem(r, "space maps", "damaged subtrees"));
  REQUIRE(r.bytes_allocated_by_maps - r.bytes_referenced >= 4 * 4096);
}

TEST_CASE("Check reports a bad copy of a block a snapshot shares with its dataset once",
          "[check][snapshot]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  std::unique_ptr<Pool> p;
  Known k = ChurnPool(paths, &p);
  REQUIRE(p->Snapshot({"tank/a@s"}, false).ok());
  REQUIRE(p->WaitSynced().ok());
  REQUIRE(p->Export().ok());
  p.reset();
  // The churn leaves k.big alone: its indirect block is the snapshot's and
  // the dataset's, and both walks read it.
  auto blocks = Blocks(paths);
  const CheckedBlock& b = Find(blocks, [&](const CheckedBlock& c) {
    return c.dataset == "tank/a@s" && c.object == k.big && c.level == 1;
  });
  REQUIRE(b.bp.copies() > 1);
  FlipBit(paths, b.bp, 17, 1);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.checksum_errors == 1);
  REQUIRE(r.problems.size() == 1);
  REQUIRE(HasProblem(r,
                     "dataset 'tank/a@s' object " + std::to_string(k.big) + " L1 block 0 (vdev " +
                         std::to_string(b.bp.dva.vdev) + " offset " + Hex(b.bp.dva.offset) + ")",
                     "copy 0 of " + std::to_string(b.bp.copies()) + " does not read back"));
}

TEST_CASE("Check names a dnode block whose bit flipped", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  ChurnPool(paths);
  auto blocks = Blocks(paths);
  const CheckedBlock& b = Find(blocks, [&](const CheckedBlock& c) {
    return c.dataset == "tank/a" && c.object == 0 && c.level == 0 && c.blkid == 0;
  });
  FlipBit(paths, b.bp, 300);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.checksum_errors == uint64_t(b.bp.copies()));  // each copy read once
  REQUIRE(HasProblem(r, "dataset 'tank/a' metadnode L0 block 0", "checksum mismatch"));
}

TEST_CASE("Check finds a damaged pool directory and with rewind checks the txg a rewind opens",
          "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  ChurnPool(paths);
  auto blocks = Blocks(paths);
  const CheckedBlock& b =
      Find(blocks, [&](const CheckedBlock& c) { return c.mos && c.object == 1 && c.level == 0; });
  FlipBit(paths, b.bp);
  CheckReport plain = Check(paths);
  INFO(Listing(plain));
  REQUIRE_FALSE(plain.ok());
  REQUIRE(plain.txg == plain.newest_txg);
  REQUIRE(HasProblem(plain, "uberblocks", "pool directory (MOS object 1)"));
  REQUIRE(plain.trial_sync_txg == 0);  // the pool does not import
  // Every uberblock that shares the damaged block fails; the newest older
  // one is checked, and is itself clean.
  CheckReport r = Check(paths, CheckOptions{.rewind = true});
  INFO(Listing(r));
  REQUIRE(r.ok());
  REQUIRE(r.txg < b.bp.birth.value());
  REQUIRE(r.newest_txg >= b.bp.birth.value());
  REQUIRE(r.rewind.starts_with("rewound to txg " + std::to_string(r.txg)));
  for (const auto& w : r.warnings) REQUIRE(w.where.find("uberblock of txg") == 0);
  // A rewind import, on a copy, opens the same txg; a normal one fails.
  std::vector<std::string> copies = {dir / "c0", dir / "c1"};
  for (size_t i = 0; i < 2; i++) std::filesystem::copy_file(paths[i], copies[i]);
  REQUIRE_FALSE(Pool::Import(copies, QuietOptions()).ok());
  PoolOptions rewind = QuietOptions();
  rewind.read_only = true;
  rewind.rewind = true;
  auto p = Pool::Import(copies, rewind);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  REQUIRE((*p)->imported_txg().value() == r.txg);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Check finds a damaged space map", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  ChurnPool(paths);
  auto blocks = Blocks(paths);
  const CheckedBlock& b = Find(blocks, [&](const CheckedBlock& c) {
    return c.mos && c.object_type == dmu::ObjectType::kSpaceMap && c.level == 0;
  });
  FlipBit(paths, b.bp);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(HasProblem(r, "uberblocks", "space map of vdev"));
  CheckReport rewound = Check(paths, CheckOptions{.rewind = true});
  INFO(Listing(rewound));
  REQUIRE(rewound.txg < b.bp.birth.value());
}

TEST_CASE("Check warns about a damaged ring slot but finds the pool healthy", "[check]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"solo"}).ok());
  {
    auto p = Pool::Import(paths, QuietOptions());
    REQUIRE(p.ok());
    REQUIRE((*p)->Export().ok());
  }
  // Txg 1's slot in label 0: a torn write after a power cut looks like this.
  auto layout = vdev::ComputeVdevLayout(kFileSize);
  REQUIRE(layout.ok());
  int fd = open(paths[0].c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  const char junk[] = "torn";
  REQUIRE(pwrite(fd, junk, 4, off_t(layout->SlotOffset(0, 1) + 100)) == 4);
  close(fd);
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE(r.ok());
  REQUIRE(r.warnings.size() == 1);
  REQUIRE(r.warnings[0].what.find("label 0 slot 1") != std::string::npos);
}

TEST_CASE("Check finds every export clean through random churn of deep, sparse trees", "[check]") {
  vdev::MemoryDevice a(96ull << 20, "a"), b(96ull << 20, "b");
  REQUIRE(Pool::CreateOnDevices({&a, &b}, {"a", "b"}, CreateOptions{"deep"}).ok());
  std::mt19937_64 rng(5);
  std::vector<uint64_t> ids;
  uint64_t checked = 0;
  int max_level = 0;
  for (int session = 0; session < 5; session++) {
    auto p = Pool::ImportDevices({&a, &b}, QuietOptions());
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    dmu::ObjectSet* os = (*p)->root_dataset();
    for (int round = 0; round < 6; round++) {
      {
        dmu::Tx tx((*p)->assigner());
        REQUIRE(tx.Assign().ok());
        for (int i = 0; i < 12; i++) {
          const int op = ids.size() < 4 ? 0 : int(rng() % 6);
          const uint64_t id = ids.empty() ? 0 : ids[rng() % ids.size()];
          // Small blocks make deep trees cheaply: 512-byte blocks at offsets
          // up to 2^33 need five levels.
          const uint64_t off = rng() % 3 == 0 ? rng() % (uint64_t{1} << 33) : rng() % 400000;
          switch (op) {
            case 0: {
              auto made = os->Create(tx, dmu::ObjectType::kPlain, 512u << (rng() % 9));
              REQUIRE(made.ok());
              ids.push_back(made->value());
              REQUIRE(os->Write(tx, *made, off, Pattern(rng(), 1 + rng() % 20000)).ok());
              break;
            }
            case 1:
            case 2:
              REQUIRE(os->Write(tx, ObjectId(id), off, Pattern(rng(), 1 + rng() % 9000)).ok());
              break;
            case 3: REQUIRE(os->Truncate(tx, ObjectId(id), rng() % 2 ? 0 : off / 2).ok()); break;
            case 4:
              REQUIRE(os->Punch(tx, ObjectId(id), off / 2, rng() % (uint64_t{1} << 32)).ok());
              break;
            default: {
              REQUIRE(os->Free(tx, ObjectId(id)).ok());
              ids.erase(std::find(ids.begin(), ids.end(), id));
            }
          }
        }
        tx.Commit();
      }
      REQUIRE((*p)->WaitSynced().ok());
    }
    REQUIRE((*p)->Export().ok());
    auto r = CheckDevices(
        {&a, &b}, [&](const CheckedBlock& c) { max_level = std::max<int>(max_level, c.level); });
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    INFO(Listing(*r));
    REQUIRE(r->ok());
    REQUIRE(r->bytes_referenced == r->bytes_allocated_by_maps);
    checked += r->blocks;
  }
  REQUIRE(checked > 300);
  REQUIRE(max_level >= 3);
}

}  // namespace
}  // namespace poolfs::core::pool
