// The create path in process: N threads, each in its own directory, do what
// the kernel asks of a createmany -o run (a Lookup that finds nothing, then
// a Create), against PosixFs and against an in-memory baseline (a map per
// directory under its own mutex: what an in-memory FUSE filesystem does
// per create), and print creates/s and the ratio. Hidden (ctest skips it):
//   build/bin/posix_tests "[bench]"
// Environment: POSIX_BENCH_FILES (total per run, default 200000),
// POSIX_BENCH_THREADS (comma list, default "1,32").
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

struct Figures {
  double wall_s = 0;
  double cpu_s = 0;
};

double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

template <typename Fn>
Figures RunThreads(int threads, Fn fn) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      ready++;
      while (!go.load()) std::this_thread::yield();
      fn(t);
    });
  while (ready.load() < threads) std::this_thread::yield();
  const double cpu0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  go = true;
  for (auto& t : ts) t.join();
  Figures f;
  f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f.cpu_s = CpuSeconds() - cpu0;
  return f;
}

// The baseline: one map per directory, each under its own mutex.
struct MemDir {
  std::mutex mu;
  std::unordered_map<std::string, uint64_t> names;
};

std::vector<int> ThreadCounts() {
  std::vector<int> out;
  const char* env = getenv("POSIX_BENCH_THREADS");
  std::stringstream ss(env ? env : "1,32");
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

TEST_CASE("Create rate in process against an in-memory baseline", "[.][bench]") {
  const char* env = getenv("POSIX_BENCH_FILES");
  const int total = env ? std::atoi(env) : 200000;
  for (int threads : ThreadCounts()) {
    const int per = total / threads;
    // Baseline.
    std::vector<MemDir> dirs(threads);
    std::atomic<uint64_t> next_ino{100};
    Figures base = RunThreads(threads, [&](int t) {
      for (int i = 0; i < per; i++) {
        std::string name = "f" + std::to_string(i);
        std::lock_guard<std::mutex> l(dirs[t].mu);
        if (dirs[t].names.count(name)) std::abort();
        dirs[t].names.emplace(name, next_ino++);
      }
    });
    // PosixFs on a pool file.
    MountOptions o;
    o.tunables.space.allocators = 2;
    FsFixture f(uint64_t{4} << 30, o);
    std::vector<uint64_t> dir_ino(threads);
    for (int t = 0; t < threads; t++)
      dir_ino[t] = f.MustMkdir(kRootIno, "t" + std::to_string(t)).ino;
    std::atomic<int> errors{0};
    Figures fs = RunThreads(threads, [&](int t) {
      const Creds c = RootCreds();
      for (int i = 0; i < per; i++) {
        std::string name = "f" + std::to_string(i);
        auto l = f.fs->Lookup(c, dir_ino[t], name);
        if (l.ok() || !l.status().IsNotFound()) errors++;
        if (!f.fs->Create(c, dir_ino[t], name, 0644).ok()) errors++;
      }
    });
    REQUIRE(errors.load() == 0);
    const int done = per * threads;
    auto st = f.fs->GetStatus();
    std::printf(
        "threads %2d  files %d  baseline %9.0f creates/s (cpu %.2fs)  poolfs %8.0f creates/s "
        "(cpu %.2fs, %.1f us cpu/create)  ratio %.3f  txgs synced %llu\n",
        threads, done, done / base.wall_s, base.cpu_s, done / fs.wall_s, fs.cpu_s,
        fs.cpu_s * 1e6 / done, base.wall_s / fs.wall_s, (unsigned long long)st.syncs);
    std::fflush(stdout);
    auto t0 = std::chrono::steady_clock::now();
    f.Unmount();
    std::printf("  unmount (final sync of %d files) %.2fs\n", done,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

}  // namespace
}  // namespace poolfs::core::posix::testing
