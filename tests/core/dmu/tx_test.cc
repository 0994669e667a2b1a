// Tx's end: Commit keeps its changes; any other end releases a Tx that
// changed nothing and abandons one that did. And the dmu steps a Tx counts
// are all or nothing: one that fails on a read changes nothing.
#include "dmu/tx.h"

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dmu/objset.h"
#include "objset_fixture.h"
#include "space/allocator.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/memory_device.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {
namespace {

using testing::ManualTxgs;
using testing::Pattern;

// Writes down what the Tx asked of it, in order.
class RecordingAssigner : public TxAssigner {
 public:
  Result<Txg> Hold(uint64_t) override {
    calls.push_back("hold");
    return Txg(7);
  }
  void Release(Txg t, uint64_t bytes) override {
    calls.push_back("release " + std::to_string(t.value()) + " " + std::to_string(bytes));
  }
  Status Abandon(Txg t, const Status& cause) override {
    calls.push_back("abandon " + std::to_string(t.value()));
    causes.push_back(cause);
    return Status::IOError("pool suspended: " + cause.message());
  }
  std::vector<std::string> calls;
  std::vector<Status> causes;
};

TEST_CASE("A Tx that changed something and ends without Commit abandons its txg, then leaves it") {
  RecordingAssigner a;
  {
    Tx tx(&a);
    REQUIRE(tx.Assign().ok());
    tx.Dirtied(512);
  }
  REQUIRE(a.calls == std::vector<std::string>{"hold", "abandon 7", "release 7 512"});
  REQUIRE(a.causes.size() == 1);
  REQUIRE(a.causes[0].message().find("without Commit") != std::string::npos);
}

TEST_CASE("A Tx that changed nothing just leaves, however it ends") {
  RecordingAssigner a;
  {
    Tx tx(&a);
    REQUIRE(tx.Assign().ok());
  }
  {
    Tx tx(&a);
    REQUIRE(tx.Assign().ok());
    Status st = tx.Abandon(Status::NotFound("no such name"));
    REQUIRE(st.code() == StatusCode::kNotFound);  // the cause, untouched
  }
  {
    Tx tx(&a);
    REQUIRE(tx.Finish(Status::Ok()).ok());
  }
  REQUIRE(a.calls == std::vector<std::string>{"hold", "release 7 0", "hold", "release 7 0"});
}

TEST_CASE("Finish commits on success and abandons on a failure after a change") {
  RecordingAssigner a;
  {
    Tx tx(&a);
    REQUIRE(tx.Assign().ok());
    tx.Dirtied(100);
    REQUIRE(tx.Finish(Status::Ok()).ok());
    REQUIRE(!tx.assigned());
  }
  {
    Tx tx(&a);
    REQUIRE(tx.Assign().ok());
    tx.Dirtied(0);
    REQUIRE(tx.changes() == 1);
    Status st = tx.Finish(Status::Corruption("leaf 2: checksum mismatch"));
    REQUIRE(st.code() == StatusCode::kIOError);
    REQUIRE(st.message() == "pool suspended: leaf 2: checksum mismatch");
  }
  REQUIRE(a.calls ==
          std::vector<std::string>{"hold", "release 7 100", "hold", "abandon 7", "release 7 0"});
}

TEST_CASE("A sync-context Tx ends without asking anyone") {
  Tx tx = Tx::ForSync(Txg(3));
  tx.Dirtied(10);
  Status st = tx.Abandon(Status::IOError("write failed"));
  REQUIRE(st.message() == "write failed");
}

// An object set over a device that can fail reads, without a cache: every
// read of a synced block goes to the device.
struct FaultyFixture {
  FaultyFixture()
      : mem(64 << 20),
        dev(&mem),
        space({{0, 4 << 20, (64 << 20) - (8 << 20), 12, 0}}, space::SpaceOptions{}),
        zio({{&dev, 12}}, &space),
        os(std::make_unique<ObjectSet>(&zio, ObjsetType::kDataset, "faulty")) {}
  void Sync() {
    Txg t(txgs.open.load());
    txgs.open++;
    for (auto& task : os->SyncTasks(t, 1)) REQUIRE(task.fn().ok());
    REQUIRE(os->FinishSync(t, 0).ok());
    space.Sync(t, [](const space::Metaslab&) {});
    space.SyncDone(t);
    os->SyncDone(t);
  }
  // Opens the set again: its dnodes and trees are read anew.
  void Reopen() {
    auto r = ObjectSet::Open(&zio, os->root(), "faulty");
    REQUIRE(r.ok());
    os = std::move(r).value();
  }
  std::string Contents(ObjectId id) {
    auto r = os->Read(id, 0, 1 << 20);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    return *r;
  }

