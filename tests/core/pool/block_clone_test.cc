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
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
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
  const CheckReport report = RequireClean(t);
  CHECK(report.cloned_blocks == 6);
  CHECK(report.clone_saved_bytes == 3 * data.size());
  CHECK(report.Summary().find("block clones: 6 blocks shared by copies, ") != std::string::npos);
  CHECK(report.Summary().find("(2359296 bytes) saved") != std::string::npos);

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

TEST_CASE("A clone of a block of two copies shares both; a gang block is not shared",
          "[clone][brt]") {
  {
    TestPool t;
    REQUIRE(t.admin->Create("tank/two", false, {{"copies", "2"}}).ok());
    REQUIRE(t.admin->Create("tank/one", false, {}).ok());
    const uint64_t empty = Allocated(t);
    const std::string data = Pattern(17, 3 * kRecord);
    const uint64_t src = t.Write("tank/two", data);
    auto bp = t.pool->dataset("tank/two")->BlockPointer(ObjectId(src), 0);
    REQUIRE(bp.ok());
    REQUIRE(bp->copies() == 2);
    // Into a dataset of one copy: the pointer, both copies, is the clone's.
    const uint64_t c = CloneObject(*t.pool, "tank/two", src, "tank/one");
    REQUIRE(t.pool->WaitSynced().ok());
    auto cbp = t.pool->dataset("tank/one")->BlockPointer(ObjectId(c), 0);
    REQUIRE(cbp.ok());
    CHECK(cbp->copies() == 2);
    CHECK(cbp->copy(1) == bp->copy(1));
    RequireClean(t);
    FreeObject(t, "tank/two", src);
    CHECK(ReadObject(t, "tank/one", c, data.size()) == data);
    RequireClean(t);
    FreeObject(t, "tank/one", c);
    CHECK(Allocated(t) < empty + kRecord);
    RequireClean(t);
  }
  // Gang blocks are stored in pieces that a free must find through the
  // header: ShareBlocks gives nullopt (the caller copies them instead).
  check_test::TempDir dir;
  const std::vector<std::string> paths = {dir / "v0"};
  REQUIRE(Pool::Create(paths, check_test::kFileSize, CreateOptions{"tank"}).ok());
  PoolOptions options = check_test::QuietOptions();
  options.force_gang_above = 8192;
  auto p = Pool::Import(paths, options);
  REQUIRE(p.ok());
  dmu::ObjectSet* os = (*p)->root_dataset();
  REQUIRE(os != nullptr);
  uint64_t src = 0;
  {
    dmu::Tx tx((*p)->assigner());
    REQUIRE(tx.Assign().ok());
    src = os->Create(tx, dmu::ObjectType::kPlain).value().value();
    REQUIRE(os->Write(tx, ObjectId(src), 0, Pattern(18, 2 * kRecord)).ok());
    tx.Commit();
    REQUIRE((*p)->WaitSynced().ok());
  }
  REQUIRE(os->BlockPointer(ObjectId(src), 0).value().IsGang());
  auto held = os->Hold(ObjectId(src));
  REQUIRE(held.ok());
  {
    dmu::Tx tx((*p)->assigner());
    REQUIRE(tx.Assign().ok());
    std::vector<std::optional<zio::BlockPtr>> shared;
    REQUIRE(os->ShareBlocks(tx, **held, 0, 2, &shared).ok());
    REQUIRE(shared.size() == 2);
    CHECK_FALSE(shared[0].has_value());
    CHECK_FALSE(shared[1].has_value());
    tx.Commit();
  }
  held->reset();
  REQUIRE((*p)->Export().ok());
  p->reset();
  CheckReport r = check_test::Check(paths);
  INFO(check_test::Listing(r));
  CHECK(r.ok());
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

TEST_CASE("Clones survive a rollback and a snapshot destroy in their own txg, and a promote",
          "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  REQUIRE(t.admin->Create("tank/e", false, {}).ok());
  const uint64_t empty = Allocated(t);
  const std::string va = Pattern(11, 4 * kRecord), vb = Pattern(12, 4 * kRecord),
                    vc = Pattern(13, 4 * kRecord);
  const uint64_t a = t.Write("tank/e", va);
  const uint64_t b = t.Write("tank/d", vb);
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  const uint64_t c = t.Write("tank/d", vc);  // born after s

  // In one txg: e's a cloned over d's b, d's c cloned into e, and d rolled
  // back to s (which frees c's blocks and drops b's clone).
  const Txg open = t.pool->txgs().open_txg();
  CloneBlocks(*t.pool, "tank/e", a, 0, 4, "tank/d", b, 0, va.size());
  const uint64_t e1 = CloneObject(*t.pool, "tank/d", c, "tank/e");
  auto rolled = t.pool->Rollback("tank/d@s", false);
  INFO(rolled.status().ToString());
  REQUIRE(rolled.ok());
  REQUIRE(*rolled == open);
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/e", e1, vc.size()) == vc);
  CHECK(ReadObject(t, "tank/d", b, vb.size()) == vb);
  RequireClean(t);

  // A clone taken from s in the txg that destroys s.
  uint64_t d1 = 0;
  {
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    d1 = id->value();
    REQUIRE(os->Write(tx, ObjectId(b), 0, Pattern(14, 4 * kRecord)).ok());  // s alone holds vb
    tx.Commit();
    REQUIRE(t.pool->WaitSynced().ok());
  }
  {
    auto snap = t.pool->OpenSnapshot("tank/d@s");
    REQUIRE(snap.ok());
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    auto from = (*snap)->Hold(ObjectId(b));
    auto to = os->Hold(ObjectId(d1));
    REQUIRE(from.ok());
    REQUIRE(to.ok());
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    std::vector<std::optional<zio::BlockPtr>> shared;
    REQUIRE(os->ShareBlocks(tx, **from, 0, 4, &shared).ok());
    std::vector<zio::BlockPtr> bps;
    for (const auto& bp : shared) bps.push_back(bp.value());
    REQUIRE(os->PutClones(tx, **to, 0, bps, vb.size()).ok());
    tx.Commit();
    auto gone = t.pool->DestroySnapshot("tank/d@s", false);
    REQUIRE(gone.ok());
    REQUIRE(*gone == tx.txg());
  }
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/d", d1, vb.size()) == vb);
  RequireClean(t);

  // A dataset clone with block clones of its own, promoted; then the old
  // dataset destroyed.
  REQUIRE(t.admin->Snapshot({"tank/d@p"}, false).ok());
  REQUIRE(t.admin->Clone("tank/d@p", "tank/k", {}).ok());
  const uint64_t k1 = CloneObject(*t.pool, "tank/k", d1, "tank/k");
  REQUIRE(t.pool->WaitSynced().ok());
  t.Overwrite("tank/d", d1, 0, Pattern(15, kRecord));
  REQUIRE(t.admin->Promote("tank/k").ok());
  REQUIRE(t.pool->WaitSynced().ok());
  RequireClean(t);
  REQUIRE(t.admin->Destroy("tank/d", false).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(ReadObject(t, "tank/k", k1, vb.size()) == vb);
  CHECK(ReadObject(t, "tank/k", d1, vb.size()) == vb);
  RequireClean(t);
  REQUIRE(t.admin->Destroy("tank/k@p", false).ok());
  REQUIRE(t.admin->Destroy("tank/k", false).ok());
  REQUIRE(t.admin->Destroy("tank/e", false).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
}

TEST_CASE("A table of many blocks grows, shrinks and empties with its clones", "[clone][brt]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t empty = Allocated(t);
  // 1500 blocks of 4 KiB: 1500 entries of 32 bytes, three blocks of the
  // table's object.
  constexpr uint64_t kSmall = 4096, kCount = 1500;
  const std::string data = Pattern(16, kCount * kSmall);
  uint64_t src = 0;
  {
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain, kSmall);
    REQUIRE(id.ok());
    src = id->value();
    REQUIRE(os->Write(tx, *id, 0, data).ok());
    tx.Commit();
    REQUIRE(t.pool->WaitSynced().ok());
  }
  const uint64_t dst = CloneObject(*t.pool, "tank/d", src, "tank/d");
  REQUIRE(t.pool->WaitSynced().ok());
  RequireClean(t);
  {
    // The clone's first 1000 blocks punched: 500 entries stay.
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(os->Punch(tx, ObjectId(dst), 0, 1000 * kSmall).ok());
    tx.Commit();
    REQUIRE(t.pool->WaitSynced().ok());
  }
  RequireClean(t);
  t.Reimport();
  FreeObject(t, "tank/d", src);
  CHECK(ReadObject(t, "tank/d", dst, data.size()).substr(1000 * kSmall) ==
        data.substr(1000 * kSmall));
  RequireClean(t);
  FreeObject(t, "tank/d", dst);
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
}

TEST_CASE("Random clones, writes, punches, frees and snapshots keep every count true",
          "[clone][brt]") {
  TestPool t;
  const std::vector<std::string> sets = {"tank/d", "tank/e"};
  for (const std::string& name : sets) REQUIRE(t.admin->Create(name, false, {}).ok());
  const uint64_t empty = Allocated(t);
  constexpr uint64_t kBlocks = 6;  // per object, each a whole record
  // What each object holds: the model the pool is read against.
  std::map<std::pair<std::string, uint64_t>, std::string> model;
  std::vector<std::string> snaps;  // oldest first
  std::mt19937_64 rng(2024);
  auto pick = [&]() {
    auto it = model.begin();
    std::advance(it, long(rng() % model.size()));
    return it;
  };
  auto verify = [&] {
    for (const auto& [key, content] : model)
      REQUIRE(ReadObject(t, key.first, key.second, kBlocks * kRecord) == content);
  };
  for (int op = 0; op < 160; op++) {
    INFO("op " << op);
    const int what = int(rng() % 10);
    const std::string& set = sets[rng() % 2];
    dmu::ObjectSet* os = t.pool->dataset(set);
    REQUIRE(os != nullptr);
    if (model.size() < 4 || what == 0) {  // a new object, written whole
      dmu::Tx tx(t.pool->assigner());
      REQUIRE(tx.Assign().ok());
      auto id = os->Create(tx, dmu::ObjectType::kPlain, kRecord);
      REQUIRE(id.ok());
      const std::string data = Pattern(rng(), kBlocks * kRecord);
      REQUIRE(os->Write(tx, *id, 0, data).ok());
      tx.Commit();
      model[{set, id->value()}] = data;
    } else if (what <= 4) {  // a clone of a run of blocks, maybe onto itself
      auto src = pick(), dst = pick();
      const uint64_t n = 1 + rng() % 3;
      const uint64_t from = rng() % (kBlocks - n + 1), to = rng() % (kBlocks - n + 1);
      dmu::ObjectSet* sos = t.pool->dataset(src->first.first);
      dmu::ObjectSet* dos = t.pool->dataset(dst->first.first);
      auto held_src = sos->Hold(ObjectId(src->first.second));
      auto held_dst = dos->Hold(ObjectId(dst->first.second));
      REQUIRE(held_src.ok());
      REQUIRE(held_dst.ok());
      dmu::Tx tx(t.pool->assigner());
      REQUIRE(tx.Assign().ok());
      std::vector<std::optional<zio::BlockPtr>> shared;
      REQUIRE(dos->ShareBlocks(tx, **held_src, from, from + n, &shared).ok());
      bool whole = true;
      for (const auto& bp : shared) whole &= bp.has_value();
      if (!whole) {
        // A block an unsynced txg changed: given back (a copy would do).
        (*held_src)->CancelShared(tx.txg(), shared);
        tx.Commit();
        continue;
      }
      std::vector<zio::BlockPtr> bps;
      for (const auto& bp : shared) bps.push_back(*bp);
      REQUIRE(dos->PutClones(tx, **held_dst, to, bps, kBlocks * kRecord).ok());
      tx.Commit();
      dst->second.replace(to * kRecord, n * kRecord,
                          src->second.substr(from * kRecord, n * kRecord));
    } else if (what <= 6) {  // a block written over
      auto it = pick();
      const uint64_t b = rng() % kBlocks;
      const std::string data = Pattern(rng(), kRecord);
      t.Overwrite(it->first.first, it->first.second, b * kRecord, data);
      it->second.replace(b * kRecord, kRecord, data);
    } else if (what == 7) {  // a hole punched
      auto it = pick();
      const uint64_t b = rng() % kBlocks;
      dmu::ObjectSet* ios = t.pool->dataset(it->first.first);
      dmu::Tx tx(t.pool->assigner());
      REQUIRE(tx.Assign().ok());
      REQUIRE(ios->Punch(tx, ObjectId(it->first.second), b * kRecord, kRecord).ok());
      tx.Commit();
      it->second.replace(b * kRecord, kRecord, std::string(kRecord, '\0'));
    } else if (what == 8) {  // an object freed
      auto it = pick();
      FreeObject(t, it->first.first, it->first.second);
      model.erase(it);
    } else if (snaps.size() < 3) {  // a snapshot of one dataset
      const std::string name = set + "@s" + std::to_string(op);
      REQUIRE(t.admin->Snapshot({name}, false).ok());
      snaps.push_back(name);
    } else {  // the oldest snapshot destroyed
      REQUIRE(t.admin->Destroy(snaps.front(), false).ok());
      snaps.erase(snaps.begin());
    }
    if (rng() % 3 == 0) REQUIRE(t.pool->WaitSynced().ok());
    if (op % 40 == 39) {
      REQUIRE(t.pool->WaitSynced().ok());
      verify();
      RequireClean(t);
      verify();
    }
  }
  // Everything gone: the space comes back.
  for (const std::string& name : snaps) REQUIRE(t.admin->Destroy(name, false).ok());
  for (const auto& [key, content] : model) FreeObject(t, key.first, key.second);
  CHECK(Allocated(t) < empty + kRecord);
  RequireClean(t);
}

}  // namespace poolfs::core::pool::block_clone_test
