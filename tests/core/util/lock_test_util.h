// Checks shared by the tests of the reader-writer locks (SharedMutex in
// util/mutex.h, ReadMostlyLock): readers share one, a writer excludes every
// reader and every other writer. `Reader` and `Writer` are the lock's
// scoped holders, constructed from a pointer to it.
#pragma once

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace poolfs::util::testing {

// `readers` threads take the lock shared and wait (bounded, so that a lock
// that does not share fails instead of hanging) until all are inside at the
// same time.
template <typename Reader, typename Lock>
void CheckReadersShare(Lock* lock, int readers) {
  std::atomic<int> inside{0}, saw_all{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < readers; t++) {
    ts.emplace_back([&] {
      Reader r(lock);
      inside.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (inside.load() < readers && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      if (inside.load() == readers) saw_all.fetch_add(1);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(saw_all.load() == readers);
}

// `threads` threads (at least 2) take the lock 3000 times each: the first
// two write every tenth time (keeping a == b, with a yield between the two
// increments), every other time they read and check that no writer is
// inside and a == b.
template <typename Writer, typename Reader, typename Lock>
void CheckWriterExcludes(Lock* lock, int threads) {
  uint64_t a = 0, b = 0;  // guarded by *lock
  std::atomic<int> writers_inside{0};
  std::atomic<bool> broken{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 3000; i++) {
        if (t < 2 && i % 10 == 0) {
          Writer w(lock);
          if (writers_inside.fetch_add(1) != 0) broken = true;
          a++;
          std::this_thread::yield();
          b++;
          writers_inside.fetch_sub(1);
        } else {
          Reader r(lock);
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

}  // namespace poolfs::util::testing
