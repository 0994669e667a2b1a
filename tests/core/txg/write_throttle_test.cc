// The throttle curve and the option checks, as pure functions: no clocks.
#include "txg/write_throttle.h"

#include <catch2/catch.hpp>

#include <vector>

namespace poolfs::core::txg {
namespace {

TxgOptions SmallMax() {
  TxgOptions o;
  o.dirty_max_bytes = 1000;
  o.delay_min_dirty_percent = 60;  // min = 600
  o.delay_scale_ns = 500000;
  o.delay_max_ns = 100000000;
  return o;
}

TEST_CASE("ThrottleDelayNs is zero up to the delay minimum") {
  const TxgOptions o = SmallMax();
  REQUIRE(DelayMinBytes(o) == 600);
  REQUIRE(ThrottleDelayNs(0, o) == 0);
  REQUIRE(ThrottleDelayNs(599, o) == 0);
  REQUIRE(ThrottleDelayNs(600, o) == 0);
  REQUIRE(ThrottleDelayNs(601, o) > 0);
}

TEST_CASE("ThrottleDelayNs is the scale halfway between the minimum and the max") {
  const TxgOptions o = SmallMax();
  REQUIRE(ThrottleDelayNs(800, o) == 500000);
  // A quarter of the way: (700-600)/(1000-700) of the scale.
  REQUIRE(ThrottleDelayNs(700, o) == 500000 * 100 / 300);
  // Three quarters: 3x the scale.
  REQUIRE(ThrottleDelayNs(900, o) == 1500000);
}

TEST_CASE("ThrottleDelayNs rises steadily and is capped at delay_max_ns") {
  const TxgOptions o = SmallMax();
  uint64_t prev = 0;
  for (uint64_t d = 600; d <= 1000; d++) {
    const uint64_t delay = ThrottleDelayNs(d, o);
    REQUIRE(delay >= prev);
    REQUIRE(delay <= o.delay_max_ns);
    prev = delay;
  }
  // 500 us * 399 / 1 = 199.5 ms, capped at 100 ms.
  REQUIRE(ThrottleDelayNs(999, o) == o.delay_max_ns);
  REQUIRE(ThrottleDelayNs(1000, o) == o.delay_max_ns);
  REQUIRE(ThrottleDelayNs(5000, o) == o.delay_max_ns);
}

TEST_CASE("ThrottleDelayNs does not overflow with huge maxima") {
  TxgOptions o;
  o.dirty_max_bytes = uint64_t{1} << 62;
  o.delay_min_dirty_percent = 60;
  o.delay_scale_ns = uint64_t{1} << 40;
  o.delay_max_ns = ~uint64_t{0};
  const uint64_t min = DelayMinBytes(o);
  const uint64_t mid = min + (o.dirty_max_bytes - min) / 2;
  // At the midpoint (up to rounding) the delay is the scale, without wrap.
  const uint64_t delay = ThrottleDelayNs(mid, o);
  REQUIRE(delay >= (uint64_t{1} << 40) - 1);
  REQUIRE(delay <= (uint64_t{1} << 40) + 1);
}

TEST_CASE("A delay minimum of 100 percent never delays below the max") {
  TxgOptions o = SmallMax();
  o.delay_min_dirty_percent = 100;
  REQUIRE(ThrottleDelayNs(999, o) == 0);
}

TEST_CASE("SyncTriggerBytes is the sync percentage of the max") {
  TxgOptions o = SmallMax();
  REQUIRE(SyncTriggerBytes(o) == 200);
  o.dirty_max_bytes = uint64_t{1} << 30;
  REQUIRE(SyncTriggerBytes(o) == (uint64_t{1} << 30) / 5);
}

TEST_CASE("DelayWakeupNs queues each delay behind the previous one") {
  // Idle throttle: the delay starts now.
  REQUIRE(DelayWakeupNs(1000, 0, 50) == 1050);
  // A writer still delayed: this one waits behind it.
  REQUIRE(DelayWakeupNs(1000, 1200, 50) == 1250);

  // N writers arriving together get through one per delay, whatever N is.
  for (int writers : {1, 4, 64}) {
    uint64_t last = 0;
    std::vector<uint64_t> wakes;
    for (int i = 0; i < writers; i++) {
      last = DelayWakeupNs(1000, last, 50);
      wakes.push_back(last);
    }
    for (int i = 0; i < writers; i++) REQUIRE(wakes[i] == 1000 + 50 * uint64_t(i + 1));
  }
}

TEST_CASE("ValidateTxgOptions refuses out-of-range options and names the key") {
  REQUIRE(ValidateTxgOptions(TxgOptions{}).ok());
  TxgOptions o;
  o.dirty_sync_percent = 0;
  Status st = ValidateTxgOptions(o);
  REQUIRE(st.code() == StatusCode::kInvalidArgument);
  REQUIRE(st.message().find("txg.dirty_sync_percent") != std::string::npos);
  o = TxgOptions{};
  o.delay_min_dirty_percent = 101;
  REQUIRE(ValidateTxgOptions(o).message().find("txg.delay_min_dirty_percent") != std::string::npos);
  o = TxgOptions{};
  o.timeout_ms = 0;
  REQUIRE(ValidateTxgOptions(o).message().find("txg.timeout_ms") != std::string::npos);
  o = TxgOptions{};
  o.dirty_max_bytes = 0;
  REQUIRE(ValidateTxgOptions(o).message().find("txg.dirty_max_bytes") != std::string::npos);
}

}  // namespace
}  // namespace poolfs::core::txg
