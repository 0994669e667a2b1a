// The executors: every task runs, strands are exclusive and ordered, and
// different strands run in parallel on the thread pool.
#include "txg/thread_pool_executor.h"

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "txg/inline_executor.h"
#include "txg_test_util.h"

namespace poolfs::core::txg {
namespace {

using testing::Eventually;

TEST_CASE("InlineExecutor runs every task in order on the calling thread") {
  InlineExecutor ex;
  std::vector<int> order;
  std::vector<StrandTask> tasks;
  const std::thread::id me = std::this_thread::get_id();
  bool elsewhere = false;
  for (int i = 0; i < 10; i++) {
    tasks.push_back({size_t(i % 3), [&, i] {
                       order.push_back(i);
                       if (std::this_thread::get_id() != me) elsewhere = true;
                     }});
  }
  ex.Run(std::move(tasks));
  REQUIRE(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  REQUIRE_FALSE(elsewhere);
}

TEST_CASE("ThreadPoolExecutor runs every task, run after run") {
  ThreadPoolExecutor ex(3);
  REQUIRE(ex.threads() == 3);
  std::atomic<int> ran{0};
  for (int round = 0; round < 20; round++) {
    std::vector<StrandTask> tasks;
    for (int i = 0; i < 100; i++) tasks.push_back({size_t(i % 7), [&] { ran++; }});
    ex.Run(std::move(tasks));
    REQUIRE(ran.load() == 100 * (round + 1));  // Run returned only when all were done
  }
  ex.Run({});  // nothing to do
  REQUIRE(ran.load() == 2000);
}

TEST_CASE("ThreadPoolExecutor runs a strand's tasks one at a time, in submission order") {
  constexpr size_t kStrands = 6;
  ThreadPoolExecutor ex(4);
  ex.BeginSync(kStrands);
  std::array<std::atomic<bool>, kStrands> in_use{};
  std::array<std::atomic<int>, kStrands> next{};
  std::atomic<int> overlaps{0};
  std::atomic<int> out_of_order{0};
  std::vector<StrandTask> tasks;
  std::array<int, kStrands> submitted{};
  for (int i = 0; i < 3000; i++) {
    const size_t s = (i * 7 + i / 5) % kStrands;
    const int seq = submitted[s]++;
    tasks.push_back({s, [&, s, seq] {
                       if (in_use[s].exchange(true)) overlaps++;
                       if (next[s].load() != seq) out_of_order++;
                       next[s].store(seq + 1);
                       if (seq % 16 == 0) std::this_thread::yield();
                       in_use[s].store(false);
                     }});
  }
  ex.Run(std::move(tasks));
  REQUIRE(overlaps.load() == 0);
  REQUIRE(out_of_order.load() == 0);
  for (size_t s = 0; s < kStrands; s++) REQUIRE(next[s].load() == submitted[s]);
}

TEST_CASE("ThreadPoolExecutor runs different strands in parallel") {
  ThreadPoolExecutor ex(2);
  ex.BeginSync(2);
  // Each task waits (boundedly) to see the other running: only possible if
  // both strands are running at once.
  std::atomic<bool> a_running{false};
  std::atomic<bool> b_running{false};
  std::atomic<bool> a_saw_b{false};
  std::atomic<bool> b_saw_a{false};
  std::vector<StrandTask> tasks;
  tasks.push_back({0, [&] {
                     a_running = true;
                     a_saw_b = Eventually([&] { return b_running.load(); });
                   }});
  tasks.push_back({1, [&] {
                     b_running = true;
                     b_saw_a = Eventually([&] { return a_running.load(); });
                   }});
  ex.Run(std::move(tasks));
  REQUIRE(a_saw_b.load());
  REQUIRE(b_saw_a.load());
}

}  // namespace
}  // namespace poolfs::core::txg
