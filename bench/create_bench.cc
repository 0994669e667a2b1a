// poolfs-bench create: file creates per second in process (no FUSE), through
// the same Filesystem calls the FUSE adapter makes, for one object
// allocation policy (dmu.metadnode_backfill).
//
// A fresh pool in a file; T threads, each creating files in its own
// directory (as `createmany -t T -D DIR` does), N files in all; txg sync
// runs as in a mount (txg.timeout_ms, dirty data). Each create is a ZPL
// create: a new object, its attributes, and the directory entry; the lookup
// reference it takes is dropped at once (as the kernel's FORGET would,
// later). The clock stops when the last create returned (the pool then
// syncs, untimed). With --churn: create N, remove a random half, create
// N/2 again; the rate reported is the second create phase's and the density
// is the one at the end (live objects / (highest object id + 1)).
//
// Prints mode, creates_per_s, failed_holds, density (and more with --json).
// Compare modes in one invocation (--backfill auto,off,legacy): runs
// alternate between modes, and the medians are reported with their ratios
// to the first mode given.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "poolfs/fs.h"
#include "poolfs/pool_admin.h"

namespace poolfs::bench {
namespace {

struct RunResult {
  double creates_per_s = 0;
  FsStatus status;
};

void Die(const Status& st, const char* what) {
  std::fprintf(stderr, "poolfs-bench create: %s: %s\n", what, st.ToString().c_str());
  std::exit(1);
}

// Creates files [first, first + count) spread over the threads' directories
// and returns the seconds it took.
double CreatePhase(Filesystem* fs, const std::vector<uint64_t>& dirs, uint64_t first,
                   uint64_t count, std::vector<std::vector<std::string>>* names) {
  const size_t threads = dirs.size();
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  std::atomic<int> ready{0};
  for (size_t t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      Creds c;
      std::vector<std::string> mine;
      ready++;
      while (!go.load()) std::this_thread::yield();
      for (uint64_t i = first + t; i < first + count; i += threads) {
        std::string name = "f" + std::to_string(i);
        auto a = fs->Create(c, dirs[t], name, 0644);
        if (!a.ok()) Die(a.status(), ("create " + name).c_str());
        fs->Forget(a->ino, 1);
        mine.push_back(std::move(name));
      }
      (*names)[t].insert((*names)[t].end(), mine.begin(), mine.end());
    });
  }
  while (ready.load() < int(threads)) std::this_thread::yield();
  const double t0 = NowSeconds();
  go = true;
  for (auto& w : workers) w.join();
  return NowSeconds() - t0;
}

