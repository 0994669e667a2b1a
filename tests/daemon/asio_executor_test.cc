// AsioExecutor: strands are honoured, every task runs once, Run returns only
// when all are done, and the executor survives repeated syncs and
// destruction while idle. Run these under TSan too (build-*-tsan).
#include "daemon/asio_executor.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace poolfs::daemon {
namespace {

TEST_CASE("AsioExecutor runs every task exactly once before Run returns") {
  const size_t threads = GENERATE(1, 2, 4);
  const size_t strands = GENERATE(1, 3, 8);
  AsioExecutor ex(threads, strands);
  constexpr size_t kTasks = 2000;
  std::vector<std::atomic<int>> runs(kTasks);
  std::vector<StrandTask> tasks;
  for (size_t i = 0; i < kTasks; i++)
    tasks.push_back({i % 11, [&runs, i] { runs[i].fetch_add(1, std::memory_order_relaxed); }});
  ex.Run(std::move(tasks));
  // No synchronization beyond Run's return: a task still running would show
  // here as a 0 (and as a race under TSan).
  for (size_t i = 0; i < kTasks; i++) {
    INFO("task " << i);
    REQUIRE(runs[i].load(std::memory_order_relaxed) == 1);
  }
}

TEST_CASE("AsioExecutor never runs two tasks of one strand at once") {
  constexpr size_t kStrands = 3;
  AsioExecutor ex(/*threads=*/4, kStrands);
  // Per strand: a plain counter the tasks increment without a lock (a data
  // race under TSan if two of them overlapped) and an in-progress flag.
  std::vector<uint64_t> plain(kStrands, 0);
  std::vector<std::atomic<bool>> busy(kStrands);
  std::atomic<int> overlaps{0};
  std::vector<StrandTask> tasks;
  constexpr size_t kPerStrand = 500;
  for (size_t i = 0; i < kPerStrand * kStrands; i++) {
    const size_t s = i % kStrands;
    tasks.push_back({s, [&, s] {
                       if (busy[s].exchange(true)) overlaps++;
                       for (int k = 0; k < 100; k++) plain[s]++;
                       std::this_thread::yield();
                       busy[s].store(false);
                     }});
  }
  ex.Run(std::move(tasks));
  CHECK(overlaps.load() == 0);
  for (size_t s = 0; s < kStrands; s++) CHECK(plain[s] == kPerStrand * 100);
}

TEST_CASE("AsioExecutor maps strand numbers past its strand count onto its strands") {
  AsioExecutor ex(2, 2);
  uint64_t plain = 0;  // strands 0, 2, 4, ... are one strand: no race
  std::vector<StrandTask> tasks;
  for (size_t i = 0; i < 400; i++) tasks.push_back({2 * i, [&plain] { plain++; }});
  ex.Run(std::move(tasks));
  CHECK(plain == 400);
}

TEST_CASE("AsioExecutor runs tasks of different strands in parallel") {
  AsioExecutor ex(2, 2);
  // The task on strand 0 waits for the one on strand 1: it can only finish
  // if both run at once. The wait is bounded so a broken executor fails
  // instead of hanging (the bound is far beyond any scheduling delay).
  std::mutex mu;
  std::condition_variable cv;
  bool second_ran = false;
  bool saw_second = false;
  ex.Run({{0,
           [&] {
             std::unique_lock<std::mutex> lock(mu);
             saw_second = cv.wait_for(lock, std::chrono::seconds(60), [&] { return second_ran; });
           }},
          {1, [&] {
             std::lock_guard<std::mutex> lock(mu);
             second_ran = true;
             cv.notify_all();
           }}});
  CHECK(saw_second);
}

TEST_CASE("AsioExecutor serves repeated syncs from the same threads") {
  AsioExecutor ex(0, 4);  // 0: one thread per strand
  CHECK(ex.threads() == 4);
  CHECK(ex.strands() == 4);
  uint64_t total = 0;  // touched only by this thread between Runs
  for (int sync = 0; sync < 300; sync++) {
    std::vector<std::atomic<uint64_t>> per_strand(4);
    std::vector<StrandTask> tasks;
    const size_t n = size_t(sync % 17);  // includes empty syncs
    for (size_t i = 0; i < n; i++) tasks.push_back({i, [&per_strand, i] { per_strand[i % 4]++; }});
    ex.Run(std::move(tasks));
    uint64_t sum = 0;
    for (auto& c : per_strand) sum += c.load();
    REQUIRE(sum == n);
    total += sum;
  }
  CHECK(total > 0);
}

TEST_CASE("AsioExecutor releases what a task holds before Run returns") {
  AsioExecutor ex(2, 2);
  auto token = std::make_shared<int>(7);
  std::weak_ptr<int> watch = token;
  std::vector<StrandTask> tasks;
  tasks.push_back({0, [held = std::move(token)] { (void)held; }});
  ex.Run(std::move(tasks));
  CHECK(watch.expired());
}

TEST_CASE("AsioExecutor is destroyed cleanly while idle") {
  for (int i = 0; i < 20; i++) {
    AsioExecutor never_used(size_t(i % 4), size_t(i % 3));
    CHECK(never_used.threads() >= 1);
    CHECK(never_used.strands() >= 1);
  }
  AsioExecutor used(3, 2);
  std::atomic<int> n{0};
  used.Run({{0, [&n] { n++; }}, {1, [&n] { n++; }}});
  CHECK(n.load() == 2);
  used.Run({});
}

}  // namespace
}  // namespace poolfs::daemon
