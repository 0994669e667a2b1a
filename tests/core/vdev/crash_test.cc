// Crash safety of labels and uberblocks: a power cut after every write and
// flush of WriteLabels, pool creation and WriteUberblock — dropping all
// pending writes, or a random subset with torn and garbled sectors — must
// leave a readable vdev holding either the old or the new state, complete.

#include <catch2/catch.hpp>
#include <functional>

#include "util/checksum.h"
#include "util/endian.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/label.h"
#include "vdev/memory_device.h"
#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::kDevSize;
using testing::LayoutOf;
using testing::Pattern;
using testing::ReadOk;
using testing::TestHeader;
using testing::TestUberblock;

struct CutKind {
  const char* name;
  uint32_t sector_size;
  std::function<PowerCut(uint64_t)> make;  // from a seed
};

// DropAll once; DropRandom with 512 B sectors; DropRandom with 4 KiB sectors
// that get garbled (neighbouring slots destroyed), each with many seeds; and
// GarbleAll, where every sector being written is destroyed.
std::vector<std::pair<CutKind, uint64_t>> CutKinds() {
  std::vector<std::pair<CutKind, uint64_t>> kinds;
  kinds.push_back({{"drop-all", 512, [](uint64_t) { return PowerCut::DropAll(); }}, 1});
  kinds.push_back({{"drop-random", 512, [](uint64_t s) { return PowerCut::DropRandom(s); }}, 24});
  kinds.push_back(
      {{"garble-4k", 4096, [](uint64_t s) { return PowerCut::DropRandom(s, true); }}, 24});
  kinds.push_back({{"garble-all", 4096, [](uint64_t s) { return PowerCut::GarbleAll(s); }}, 2});
  return kinds;
}

// Runs `op` on a copy of `base` with the power cut after `k` writes/flushes
// (or, when op finishes first, right after it), then powers on and calls
// `check` on the device. Returns whether the cut came before op finished.
bool CrashAfter(const MemoryDevice& base, uint64_t k, const CutKind& kind, uint64_t seed,
                const std::function<Status(BlockDevice&)>& op,
                const std::function<void(BlockDevice&, bool op_ok)>& check) {
  std::unique_ptr<MemoryDevice> mem = base.Clone();
  FaultInjectingDevice dev(mem.get(), kind.sector_size);
  PowerCut cut = kind.make(seed * 1000 + k);
  dev.CutPowerAfter(k, cut);
  Status st = op(dev);
  bool fired = dev.power_is_off();
  if (!fired) {
    REQUIRE(st.ok());
    dev.ClearFaults();
    REQUIRE(dev.CutPower(cut).ok());
  }
  dev.PowerOn();
  check(dev, st.ok());
  return fired;
}

// Calls CrashAfter for k = 0, 1, ... until op completes, for every kind and
// seed. Returns the number of crashes simulated.
int CrashEverywhere(const MemoryDevice& base, const std::function<Status(BlockDevice&)>& op,
                    const std::function<void(BlockDevice&, bool)>& check) {
  int runs = 0;
  for (auto& [kind, seeds] : CutKinds()) {
    for (uint64_t seed = 0; seed < seeds; seed++) {
      for (uint64_t k = 0;; k++) {
        INFO(kind.name << " seed " << seed << " cut after " << k << " writes/flushes");
        runs++;
        if (!CrashAfter(base, k, kind, seed, op, check)) break;
        REQUIRE(k < 100);
      }
    }
  }
  return runs;
}

