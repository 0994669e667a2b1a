// The ObjectSet tests' fixture: an object set on a 256 MiB memory device
// whose txgs the test moves by hand (Sync, Reopen).
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <span>
#include <string>

#include "dmu/objset.h"
#include "space/allocator.h"
#include "vdev/memory_device.h"
#include "zio/zio.h"

namespace poolfs::core::dmu::testing {

// A TxAssigner whose open txg the test moves by hand.
class ManualTxgs : public TxAssigner {
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

// Passes every I/O to a memory device and counts the device writes and
// reads of zio::kAggregateBytes or more.
class CountingDevice final : public vdev::BlockDevice {
 public:
  explicit CountingDevice(vdev::BlockDevice* inner) : inner_(inner) {}
  uint64_t size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  Status Read(uint64_t off, void* buf, size_t len) override {
    if (len >= zio::kAggregateBytes) full_reads++;
    return inner_->Read(off, buf, len);
  }
  Status ReadParts(uint64_t off, std::span<const vdev::ReadPart> parts) override {
    uint64_t len = 0;
    for (const vdev::ReadPart& part : parts) len += part.len;
    if (len >= zio::kAggregateBytes) full_reads++;
    return inner_->ReadParts(off, parts);
  }
  Status Write(uint64_t off, const void* buf, size_t len) override {
    if (len >= zio::kAggregateBytes) full_runs++;
    return inner_->Write(off, buf, len);
  }
  Status WriteParts(uint64_t off, std::span<const vdev::WritePart> parts) override {
    uint64_t len = 0;
    for (const vdev::WritePart& part : parts) len += part.len;
    if (len >= zio::kAggregateBytes) full_runs++;
    return inner_->WriteParts(off, parts);
  }
  Status Flush() override { return inner_->Flush(); }

  std::atomic<uint64_t> full_runs{0};  // writes
  std::atomic<uint64_t> full_reads{0};

 private:
  vdev::BlockDevice* const inner_;
};

struct Fixture {
  Fixture()
      : dev(256 << 20),
        counting(&dev),
        space({{0, 4 << 20, (256 << 20) - (8 << 20), 12, 0}},
              [] {
                space::SpaceOptions o;
                o.allocators = 2;
                return o;
              }()),
        zio({{&counting, 12}}, &space),
        os(std::make_unique<ObjectSet>(&zio, ObjsetType::kDataset, "test")) {}

  // Syncs the open txg: every dnode, then the object set; then opens the
  // next txg and lets the space layer finish the txg.
  zio::BlockPtr Sync() {
    Txg t(txgs.open.load());
    txgs.open++;
    for (auto& task : os->SyncTasks(t, 2)) REQUIRE(task.fn().ok());
    auto root = os->FinishSync(t, 0);
    INFO(root.status().ToString());
    REQUIRE(root.ok());
    space.Sync(t, [](const space::Metaslab&) {});
    space.SyncDone(t);
    os->SyncDone(t);
    return *root;
  }
  void Reopen() {
    zio::BlockPtr root = os->root();
    auto r = ObjectSet::Open(&zio, root, "test");
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    os = std::move(r).value();
    if (dnode_limit != 0) os->SetDnodeLimit(dnode_limit);
  }
  void LimitDnodes(uint64_t limit) {
    dnode_limit = limit;
    os->SetDnodeLimit(limit);
  }

  uint64_t dnode_limit = 0;  // 0: none

  vdev::MemoryDevice dev;
  CountingDevice counting;
  space::SpaceManager space;
  zio::Zio zio;
  ManualTxgs txgs;
  std::unique_ptr<ObjectSet> os;
};

inline std::string Pattern(uint64_t seed, size_t len) {
  std::string s(len, '\0');
  std::mt19937_64 rng(seed);
  for (auto& c : s) c = char(rng());
  return s;
}

// A new plain object holding `data`, synced.
inline ObjectId WriteSynced(Fixture& f, const std::string& data) {
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  ObjectId id = f.os->Create(tx, ObjectType::kPlain).value();
  REQUIRE(f.os->Write(tx, id, 0, data).ok());
  tx.Commit();
  f.Sync();
  return id;
}

}  // namespace poolfs::core::dmu::testing
