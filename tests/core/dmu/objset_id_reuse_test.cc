// ObjectSet object-id reuse across txgs: an id freed in txg f is never handed
// to a Tx of an older txg (found by poolfs-stress: a Tx still holding txg
// t < f created an object with the id another thread had just freed in f,
// so txg t "created" an object that was still allocated).
#include "dmu/objset.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>

#include "space/allocator.h"
#include "vdev/memory_device.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {
namespace {

// A TxAssigner whose open txg the test moves by hand.
class HandTxgs : public TxAssigner {
 public:
  Result<Txg> Hold(uint64_t) override { return Txg(open.load()); }
  void Release(Txg, uint64_t) override {}
  std::atomic<uint64_t> open{1};
};

struct ReuseFixture {
  ReuseFixture()
      : dev(64 << 20),
        space({{0, 4 << 20, (64 << 20) - (8 << 20), 12, 0}}, space::SpaceOptions{}),
        zio({{&dev, 12}}, &space),
        os(&zio, ObjsetType::kDataset, "reuse") {}
  vdev::MemoryDevice dev;
  space::SpaceManager space;
  zio::Zio zio;
  HandTxgs txgs;
  ObjectSet os;
};

TEST_CASE("ObjectSet does not reuse an object id in a txg older than its free", "[dmu]") {
  ReuseFixture f;
  ObjectId victim;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    victim = f.os.Create(tx, ObjectType::kPlain).value();
    REQUIRE(f.os.Create(tx, ObjectType::kPlain).ok());
  }
  f.txgs.open = 2;
  Tx old_tx(&f.txgs);  // still holds txg 2 while txg 3 opens
  REQUIRE(old_tx.Assign().ok());
  f.txgs.open = 3;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os.Free(tx, victim).ok());
  }
  // Txg 2 must not create `victim`: it is allocated until txg 3.
  auto created = f.os.Create(old_tx, ObjectType::kPlain);
  REQUIRE(created.ok());
  REQUIRE(created->value() != victim.value());
  // A Tx of txg 3 (the free's own) may have it.
  Tx same_tx(&f.txgs);
  REQUIRE(same_tx.Assign().ok());
  auto reused = f.os.Create(same_tx, ObjectType::kPlain);
  REQUIRE(reused.ok());
  REQUIRE(reused->value() == victim.value());
  REQUIRE(f.os.live_objects() == 3);
}

}  // namespace
}  // namespace poolfs::core::dmu
