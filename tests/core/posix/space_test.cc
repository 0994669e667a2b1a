// Space that tells the truth: what files cost, and that deleting them gives
// the space back. The figures are printed; the bounds are the pool's
// promises (README), not timings.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

// The pool's allocated bytes once every free has come back: the txgs that
// hold deferred frees sync on their own on an idle pool.
uint64_t SettledAllocated(Filesystem& fs, uint64_t dir) {
  REQUIRE(fs.Fsync(dir, false).ok());
  for (int i = 0; i < 3000; i++) {  // a bound against hanging, not a timing assertion
    const FsStatus s = fs.GetStatus();
    if (s.space_deferred == 0) return s.space_allocated;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("deferred frees never came back");
  return 0;
}

TEST_CASE("Creating and deleting 200,000 files leaves the pool as it was, give or take 2 MiB",
          "[posix][space][single-threaded]") {
  FsFixture f(uint64_t{512} << 20);
  const uint64_t dir = f.MustMkdir(kRootIno, "many").ino;
  const uint64_t fresh = SettledAllocated(*f.fs, dir);
  constexpr int kFiles = 200000;
  for (int i = 0; i < kFiles; i++) {
    auto a = f.fs->Create(RootCreds(), dir, "f" + std::to_string(i), 0644);
    REQUIRE(a.ok());
    f.fs->Forget(a->ino, 1);
  }
  const uint64_t full = SettledAllocated(*f.fs, dir);
  for (int i = 0; i < kFiles; i++) {
    Status st = f.fs->Unlink(RootCreds(), dir, "f" + std::to_string(i));
    if (!st.ok()) FAIL("f" << i << ": " << st.ToString());
  }
  const uint64_t after = SettledAllocated(*f.fs, dir);
  f.Remount();
  const uint64_t remounted = SettledAllocated(*f.fs, dir);
  std::printf(
      "space: fresh %.2f MiB, with %d empty files %.2f MiB, after deleting them %.2f MiB "
      "(+%.2f MiB; %.2f MiB after a remount; target at most +2 MiB)\n",
      double(fresh) / (1 << 20), kFiles, double(full) / (1 << 20), double(after) / (1 << 20),
      (double(after) - double(fresh)) / (1 << 20), double(remounted) / (1 << 20));
  REQUIRE(f.List(dir).empty());
  REQUIRE(after <= fresh + (uint64_t{2} << 20));
  REQUIRE(remounted <= fresh + (uint64_t{2} << 20));
}

}  // namespace
}  // namespace poolfs::core::posix::testing
