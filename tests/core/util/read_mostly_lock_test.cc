// Tests of ReadMostlyLock (core/util/read_mostly_lock.h): readers share it,
// a writer excludes every reader and every other writer. Meant to run under
// TSan too (scripts/test.sh builds util_tests with -fsanitize=thread).
#include "util/read_mostly_lock.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "core/util/lock_test_util.h"

namespace poolfs::util {
namespace {

TEST_CASE("ReadMostlyLock lets readers on every stripe in at once", "[read_mostly_lock]") {
  ReadMostlyLock lock(3);
  testing::CheckReadersShare<ReadMostlyReader>(&lock, 6);  // two threads per stripe
}

TEST_CASE("ReadMostlyLock writer excludes readers and writers", "[read_mostly_lock]") {
  ReadMostlyLock lock;
  testing::CheckWriterExcludes<ReadMostlyWriter, ReadMostlyReader>(&lock, 6);
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
