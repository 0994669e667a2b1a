// Zap at scale: a directory of 200,000 entries (fat, external table) stays
// correct through sync and reopen. A hidden benchmark ([.bench]) measures
// insert and lookup rates for 1,000,000 entries; run it by hand:
//   build/bin/zap_tests "[.bench]"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;

std::string NameOf(uint64_t i) { return "file." + std::to_string(i * 2654435761u % 100000007u); }

TEST_CASE("Zap holds 200,000 entries in one directory across sync and reopen", "[zap][single-threaded]") {
  const uint64_t n = 200000;
  Fixture f(uint64_t{256} << 20);
  auto z = f.NewZap(dmu::ObjectType::kDirectory);
  const ObjectId id = z->id();
  for (uint64_t i = 0; i < n;) {
    auto tx = f.NewTx();
    for (uint64_t end = i + 20000; i < end; i++) REQUIRE(z->Add(*tx, NameOf(i), Value{i, 1}).ok());
    tx->Commit();
    f.Sync();
  }
  REQUIRE(z->Count() == n);
  const ZapShape shape = z->Shape();
  REQUIRE(shape.depth >= 9);
  // Extendible hashing keeps leaves half full to full; these names take
  // about 40 bytes with their slot.
  const double per_full_leaf = (kDefaultBlockSize - kLeafHeaderSize) / 40.0;
  REQUIRE(shape.leaves >= n / per_full_leaf);
  REQUIRE(shape.leaves <= 2 * n / per_full_leaf);
  f.Reopen();
  z = f.OpenZap(id);
  REQUIRE(z->Count() == n);
  for (uint64_t i = 0; i < n; i++) {
    auto v = z->Lookup(NameOf(i));
    if (!v.ok() || v->object != i) FAIL("entry " << i << ": " << v.status().ToString());
  }
  REQUIRE(z->Lookup("file.absent").status().IsNotFound());
  uint64_t listed = 0, cookie = 0;
  for (;;) {
    auto r = z->Iterate(cookie, 4096);
    REQUIRE(r.ok());
    listed += r->size();
    if (r->size() < 4096) break;
    cookie = r->back().cookie;
  }
  REQUIRE(listed == n);
  // Remove half, reopen, the rest is still there.
  {
    auto tx = f.NewTx();
    for (uint64_t i = 0; i < n; i += 2) REQUIRE(z->Remove(*tx, NameOf(i)).ok());
  }
  f.Reopen();
  z = f.OpenZap(id);
  REQUIRE(z->Count() == n / 2);
  for (uint64_t i = 0; i < n; i += 1000) {
    REQUIRE(z->Lookup(NameOf(i)).status().IsNotFound());
    REQUIRE(z->Lookup(NameOf(i + 1)).value().object == i + 1);
  }
}

// Wall and CPU seconds since construction (the machine may be shared: the
// CPU figure is the one to compare).
struct Timer {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = CpuNow();
  static double CpuNow() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + ts.tv_nsec * 1e-9;
  }
  double Wall() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double Cpu() const { return CpuNow() - cpu; }
};

TEST_CASE("Zap benchmark: 1,000,000 entries in one directory", "[.bench]") {
  const uint64_t n = 1000000, per_tx = 10000, per_txg = 50000;
  Fixture f(uint64_t{1} << 30);
  ZapOptions o;  // POOLFS_ZAP_BENCH_BS=4096 etc. to compare block sizes
  if (const char* bs = std::getenv("POOLFS_ZAP_BENCH_BS")) o.block_size = uint32_t(std::atoi(bs));
  auto z = f.NewZap(dmu::ObjectType::kDirectory, o);
  const ObjectId id = z->id();
  uint64_t bad = 0;
  double add_wall = 0, add_cpu = 0, sync_wall = 0;
  for (uint64_t i = 0; i < n;) {
    Timer t;
    auto tx = f.NewTx();
    for (uint64_t end = i + per_tx; i < end; i++) bad += !z->Add(*tx, NameOf(i), Value{i, 1}).ok();
    tx->Commit();
    add_wall += t.Wall();
    add_cpu += t.Cpu();
    if (i % per_txg == 0) {
      Timer s;
      f.Sync();
      sync_wall += s.Wall();
    }
  }
  REQUIRE(bad == 0);
  const ZapShape shape = z->Shape();
  f.Reopen();
  Timer open;
  z = f.OpenZap(id);
  const double open_wall = open.Wall();
  Timer look;
  for (uint64_t i = 0; i < n; i++) {
    auto v = z->Lookup(NameOf(i));
    bad += !v.ok() || v->object != i;
  }
  const double look_wall = look.Wall(), look_cpu = look.Cpu();
  REQUIRE(bad == 0);
  Timer absent;
  for (uint64_t i = 0; i < n / 10; i++) bad += !z->Lookup(NameOf(n + i)).status().IsNotFound();
  const double absent_cpu = absent.Cpu();
  REQUIRE(bad == 0);
  Timer iter;
  uint64_t listed = 0, cookie = 0;
  for (;;) {
    auto r = z->Iterate(cookie, 4096);
    REQUIRE(r.ok());
    listed += r->size();
    if (r->size() < 4096) break;
    cookie = r->back().cookie;
  }
  const double iter_cpu = iter.Cpu();
  REQUIRE(listed == n);
  std::printf("zap 1M, %u-byte blocks: depth %u, %llu leaves, %llu blocks\n", o.block_size,
              unsigned(shape.depth), (unsigned long long)shape.leaves,
              (unsigned long long)shape.blocks);
  std::printf("  add (%llu per tx, sync every %llu): %.0f /s of CPU, %.0f /s wall; syncs %.2f s\n",
              (unsigned long long)per_tx, (unsigned long long)per_txg, n / add_cpu, n / add_wall,
              sync_wall);
  std::printf("  open after reopen: %.4f s\n", open_wall);
  std::printf("  lookup (every leaf read from the device): %.0f /s of CPU, %.0f /s wall\n",
              n / look_cpu, n / look_wall);
  std::printf("  lookup of absent names: %.0f /s of CPU\n", (n / 10) / absent_cpu);
  std::printf("  iterate (4096 per call): %.0f entries/s of CPU\n", n / iter_cpu);
}

}  // namespace
}  // namespace poolfs::core::zap
