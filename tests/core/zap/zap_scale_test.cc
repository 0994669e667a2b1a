// Zap at scale: a directory of 200,000 entries (fat, external table) stays
// correct through sync and reopen. A hidden benchmark ([.bench]) measures
// insert and lookup rates for 1,000,000 entries; run it by hand:
//   build/bin/zap_tests "[.bench]"
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;

std::string NameOf(uint64_t i) { return "file." + std::to_string(i * 2654435761u % 100000007u); }

TEST_CASE("Zap holds 200,000 entries in one directory across sync and reopen", "[zap]") {
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

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST_CASE("Zap benchmark: 1,000,000 entries in one directory", "[.bench]") {
  const uint64_t n = 1000000, per_tx = 10000, per_txg = 50000;
  Fixture f(uint64_t{1} << 30);
  ZapOptions o;  // POOLFS_ZAP_BENCH_BS=4096 etc. to compare block sizes
  if (const char* bs = std::getenv("POOLFS_ZAP_BENCH_BS")) o.block_size = uint32_t(std::atoi(bs));
  auto z = f.NewZap(dmu::ObjectType::kDirectory, o);
  const ObjectId id = z->id();
  auto t0 = std::chrono::steady_clock::now();
  double sync_s = 0;
  for (uint64_t i = 0; i < n;) {
    auto tx = f.NewTx();
    for (uint64_t end = i + per_tx; i < end; i++) REQUIRE(z->Add(*tx, NameOf(i), Value{i, 1}).ok());
    tx->Commit();
    if (i % per_txg == 0) {
      auto s0 = std::chrono::steady_clock::now();
      f.Sync();
      sync_s += Seconds(s0);
    }
  }
  const double add_s = Seconds(t0) - sync_s;
  const ZapShape shape = z->Shape();
  auto t1 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; i++) REQUIRE(z->Lookup(NameOf(i)).value().object == i);
  const double warm_s = Seconds(t1);
  f.Reopen();
  auto t2 = std::chrono::steady_clock::now();
  z = f.OpenZap(id);
  const double open_s = Seconds(t2);
  auto t3 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; i++) REQUIRE(z->Lookup(NameOf(i)).value().object == i);
  const double cold_s = Seconds(t3);
  auto t4 = std::chrono::steady_clock::now();
  uint64_t listed = 0, cookie = 0;
  for (;;) {
    auto r = z->Iterate(cookie, 4096);
    REQUIRE(r.ok());
    listed += r->size();
    if (r->size() < 4096) break;
    cookie = r->back().cookie;
  }
  const double iter_s = Seconds(t4);
  REQUIRE(listed == n);
  std::printf("zap 1M, %u-byte blocks: depth %u, %llu leaves, %llu blocks\n", o.block_size,
              unsigned(shape.depth), (unsigned long long)shape.leaves,
              (unsigned long long)shape.blocks);
  std::printf("  add (open context, %llu per tx): %.0f /s (%.2f s); syncs %.2f s\n",
              (unsigned long long)per_tx, n / add_s, add_s, sync_s);
  std::printf("  lookup, blocks dirty or just synced in this session: %.0f /s\n", n / warm_s);
  std::printf("  open after reopen: %.3f s; lookup from the device: %.0f /s\n", open_s, n / cold_s);
  std::printf("  iterate (4096 per call): %.0f entries/s\n", n / iter_s);
}

}  // namespace
}  // namespace poolfs::core::zap
