// A pool in memory for zap tests: an ObjectSet over a MemoryDevice, a space
// manager and a zio, with a txg the test moves by hand (as objset_test.cc).
#pragma once

#include <atomic>
#include <memory>
#include <random>
#include <string>

#include "dmu/objset.h"
#include "space/allocator.h"
#include "vdev/memory_device.h"
#include "zap/zap.h"
#include "zio/zio.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap::testing {

// A TxAssigner whose open txg the test moves by hand.
class ManualTxgs : public dmu::TxAssigner {
 public:
  Result<Txg> Hold(uint64_t) override { return Txg(open.load()); }
  void Release(Txg, uint64_t) override {}
  // The tests sync by hand, whatever a Tx did: an abandoned one is only
  // counted (most of them end their Tx without Commit).
  Status Abandon(Txg, const Status& cause) override {
    abandoned++;
    return Status::IOError("abandoned: " + cause.ToString());
  }
  std::atomic<uint64_t> open{1};
  std::atomic<uint64_t> abandoned{0};
};

struct Fixture {
  explicit Fixture(uint64_t dev_size = uint64_t{64} << 20)
      : dev(dev_size),
        space({{0, 4 << 20, dev_size - (8 << 20), 12, 0}},
              [] {
                space::SpaceOptions o;
                o.allocators = 2;
                return o;
              }()),
        zio({{&dev, 12}}, &space),
        os(std::make_unique<dmu::ObjectSet>(&zio, dmu::ObjsetType::kDataset, "test")) {}

  // Syncs the open txg and opens the next one.
  void Sync() {
    Txg t(txgs.open.load());
    txgs.open++;
    for (auto& task : os->SyncTasks(t, 2)) REQUIRE(task.fn().ok());
    auto root = os->FinishSync(t, 0);
    INFO(root.status().ToString());
    REQUIRE(root.ok());
    space.Sync(t, [](const space::Metaslab&) {});
    space.SyncDone(t);
    os->SyncDone(t);
  }
  // Syncs, then opens the object set again from its root (nothing cached).
  void Reopen() {
    Sync();
    auto r = dmu::ObjectSet::Open(&zio, os->root(), "test");
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    os = std::move(r).value();
  }
  std::unique_ptr<dmu::Tx> NewTx() {
    auto tx = std::make_unique<dmu::Tx>(&txgs);
    REQUIRE(tx->Assign().ok());
    return tx;
  }
  std::unique_ptr<Zap> NewZap(dmu::ObjectType type = dmu::ObjectType::kZap,
                              const ZapOptions& options = {}) {
    auto tx = NewTx();
    auto z = Zap::Create(*tx, os.get(), type, {}, options);
    INFO(z.status().ToString());
    REQUIRE(z.ok());
    return std::move(z).value();
  }
  std::unique_ptr<Zap> OpenZap(ObjectId id, const ZapOptions& options = {}) {
    auto z = Zap::Open(os.get(), id, options);
    INFO(z.status().ToString());
    REQUIRE(z.ok());
    return std::move(z).value();
  }

  vdev::MemoryDevice dev;
  space::SpaceManager space;
  zio::Zio zio;
  ManualTxgs txgs;
  std::unique_ptr<dmu::ObjectSet> os;
};

// A name of `len` bytes from `rng`, printable, never '/'.
inline std::string RandomName(std::mt19937_64& rng, size_t len) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  std::string s(len, 'x');
  for (auto& c : s) c = kChars[rng() % (sizeof(kChars) - 1)];
  return s;
}

// Mostly short names, some long, a few of the longest allowed.
inline std::string MixedName(std::mt19937_64& rng) {
  int r = int(rng() % 100);
  size_t len = r < 70 ? 1 + rng() % 20 : r < 95 ? 21 + rng() % 80 : 200 + rng() % 56;
  return RandomName(rng, len);
}

}  // namespace poolfs::core::zap::testing
