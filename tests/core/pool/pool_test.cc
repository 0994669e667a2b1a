// Pool: create, import, export over memory devices and files; data survives;
// a power cut leaves the last synced txg; bad devices are refused clearly.
#include "pool/pool.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "check_test_util.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/file_device.h"
#include "vdev/memory_device.h"

namespace poolfs::core::pool {
namespace {

using check_test::Pattern;

constexpr uint64_t kDevSize = 256ull << 20;

PoolOptions FastOptions() {
  PoolOptions o;
  o.txg.timeout_ms = 50;
  o.space.allocators = 2;
  return o;
}

// Writes `data` to a new object of the root dataset in one Tx; returns its id.
ObjectId WriteObject(Pool& p, const std::string& data) {
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  auto id = p.root_dataset()->Create(tx, dmu::ObjectType::kPlain);
  REQUIRE(id.ok());
  REQUIRE(p.root_dataset()->Write(tx, *id, 0, data).ok());
  tx.Commit();
  return *id;
}

TEST_CASE("Pool keeps objects across export and import", "[pool]") {
  vdev::MemoryDevice a(kDevSize, "a"), b(kDevSize, "b");
  REQUIRE(Pool::CreateOnDevices({&a, &b}, {"a", "b"}, CreateOptions{"tank"}).ok());
  std::vector<std::pair<ObjectId, std::string>> objs;
  {
    auto p = Pool::ImportDevices({&a, &b}, FastOptions());
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    REQUIRE((*p)->name() == "tank");
    for (int i = 0; i < 20; i++) {
      std::string d = Pattern(i, 1000 + i * 20000);
      objs.emplace_back(WriteObject(**p, d), d);
    }
    REQUIRE((*p)->CreateDataset("second").ok());
    REQUIRE((*p)->Export().ok());
  }
  // Import with the vdevs in the other order.
  auto p = Pool::ImportDevices({&b, &a}, FastOptions());
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  for (auto& [id, d] : objs) REQUIRE((*p)->root_dataset()->Read(id, 0, 1 << 30).value() == d);
  REQUIRE((*p)->dataset("second") != nullptr);
  auto stats = (*p)->Stats();
  REQUIRE(stats.space.allocated > 20 * 1000);
  REQUIRE(stats.checksum_errors == std::vector<uint64_t>{0, 0});
  // Both vdevs got data (striping).
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool space accounting survives many txgs of churn and reimport", "[pool]") {
  vdev::MemoryDevice a(kDevSize, "a");
  REQUIRE(Pool::CreateOnDevices({&a}, {"a"}, CreateOptions{}).ok());
  uint64_t allocated = 0;
  {
    auto p = Pool::ImportDevices({&a}, FastOptions());
    REQUIRE(p.ok());
    dmu::ObjectSet* os = (*p)->root_dataset();
    std::mt19937_64 rng(3);
    std::vector<ObjectId> ids;
    for (int round = 0; round < 40; round++) {
      {
        dmu::Tx tx((*p)->assigner());
        REQUIRE(tx.Assign().ok());
        for (int i = 0; i < 5; i++) {
          auto id = os->Create(tx, dmu::ObjectType::kPlain);
          REQUIRE(os->Write(tx, *id, rng() % 100000, Pattern(rng(), 1 + rng() % 300000)).ok());
          ids.push_back(*id);
        }
        if (ids.size() > 20) {
          for (int i = 0; i < 5; i++) {
            size_t j = rng() % ids.size();
            REQUIRE(os->Free(tx, ids[j]).ok());
            ids.erase(ids.begin() + j);
          }
        }
        tx.Commit();
      }
      if (round % 5 == 0) REQUIRE((*p)->WaitSynced().ok());
    }
    REQUIRE((*p)->Export().ok());
    allocated = (*p)->Stats().space.allocated;
  }
  auto p = Pool::ImportDevices({&a}, FastOptions());
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  // What the space maps say is allocated is what the export left allocated,
  // plus what the export's last txgs deferred (free on disk, so less).
  REQUIRE((*p)->Stats().space.allocated <= allocated);
  REQUIRE((*p)->Stats().space.allocated > 0);
}

TEST_CASE("Freed space comes back on an idle pool, with no other change", "[pool]") {
  vdev::MemoryDevice mem(kDevSize, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{}).ok());
  auto p = Pool::ImportDevices({&mem}, FastOptions());
  REQUIRE(p.ok());
  const uint64_t free_before = (*p)->Stats().space.free;
  const ObjectId id = WriteObject(**p, Pattern(5, 40 << 20));
  REQUIRE((*p)->WaitSynced().ok());
  REQUIRE((*p)->Stats().space.free < free_before - (40 << 20));
  {
    dmu::Tx tx((*p)->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE((*p)->root_dataset()->Free(tx, id).ok());
    tx.Commit();
  }
  // Nothing else happens: the txgs that carry the frees through their
  // deferral sync on their own.
  const auto start = std::chrono::steady_clock::now();
  bool back = false;
  while (!back && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const space::SpaceStats s = (*p)->Stats().space;
    back = s.deferred == 0 && s.free >= free_before - (1 << 20);
  }
  REQUIRE(back);
  WARN("freed space back after " << std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count()
                                 << " ms with txg.timeout_ms 50");
  // With nothing left to free, the idle syncs stop.
  const uint64_t idle = (*p)->txgs().stats().idle_syncs;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE((*p)->txgs().stats().idle_syncs == idle);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool after a power cut is exactly its last synced txg", "[pool]") {
  for (uint64_t seed : {1, 2, 3}) {
    vdev::MemoryDevice mem(kDevSize, "mem");
    REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{}).ok());
    vdev::FaultInjectingDevice dev(&mem);
    std::string synced_data, later_data = Pattern(seed + 50, 50000);
    ObjectId id;
    {
      auto p = Pool::ImportDevices({&dev}, FastOptions());
      REQUIRE(p.ok());
      synced_data = Pattern(seed, 300000);
      id = WriteObject(**p, synced_data);
      REQUIRE((*p)->WaitSynced().ok());
      // Change it again but cut the power before that reaches disk.
      {
        dmu::Tx tx((*p)->assigner());
        REQUIRE(tx.Assign().ok());
        REQUIRE((*p)->root_dataset()->Write(tx, id, 1000, later_data).ok());
        tx.Commit();
      }
      dev.CutPowerAfter(seed * 7, vdev::PowerCut::DropRandom(seed));
      (*p)->Export().ok();  // fails once the power is gone
    }
    dev.PowerOn();
    auto p = Pool::ImportDevices({&dev}, FastOptions());
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    std::string got = (*p)->root_dataset()->Read(id, 0, 1 << 20).value();
    std::string with_later = synced_data;
    with_later.replace(1000, later_data.size(), later_data);
    REQUIRE((got == synced_data || got == with_later));
  }
}

