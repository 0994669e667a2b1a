// poolfs-bench pool: sequential write throughput through transactions and
// txg sync into a file-backed pool, against plain pwrite + fdatasync to a
// file beside it, in the same run.
//
// Each run writes `--mib` MiB of incompressible data: into one object of a
// fresh pool in 1 MiB transactions, timed until the txg holding the last
// write has synced (so every byte is durable); and into a plain file with
// 1 MiB pwrites and one fdatasync at the end. Runs alternate between the two;
// the medians and their ratio are printed.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "pool/pool.h"
#include "util/check.h"

namespace poolfs::bench {
namespace {

constexpr size_t kChunk = 1 << 20;

std::vector<std::string> RandomChunks(size_t n) {
  std::mt19937_64 rng(42);
  std::vector<std::string> chunks(n, std::string(kChunk, '\0'));
  for (auto& c : chunks) {
    auto* p = reinterpret_cast<uint64_t*>(c.data());
    for (size_t i = 0; i < kChunk / 8; i++) p[i] = rng();
  }
  return chunks;
}

double PoolRun(const std::string& dir, uint64_t mib, const std::vector<std::string>& chunks,
               uint32_t allocators, uint64_t dirty_max_mib, uint64_t writeback_kib,
               bool direct_writes) {
  std::string path = dir + "/bench.pool";
  std::filesystem::remove(path);
  core::pool::CreateOptions co;
  co.name = "bench";
  POOLFS_CHECK(core::pool::Pool::Create({path}, (mib * 3 + 1024) << 20, co).ok());
  core::pool::PoolOptions po;
  po.space.allocators = allocators;
  if (dirty_max_mib) po.txg.dirty_max_bytes = dirty_max_mib << 20;
  po.vdev.writeback_bytes = writeback_kib << 10;
  po.vdev.direct_writes = direct_writes;
  auto pool = core::pool::Pool::Import({path}, po);
  POOLFS_CHECK(pool.ok());
  core::dmu::ObjectSet* os = (*pool)->root_dataset();
  ObjectId id;
  {
    core::dmu::Tx tx((*pool)->assigner());
    POOLFS_CHECK(tx.Assign().ok());
    id = *os->Create(tx, core::dmu::ObjectType::kPlain);
    tx.Commit();
  }
  POOLFS_CHECK((*pool)->WaitSynced().ok());
  double t0 = NowSeconds();
  for (uint64_t i = 0; i < mib; i++) {
    core::dmu::Tx tx((*pool)->assigner());
    POOLFS_CHECK(tx.Assign(kChunk).ok());
    POOLFS_CHECK(os->Write(tx, id, i * kChunk, chunks[i % chunks.size()]).ok());
    tx.Commit();
  }
  POOLFS_CHECK((*pool)->WaitSynced().ok());
  double s = NowSeconds() - t0;
  POOLFS_CHECK((*pool)->Export().ok());
  std::filesystem::remove(path);
  return double(mib) / s;
}

double RawRun(const std::string& dir, uint64_t mib, const std::vector<std::string>& chunks) {
  std::string path = dir + "/bench.raw";
  std::filesystem::remove(path);
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  POOLFS_CHECK_GE(fd, 0);
  double t0 = NowSeconds();
  for (uint64_t i = 0; i < mib; i++) {
    const std::string& c = chunks[i % chunks.size()];
    POOLFS_CHECK_EQ(::pwrite(fd, c.data(), c.size(), off_t(i * kChunk)), ssize_t(c.size()));
  }
  POOLFS_CHECK_EQ(::fdatasync(fd), 0);
  double s = NowSeconds() - t0;
  ::close(fd);
  std::filesystem::remove(path);
  return double(mib) / s;
}

}  // namespace

int RunPoolBench(int argc, char** argv) {
  CLI::App app("poolfs-bench pool: writes through the pool vs pwrite+fdatasync");
  std::string dir = "/var/tmp";
  uint64_t mib = 1024;
  int runs = 3;
  uint32_t allocators = 0;
  uint64_t dirty_max_mib = 0;
  uint64_t writeback_kib = core::pool::PoolOptions().vdev.writeback_bytes >> 10;
  bool direct_writes = core::pool::PoolOptions().vdev.direct_writes;
  bool json = false;
  app.add_option("--dirty-max-mib", dirty_max_mib, "txg.dirty_max_bytes in MiB (0: the default)");
  app.add_option("--writeback-kib", writeback_kib,
                 "vdev.writeback_bytes in KiB (0: the flush at the end of each sync writes back); "
                 "it applies to buffered writes only, see --direct-writes");
  app.add_option("--direct-writes", direct_writes,
                 "vdev.direct_writes: write blocks with O_DIRECT (true) or buffered (false)");
  app.add_option("--dir", dir, "where the pool file and the raw file go (the same disk)");
  app.add_option("--mib", mib, "MiB written per run");
  app.add_option("--runs", runs, "runs of each (the median is reported)");
  app.add_option("--allocators", allocators, "alloc.allocators (0: from the core count)");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  // Distinct chunks, more than any cache of recent blocks would hold.
  std::vector<std::string> chunks = RandomChunks(64);
  std::vector<double> pool_rates, raw_rates;
  for (int r = 0; r < runs; r++) {
    raw_rates.push_back(RawRun(dir, mib, chunks));
    pool_rates.push_back(
        PoolRun(dir, mib, chunks, allocators, dirty_max_mib, writeback_kib, direct_writes));
  }
  double pool = Median(pool_rates), raw = Median(raw_rates);
  if (json) {
    Json o;
    o["mib"] = mib;
    o["write_mib_s"] = pool;
    o["raw_mib_s"] = raw;
    o["ratio"] = pool / raw;
    return PrintJson(o);
  }
  std::printf("%llu MiB of incompressible data, 1 MiB per transaction / pwrite, in %s\n",
              (unsigned long long)mib, dir.c_str());
  std::printf("%-32s %10s\n", "", "MiB/s");
  std::printf("%-32s %10.0f\n", "poolfs (tx + txg sync, durable)", pool);
  std::printf("%-32s %10.0f\n", "pwrite + fdatasync", raw);
  std::printf("ratio: %.2f (medians of %d runs each)\n", pool / raw, runs);
  return 0;
}

}  // namespace poolfs::bench
