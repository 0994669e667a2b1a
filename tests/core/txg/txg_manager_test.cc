// TxgManager: the txg state machine, its triggers, the throttle, failure and
// shutdown. No timing assertions: waits are bounded polls, and the few
// sleeps only give a wrong implementation the chance to misbehave.
#include "txg/txg_manager.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "txg_test_util.h"

namespace poolfs::core::txg {
namespace {

using testing::Eventually;
using testing::Gate;
using testing::Quiet;
using testing::SyncRecorder;

void Pause() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

TEST_CASE("Holds land in the open txg, and in the next one once it closes") {
  SyncRecorder rec;
  TxgManager m(Txg(5), rec.Fn(), Quiet());
  m.Start();
  REQUIRE(m.open_txg() == Txg(5));
  REQUIRE(m.last_synced() == Txg(4));
  Result<Txg> a = m.Hold(100);
  Result<Txg> b = m.Hold(100);
  REQUIRE(a.ok());
  REQUIRE(*a == Txg(5));
  REQUIRE(*b == Txg(5));
  m.Kick();
  REQUIRE(Eventually([&] { return m.open_txg() == Txg(6); }));  // 5 is quiescing
  Result<Txg> c = m.Hold(100);
  REQUIRE(*c == Txg(6));
  m.Release(*a, 10);
  m.Release(*b, 10);
  m.Release(*c, 10);
  REQUIRE(m.WaitSynced(*c).ok());
  REQUIRE(rec.synced() == std::vector<uint64_t>{5, 6});
  REQUIRE(m.Stop().ok());
}

TEST_CASE("A txg does not sync while a hold remains") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> t = m.Hold(0);
  REQUIRE(t.ok());
  m.Kick();
  REQUIRE(Eventually([&] { return m.open_txg() == Txg(2); }));
  Pause();
  REQUIRE(rec.started() == 0);  // quiescing, waiting for our hold
  m.Release(*t, 1);
  REQUIRE(m.WaitSynced(*t).ok());
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
  REQUIRE(m.last_synced() == Txg(1));
}

TEST_CASE("WaitSynced returns only after the txg's sync callback finished") {
  SyncRecorder rec;
  std::atomic<uint64_t> finished{0};
  rec.set_hook([&](Txg t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    finished.store(t.value());
  });
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  for (int i = 0; i < 3; i++) {
    Result<Txg> t = m.Hold(0);
    REQUIRE(t.ok());
    m.Release(*t, 1);
    REQUIRE(m.WaitSynced(*t).ok());
    REQUIRE(finished.load() == t->value());
    REQUIRE(m.last_synced() == *t);
  }
}

TEST_CASE("WaitSynced of Txg(0) waits for the txg open at the call") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1);
  REQUIRE(m.WaitSynced(Txg(0)).ok());
  REQUIRE(rec.Synced(*t));
}

TEST_CASE("An open txg that no one held is not synced, and waiting on it returns") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  REQUIRE(m.WaitSynced(Txg(0)).ok());
  REQUIRE(m.WaitSynced(Txg(1)).ok());
  m.Kick();
  Pause();
  REQUIRE(rec.started() == 0);
  REQUIRE(m.open_txg() == Txg(1));  // kept open, number not spent

  Result<Txg> t = m.Hold(0);
  m.Release(*t, 0);  // a hold with no bytes still counts: this txg syncs
  REQUIRE(m.WaitSynced(*t).ok());
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
  REQUIRE(m.WaitSynced(Txg(2)).ok());  // open and empty again
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
}

TEST_CASE("WaitSynced refuses a txg that has not opened yet") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  REQUIRE(m.WaitSynced(Txg(9)).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("WaitSynced before Start is Aborted for a held txg") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1);
  REQUIRE(m.WaitSynced(*t).code() == StatusCode::kAborted);
  m.Start();
  REQUIRE(m.WaitSynced(*t).ok());
}

TEST_CASE("The timeout syncs a held txg without anyone asking") {
  SyncRecorder rec;
  TxgOptions o;
  o.timeout_ms = 10;
  TxgManager m(Txg(1), rec.Fn(), o);
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1);
  REQUIRE(Eventually([&] { return m.last_synced() >= *t; }));
  REQUIRE(m.stats().syncs >= 1);
}

TEST_CASE("Dirty data past the sync percentage starts a sync") {
  SyncRecorder rec;
  TxgOptions o = Quiet();
  o.dirty_max_bytes = 1 << 20;
  o.dirty_sync_percent = 20;  // 209,715 bytes
  TxgManager m(Txg(1), rec.Fn(), o);
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 100000);
  Pause();
  REQUIRE(rec.started() == 0);  // below the trigger and no timeout
  t = m.Hold(0);
  m.Release(*t, 150000);
  REQUIRE(Eventually([&] { return m.last_synced() == Txg(1); }));
  REQUIRE(m.stats().dirty_bytes == 0);
}

