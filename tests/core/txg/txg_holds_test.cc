// TxgHolds: striped hold counts and batched dirty bytes.
#include "txg/txg_holds.h"

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

namespace poolfs::core::txg {
namespace {

TEST_CASE("TxgHolds joins land in the open txg and Close moves later joins on") {
  TxgHolds h(Txg(7));
  REQUIRE(h.open() == Txg(7));
  REQUIRE_FALSE(h.Held(Txg(7)));
  REQUIRE(h.Join() == Txg(7));
  REQUIRE(h.Held(Txg(7)));
  REQUIRE(h.Close() == Txg(7));
  REQUIRE(h.open() == Txg(8));
  REQUIRE_FALSE(h.Held(Txg(8)));
  REQUIRE(h.Join() == Txg(8));
  REQUIRE(h.Outstanding(Txg(7)) == 1);
  REQUIRE(h.Outstanding(Txg(8)) == 1);
  TxgHolds::LeaveResult r = h.Leave(Txg(7), 0);
  REQUIRE(r.txg_closed);
  REQUIRE(h.Outstanding(Txg(7)) == 0);
  r = h.Leave(Txg(8), 0);
  REQUIRE_FALSE(r.txg_closed);
}

TEST_CASE("TxgHolds counts a hold left on another thread than joined it") {
  TxgHolds h(Txg(1));
  std::vector<Txg> joined(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; i++) threads.emplace_back([&, i] { joined[i] = h.Join(); });
  for (auto& t : threads) t.join();
  REQUIRE(h.Outstanding(Txg(1)) == 8);
  h.Close();
  for (Txg t : joined) h.Leave(t, 10);  // all from this thread: one stripe goes negative
  REQUIRE(h.Outstanding(Txg(1)) == 0);
  REQUIRE(h.Seal(Txg(1)) == 80);
}

TEST_CASE("TxgHolds batches published bytes and Seal makes the totals exact") {
  TxgHolds h(Txg(1));
  h.set_publish_batch(1000);
  for (int i = 0; i < 5; i++) {
    const Txg t = h.Join();
    REQUIRE_FALSE(h.Leave(t, 10).published);
  }
  REQUIRE(h.dirty_total() == 0);  // gathered, not published yet
  REQUIRE(h.ExactDirtyTotal() == 50);
  const Txg t = h.Join();
  REQUIRE(h.Leave(t, 2000).published);
  REQUIRE(h.dirty_total() == 2050);
  REQUIRE(h.open_dirty() == 2050);

  const Txg t2 = h.Join();
  h.Leave(t2, 5);  // gathered
  h.Close();
  REQUIRE(h.open_dirty() == 0);
  REQUIRE(h.Seal(Txg(1)) == 2055);
  REQUIRE(h.dirty_total() == 2055);
  h.Retire(Txg(1), 2055);
  REQUIRE(h.dirty_total() == 0);
  REQUIRE(h.ExactDirtyTotal() == 0);
}

TEST_CASE("TxgHolds PublishAll publishes what the stripes gathered") {
  TxgHolds h(Txg(1));
  h.set_publish_batch(1 << 20);
  h.Leave(h.Join(), 300);
  REQUIRE(h.dirty_total() == 0);
  h.PublishAll();
  REQUIRE(h.dirty_total() == 300);
  REQUIRE(h.open_dirty() == 300);
}

TEST_CASE("TxgHolds reuses a slot cleanly after its txg retired") {
  TxgHolds h(Txg(1));
  for (uint64_t txg = 1; txg <= 3 * TxgHolds::kSlots; txg++) {
    REQUIRE(h.open() == Txg(txg));
    const Txg t = h.Join();
    h.Leave(t, txg);
    REQUIRE(h.Close() == Txg(txg));
    REQUIRE(h.Outstanding(Txg(txg)) == 0);
    REQUIRE(h.Seal(Txg(txg)) == txg);
    h.Retire(Txg(txg), txg);
    REQUIRE(h.dirty_total() == 0);
  }
}

TEST_CASE("TxgHolds refuses joins after Refuse") {
  TxgHolds h(Txg(1));
  REQUIRE(h.Join() == Txg(1));
  h.Refuse();
  REQUIRE(h.Join() == Txg(0));
  REQUIRE(h.Outstanding(Txg(1)) == 1);
}

}  // namespace
}  // namespace poolfs::core::txg
