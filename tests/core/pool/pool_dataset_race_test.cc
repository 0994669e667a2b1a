// A dataset created while a txg syncs (found by poolfs-stress): the txg that
// was syncing must stay importable. The bug: SyncDatasets(t) lists the
// datasets to write, CreateDataset adds one (its Tx is in t + 1), and t's
// pool directory is then written with the new dataset's root still a hole,
// so t's uberblock never verifies and an import after a crash falls back to
// t - 1: a txg that WaitSynced had reported durable is lost.
#include "pool/pool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <thread>

#include "txg/inline_executor.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/memory_device.h"

namespace poolfs::core::pool {
namespace {

// Runs tasks inline; when armed, first runs `hook` on another thread (the
// sync waits for it), i.e. in the middle of a txg's dataset sync (its tasks
// posted, none run yet).
class HookExecutor : public txg::InlineExecutor {
 public:
  void Wait() override {
    if (armed.exchange(false)) std::thread(hook).join();
    txg::InlineExecutor::Wait();
  }
  std::atomic<bool> armed{false};
  std::function<void()> hook;
};

// Holds a Tx of the open txg t, waits until t quiesces (a thread waits for
// it to sync), runs `during` with the Tx (a new dataset then belongs to
// t + 1), then releases the Tx. Returns t; `synced` gets WaitSynced(t).
Txg WhileQuiescing(Pool& pool, Status* synced, const std::function<void(dmu::Tx&, Txg)>& during) {
  std::jthread waiter;  // joined on the way out when a REQUIRE in `during` fails
  Txg t;
  {
    dmu::Tx tx(pool.assigner());
    REQUIRE(tx.Assign().ok());
    t = tx.txg();
    waiter = std::jthread([&pool, synced, t] { *synced = pool.WaitSynced(t); });
    while (pool.txgs().open_txg() == t) std::this_thread::yield();
    during(tx, t);
    tx.Commit();
  }  // releases t: its sync starts
  waiter.join();
  return t;
}

TEST_CASE("Pool keeps a txg importable when a dataset is created during its sync", "[pool]") {
  vdev::MemoryDevice mem(128 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  vdev::FaultInjectingDevice dev(&mem);
  HookExecutor exec;
  PoolOptions opts;
  opts.executor = &exec;
  opts.txg.timeout_ms = 3600 * 1000;  // only WaitSynced syncs
  Txg t;
  {
    auto p = Pool::ImportDevices({&dev}, opts);
    REQUIRE(p.ok());
    Pool& pool = **p;
    Status created;
    exec.hook = [&] { created = pool.CreateDataset("late").status(); };
    {
      dmu::Tx tx(pool.assigner());
      REQUIRE(tx.Assign().ok());
      t = tx.txg();
      auto id = pool.root_dataset()->Create(tx, dmu::ObjectType::kPlain);
      REQUIRE(id.ok());
      REQUIRE(pool.root_dataset()->Write(tx, *id, 0, "durable").ok());
      tx.Commit();
    }
    exec.armed = true;
    REQUIRE(pool.WaitSynced(t).ok());  // the hook creates "late" in t + 1
    REQUIRE(created.ok());
    REQUIRE(!exec.armed);
    // Crash before t + 1 reaches disk.
    dev.CutPowerAfter(0);
    (void)pool.Export();
  }
  dev.PowerOn();
  opts.executor = nullptr;
  auto p = Pool::ImportDevices({&dev}, opts);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  REQUIRE((*p)->imported_txg() == t);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool does not write a dataset in a txg older than its creation", "[pool]") {
  // "early" is created in t + 1 while t quiesces, before t's sync starts;
  // t's sync must leave it to t + 1 (its directory entry says created in
  // t + 1, and poolfs check refuses a dataset newer than the txg it is in).
  vdev::MemoryDevice mem(128 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  vdev::FaultInjectingDevice dev(&mem);
  PoolOptions opts;
  opts.txg.timeout_ms = 3600 * 1000;
  Txg t;
  {
    auto p = Pool::ImportDevices({&dev}, opts);
    REQUIRE(p.ok());
    Pool& pool = **p;
    Status synced;
    t = WhileQuiescing(pool, &synced, [&](dmu::Tx& tx, Txg) {
      REQUIRE(pool.root_dataset()->Create(tx, dmu::ObjectType::kPlain).ok());
      REQUIRE(pool.CreateDataset("early").ok());  // in t + 1
    });
    REQUIRE(synced.ok());
    dev.CutPowerAfter(0);  // crash before t + 1 reaches disk
    (void)pool.Export();
  }
  dev.PowerOn();
  auto p = Pool::ImportDevices({&dev}, opts);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  REQUIRE((*p)->imported_txg() == t);
  REQUIRE((*p)->dataset("early") == nullptr);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool refuses a change to a dataset under a Tx older than the dataset", "[pool]") {
  // Found by poolfs-stress: a thread holding a Tx of t (quiescing) used a
  // dataset another thread had just created in t + 1. SyncDatasets(t) skips
  // the dataset (created after t), so the change was never written and
  // SyncDone(t) aborted on the dataset's dirty list.
  vdev::MemoryDevice mem(128 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  PoolOptions opts;
  opts.txg.timeout_ms = 3600 * 1000;
  ObjectId id;
  {
    auto p = Pool::ImportDevices({&mem}, opts);
    REQUIRE(p.ok());
    Pool& pool = **p;
    Status synced;
    WhileQuiescing(pool, &synced, [&](dmu::Tx& tx, Txg t) {
      auto early = pool.CreateDataset("early");  // in t + 1
      REQUIRE(early.ok());
      REQUIRE((*early)->first_txg() == Txg(t.value() + 1));
      auto refused = (*early)->Create(tx, dmu::ObjectType::kPlain);
      INFO(refused.status().ToString());
      REQUIRE(refused.status().code() == StatusCode::kInvalidArgument);
      REQUIRE(refused.status().message().find("early was created in txg") != std::string::npos);
      // The set it may change is unaffected.
      REQUIRE(pool.root_dataset()->Create(tx, dmu::ObjectType::kPlain).ok());
    });
    REQUIRE(synced.ok());
    dmu::ObjectSet* early = pool.dataset("early");
    {
      dmu::Tx tx(pool.assigner());
      REQUIRE(tx.Assign().ok());
      auto made = early->Create(tx, dmu::ObjectType::kPlain);
      REQUIRE(made.ok());
      id = *made;
      REQUIRE(early->Write(tx, id, 0, "later").ok());
      tx.Commit();
    }
    REQUIRE(pool.WaitSynced(Txg(0)).ok());
    REQUIRE(pool.Export().ok());
  }
  auto p = Pool::ImportDevices({&mem}, opts);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  dmu::ObjectSet* early = (*p)->dataset("early");
  REQUIRE(early != nullptr);
  auto read = early->Read(id, 0, 5);
  REQUIRE(read.ok());
  REQUIRE(*read == "later");
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool writes a dataset created during a sync with the next txg", "[pool]") {
  vdev::MemoryDevice mem(128 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  HookExecutor exec;
  PoolOptions opts;
  opts.executor = &exec;
  {
    auto p = Pool::ImportDevices({&mem}, opts);
    REQUIRE(p.ok());
    Pool& pool = **p;
    Status created;
    exec.hook = [&] { created = pool.CreateDataset("late").status(); };
    Txg t;
    {
      dmu::Tx tx(pool.assigner());
      REQUIRE(tx.Assign().ok());
      t = tx.txg();
      REQUIRE(pool.root_dataset()->Create(tx, dmu::ObjectType::kPlain).ok());
      tx.Commit();
    }
    exec.armed = true;
    REQUIRE(pool.WaitSynced(t).ok());
    REQUIRE(created.ok());
    REQUIRE(pool.Export().ok());
  }
  opts.executor = nullptr;
  auto p = Pool::ImportDevices({&mem}, opts);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  REQUIRE((*p)->dataset("late") != nullptr);
  REQUIRE((*p)->Export().ok());
}

}  // namespace
}  // namespace poolfs::core::pool
