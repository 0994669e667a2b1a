// IntentLog over a pool on a memory device: commits go around the ring
// while txgs sync, and a power cut (unflushed writes dropped) leaves
// exactly the records committed since the last sync for the next import
// to replay; many threads committing at once lose none.
#include "zil/intent_log.h"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "dmu/tx.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::zil {
namespace {

pool::PoolOptions LogPoolOptions() {
  pool::PoolOptions o;
  o.txg.timeout_ms = 60000;  // txgs sync only when asked
  return o;
}

// The open txg, held for a moment as a change's would be.
uint64_t OpenTxg(pool::Pool& p) {
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign(0).ok());
  const uint64_t t = tx.txg().value();
  tx.Commit();
  return t;
}

LogRecord Xattr(uint64_t object, uint64_t txg, size_t value_size) {
  return LogRecord{RecordType::kSetxattr, txg, 0, object,
                   SetxattrBody{"user.k" + std::to_string(object),
                                std::string(value_size, char('a' + object % 26)), 0}};
}

std::unique_ptr<IntentLog> StartedLog(pool::Pool& p) {
  auto log = IntentLog::Open(&p);
  REQUIRE(log.ok());
  REQUIRE((*log)->Start().ok());
  REQUIRE(p.SyncOnce().ok());  // the new chain in an uberblock
  return std::move(*log);
}

// A pool and its log, as a test runs them, or as an import finds them.
struct Imported {
  std::unique_ptr<pool::Pool> pool;
  std::unique_ptr<IntentLog> log;
};

// Cuts the power under `before` (every write not flushed is dropped),
// powers on and imports again: the pool and the log the import found.
Imported CutAndImport(vdev::FaultInjectingDevice& dev, Imported before) {
  REQUIRE(dev.CutPower(vdev::PowerCut::DropAll()).ok());
  before.log.reset();
  (void)before.pool->Export();  // fails once the power is gone
  before.pool.reset();
  dev.PowerOn();
  auto p = pool::Pool::ImportDevices({&dev}, LogPoolOptions());
  REQUIRE(p.ok());
  auto log = IntentLog::Open(p->get());
  REQUIRE(log.ok());
  return {std::move(*p), std::move(*log)};
}

}  // namespace

TEST_CASE("IntentLog goes round its ring and a power cut keeps what was committed since the sync",
          "[zil][log]") {
  vdev::MemoryDevice mem(64ull << 20, "mem");
  REQUIRE(pool::Pool::CreateOnDevices({&mem}, {"mem"}, pool::CreateOptions{"tank"}).ok());
  vdev::FaultInjectingDevice dev(&mem);
  std::vector<LogRecord> after_sync;
  Imported after;
  {
    auto p = pool::Pool::ImportDevices({&dev}, LogPoolOptions());
    REQUIRE(p.ok());
    auto log = StartedLog(**p);
    // About 3 times the ring's size, in commits of about 20 KiB, a sync
    // every 40 commits: the ring turns, and no commit has to wait.
    uint64_t object = 1;
    for (int round = 0; round < 14; round++) {
      for (int c = 0; c < 40; c++) {
        const uint64_t t = OpenTxg(**p);
        for (int r = 0; r < 4; r++) log->Add(1, Xattr(object++, t, 5000));
        REQUIRE(log->Commit().ok());
      }
      REQUIRE((*p)->SyncOnce().ok());
    }
    IntentLogStats s = log->stats();
    CHECK(s.bytes > 3 * vdev::kLogAreaSize);
    CHECK(s.commits_synced == 0);
    // After the last sync: committed, then the power goes.
    for (int c = 0; c < 5; c++) {
      const uint64_t t = OpenTxg(**p);
      for (int r = 0; r < 3; r++) {
        LogRecord rec = Xattr(object++, t, 3000 + 1000 * r);
        log->Add(1, rec);
        after_sync.push_back(rec);
      }
      REQUIRE(log->Commit().ok());
    }
    // Added but never committed: lost with the power.
    log->Add(1, Xattr(object++, OpenTxg(**p), 10));
    after = CutAndImport(dev, {std::move(*p), std::move(log)});
  }
  const auto& replay = after.log->to_replay();
  REQUIRE(replay.size() == after_sync.size());
  for (size_t i = 0; i < replay.size(); i++) {
    INFO("record " << i);
    CHECK(replay[i].dataset == 1);
    CHECK(replay[i].record.object == after_sync[i].object);
    CHECK(replay[i].record.body == after_sync[i].body);
    if (i > 0) CHECK(replay[i].record.seq > replay[i - 1].record.seq);
  }
  CHECK(after.log->notes().empty());
  REQUIRE(after.pool->Export().ok());
}

TEST_CASE("IntentLog commits from many threads at once lose no record", "[zil][log]") {
  vdev::MemoryDevice mem(64ull << 20, "mem");
  REQUIRE(pool::Pool::CreateOnDevices({&mem}, {"mem"}, pool::CreateOptions{"tank"}).ok());
  vdev::FaultInjectingDevice dev(&mem);
  constexpr int kThreads = 6, kEach = 40;
  Imported after;
  {
    auto p = pool::Pool::ImportDevices({&dev}, LogPoolOptions());
    REQUIRE(p.ok());
    auto log = StartedLog(**p);
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; t++) {
      ts.emplace_back([&, t] {
        for (int i = 0; i < kEach; i++) {
          dmu::Tx tx((*p)->assigner());
          if (!tx.Assign(0).ok()) {
            failures++;
            return;
          }
          const uint64_t txg = tx.txg().value();
          tx.Commit();
          log->Add(uint64_t(t + 1), Xattr(uint64_t(1 + t * kEach + i), txg, 100));
          if (!log->Commit().ok()) failures++;
        }
      });
    }
    for (auto& th : ts) th.join();
    REQUIRE(failures.load() == 0);
    const IntentLogStats s = log->stats();
    CHECK(s.records == kThreads * kEach);
    CHECK(s.commits <= uint64_t(kThreads * kEach));
    after = CutAndImport(dev, {std::move(*p), std::move(log)});
  }
  std::vector<int> seen(kThreads * kEach + 1, 0);
  for (const PendingRecord& r : after.log->to_replay()) {
    REQUIRE(r.record.object >= 1);
    REQUIRE(r.record.object <= uint64_t(kThreads * kEach));
    CHECK(r.dataset == (r.record.object - 1) / kEach + 1);
    seen[r.record.object]++;
  }
  for (int i = 1; i <= kThreads * kEach; i++) {
    INFO("object " << i);
    CHECK(seen[i] == 1);
  }
  REQUIRE(after.pool->Export().ok());
}

TEST_CASE("IntentLog commit that does not fit the ring waits for the txg instead", "[zil][log]") {
  vdev::MemoryDevice mem(64ull << 20, "mem");
  REQUIRE(pool::Pool::CreateOnDevices({&mem}, {"mem"}, pool::CreateOptions{"tank"}).ok());
  auto p = pool::Pool::ImportDevices({&mem}, LogPoolOptions());
  REQUIRE(p.ok());
  auto log = StartedLog(**p);
  const uint64_t t = OpenTxg(**p);
  // More than a quarter of the ring in one commit.
  for (uint64_t o = 1; o <= 16; o++) log->Add(1, Xattr(o, t, 60000));
  REQUIRE(log->Commit().ok());
  const IntentLogStats s = log->stats();
  CHECK(s.commits_synced == 1);
  CHECK(s.blocks == 0);
  CHECK((*p)->txgs().last_synced().value() >= t);
  REQUIRE((*p)->Export().ok());
}

}  // namespace poolfs::core::zil