TEST_CASE("A power cut anywhere in WriteLabels leaves the old or the new config", "[crash]") {
  MemoryDevice base(kDevSize, "mem0");
  REQUIRE(WriteLabels(base, TestHeader(base, 1), "config-A").ok());
  for (uint64_t t = 1; t <= 5; t++) {
    REQUIRE(WriteUberblock(base, LayoutOf(base), TestUberblock(t)).ok());
  }
  int saw_old = 0, saw_new = 0;
  int runs = CrashEverywhere(
      base, [](BlockDevice& dev) { return WriteLabels(dev, TestHeader(dev, 2), "config-B"); },
      [&](BlockDevice& dev, bool op_ok) {
        VdevLabelInfo info = ReadOk(dev);
        if (info.config == "config-A") {
          CHECK(info.header == TestHeader(dev, 1));
          CHECK_FALSE(op_ok);
          saw_old++;
        } else {
          REQUIRE(info.config == "config-B");
          CHECK(info.header == TestHeader(dev, 2));
          saw_new++;
        }
        REQUIRE(info.uberblocks.size() == 5);  // the rings are not touched
        CHECK(info.uberblocks[0].ub == TestUberblock(5));
        CHECK(info.uberblocks[0].label_mask == 0xF);
      });
  CHECK(runs > 100);
  CHECK(saw_old > 0);
  CHECK(saw_new > 0);
}

TEST_CASE("A power cut anywhere in WriteUberblock leaves the previous or the new one", "[crash]") {
  // txg 131 goes to slot 3, which shares a 4 KiB sector with slot 2 (txg 130).
  MemoryDevice base(kDevSize, "mem0");
  REQUIRE(WriteLabels(base, TestHeader(base), "cfg").ok());
  for (uint64_t t = 1; t <= 130; t++) {
    REQUIRE(WriteUberblock(base, LayoutOf(base), TestUberblock(t)).ok());
  }
  REQUIRE(base.Flush().ok());
  int saw_old = 0, saw_new = 0;
  CrashEverywhere(
      base,
      [&](BlockDevice& dev) {
        POOLFS_RETURN_IF_ERROR(WriteUberblock(dev, LayoutOf(dev), TestUberblock(131)));
        return dev.Flush();
      },
      [&](BlockDevice& dev, bool op_ok) {
        VdevLabelInfo info = ReadOk(dev);
        REQUIRE(!info.uberblocks.empty());
        const Uberblock& newest = info.uberblocks[0].ub;
        if (newest.txg == Txg(131)) {
          CHECK(newest == TestUberblock(131));
          saw_new++;
        } else {
          CHECK(newest == TestUberblock(130));
          CHECK_FALSE(op_ok);
          saw_old++;
        }
        // The previous txg survives in at least one label whatever happened.
        bool has_130 = false;
        for (const FoundUberblock& f : info.uberblocks) {
          if (f.ub.txg == Txg(130)) has_130 = f.ub == TestUberblock(130);
          CHECK(f.ub.txg <= Txg(131));
        }
        CHECK(has_130);
        if (op_ok) CHECK(info.uberblocks[0].label_mask == 0xF);
      });
  CHECK(saw_old > 0);
  CHECK(saw_new > 0);
}

TEST_CASE("A power cut anywhere in pool creation leaves no pool or a complete one", "[crash]") {
  // The device held an older pool: its rings must not leak into the new one.
  MemoryDevice base(kDevSize, "mem0");
  LabelHeader old_header = TestHeader(base);
  old_header.pool_guid = 0xAAAA;
  REQUIRE(WriteLabels(base, old_header, "old-pool").ok());
  Uberblock old_ub = TestUberblock(50);
  old_ub.pool_guid = 0xAAAA;
  REQUIRE(WriteUberblock(base, LayoutOf(base), old_ub).ok());
  REQUIRE(base.Flush().ok());
  int none = 0, old_pool = 0, unfinished = 0, created = 0;
  CrashEverywhere(
      base,
      [](BlockDevice& dev) {
        POOLFS_RETURN_IF_ERROR(WipeLabels(dev, LayoutOf(dev)));
        POOLFS_RETURN_IF_ERROR(WriteLabels(dev, TestHeader(dev, 4), "new-pool"));
        POOLFS_RETURN_IF_ERROR(WriteUberblock(dev, LayoutOf(dev), TestUberblock(4)));
        return dev.Flush();
      },
      [&](BlockDevice& dev, bool op_ok) {
        Result<VdevLabelInfo> r = ReadLabels(dev);
        if (!r.ok()) {
          CHECK(r.status().IsCorruption());
          CHECK_FALSE(op_ok);
          none++;
          return;
        }
        if (r->header.pool_guid == 0xAAAA) {  // the wipe did not land yet
          CHECK(r->config == "old-pool");
          CHECK_FALSE(op_ok);
          old_pool++;
          return;
        }
        CHECK(r->header == TestHeader(dev, 4));
        CHECK(r->config == "new-pool");
        for (const FoundUberblock& f : r->uberblocks) CHECK(f.ub == TestUberblock(4));
        if (r->uberblocks.empty()) {
          CHECK_FALSE(op_ok);
          unfinished++;
        } else {
          created++;
        }
      });
  CHECK(none > 0);
  CHECK(unfinished > 0);
  CHECK(created > 0);
  INFO("old pool seen " << old_pool << " times");
}

