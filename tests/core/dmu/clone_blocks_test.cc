// Block cloning in the DMU (Dnode::ShareBlocks, PutClones): a destination
// reads the shared blocks at once and after its txg syncs, its tree then
// names the source's extents born in the clone's txg, the reference table
// counts each extra reference once, and a change of the clone before its
// sync gives the reference back.
#include "objset_fixture.h"
#include "zio/block_ref_table.h"

namespace poolfs::core::dmu::testing {
namespace {

constexpr uint32_t kCloneBlock = 128 * 1024;

struct CloneFixture : Fixture {
  CloneFixture() { zio.set_ref_table(&table); }
  // As a pool's sync: the txg's clones count before anything is freed.
  void SyncWithTable() {
    table.ApplyPending(Txg(txgs.open.load()));
    Sync();
  }
  ObjectId NewObject(const std::string& data) {
    Tx tx(&txgs);
    REQUIRE(tx.Assign().ok());
    ObjectId id = os->Create(tx, ObjectType::kPlain, kCloneBlock).value();
    if (!data.empty()) REQUIRE(os->Write(tx, id, 0, data).ok());
    tx.Commit();
    return id;
  }
  ObjectSet::DnodeRef Held(ObjectId id) {
    auto d = os->Hold(id);
    REQUIRE(d.ok());
    return *d;
  }
  // Shares blocks [first, end) of `src` into `dst` from block `at` on,
  // in one Tx; returns what ShareBlocks gave.
  std::vector<std::optional<zio::BlockPtr>> Clone(ObjectId src, ObjectId dst, uint64_t first,
                                                  uint64_t end, uint64_t at) {
    Tx tx(&txgs);
    REQUIRE(tx.Assign().ok());
    std::vector<std::optional<zio::BlockPtr>> shared;
    REQUIRE(os->ShareBlocks(tx, *Held(src), first, end, &shared).ok());
    std::vector<zio::BlockPtr> bps;
    for (const auto& bp : shared) {
      REQUIRE(bp.has_value());
      bps.push_back(*bp);
    }
    REQUIRE(os->PutClones(tx, *Held(dst), at, bps, (at + bps.size()) * kCloneBlock).ok());
    tx.Commit();
    return shared;
  }
  std::string ReadAll(ObjectId id, uint64_t len) {
    auto r = os->Read(id, 0, len);
    REQUIRE(r.ok());
    return *r;
  }

  zio::BlockRefTable table;
};

}  // namespace

TEST_CASE("shared blocks read at once, and the synced tree names the source's extents",
          "[dmu][clone]") {
  CloneFixture f;
  const std::string data = Pattern(3, 4 * kCloneBlock);
  const ObjectId src = f.NewObject(data);
  f.SyncWithTable();
  const ObjectId dst = f.NewObject(Pattern(4, kCloneBlock));
  const Txg t(f.txgs.open.load());
  auto shared = f.Clone(src, dst, 0, 4, 0);
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == data);
  CHECK(f.table.stats().pending == 4);
  CHECK(f.table.stats().entries == 0);
  // Seek sees the clones as data.
  CHECK(*f.os->Seek(dst, 0, 4 * kCloneBlock, true) == 4 * kCloneBlock);
  f.SyncWithTable();
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == data);
  CHECK(f.table.stats().entries == 4);
  CHECK(f.table.stats().pending == 0);
  for (uint64_t b = 0; b < 4; b++) {
    auto s = f.Held(src)->BlockPointer(b);
    auto d = f.Held(dst)->BlockPointer(b);
    REQUIRE((s.ok() && d.ok()));
    CHECK(d->dva == s->dva);
    CHECK(d->birth == t);  // the destination's change, for snapshots and diffs
    CHECK(s->birth < t);
  }
  f.Reopen();
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == data);
  CHECK(f.ReadAll(src, 4 * kCloneBlock) == data);

  // Freeing the source leaves the space to the clone: the counts go, the
  // extents stay allocated until the clone goes too.
  const zio::BlockPtr bp0 = *f.Held(dst)->BlockPointer(0);
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Free(tx, src).ok());
    tx.Commit();
  }
  f.SyncWithTable();
  CHECK(f.table.stats().entries == 0);
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == data);
  const uint64_t allocated = f.space.Stats().allocated;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Free(tx, dst).ok());
    tx.Commit();
  }
  f.SyncWithTable();
  f.SyncWithTable();
  f.SyncWithTable();
  CHECK(f.space.Stats().allocated + 4 * kCloneBlock <= allocated);
  (void)bp0;
}

TEST_CASE("blocks changed since the last sync are not shared", "[dmu][clone]") {
  CloneFixture f;
  const ObjectId src = f.NewObject(Pattern(5, 4 * kCloneBlock));
  f.SyncWithTable();
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Write(tx, src, kCloneBlock + 7, "x").ok());  // block 1: a dirty copy
    REQUIRE(f.os->Punch(tx, src, 3 * kCloneBlock, kCloneBlock).ok());  // block 3: freed
    tx.Commit();
  }
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  std::vector<std::optional<zio::BlockPtr>> shared;
  REQUIRE(f.os->ShareBlocks(tx, *f.Held(src), 0, 5, &shared).ok());
  REQUIRE(shared.size() == 5);
  CHECK(shared[0].has_value());
  CHECK(!shared[1].has_value());
  CHECK(shared[2].has_value());
  CHECK(!shared[3].has_value());
  CHECK((shared[4].has_value() && shared[4]->IsHole()));  // past the end: a hole to share
  CHECK(f.table.stats().pending == 2);
  f.Held(src)->CancelShared(tx.txg(), shared);
  CHECK(f.table.stats().pending == 0);
  tx.Commit();
}

TEST_CASE("a change of a clone before its sync gives its reference back", "[dmu][clone]") {
  CloneFixture f;
  const std::string data = Pattern(6, 4 * kCloneBlock);
  const ObjectId src = f.NewObject(data);
  f.SyncWithTable();
  const ObjectId dst = f.NewObject("");
  f.Clone(src, dst, 0, 4, 0);
  REQUIRE(f.table.stats().pending == 4);
  std::string expect = data;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Write(tx, dst, 5, "abc").ok());                       // block 0: rewritten
    REQUIRE(f.os->Punch(tx, dst, 2 * kCloneBlock, kCloneBlock).ok());  // block 2: freed
    tx.Commit();
  }
  expect.replace(5, 3, "abc");
  std::fill(expect.begin() + 2 * kCloneBlock, expect.begin() + 3 * kCloneBlock, '\0');
  CHECK(f.table.stats().pending == 2);
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == expect);
  f.SyncWithTable();
  CHECK(f.table.stats().entries == 2);
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == expect);
  f.Reopen();
  CHECK(f.ReadAll(dst, 4 * kCloneBlock) == expect);
  CHECK(f.ReadAll(src, 4 * kCloneBlock) == data);
}

}  // namespace poolfs::core::dmu::testing