TEST_CASE("Pool import refuses what is not a pool, and a pool in use", "[pool]") {
  auto dir =
      std::filesystem::temp_directory_path() / ("poolfs-pool-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "p1").string();
  std::string junk = (dir / "junk").string();
  REQUIRE(Pool::Create({path}, kDevSize, CreateOptions{"p1"}).ok());
  // Creating again over it is refused without force.
  Status again = Pool::Create({path}, kDevSize, CreateOptions{"p1"});
  REQUIRE(again.code() == StatusCode::kAlreadyExists);
  {
    auto p = Pool::Import({path}, FastOptions());
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    auto second = Pool::Import({path}, FastOptions());
    REQUIRE(second.status().code() == StatusCode::kBusy);
    REQUIRE(second.status().message().find("in use") != std::string::npos);
  }
  REQUIRE(vdev::FileDevice::CreateSparse(junk, kDevSize, false).ok());
  auto j = Pool::Import({junk}, FastOptions());
  REQUIRE(j.status().IsCorruption());
  REQUIRE(j.status().message().find("not a usable poolfs vdev") != std::string::npos);
  std::filesystem::remove_all(dir);
}

// vdev.direct_reads and vdev.direct_writes: blocks read with O_DIRECT into
// the cache's buffers, or written with O_DIRECT (file_device_test checks
// the I/O is direct), come back intact, data and metadata, compressed or
// not, across an import; in each mix of direct and buffered.
TEST_CASE("Pool reads back what it wrote with direct reads and writes", "[pool]") {
  const auto [direct_reads, direct_writes] =
      GENERATE(std::pair{true, false}, std::pair{true, true}, std::pair{false, true});
  INFO("direct_reads " << direct_reads << ", direct_writes " << direct_writes);
  auto dir =
      std::filesystem::temp_directory_path() / ("poolfs-pool-direct-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "p").string();
  std::filesystem::remove(path);
  REQUIRE(Pool::Create({path}, kDevSize, CreateOptions{"d"}).ok());
  PoolOptions o = FastOptions();
  o.vdev.direct_reads = direct_reads;
  o.vdev.direct_writes = direct_writes;
  std::vector<std::pair<ObjectId, std::string>> objs;
  {
    auto p = Pool::Import({path}, o);
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    for (int i = 0; i < 12; i++) {
      // Odd ones compress (lz4), even ones do not; sizes cross block ends.
      std::string d =
          i % 2 ? std::string(300000 + i * 7, char('a' + i)) : Pattern(i, 200000 + i * 4099);
      objs.emplace_back(WriteObject(**p, d), d);
    }
    REQUIRE((*p)->Export().ok());
  }
  for (int round = 0; round < 2; round++) {  // the second from the cache
    auto p = Pool::Import({path}, o);
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    for (auto& [id, d] : objs) {
      auto got = (*p)->root_dataset()->Read(id, 0, 1 << 30);
      REQUIRE(got.ok());
      REQUIRE(*got == d);
      auto tail = (*p)->root_dataset()->Read(id, d.size() - 5000, 4000);
      REQUIRE(tail.ok());
      REQUIRE(*tail == d.substr(d.size() - 5000, 4000));
    }
    REQUIRE((*p)->Stats().checksum_errors == std::vector<uint64_t>{0});
    REQUIRE((*p)->Export().ok());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace poolfs::core::pool

namespace poolfs::core::pool {
namespace {

TEST_CASE("Pool import refuses a damaged newest tree and a rewind falls back to an older uberblock",
          "[pool]") {
  vdev::MemoryDevice mem(kDevSize, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{}).ok());
  ObjectId first, second;
  std::string a = Pattern(1, 100000), b = Pattern(2, 100000);
  {
    auto p = Pool::ImportDevices({&mem}, FastOptions());
    REQUIRE(p.ok());
    first = WriteObject(**p, a);
    REQUIRE((*p)->WaitSynced().ok());
    second = WriteObject(**p, b);
    REQUIRE((*p)->Export().ok());
  }
  // Damage the MOS root block of the newest uberblock (every copy).
  auto labels = vdev::ReadLabels(mem);
  REQUIRE(labels.ok());
  const vdev::Uberblock& newest = labels->uberblocks.front().ub;
  auto payload = DecodeRootPayload(newest.root, zio::BpFormat(newest.version));
  REQUIRE(payload.ok());
  const zio::BlockPtr* mos_root = &payload->mos_root;
  REQUIRE(mos_root->copies() == 3);
  for (int c = 0; c < mos_root->copies(); c++) {
    char byte;
    REQUIRE(mem.Read(mos_root->copy(c).offset + 100, &byte, 1).ok());
    byte ^= 0x40;
    REQUIRE(mem.Write(mos_root->copy(c).offset + 100, &byte, 1).ok());
  }
  auto normal = Pool::ImportDevices({&mem}, FastOptions());
  REQUIRE(normal.status().code() == StatusCode::kCorruption);
  PoolOptions rewind = FastOptions();
  rewind.read_only = true;
  rewind.rewind = true;
  auto p = Pool::ImportDevices({&mem}, rewind);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  // An older txg: the first object is there, with its data.
  REQUIRE((*p)->root_dataset()->Read(first, 0, 1 << 20).value() == a);
  REQUIRE((*p)->imported_txg().value() < newest.txg.value());
  // The open txg comes after the newest txg ever written.
  REQUIRE((*p)->Stats().open.value() > newest.txg.value());
}

}  // namespace
}  // namespace poolfs::core::pool
