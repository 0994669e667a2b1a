// Tests of ReadMostlyLock (core/util/read_mostly_lock.h): readers share it,
// a writer excludes every reader and every other writer. Meant to run under
// TSan too (scripts/test.sh builds util_tests with -fsanitize=thread).
#include "util/read_mostly_lock.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

namespace poolfs::util {
namespace {

TEST_CASE("ReadMostlyLock lets readers on every stripe in at once", "[read_mostly_lock]") {
  ReadMostlyLock lock(3);
  constexpr int kReaders = 6;  // two threads per stripe
  std::atomic<int> inside{0};
  std::atomic<int> saw_all{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kReaders; t++) {
    ts.emplace_back([&] {
      ReadMostlyReader r(&lock);
      inside.fetch_add(1);
      // Wait (bounded, so a broken lock fails instead of hanging) until every
      // reader is inside at the same time.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (inside.load() < kReaders && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      if (inside.load() == kReaders) saw_all.fetch_add(1);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(saw_all.load() == kReaders);
}

TEST_CASE("ReadMostlyLock writer excludes readers and writers", "[read_mostly_lock]") {
  ReadMostlyLock lock;
  // Guarded by `lock`: a writer keeps a == b; readers check it.
  uint64_t a = 0, b = 0;
  std::atomic<int> writers_inside{0};
  std::atomic<bool> broken{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 6; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 3000; i++) {
        if (t < 2 && i % 10 == 0) {
          ReadMostlyWriter w(&lock);
          if (writers_inside.fetch_add(1) != 0) broken = true;
          a++;
          std::this_thread::yield();
          b++;
          writers_inside.fetch_sub(1);
        } else {
          ReadMostlyReader r(&lock);
          if (writers_inside.load() != 0 || a != b) broken = true;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK_FALSE(broken.load());
  CHECK(a == 2 * 300);
  CHECK(b == a);
}

TEST_CASE("ReadMostlyLock with one stripe still shares between readers", "[read_mostly_lock]") {
  ReadMostlyLock lock(1);
  CHECK(lock.stripes() == 1);
  lock.ReadLock();
  std::atomic<bool> got{false};
  std::thread other([&] {
    ReadMostlyReader r(&lock);
    got = true;
  });
  other.join();
  lock.ReadUnlock();
  CHECK(got.load());
}

}  // namespace
}  // namespace poolfs::util