  vdev::MemoryDevice mem;
  vdev::FaultInjectingDevice dev;
  space::SpaceManager space;
  zio::Zio zio;
  ManualTxgs txgs;
  std::unique_ptr<ObjectSet> os;
};

// Runs `step` with the n-th device read failing, for n = 1, 2, ... until it
// succeeds without meeting the fault: each failure must have changed
// nothing, in the Tx's count and in what the object reads.
void EveryReadFails(const std::function<Status(FaultyFixture&, Tx&, ObjectId)>& step) {
  constexpr uint64_t kBs = 128 * 1024;
  const std::string old = Pattern(1, 3 * kBs);
  for (uint64_t n = 1;; n++) {
    REQUIRE(n < 100);
    FaultyFixture f;
    ObjectId id;
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      id = f.os->Create(tx, ObjectType::kPlain, uint32_t(kBs)).value();
      REQUIRE(f.os->Write(tx, id, 0, old).ok());
      tx.Commit();
    }
    f.Sync();
    f.Reopen();
    const uint64_t failures = f.dev.counters().injected_failures;
    f.dev.FailNthIo(n, vdev::IoKind::kRead);
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    Status st = step(f, tx, id);
    const bool hit = f.dev.counters().injected_failures != failures;
    f.dev.ClearFaults();
    INFO("read " << n << ": " << st.ToString());
    if (st.ok()) {
      tx.Commit();
      if (!hit) {
        REQUIRE(n > 1);  // the step did read: some read failed first
        return;
      }
      continue;
    }
    REQUIRE(hit);
    REQUIRE(tx.changes() == 0);
    REQUIRE(f.Contents(id) == old);
    tx.Commit();
  }
}

TEST_CASE("A write whose old blocks cannot be read changes nothing") {
  // Partial first and last blocks, a whole one between.
  EveryReadFails([](FaultyFixture& f, Tx& tx, ObjectId id) {
    return f.os->Write(tx, id, 1000, std::string(2 * 128 * 1024, 'w'));
  });
}

TEST_CASE("A truncate whose new last block cannot be read changes nothing") {
  EveryReadFails([](FaultyFixture& f, Tx& tx, ObjectId id) {
    return f.os->Truncate(tx, id, 128 * 1024 + 5000);
  });
}

TEST_CASE("A punch whose partial end blocks cannot be read changes nothing") {
  // Zeroes the tail of block 0, all of block 1, the head of block 2.
  EveryReadFails([](FaultyFixture& f, Tx& tx, ObjectId id) {
    return f.os->Punch(tx, id, 1000, 2 * 128 * 1024);
  });
}

TEST_CASE("A create whose dnode block cannot be read changes nothing") {
  // A freed id below the high-water mark, handed out again (backfill on):
  // its dnode is read from its block on disk.
  for (uint64_t n = 1;; n++) {
    REQUIRE(n < 100);
    FaultyFixture f;
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      for (int i = 0; i < 40; i++) REQUIRE(f.os->Create(tx, ObjectType::kPlain).ok());
      tx.Commit();
    }
    f.Sync();
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      REQUIRE(f.os->Free(tx, ObjectId(5)).ok());
      tx.Commit();
    }
    f.Sync();
    f.Reopen();
    f.os->SetBackfill(BackfillMode::kOn);
    const uint64_t live = f.os->live_objects();
    const uint64_t failures = f.dev.counters().injected_failures;
    f.dev.FailNthIo(n, vdev::IoKind::kRead);
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    auto made = f.os->Create(tx, ObjectType::kPlain);
    const bool hit = f.dev.counters().injected_failures != failures;
    f.dev.ClearFaults();
    INFO("read " << n << ": " << made.status().ToString());
    if (made.ok()) {
      REQUIRE(*made == ObjectId(5));
      tx.Commit();
      if (!hit) {
        REQUIRE(n > 1);
        return;
      }
      continue;
    }
    REQUIRE(hit);
    REQUIRE(tx.changes() == 0);
    tx.Commit();
    // Nothing counted in the txg: it syncs the same object count.
    f.Sync();
    REQUIRE(f.os->live_objects() == live);
  }
}

}  // namespace
}  // namespace poolfs::core::dmu
