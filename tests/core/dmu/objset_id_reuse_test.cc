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
  // The tests sync by hand, whatever a Tx did: an abandoned one is only
  // counted (most of them end their Tx without Commit).
  Status Abandon(Txg, const Status& cause) override {
    abandoned++;
    return Status::IOError("abandoned: " + cause.ToString());
  }
  std::atomic<uint64_t> open{1};
  std::atomic<uint64_t> abandoned{0};
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
  // Txg 2 must not create `victim`: it is allocated until txg 3. Nor may
  // txg 3 itself: the id returns to the free set when the sync of 3 starts.
  f.os.SetBackfill(BackfillMode::kOn);  // reuse freed ids at once
  auto created = f.os.Create(old_tx, ObjectType::kPlain);
  REQUIRE(created.ok());
  REQUIRE(created->value() != victim.value());
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    auto same = f.os.Create(tx, ObjectType::kPlain);
    REQUIRE(same.ok());
    REQUIRE(same->value() != victim.value());
  }
  old_tx.Commit();
  for (uint64_t t : {1, 2, 3}) {
    for (auto& task : f.os.SyncTasks(Txg(t), 1)) REQUIRE(task.fn().ok());
    REQUIRE(f.os.FinishSync(Txg(t), 0).ok());
  }
  f.txgs.open = 4;
  Tx later(&f.txgs);
  REQUIRE(later.Assign().ok());
  auto reused = f.os.Create(later, ObjectType::kPlain);
  REQUIRE(reused.ok());
  REQUIRE(reused->value() == victim.value());
  REQUIRE(f.os.live_objects() == 4);
}

}  // namespace
}  // namespace poolfs::core::dmu
