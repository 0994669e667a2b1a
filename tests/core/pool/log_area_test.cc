// Pool: the intent log's storage: each vdev's log area is written, read and
// flushed outside the txgs, and the log state each uberblock carries is the
// source's, or the imported one kept until a source takes over.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "pool/pool.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::pool {
namespace {

constexpr uint64_t kLogDevSize = 64ull << 20;

PoolOptions LogTestOptions() {
  PoolOptions o;
  o.txg.timeout_ms = 50;
  return o;
}

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; i++) b[i] = uint8_t(seed + i * 7);
  return b;
}

TEST_CASE("Pool log areas hold what is written there across export and import", "[pool][log]") {
  vdev::MemoryDevice a(kLogDevSize, "a"), b(kLogDevSize, "b");
  REQUIRE(Pool::CreateOnDevices({&a, &b}, {"a", "b"}, CreateOptions{"tank"}).ok());
  const auto first = Bytes(8192, 1), last = Bytes(4096, 9);
  {
    auto p = Pool::ImportDevices({&a, &b}, LogTestOptions());
    REQUIRE(p.ok());
    REQUIRE((*p)->vdev_count() == 2);
    CHECK((*p)->imported_log().empty());
    REQUIRE((*p)->WriteLogArea(0, 0, first).ok());
    REQUIRE((*p)->WriteLogArea(1, vdev::kLogAreaSize - 4096, last).ok());
    REQUIRE((*p)->FlushLogArea(0).ok());
    REQUIRE((*p)->FlushLogArea(1).ok());
    // Outside the areas: refused, naming the range or the vdev.
    Status past = (*p)->WriteLogArea(0, vdev::kLogAreaSize - 4096, first);
    CHECK(past.code() == StatusCode::kInvalidArgument);
    CHECK(past.message().find("past its") != std::string::npos);
    CHECK((*p)->WriteLogArea(2, 0, last).code() == StatusCode::kInvalidArgument);
    REQUIRE((*p)->Export().ok());
  }
  auto p = Pool::ImportDevices({&a, &b}, LogTestOptions());
  REQUIRE(p.ok());
  std::vector<uint8_t> got(8192);
  REQUIRE((*p)->ReadLogArea(0, 0, got).ok());
  CHECK(got == first);
  got.resize(4096);
  REQUIRE((*p)->ReadLogArea(1, vdev::kLogAreaSize - 4096, got).ok());
  CHECK(got == last);
  // The metaslabs never hand out the log area: a pool's blocks start past it.
  CHECK(vdev::kLogAreaOffset + vdev::kLogAreaSize == vdev::kFrontReserved);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool uberblocks carry the log state of the source, or keep the imported one",
          "[pool][log]") {
  vdev::MemoryDevice a(kLogDevSize, "a");
  REQUIRE(Pool::CreateOnDevices({&a}, {"a"}, CreateOptions{"tank"}).ok());
  const LogState state{0, 77, 0, 8192, 3};
  {
    auto p = Pool::ImportDevices({&a}, LogTestOptions());
    REQUIRE(p.ok());
    Txg seen;
    (*p)->SetLogStateSource([&](Txg t) {
      seen = t;
      LogState s = state;
      s.synced_txg = t.value();
      return s;
    });
    REQUIRE((*p)->CreateDataset("x").ok());
    REQUIRE((*p)->WaitSynced().ok());
    CHECK(seen.value() > 0);
    REQUIRE((*p)->Export().ok());  // its last sync asks the source too
  }
  LogState kept;
  {
    auto p = Pool::ImportDevices({&a}, LogTestOptions());
    REQUIRE(p.ok());
    kept = (*p)->imported_log();
    CHECK(kept.chain == 77);
    CHECK(kept.tail_offset == 8192);
    CHECK(kept.tail_seq == 3);
    CHECK(kept.synced_txg == (*p)->imported_txg().value());
    // No source: later syncs keep the state for an import that replays.
    REQUIRE((*p)->CreateDataset("y").ok());
    REQUIRE((*p)->Export().ok());
  }
  {
    auto p = Pool::ImportDevices({&a}, LogTestOptions());
    REQUIRE(p.ok());
    CHECK((*p)->imported_log() == kept);
    // A source that says the log is empty clears it.
    (*p)->SetLogStateSource([](Txg) { return LogState{}; });
    REQUIRE((*p)->CreateDataset("z").ok());
    REQUIRE((*p)->Export().ok());
  }
  auto p = Pool::ImportDevices({&a}, LogTestOptions());
  REQUIRE(p.ok());
  CHECK((*p)->imported_log().empty());
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool log writes survive a power cut once flushed", "[pool][log]") {
  vdev::MemoryDevice mem(kLogDevSize, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  vdev::FaultInjectingDevice dev(&mem);
  const auto flushed = Bytes(4096, 5), unflushed = Bytes(4096, 6);
  {
    auto p = Pool::ImportDevices({&dev}, LogTestOptions());
    REQUIRE(p.ok());
    REQUIRE((*p)->WriteLogArea(0, 4096, flushed).ok());
    REQUIRE((*p)->FlushLogArea(0).ok());
    REQUIRE((*p)->WriteLogArea(0, 8192, unflushed).ok());
    REQUIRE(dev.CutPower(vdev::PowerCut::DropAll()).ok());
    (void)(*p)->Export();  // fails once the power is gone
  }
  dev.PowerOn();
  auto p = Pool::ImportDevices({&dev}, LogTestOptions());
  REQUIRE(p.ok());
  std::vector<uint8_t> got(4096);
  REQUIRE((*p)->ReadLogArea(0, 4096, got).ok());
  CHECK(got == flushed);
  REQUIRE((*p)->ReadLogArea(0, 8192, got).ok());
  CHECK(got != unflushed);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool::PrepareLogArea leaves no hole in a pool file's log areas", "[pool][log]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("poolfs-logarea-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  REQUIRE(Pool::Create(paths, kLogDevSize, CreateOptions{"tank"}).ok());
  auto holes_in_log_area = [&](const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    const off_t hole = lseek(fd, off_t(vdev::kLogAreaOffset), SEEK_HOLE);
    close(fd);
    return hole < off_t(vdev::kLogAreaOffset + vdev::kLogAreaSize);
  };
  CHECK(holes_in_log_area(paths[1]));  // a new pool file is sparse there
  {
    auto p = Pool::Import(paths, LogTestOptions());
    REQUIRE(p.ok());
    const auto written = Bytes(4096, 5);
    REQUIRE((*p)->WriteLogArea(1, 8192, written).ok());
    REQUIRE((*p)->PrepareLogArea(1).ok());
    CHECK((*p)->PrepareLogArea(2).code() == StatusCode::kInvalidArgument);
    std::vector<uint8_t> back(written.size()), zeros(4096);
    REQUIRE((*p)->ReadLogArea(1, 8192, back).ok());
    CHECK(back == written);
    REQUIRE((*p)->ReadLogArea(1, 0, back).ok());
    CHECK(back == zeros);
    REQUIRE((*p)->Export().ok());
  }
  CHECK_FALSE(holes_in_log_area(paths[1]));
  CHECK(holes_in_log_area(paths[0]));  // only the vdev asked for
  std::filesystem::remove_all(dir);
}

TEST_CASE("Pool refuses log writes on a read-only import", "[pool][log]") {
  vdev::MemoryDevice a(kLogDevSize, "a");
  REQUIRE(Pool::CreateOnDevices({&a}, {"a"}, CreateOptions{"tank"}).ok());
  PoolOptions o = LogTestOptions();
  o.read_only = true;
  auto p = Pool::ImportDevices({&a}, o);
  REQUIRE(p.ok());
  const auto bytes = Bytes(4096, 3);
  CHECK((*p)->WriteLogArea(0, 0, bytes).code() == StatusCode::kReadOnly);
  std::vector<uint8_t> got(4096);
  CHECK((*p)->ReadLogArea(0, 0, got).ok());
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("The uberblock's log state decodes back, and a damaged one is refused", "[pool][log]") {
  const zio::BlockPtr root;  // a hole: the payload's pointer is not what is tested
  for (zio::BpFormat format : {zio::BpFormat::kV1, zio::BpFormat::kV2}) {
    const LogState state{0, 0x1234, 41, 12288, 9, 17};
    auto bytes = EncodeRootPayload(root, format, state);
    auto back = DecodeRootPayload(bytes, format);
    REQUIRE(back.ok());
    CHECK(back->log == state);
    CHECK(back->mos_root == root);
    // Without a log state the bytes past the pointer are zero, as before.
    auto plain = EncodeRootPayload(root, format);
    for (size_t i = zio::BlockPtrSize(format); i < plain.size(); i++) REQUIRE(plain[i] == 0);
    auto refused = [&](size_t at, uint8_t value, const std::string& what) {
      auto damaged = bytes;
      damaged[at] = value;
      auto r = DecodeRootPayload(damaged, format);
      INFO("byte " << at);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kCorruption);
      CHECK(r.status().message().find(what) != std::string::npos);
    };
    refused(128, 0, "bad magic");
    refused(140, 1, "reserved");
    for (size_t i = 144; i < 152; i++) bytes[i] = 0;  // chain 0
    refused(144, 0, "chain id 0");
    bytes = EncodeRootPayload(root, format, state);
    refused(160, 1, "tail offset");       // 12289: not a 4 KiB step
    refused(166, 0x7f, "tail offset");    // past the area
    refused(190, 1, "nonzero reserved");  // past the log state
  }
}

}  // namespace
}  // namespace poolfs::core::pool
