// Space that tells the truth: what files cost, and that deleting them gives
// the space back. The figures are printed; the bounds are the pool's
// promises (README), not timings.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

// The pool's allocated bytes once every free has come back: the txgs that
// hold deferred frees sync on their own on an idle pool.
uint64_t SettledAllocated(Filesystem& fs, uint64_t dir) {
  const Status synced = fs.Fsync(dir, false);
  INFO(synced.ToString());
  REQUIRE(synced.ok());
  // A bound against hanging, not a timing assertion: two syncs of the
  // 5 s txgs below, on a machine busy with other tests, fit well within it.
  for (int i = 0; i < 12000; i++) {
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

TEST_CASE("A 4 KiB file costs at most 5 KiB of pool space", "[posix][space][single-threaded]") {
  FsFixture f(uint64_t{256} << 20);
  const uint64_t dir = f.MustMkdir(kRootIno, "small").ino;
  const uint64_t fresh = SettledAllocated(*f.fs, dir);
  constexpr int kFiles = 6000;
  std::string data(4096, '\0');
  for (int i = 0; i < kFiles; i++) {
    for (size_t k = 0; k < data.size(); k += 8) {
      const uint64_t v = uint64_t(i) * 0x9e3779b97f4a7c15ull + k * 0xbf58476d1ce4e5b9ull;
      std::memcpy(&data[k], &v, 8);  // incompressible
    }
    auto a = f.fs->Create(RootCreds(), dir, "f" + std::to_string(i), 0644);
    if (!a.ok()) FAIL("file " << i << ": " << a.status().ToString());
    f.MustWrite(a->ino, 0, data);
    f.fs->Forget(a->ino, 1);
  }
  const uint64_t full = SettledAllocated(*f.fs, dir);
  const double per_file = (double(full) - double(fresh)) / kFiles;
  std::printf("space: %d files of 4 KiB cost %.2f MiB, %.0f bytes each (target at most 5120)\n",
              kFiles, (double(full) - double(fresh)) / (1 << 20), per_file);
  REQUIRE(per_file <= 5120);
}

TEST_CASE("4 KiB files fill at least 80% of a 256 MiB pool before the first NoSpace",
          "[posix][space][single-threaded]") {
  // With the tests' short txgs, and with the default timeout, under which a
  // txg holds many more files' dirty data when the pool fills.
  const uint64_t timeout_ms = GENERATE(200, 5000);
  MountOptions o = FastOptions();
  o.tunables.txg.timeout_ms = timeout_ms;
  constexpr uint64_t kPoolSize = uint64_t{256} << 20;
  FsFixture f(kPoolSize, o);
  const uint64_t dir = f.MustMkdir(kRootIno, "fill").ino;
  std::string data(4096, '\0');
  uint64_t files = 0;
  std::string stopped;
  for (;; files++) {
    for (size_t k = 0; k < data.size(); k += 8) {
      const uint64_t v = files * 0x9e3779b97f4a7c15ull + k * 0xbf58476d1ce4e5b9ull;
      std::memcpy(&data[k], &v, 8);  // incompressible
    }
    auto a = f.fs->Create(RootCreds(), dir, "f" + std::to_string(files), 0644);
    if (!a.ok()) {
      if (a.status().code() != StatusCode::kNoSpace) FAIL(a.status().ToString());
      stopped = a.status().ToString();
      break;
    }
    auto w = f.fs->Write(RootCreds(), a->ino, 0, data);
    f.fs->Forget(a->ino, 1);
    if (!w.ok()) {
      if (w.status().code() != StatusCode::kNoSpace) FAIL(w.status().ToString());
      stopped = w.status().ToString();
      break;
    }
  }
  const uint64_t allocated = SettledAllocated(*f.fs, dir);
  const FsStatus s = f.fs->GetStatus();
  REQUIRE(s.state == "online");  // no sync failed for want of space
  std::printf(
      "space: txg timeout %llu ms: %llu files of 4 KiB before the first NoSpace: %.2f MiB "
      "allocated, %.1f%% of the pool's %llu MiB (%.1f%% of its %.2f MiB capacity), file data "
      "%.1f%% of the pool (target at least 80%%)\n  stopped by: %s\n",
      (unsigned long long)timeout_ms, (unsigned long long)files, double(allocated) / (1 << 20),
      100.0 * double(allocated) / double(kPoolSize), (unsigned long long)(kPoolSize >> 20),
      100.0 * double(allocated) / double(s.space_total), double(s.space_total) / (1 << 20),
      100.0 * double(files * 4096) / double(kPoolSize), stopped.c_str());
  REQUIRE(double(allocated) >= 0.8 * double(kPoolSize));
  // What is left still takes removals, and the space comes back.
  for (uint64_t i = 0; i < files; i += 2) {
    const Status st = f.fs->Unlink(RootCreds(), dir, "f" + std::to_string(i));
    if (!st.ok()) FAIL("unlink of f" << i << ": " << st.ToString());
  }
  REQUIRE(SettledAllocated(*f.fs, dir) < allocated);
  f.Remount();
}

}  // namespace
}  // namespace poolfs::core::posix::testing