TEST_CASE("Txgs sync in order, one at a time, under concurrent writers") {
  SyncRecorder rec;
  TxgOptions o;
  o.timeout_ms = 1;
  TxgManager m(Txg(1), rec.Fn(), o);
  m.Start();
  std::vector<std::thread> threads;
  std::atomic<uint64_t> failures{0};
  for (int i = 0; i < 4; i++) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < 300; j++) {
        Result<Txg> t = m.Hold(10);
        if (!t.ok()) {
          failures++;
          return;
        }
        m.Release(*t, 10);
        if ((j + i) % 25 == 0 && !m.WaitSynced(*t).ok()) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(m.Stop().ok());
  REQUIRE(failures.load() == 0);
  REQUIRE(rec.overlaps() == 0);
  const std::vector<uint64_t> synced = rec.synced();
  REQUIRE(!synced.empty());
  for (size_t i = 0; i < synced.size(); i++) REQUIRE(synced[i] == i + 1);
  REQUIRE(m.last_synced() == Txg(synced.back()));
  REQUIRE(m.stats().syncs == synced.size());
}

TEST_CASE("The throttle delays writers between the delay minimum and the max") {
  SyncRecorder rec;
  Gate gate;
  rec.set_gate(&gate);  // keep dirty data from draining
  TxgOptions o = Quiet();
  o.dirty_max_bytes = 1000;
  o.delay_min_dirty_percent = 10;
  o.delay_scale_ns = 1000;
  o.delay_max_ns = 1000000;
  TxgManager m(Txg(1), rec.Fn(), o);
  m.Start();
  Result<Txg> t = m.Hold(0);
  REQUIRE(m.stats().delays == 0);
  m.Release(*t, 500);  // past the sync trigger: txg 1 syncs, waiting on the gate
  REQUIRE(Eventually([&] { return rec.started() == 1; }));
  const uint64_t d = ThrottleDelayNs(500, o);
  REQUIRE(d > 0);
  t = m.Hold(0);
  REQUIRE(t.ok());
  REQUIRE(m.stats().delays == 1);
  REQUIRE(m.stats().delay_ns_total == d);  // an idle throttle delays by exactly the curve
  m.Release(*t, 0);
  t = m.Hold(0);
  m.Release(*t, 0);
  REQUIRE(m.stats().delays == 2);
  REQUIRE(m.stats().delay_ns_total >= 2 * d);
  gate.Open();
  REQUIRE(m.Stop().ok());
}

TEST_CASE("Writers block at the dirty max and resume after a sync") {
  SyncRecorder rec;
  Gate gate;
  rec.set_gate(&gate);
  TxgOptions o = Quiet();
  o.dirty_max_bytes = 1000;
  o.delay_min_dirty_percent = 100;  // no delays, only the block
  TxgManager m(Txg(1), rec.Fn(), o);
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1000);
  REQUIRE(Eventually([&] { return rec.started() == 1; }));  // txg 1 syncing, held at the gate

  std::atomic<bool> done{false};
  Result<Txg> got = Status::IOError("not set");
  std::thread writer([&] {
    got = m.Hold(0);
    done = true;
  });
  REQUIRE(Eventually([&] { return m.stats().blocked_waits == 1; }));
  Pause();
  REQUIRE_FALSE(done.load());
  gate.Open();
  writer.join();
  REQUIRE(got.ok());
  REQUIRE(*got == Txg(2));
  REQUIRE(m.last_synced() == Txg(1));
  m.Release(*got, 0);
  REQUIRE(m.Stop().ok());
}

TEST_CASE("A failed sync suspends: later Hold and WaitSynced return the failure") {
  SyncRecorder rec;
  rec.FailAt(Txg(2));
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1);
  REQUIRE(m.WaitSynced(*t).ok());
  t = m.Hold(0);
  m.Release(*t, 1);
  Status st = m.WaitSynced(*t);
  REQUIRE(st.code() == StatusCode::kIOError);
  REQUIRE(st.message().find("pool suspended") != std::string::npos);
  REQUIRE(st.message().find("txg 2") != std::string::npos);
  REQUIRE(st.message().find("disk gone") != std::string::npos);
  Result<Txg> later = m.Hold(0);
  REQUIRE(later.status().code() == StatusCode::kIOError);
  REQUIRE(m.WaitSynced(Txg(0)).code() == StatusCode::kIOError);
  REQUIRE(m.last_synced() == Txg(1));
  REQUIRE(m.Stop().code() == StatusCode::kIOError);
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
}

TEST_CASE("Stop syncs every txg that had holds, then refuses holds") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> a = m.Hold(0);
  m.Release(*a, 5);
  Result<Txg> held = m.Hold(0);  // still held when Stop begins
  std::thread releaser([&] {
    Pause();
    m.Release(*held, 7);
  });
  REQUIRE(m.Stop().ok());
  releaser.join();
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
  REQUIRE(m.stats().dirty_bytes == 0);
  Result<Txg> after = m.Hold(0);
  REQUIRE(after.status().code() == StatusCode::kAborted);
  REQUIRE(m.Stop().ok());  // again: same status
  REQUIRE(m.WaitSynced(Txg(0)).ok());
}