RunResult OneRun(const std::string& dir, const std::string& mode, int threads, uint64_t count,
                 bool churn, uint64_t seed) {
  const std::string path = dir + "/create-bench.pool";
  std::filesystem::remove(path);
  CreatePoolOptions co;
  co.name = "bench";
  co.force = true;
  Status st = CreatePool({path}, 8ull << 30, co);
  if (!st.ok()) Die(st, "create pool");
  MountOptions mo;
  mo.metadnode_backfill = mode;
  auto fs = Filesystem::Mount({path}, mo);
  if (!fs.ok()) Die(fs.status(), "mount");
  Creds root;
  std::vector<uint64_t> dirs;
  for (int t = 0; t < threads; t++) {
    auto d = (*fs)->Mkdir(root, kRootIno, "t" + std::to_string(t), 0755);
    if (!d.ok()) Die(d.status(), "mkdir");
    dirs.push_back(d->ino);
  }
  std::vector<std::vector<std::string>> names(static_cast<size_t>(threads));
  double secs = CreatePhase(fs->get(), dirs, 0, count, &names);
  RunResult r;
  r.creates_per_s = double(count) / secs;
  if (churn) {
    // Remove a random half, then create as many again.
    std::mt19937_64 rng(seed);
    uint64_t removed = 0;
    for (size_t t = 0; t < names.size(); t++) {
      std::shuffle(names[t].begin(), names[t].end(), rng);
      const size_t half = names[t].size() / 2;
      for (size_t i = 0; i < half; i++) {
        st = (*fs)->Unlink(root, dirs[t], names[t][i]);
        if (!st.ok()) Die(st, "unlink");
        removed++;
      }
      names[t].erase(names[t].begin(), names[t].begin() + half);
    }
    // Let the frees reach a synced txg, as they would between the phases
    // of a real run (and as the policy needs to see them).
    for (int i = 0; i < 2; i++) {
      st = (*fs)->Fsync(kRootIno, false);
      if (!st.ok()) Die(st, "sync");
    }
    secs = CreatePhase(fs->get(), dirs, count, removed, &names);
    r.creates_per_s = double(removed) / secs;
  }
  r.status = (*fs)->GetStatus();
  st = (*fs)->Unmount();
  if (!st.ok()) Die(st, "unmount");
  std::filesystem::remove(path);
  return r;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int RunCreateBench(int argc, char** argv) {
  CLI::App app("poolfs-bench create: ZPL creates per second in process, per backfill mode");
  std::string modes = "auto";
  int threads = 8;
  uint64_t count = 200000;
  bool churn = false, json = false;
  int runs = 1;
  std::string dir = "/var/tmp";
  app.add_option("--backfill", modes, "mode(s): auto, on, off, legacy; a comma list compares");
  app.add_option("--threads", threads, "creating threads (one directory each)")
      ->check(CLI::Range(1, 256));
  app.add_option("--count", count, "files created (in all)")->check(CLI::Range(1, 100000000));
  app.add_flag("--churn", churn, "create N, remove a random half, create N/2; report phase 2");
  app.add_option("--runs", runs, "runs per mode (medians reported)")->check(CLI::Range(1, 50));
  app.add_option("--dir", dir, "where the pool file goes");
  app.add_flag("--json", json, "one JSON object per mode, then a ratios object");
  CLI11_PARSE(app, argc, argv);
  const std::vector<std::string> list = SplitList(modes);
  std::map<std::string, std::vector<double>> rates;
  std::map<std::string, RunResult> last;
  for (int run = 0; run < runs; run++) {
    for (const std::string& m : list) {
      RunResult r = OneRun(dir, m, threads, count, churn, uint64_t(run) + 1);
      rates[m].push_back(r.creates_per_s);
      last[m] = r;
    }
  }
  const double base = Median(rates[list.front()]);
  for (const std::string& m : list) {
    const FsStatus& s = last[m].status;
    const double rate = Median(rates[m]);
    if (json) {
      JsonObject o;
      o.Add("mode", m);
      o.Add("threads", uint64_t(threads));
      o.Add("count", count);
      o.Add("churn", std::string(churn ? "yes" : "no"));
      o.Add("runs", uint64_t(runs));
      o.Add("creates_per_s", rate);
      o.Add("failed_holds", s.failed_holds);
      o.Add("density", s.density);
      o.Add("objects_reused", s.objects_reused);
      o.Add("object_high_water", s.object_high_water);
      o.Add("dnode_blocks_in_use", s.dnode_blocks_in_use);
      if (m != list.front()) o.Add("ratio_to_" + list.front(), rate / base);
      std::printf("%s\n", o.ToString().c_str());
    } else {
      std::printf(
          "%-7s %10.0f creates/s  failed_holds %-10llu density %.3f  reused %llu  "
          "high-water %llu  dnode blocks %llu",
          m.c_str(), rate, (unsigned long long)s.failed_holds, s.density,
          (unsigned long long)s.objects_reused, (unsigned long long)s.object_high_water,
          (unsigned long long)s.dnode_blocks_in_use);
      if (m != list.front()) std::printf("  (%.2fx %s)", rate / base, list.front().c_str());
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace poolfs::bench
