// Dnode::WriteEarly (the intent log's indirect writes): a dirty block
// written before its txg syncs is the block the sync keeps, unless the txg
// changed it since; then the sync writes the new copy and frees the early
// one, so that no block is leaked or kept twice.
#include "objset_fixture.h"

namespace poolfs::core::dmu::testing {
namespace {

constexpr uint32_t kBlock = 128 * 1024;

struct Written {
  ObjectId id;
  ObjectSet::DnodeRef dnode;
  Txg txg;
};

// A new object of four blocks of `data`, written in the open txg (not
// synced).
Written WriteUnsynced(Fixture& f, const std::string& data) {
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  ObjectId id = f.os->Create(tx, ObjectType::kPlain, kBlock).value();
  REQUIRE(f.os->Write(tx, id, 0, data).ok());
  tx.Commit();
  auto d = f.os->Hold(id);
  REQUIRE(d.ok());
  return {id, *d, tx.txg()};
}

void Change(Fixture& f, ObjectId id, uint64_t off, const std::string& data) {
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  REQUIRE(f.os->Write(tx, id, off, data).ok());
  tx.Commit();
}

// Whether `bp`'s space is still allocated: a free of it succeeds only then
// (the free itself is undone by nothing: call it last).
bool StillAllocated(Fixture& f, const zio::BlockPtr& bp) {
  return f.space.Free(bp.dva, Txg(f.txgs.open.load())).ok();
}

}  // namespace

TEST_CASE("A block written early is the block its txg's sync keeps", "[dmu]") {
  Fixture f;
  const std::string data = Pattern(1, 4 * kBlock);
  Written w = WriteUnsynced(f, data);
  auto bp = w.dnode->WriteEarly(w.txg, 1, 0);
  INFO(bp.status().ToString());
  REQUIRE(bp.ok());
  CHECK(bp->birth == w.txg);
  CHECK(bp->lsize == kBlock);
  // Again, unchanged: the same block, nothing written.
  const uint64_t written = f.zio.bytes_written();
  auto again = w.dnode->WriteEarly(w.txg, 1, 0);
  REQUIRE(again.ok());
  CHECK(again->dva == bp->dva);
  CHECK(f.zio.bytes_written() == written);
  // Its bytes are the block's, readable before the sync.
  auto early = f.zio.Read(*bp);
  REQUIRE(early.ok());
  CHECK(*early == data.substr(kBlock, kBlock));

  f.Sync();
  auto kept = w.dnode->BlockPointer(1);
  REQUIRE(kept.ok());
  CHECK(kept->dva == bp->dva);
  CHECK(f.os->Read(w.id, 0, data.size()).value() == data);
  f.Reopen();
  CHECK(f.os->Read(w.id, 0, data.size()).value() == data);
}

TEST_CASE("A block changed after its early write is written again, the early one freed", "[dmu]") {
  Fixture f;
  const std::string data = Pattern(2, 4 * kBlock);
  Written w = WriteUnsynced(f, data);
  auto first = w.dnode->WriteEarly(w.txg, 0, 0);
  REQUIRE(first.ok());
  const std::string patch = Pattern(3, 4096);
  Change(f, w.id, 8192, patch);  // same txg: block 0 takes a copy of its own
  std::string want = data;
  want.replace(8192, patch.size(), patch);
  CHECK(f.os->Read(w.id, 0, want.size()).value() == want);

  // Written early a second time: a new block; the first is stale.
  auto second = w.dnode->WriteEarly(w.txg, 0, 0);
  REQUIRE(second.ok());
  CHECK(!(second->dva == first->dva));
  Change(f, w.id, 0, "x");  // and changed once more: neither is kept
  want[0] = 'x';

  f.Sync();
  auto kept = w.dnode->BlockPointer(0);
  REQUIRE(kept.ok());
  CHECK(!(kept->dva == first->dva));
  CHECK(!(kept->dva == second->dva));
  f.Reopen();
  CHECK(f.os->Read(w.id, 0, want.size()).value() == want);
  // Both early blocks were freed by the sync (a second free is refused).
  CHECK(!StillAllocated(f, *first));
  CHECK(!StillAllocated(f, *second));
}

TEST_CASE("WriteEarly writes only a dirty block of its txg", "[dmu]") {
  Fixture f;
  const std::string data = Pattern(4, 4 * kBlock);
  Written w = WriteUnsynced(f, data);
  CHECK(w.dnode->WriteEarly(w.txg, 9, 0).status().IsNotFound());  // never written
  CHECK(w.dnode->WriteEarly(Txg(w.txg.value() + 1), 0, 0).status().IsNotFound());
  f.Sync();
  CHECK(w.dnode->WriteEarly(w.txg, 0, 0).status().IsNotFound());  // synced
}

}  // namespace poolfs::core::dmu::testing