TEST_CASE("Stop of a manager that never started still syncs its holds") {
  SyncRecorder rec;
  TxgManager m(Txg(3), rec.Fn(), Quiet());
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1);
  REQUIRE(m.Stop().ok());
  REQUIRE(rec.synced() == std::vector<uint64_t>{3});
}

TEST_CASE("SetOptions applies a new timeout live") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 1);
  Pause();
  REQUIRE(rec.started() == 0);
  TxgOptions o = Quiet();
  o.timeout_ms = 5;
  m.SetOptions(o);
  REQUIRE(Eventually([&] { return m.last_synced() == Txg(1); }));
}

TEST_CASE("SetOptions applies a smaller dirty max live") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());  // 1 GiB max: 100 KB is nothing
  m.Start();
  Result<Txg> t = m.Hold(0);
  m.Release(*t, 100000);
  Pause();
  REQUIRE(rec.started() == 0);
  TxgOptions o = Quiet();
  o.dirty_max_bytes = 200000;  // now past the 20% sync trigger
  m.SetOptions(o);
  REQUIRE(Eventually([&] { return m.last_synced() == Txg(1); }));
}

TEST_CASE("Many threads hold and release concurrently; every sync sees its txg drained") {
  SyncRecorder rec;
  std::mutex mu;
  std::map<uint64_t, int64_t> inside;  // txg -> writers between Hold and Release
  std::atomic<uint64_t> synced_while_held{0};
  rec.set_hook([&](Txg t) {
    std::lock_guard<std::mutex> l(mu);
    if (inside[t.value()] != 0) synced_while_held++;
  });
  TxgOptions o;
  o.timeout_ms = 2;
  o.dirty_max_bytes = 256 << 10;  // small: exercise delays and blocking
  o.delay_scale_ns = 2000;
  o.delay_max_ns = 200000;
  TxgManager m(Txg(1), rec.Fn(), o);
  m.Start();

  constexpr int kThreads = 8;
  constexpr int kOps = 1500;
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> max_txg{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++) {
    threads.emplace_back([&, i] {
      std::mt19937 rng(i);
      for (int j = 0; j < kOps; j++) {
        Result<Txg> t = m.Hold(4096);
        if (!t.ok()) {
          failures++;
          return;
        }
        {
          std::lock_guard<std::mutex> l(mu);
          inside[t->value()]++;
        }
        if (rng() % 8 == 0) std::this_thread::yield();
        {
          std::lock_guard<std::mutex> l(mu);
          inside[t->value()]--;
        }
        m.Release(*t, rng() % 8192);
        uint64_t prev = max_txg.load();
        while (prev < t->value() && !max_txg.compare_exchange_weak(prev, t->value())) {
        }
        const uint32_t r = rng() % 200;
        if (r == 0 && !m.WaitSynced(*t).ok()) failures++;
        if (r == 1) m.Kick();
        if (r == 2) (void)m.stats();
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(m.Stop().ok());
  REQUIRE(failures.load() == 0);
  REQUIRE(synced_while_held.load() == 0);
  REQUIRE(rec.overlaps() == 0);
  REQUIRE(m.last_synced().value() >= max_txg.load());
  const std::vector<uint64_t> synced = rec.synced();
  for (size_t i = 0; i < synced.size(); i++) REQUIRE(synced[i] == i + 1);
  REQUIRE(m.stats().dirty_bytes == 0);
}

TEST_CASE("An idle txg syncs empty while the pool says syncs have work left, and only then") {
  SyncRecorder rec;
  std::atomic<int> left{0};  // syncs the "pool" still needs; each sync does one
  auto recorded = rec.Fn();
  TxgManager::SyncFn sync = [&](Txg t) {
    if (left > 0) left--;
    return recorded(t);
  };
  TxgOptions o = Quiet();
  o.timeout_ms = 20;
  TxgManager m(Txg(1), sync, o);
  std::atomic<int> asked{0};
  m.SetPendingWork([&] {
    asked++;
    return left.load() > 0;
  });
  m.Start();
  REQUIRE(Eventually([&] { return asked.load() >= 2; }));
  REQUIRE(rec.started() == 0);  // nothing pending: nothing synced
  // Three syncs' worth of work: three empty txgs sync, one after another.
  left = 3;
  REQUIRE(Eventually([&] { return left.load() == 0 && rec.synced().size() == 3; }));
  const int asked_before = asked.load();
  REQUIRE(Eventually([&] { return asked.load() >= asked_before + 2; }));
  REQUIRE(rec.synced() == std::vector<uint64_t>{1, 2, 3});
  REQUIRE(m.stats().idle_syncs == 3);
  // A txg held by a writer syncs as ever.
  Result<Txg> t = m.Hold(0);
  REQUIRE(t.ok());
  m.Release(*t, 5);
  REQUIRE(m.WaitSynced(*t).ok());
  REQUIRE(rec.synced().size() == 4);
  REQUIRE(m.Stop().ok());
}

}  // namespace
}  // namespace poolfs::core::txg
