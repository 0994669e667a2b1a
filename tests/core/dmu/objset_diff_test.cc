// ObjectSet::ChangedDnodes (dmu/objset_walk.h, WalkChangedDnodes): the
// objects whose dnodes differ between two synced states of a set, found by
// reading only the metadnode blocks born after the older one, across a
// change of the metadnode's height.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>

#include "core/dmu/objset_fixture.h"
#include "dmu/objset.h"

namespace poolfs::core::dmu {
namespace {

using namespace testing;  // the fixture (objset_fixture.h)

// What ChangedDnodes reports: id -> (older type, newer type).
using Changes = std::map<uint64_t, std::pair<ObjectType, ObjectType>>;

Changes MustCompare(ObjectSet& newer, ObjectSet& older, Txg older_txg, DnodeDiffStats* stats) {
  Changes out;
  uint64_t last = 0;
  Status st = newer.ChangedDnodes(
      older, older_txg,
      [&](ObjectId id, const DnodePhys& o, const DnodePhys& n) {
        CHECK(id.value() > last);  // in id order
        last = id.value();
        out[id.value()] = {o.type, n.type};
        return Status::Ok();
      },
      stats);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

// A read-only view of the set as the root `root` left it.
std::unique_ptr<ObjectSet> View(Fixture& f, const zio::BlockPtr& root) {
  auto r = ObjectSet::Open(&f.zio, root, "test");
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

TEST_CASE("ChangedDnodes reads only the metadnode blocks born after the older state", "[dmu]") {
  Fixture f;
  // Nothing the set drops is freed: the older roots stay readable.
  f.os->SetRelease([](const zio::BlockPtr&, Txg) { return Status::Ok(); });
  auto create = [&](Tx& tx) {
    auto id = f.os->Create(tx, ObjectType::kPlain, 4096);
    REQUIRE(id.ok());
    return id->value();
  };
  uint64_t kept = 0, changed = 0, freed = 0;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    kept = create(tx);
    changed = create(tx);
    freed = create(tx);
    tx.Commit();
  }
  const Txg first(f.txgs.open.load());
  const zio::BlockPtr one = f.Sync();  // one dnode block: a metadnode of one level

  constexpr uint64_t kMore = 3000;  // 94 dnode blocks more: two levels
  uint64_t far = 0;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (uint64_t i = 0; i < kMore; i++) far = create(tx);
    REQUIRE(f.os->SetBonus(tx, ObjectId(changed), 7, "new bonus").ok());
    REQUIRE(f.os->Free(tx, ObjectId(freed)).ok());
    tx.Commit();
  }
  const Txg second(f.txgs.open.load());
  const zio::BlockPtr two = f.Sync();

  std::unique_ptr<ObjectSet> v1 = View(f, one), v2 = View(f, two);
  DnodeDiffStats st;
  Changes c = MustCompare(*v2, *v1, first, &st);
  CHECK(c.size() == kMore + 2);
  CHECK_FALSE(c.contains(kept));
  CHECK(c[changed] == std::pair(ObjectType::kPlain, ObjectType::kPlain));
  CHECK(c[freed] == std::pair(ObjectType::kPlain, ObjectType::kNone));
  CHECK(c[far] == std::pair(ObjectType::kNone, ObjectType::kPlain));
  CHECK(st.dnode_blocks == (far / kDnodesPerBlock) + 1);

  // One change among them all: one dnode block of each tree, their
  // indirect blocks and roots.
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->SetBonus(tx, ObjectId(far), 7, "far").ok());
    tx.Commit();
  }
  const zio::BlockPtr three = f.Sync();
  std::unique_ptr<ObjectSet> v3 = View(f, three);
  st = {};
  c = MustCompare(*v3, *v2, second, &st);
  CHECK(c.size() == 1);
  CHECK(c.contains(far));
  CHECK(st.dnode_blocks == 1);
  CHECK(st.blocks_read == 6);  // 2 roots, 2 indirect blocks, 2 dnode blocks
  // And nothing between a state and itself.
  st = {};
  CHECK(MustCompare(*v3, *v3, second, &st).empty());
  CHECK(st.blocks_read == 0);
}

}  // namespace
}  // namespace poolfs::core::dmu
