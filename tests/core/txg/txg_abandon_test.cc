// TxgManager::Abandon: a txg holding half of a failed operation never
// syncs, and the manager stays suspended with the reason. No timing
// assertions: waits are bounded polls.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "txg/txg_manager.h"
#include "txg_test_util.h"

namespace poolfs::core::txg {
namespace {

using testing::Eventually;
using testing::Gate;
using testing::Quiet;
using testing::SyncRecorder;

bool Has(const Status& st, const std::string& what) {
  return st.message().find(what) != std::string::npos;
}

TEST_CASE("An abandoned txg never syncs, and every later change fails with the reason") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> first = m.Hold(0);
  m.Release(*first, 1);
  REQUIRE(m.WaitSynced(*first).ok());

  Result<Txg> t = m.Hold(0);
  REQUIRE(*t == Txg(2));
  Status st = m.Abandon(*t, Status::IOError("leaf 3 unreadable"));
  m.Release(*t, 100);
  REQUIRE(st.code() == StatusCode::kIOError);
  REQUIRE(Has(st, "pool suspended: an operation failed halfway in txg 2"));
  REQUIRE(Has(st, "leaf 3 unreadable"));
  REQUIRE(m.suspended().message() == st.message());

  Result<Txg> later = m.Hold(0);
  REQUIRE(later.status().code() == StatusCode::kIOError);
  REQUIRE(later.status().message() == st.message());
  REQUIRE(m.WaitSynced(*t).code() == StatusCode::kIOError);
  REQUIRE(m.Stop().code() == StatusCode::kIOError);
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
  REQUIRE(m.last_synced() == Txg(1));
}

TEST_CASE("A txg abandoned while it quiesces is not synced") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> t = m.Hold(0);
  Status waited;
  std::thread waiter([&] { waited = m.WaitSynced(*t); });
  // The waiter asks for the sync: the driver closes t and waits for the hold.
  REQUIRE(Eventually([&] { return m.open_txg() != *t; }));
  (void)m.Abandon(*t, Status::Corruption("checksum mismatch"));
  m.Release(*t, 10);
  waiter.join();
  REQUIRE(waited.code() == StatusCode::kIOError);
  REQUIRE(Has(waited, "checksum mismatch"));
  REQUIRE(m.Stop().code() == StatusCode::kIOError);
  REQUIRE(rec.started() == 0);
}

TEST_CASE("A sync already running when a later txg is abandoned completes") {
  SyncRecorder rec;
  Gate gate;
  rec.set_gate(&gate);
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> a = m.Hold(0);
  m.Release(*a, 1);
  m.Kick();
  REQUIRE(Eventually([&] { return rec.started() == 1; }));  // txg 1 syncs, held at the gate
  Result<Txg> b = m.Hold(0);
  REQUIRE(*b == Txg(2));
  (void)m.Abandon(*b, Status::IOError("gone"));
  m.Release(*b, 1);
  gate.Open();
  REQUIRE(m.WaitSynced(*a).ok());  // txg 1 held nothing of the failed operation
  REQUIRE(m.WaitSynced(*b).code() == StatusCode::kIOError);
  REQUIRE(m.Stop().code() == StatusCode::kIOError);
  REQUIRE(rec.synced() == std::vector<uint64_t>{1});
}

TEST_CASE("The first suspension's reason is the one kept") {
  SyncRecorder rec;
  TxgManager m(Txg(1), rec.Fn(), Quiet());
  m.Start();
  Result<Txg> x = m.Hold(0);
  Result<Txg> y = m.Hold(0);
  Status first = m.Abandon(*x, Status::IOError("first cause"));
  Status second = m.Abandon(*y, Status::IOError("second cause"));
  m.Release(*x, 1);
  m.Release(*y, 1);
  REQUIRE(Has(first, "first cause"));
  REQUIRE(second.message() == first.message());
  REQUIRE(Has(m.Stop(), "first cause"));
  REQUIRE(rec.started() == 0);
}

}  // namespace
}  // namespace poolfs::core::txg