// The root payload of a test txg: where its block is and the block's checksum.
Uberblock SyncUberblock(uint64_t txg, uint64_t off, const std::vector<uint8_t>& block) {
  Uberblock ub = TestUberblock(txg);
  util::Checksum128 sum = util::Xxh3_128(block.data(), block.size());
  util::PutLE64(ub.root.data(), off);
  util::PutLE64(ub.root.data() + 8, sum.lo);
  util::PutLE64(ub.root.data() + 16, sum.hi);
  return ub;
}

TEST_CASE("Power cuts during a run of txg syncs leave the newest txg's tree verifiable",
          "[crash]") {
  // The sync protocol: write the txg's blocks, flush, write the uberblock,
  // flush. Blocks rotate over 8 places, so a txg's block stays intact for 7
  // more txgs. Whatever the cut, the newest valid uberblock is the last txg
  // that completed or the one in flight, and its block verifies.
  constexpr size_t kBlock = 64 * 1024;
  MemoryDevice base(kDevSize, "mem0");
  REQUIRE(WriteLabels(base, TestHeader(base), "cfg").ok());
  const uint64_t alloc = LayoutOf(base).alloc_start;
  for (uint64_t seed = 0; seed < 200; seed++) {
    INFO("seed " << seed);
    std::unique_ptr<MemoryDevice> mem = base.Clone();
    FaultInjectingDevice dev(mem.get(), 4096);
    PowerCut cut = PowerCut::DropRandom(seed, seed % 2 == 1);
    dev.CutPowerAfter(seed * 7 % 130, cut);
    uint64_t completed = 0;
    for (uint64_t txg = 1; txg <= 30; txg++) {
      uint64_t off = alloc + (txg % 8) * kBlock;
      std::vector<uint8_t> block = Pattern(kBlock, txg);
      if (!dev.Write(off, block.data(), block.size()).ok()) break;
      if (!dev.Flush().ok()) break;
      if (!WriteUberblock(dev, LayoutOf(dev), SyncUberblock(txg, off, block)).ok()) break;
      if (!dev.Flush().ok()) break;
      completed = txg;
    }
    if (!dev.power_is_off()) REQUIRE(dev.CutPower(cut).ok());
    dev.PowerOn();
    VdevLabelInfo info = ReadOk(dev);
    if (completed == 0 && info.uberblocks.empty()) continue;  // cut before the first txg
    REQUIRE(!info.uberblocks.empty());
    const Uberblock& newest = info.uberblocks[0].ub;
    CHECK(newest.txg.value() >= completed);
    CHECK(newest.txg.value() <= completed + 1);
    uint64_t off = util::GetLE64(newest.root.data());
    std::vector<uint8_t> block(kBlock);
    REQUIRE(dev.Read(off, block.data(), block.size()).ok());
    util::Checksum128 sum = util::Xxh3_128(block.data(), block.size());
    CHECK(sum.lo == util::GetLE64(newest.root.data() + 8));
    CHECK(sum.hi == util::GetLE64(newest.root.data() + 16));
  }
}

}  // namespace
}  // namespace poolfs::core::vdev
