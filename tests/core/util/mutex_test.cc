// Tests of SharedMutex (core/util/mutex.h): readers share it, a writer
// excludes everyone, and a waiting writer holds new readers back. Meant to
// run under TSan too (scripts/test.sh builds util_tests with
// -fsanitize=thread).
#include "util/mutex.h"

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "core/util/lock_test_util.h"

namespace poolfs::util {
namespace {

// Waits (at most 20 s) until thread `tid` (once known) sleeps: blocked, for
// a thread that does nothing but take a lock. False when it never did, or
// ended.
bool WaitAsleep(const std::atomic<pid_t>& tid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (tid.load() != 0) {
      std::ifstream f("/proc/self/task/" + std::to_string(tid.load()) + "/stat");
      std::string stat;
      if (!std::getline(f, stat)) return false;  // it ended
      const size_t paren = stat.rfind(')');
      if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'S')
        return true;
    }
    std::this_thread::yield();
  }
  return false;
}

TEST_CASE("SharedMutex lets readers in together", "[mutex]") {
  SharedMutex mu;
  testing::CheckReadersShare<ReaderLock>(&mu, 4);
}

TEST_CASE("SharedMutex writer excludes readers and writers", "[mutex]") {
  SharedMutex mu;
  testing::CheckWriterExcludes<WriterLock, ReaderLock>(&mu, 4);
  bool free_again = false;
  if (mu.TryLock()) {
    free_again = true;
    mu.Unlock();
  }
  CHECK(free_again);
}

TEST_CASE("SharedMutex holds new readers back while a writer waits", "[mutex]") {
  SharedMutex mu;
  mu.LockShared();
  CHECK_FALSE(mu.TryLock());
  std::atomic<pid_t> writer_tid{0}, reader_tid{0};
  std::atomic<int> order{0}, writer_at{0}, reader_at{0};
  std::thread writer([&] {
    writer_tid = gettid();
    WriterLock w(&mu);
    writer_at = ++order;
  });
  CHECK(WaitAsleep(writer_tid));  // waiting for the reader above
  std::thread reader([&] {
    reader_tid = gettid();
    ReaderLock r(&mu);
    reader_at = ++order;
  });
  // With readers first, it would be in at once (and gone).
  CHECK(WaitAsleep(reader_tid));
  CHECK(order.load() == 0);
  mu.UnlockShared();
  writer.join();
  reader.join();
  CHECK(writer_at.load() == 1);
  CHECK(reader_at.load() == 2);
}

}  // namespace
}  // namespace poolfs::util
