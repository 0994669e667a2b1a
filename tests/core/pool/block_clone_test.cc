// Block cloning through the pool (zio/block_ref_table.h; ObjectSet::
// ShareBlocks and PutClones): a clone reads as its source, costs no data
// blocks, counts in its dataset's figures, and keeps the blocks it shares
// until their last reference goes, through overwrites, frees, snapshots,
// dataset clones and re-imports. After every step `poolfs check` finds the
// pool healthy: it counts each clone reference it walks against the
// block reference table (the damage cases are in check_surgery_test.cc).
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "check_test_util.h"
#include "test_pool.h"

// A named namespace: the test programs build as unity builds, where the
// anonymous namespaces of several files are one.
namespace poolfs::core::pool::block_clone_test {

using check_test::CloneBlocks;
using check_test::CloneObject;
using check_test::Pattern;

constexpr uint64_t kRecord = 128 * 1024;

std::string ReadObject(TestPool& t, const std::string& dataset, uint64_t id, uint64_t len) {
  dmu::ObjectSet* os = t.pool->dataset(dataset);
  INFO(dataset << " object " << id);
  REQUIRE(os != nullptr);
  auto r = os->Read(ObjectId(id), 0, len);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

void FreeObject(TestPool& t, const std::string& dataset, uint64_t id) {
  dmu::ObjectSet* os = t.pool->dataset(dataset);
  REQUIRE(os != nullptr);
  dmu::Tx tx(t.pool->assigner());
  REQUIRE(tx.Assign().ok());
  REQUIRE(os->Free(tx, ObjectId(id)).ok());
  tx.Commit();
  REQUIRE(t.pool->WaitSynced().ok());
}

// The check finds nothing wrong (t.Check exports, checks and re-imports).
CheckReport RequireClean(TestPool& t) {
  CheckReport r = t.Check();
  INFO(check_test::Listing(r));
  CHECK(r.ok());
  CHECK(r.bytes_referenced == r.bytes_allocated_by_maps);
  return r;
}

// The pool's allocated bytes once the frees of the last txgs are done.
uint64_t Allocated(TestPool& t) {
  for (int i = 0; i < 3; i++) REQUIRE(t.pool->SyncOnce().ok());
  return t.pool->Stats().space.allocated;
}

TEST_CASE(
    "Cloned blocks read as their source, cost no data, and are freed by their last "
    "reference",
    "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  REQUIRE(t.admin->Create("tank/e", false, {}).ok());
  const uint64_t empty = Allocated(t);
  const std::string data = Pattern(1, 6 * kRecord);  // random: stored as 6 whole records
  const uint64_t src = t.Write("tank/d", data);
  const uint64_t written = Allocated(t);
  REQUIRE(written - empty >= data.size());

  // Two clones in the source's dataset, one in another, in one txg.
  const uint64_t c1 = CloneObject(*t.pool, "tank/d", src, "tank/d");
  const uint64_t c2 = CloneObject(*t.pool, "tank/d", src, "tank/d");
  const uint64_t c3 = CloneObject(*t.pool, "tank/d", src, "tank/e");
  REQUIRE(t.pool->WaitSynced().ok());
  // No data written: dnodes, indirect blocks and the table's object.
  CHECK(Allocated(t) - written < kRecord);
  CHECK(ReadObject(t, "tank/d", c1, data.size()) == data);
  CHECK(ReadObject(t, "tank/d", c2, data.size()) == data);
  CHECK(ReadObject(t, "tank/e", c3, data.size()) == data);
  // A dataset's figures count its clones' blocks as its own.
  CHECK(t.Info("tank/e").referenced >= data.size());
  CHECK(t.Info("tank/d").referenced >= 3 * data.size());
  RequireClean(t);

  // A clone of a clone, in a later txg; then a clone's block overwritten
  // (its reference goes) and one re-cloned over another clone's block.
  const uint64_t c4 = CloneObject(*t.pool, "tank/e", c3, "tank/e");
  REQUIRE(t.pool->WaitSynced().ok());
  const std::string own = Pattern(2, kRecord);
  t.Overwrite("tank/d", c1, kRecord, own);
  std::string v1 = data;
  v1.replace(kRecord, kRecord, own);
  CloneBlocks(*t.pool, "tank/d", c1, 1, 2, "tank/d", c2, 4, data.size());
  REQUIRE(t.pool->WaitSynced().ok());
  std::string v2 = data;
  v2.replace(4 * kRecord, kRecord, own);
  CHECK(ReadObject(t, "tank/d", c1, data.size()) == v1);
  CHECK(ReadObject(t, "tank/d", c2, data.size()) == v2);
  CHECK(ReadObject(t, "tank/e", c4, data.size()) == data);
  RequireClean(t);
  t.Reimport();
  CHECK(ReadObject(t, "tank/d", c2, data.size()) == v2);

  // The source is overwritten under a snapshot, then freed: its blocks stay
  // for the clones and the snapshot.
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  t.Overwrite("tank/d", src, 0, Pattern(3, 2 * kRecord));
  FreeObject(t, "tank/d", src);
  RequireClean(t);
  CHECK(ReadObject(t, "tank/e", c3, data.size()) == data);
  {
    auto snap = t.pool->OpenSnapshot("tank/d@s");
    REQUIRE(snap.ok());
    auto r = (*snap)->Read(ObjectId(src), 0, data.size());
    REQUIRE(r.ok());
    CHECK(*r == data);
  }
  REQUIRE(t.admin->Destroy("tank/d@s", false).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  RequireClean(t);
  CHECK(ReadObject(t, "tank/d", c2, data.size()) == v2);
  CHECK(ReadObject(t, "tank/e", c4, data.size()) == data);

  // Every reference freed: the space is what it was before the data.
  FreeObject(t, "tank/e", c3);
  FreeObject(t, "tank/d", c1);
  RequireClean(t);
  CHECK(ReadObject(t, "tank/e", c4, data.size()) == data);
  FreeObject(t, "tank/d", c2);
  FreeObject(t, "tank/e", c4);
  const uint64_t after = Allocated(t);
  INFO("empty " << empty << ", after " << after);
  CHECK(after < empty + kRecord);
  RequireClean(t);
}

TEST_CASE("A clone keeps the block its source frees in the clone's own txg", "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t empty = Allocated(t);
  const std::string data = Pattern(4, 4 * kRecord);
  const uint64_t src = t.Write("tank/d", data);
  dmu::ObjectSet* os = t.pool->dataset("tank/d");  // until the next check re-imports
  REQUIRE(os != nullptr);
  uint64_t dst = 0;
  {
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    dst = id->value();
    tx.Commit();
  }
  // In one txg (nothing syncs until asked): the clone, then the source
  // overwritten and freed. The sync applies the clone's references before
  // it frees the source's blocks.
  CloneBlocks(*t.pool, "tank/d", src, 0, 4, "tank/d", dst, 0, data.size());
  {
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(os->Write(tx, ObjectId(src), 0, Pattern(5, kRecord)).ok());
    tx.Commit();
  }
  FreeObject(t, "tank/d", src);
  CHECK(ReadObject(t, "tank/d", dst, data.size()) == data);
  RequireClean(t);
  CHECK(ReadObject(t, "tank/d", dst, data.size()) == data);

  // A clone replaced in its own txg (written over, then cut off) leaves
  // no reference behind.
  const uint64_t again = CloneObject(*t.pool, "tank/d", dst, "tank/d");
  os = t.pool->dataset("tank/d");
  {
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(os->Write(tx, ObjectId(again), 0, Pattern(6, kRecord)).ok());
    REQUIRE(os->Truncate(tx, ObjectId(again), kRecord).ok());
    tx.Commit();
  }
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/d", again, 2 * kRecord) == Pattern(6, kRecord));
  RequireClean(t);
  FreeObject(t, "tank/d", again);
  FreeObject(t, "tank/d", dst);
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
}

TEST_CASE("A file cloned onto itself keeps one reference to each block", "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t empty = Allocated(t);
  const std::string data = Pattern(7, 3 * kRecord);
  const uint64_t id = t.Write("tank/d", data);
  CloneBlocks(*t.pool, "tank/d", id, 0, 3, "tank/d", id, 0, data.size());
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/d", id, data.size()) == data);
  RequireClean(t);
  // Its blocks shifted by one within itself: block 0 now twice.
  CloneBlocks(*t.pool, "tank/d", id, 0, 1, "tank/d", id, 1, data.size());
  REQUIRE(t.pool->WaitSynced().ok());
  std::string v = data;
  v.replace(kRecord, kRecord, data.substr(0, kRecord));
  CHECK(ReadObject(t, "tank/d", id, data.size()) == v);
  RequireClean(t);
  FreeObject(t, "tank/d", id);
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
}

TEST_CASE("A dataset clone shares the block clones of its origin, which count once",
          "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t empty = Allocated(t);
  const std::string data = Pattern(8, 4 * kRecord);
  const uint64_t src = t.Write("tank/d", data);
  const uint64_t c1 = CloneObject(*t.pool, "tank/d", src, "tank/d");
  REQUIRE(t.pool->WaitSynced().ok());
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  REQUIRE(t.admin->Clone("tank/d@s", "tank/k", {}).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/k", c1, data.size()) == data);
  RequireClean(t);
  // The dataset clone clones a block clone of its own (a new reference),
  // then the origin drops both of its copies.
  const uint64_t k1 = CloneObject(*t.pool, "tank/k", c1, "tank/k");
  REQUIRE(t.pool->WaitSynced().ok());
  FreeObject(t, "tank/d", src);
  FreeObject(t, "tank/d", c1);
  RequireClean(t);
  CHECK(ReadObject(t, "tank/k", k1, data.size()) == data);
  // Gone in order: the dataset clone, its origin, the rest.
  REQUIRE(t.admin->Destroy("tank/k", false).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  RequireClean(t);
  REQUIRE(t.admin->Destroy("tank/d@s", false).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
}

TEST_CASE(
    "A block freed in a txg before its clone's is held in the deferred frees until the "
    "clone syncs",
    "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t empty = Allocated(t);
  const std::string data = Pattern(9, 2 * kRecord);
  const uint64_t src = t.Write("tank/d", data);
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  t.Overwrite("tank/d", src, 0, Pattern(10, 2 * kRecord));  // s alone holds data's blocks
  uint64_t dst = 0;
  {
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    dst = id->value();
    tx.Commit();
    REQUIRE(t.pool->WaitSynced().ok());
  }
  auto snap = t.pool->OpenSnapshot("tank/d@s");
  REQUIRE(snap.ok());

  // The snapshot is destroyed in txg u; a Tx of u stays open while u
  // quiesces, so that the clone of its blocks lands in u + 1, before u's
  // sync frees them.
  auto destroyed = t.pool->DestroySnapshot("tank/d@s", false);
  REQUIRE(destroyed.ok());
  const Txg u = *destroyed;
  // Commits the holder and waits for u on every way out (a failed
  // REQUIRE too): u's sync waits for the holder.
  struct Quiesce {
    std::unique_ptr<dmu::Tx> holder;
    std::thread syncer;
    void Finish() {
      if (holder) holder->Commit();
      holder.reset();
      if (syncer.joinable()) syncer.join();
    }
    ~Quiesce() { Finish(); }
  } q;
  q.holder = std::make_unique<dmu::Tx>(t.pool->assigner());
  REQUIRE(q.holder->Assign().ok());
  REQUIRE(q.holder->txg() == u);
  Status synced;  // Catch2's assertions are for the test's own thread
  q.syncer = std::thread([&] { synced = t.pool->WaitSynced(u); });
  while (t.pool->txgs().open_txg() == u) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    auto from = (*snap)->Hold(ObjectId(src));
    auto to = os->Hold(ObjectId(dst));
    REQUIRE(from.ok());
    REQUIRE(to.ok());
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(tx.txg() == Txg(u.value() + 1));
    std::vector<std::optional<zio::BlockPtr>> shared;
    REQUIRE(os->ShareBlocks(tx, **from, 0, 2, &shared).ok());
    REQUIRE(shared.size() == 2);
    std::vector<zio::BlockPtr> bps = {*shared[0], *shared[1]};
    REQUIRE(os->PutClones(tx, **to, 0, bps, data.size()).ok());
    tx.Commit();
  }
  q.Finish();
  INFO(synced.ToString());
  REQUIRE(synced.ok());
  snap->reset();

  // Txg u is on disk: its frees of the clone's blocks wait in the pool
  // directory's deferred frees. A pool that stops here (the clone's txg
  // never synced) frees them at its next sync.
  check_test::TempDir crash;
  std::vector<std::string> copy = {crash / "v0"};
  std::filesystem::copy_file(t.paths[0], copy[0]);
  // Then u + 1 syncs: the clone takes the blocks over.
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/d", dst, data.size()) == data);
  RequireClean(t);
  CHECK(ReadObject(t, "tank/d", dst, data.size()) == data);
  FreeObject(t, "tank/d", dst);
  FreeObject(t, "tank/d", src);
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
  t.admin.reset();
  REQUIRE(t.pool->Export().ok());
  t.pool.reset();

  {
    CheckReport r = check_test::Check(copy);
    INFO(check_test::Listing(r));
    CHECK(r.ok());
    CHECK(r.txg == u.value());
    CHECK(r.deferred_frees >= 2);
  }
  {
    auto p = Pool::Import(copy, check_test::QuietOptions());
    REQUIRE(p.ok());
    for (int i = 0; i < 3; i++) REQUIRE((*p)->SyncOnce().ok());
    dmu::ObjectSet* os = (*p)->dataset("tank/d");
    REQUIRE(os != nullptr);
    auto info = os->Stat(ObjectId(dst));
    REQUIRE(info.ok());
    CHECK(info->length == 0);  // the clone never happened
    REQUIRE((*p)->Export().ok());
  }
  CheckReport r = check_test::Check(copy);
  INFO(check_test::Listing(r));
  CHECK(r.ok());
  CHECK(r.deferred_frees == 0);
  CHECK(r.bytes_referenced == r.bytes_allocated_by_maps);
}

}  // namespace poolfs::core::pool::block_clone_test
