// Tests for the vdev layout and labels: positions, the byte layout, round
// trips, damage to some or all labels, truncated and foreign devices, and the
// refusal of unknown format versions.

#include "vdev/label.h"

#include <catch2/catch.hpp>

#include "util/checksum.h"
#include "util/endian.h"
#include "vdev/memory_device.h"
#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::Contains;
using testing::LayoutOf;
using testing::Pattern;
using testing::PoolDevice;
using testing::ReadBytes;
using testing::ReadOk;
using testing::TestHeader;

constexpr uint64_t kOddDevSize = 16 * kMiB + 100 * kKiB;  // not a multiple of 256 KiB

std::unique_ptr<MemoryDevice> OddPoolDevice(const std::string& config = "config-A") {
  return PoolDevice(kOddDevSize, config);
}

// XORs one byte of `dev` at `off`.
void Damage(BlockDevice& dev, uint64_t off, uint8_t mask = 0x40) {
  uint8_t b;
  REQUIRE(dev.Read(off, &b, 1).ok());
  b ^= mask;
  REQUIRE(dev.Write(off, &b, 1).ok());
}

TEST_CASE("ComputeVdevLayout places four labels and the allocatable area", "[label]") {
  Result<VdevLayout> l = ComputeVdevLayout(kOddDevSize);
  REQUIRE(l.ok());
  CHECK(l->vdev_size == 16 * kMiB);  // rounded down to 256 KiB
  CHECK(l->label_offset ==
        std::array<uint64_t, 4>{0, 256 * kKiB, 16 * kMiB - 512 * kKiB, 16 * kMiB - 256 * kKiB});
  CHECK(l->alloc_start == 4 * kMiB);
  CHECK(l->alloc_size == 16 * kMiB - 4 * kMiB - 512 * kKiB);
  CHECK(l->SlotOffset(3, 5) == 16 * kMiB - 256 * kKiB + 128 * kKiB + 5 * kKiB);
  Result<VdevLayout> small = ComputeVdevLayout(kMinVdevSize - 1);
  CHECK(small.status().code() == StatusCode::kInvalidArgument);
  CHECK(Contains(small.status().message(), "too small"));
}

TEST_CASE("EncodeLabel lays the header out as documented", "[label]") {
  MemoryDevice dev(kOddDevSize);
  LabelHeader h = TestHeader(dev, 77);
  std::vector<uint8_t> b = EncodeLabel(h, 2, "cfg");
  REQUIRE(b.size() == kRingOffset);
  CHECK(std::string(b.begin(), b.begin() + 8) == "PFSLABEL");
  CHECK(util::GetLE32(&b[8]) == 2);  // version (the header's: the newest)
  h.version = 1;                     // a pool of the older format keeps it
  CHECK(util::GetLE32(&EncodeLabel(h, 2, "cfg")[8]) == 1);
  CHECK(util::GetLE32(&b[12]) == 2);  // label index
  CHECK(util::GetLE64(&b[16]) == h.pool_guid);
  CHECK(util::GetLE64(&b[24]) == h.vdev_guid);
  CHECK(util::GetLE32(&b[40]) == 12);  // ashift
  CHECK(util::GetLE64(&b[48]) == 16 * kMiB);
  CHECK(util::GetLE64(&b[56]) == 4 * kMiB);
  CHECK(util::GetLE64(&b[72]) == 77);  // config txg
  CHECK(util::GetLE64(&b[80]) == 3);   // config length
  CHECK(std::string(b.begin() + kConfigOffset, b.begin() + kConfigOffset + 3) == "cfg");
  std::string covered(b.begin(), b.begin() + 496);
  covered += "cfg";
  util::Checksum128 sum = util::Xxh3_128(covered.data(), covered.size());
  CHECK(util::GetLE64(&b[496]) == sum.lo);
  CHECK(util::GetLE64(&b[504]) == sum.hi);
}

TEST_CASE("Labels round-trip through WriteLabels and ReadLabels", "[label]") {
  std::string config(50000, '\0');
  std::vector<uint8_t> p = Pattern(config.size(), 3);
  std::copy(p.begin(), p.end(), config.begin());
  auto dev = OddPoolDevice(config);
  VdevLabelInfo info = ReadOk(*dev);
  CHECK(info.header == TestHeader(*dev));
  CHECK(info.config == config);
  CHECK(info.header_label == 0);
  CHECK(info.layout == LayoutOf(*dev));
  for (const Status& s : info.label_status) CHECK(s.ok());
  CHECK_FALSE(info.labels_need_repair);
  CHECK(info.uberblocks.empty());
  CHECK(info.ring_errors.empty());
  CHECK(dev->flushes() == 2);
}

TEST_CASE("WriteLabels refuses invalid headers and oversized configs", "[label]") {
  MemoryDevice dev(kOddDevSize);
  LabelHeader h = TestHeader(dev);
  CHECK(WriteLabels(dev, h, std::string(kMaxConfigSize + 1, 'x')).code() ==
        StatusCode::kInvalidArgument);
  CHECK(WriteLabels(dev, h, std::string(kMaxConfigSize, 'x')).ok());
  LabelHeader bad = h;
  bad.pool_guid = 0;
  CHECK(WriteLabels(dev, bad, "").code() == StatusCode::kInvalidArgument);
  bad = h;
  bad.vdev_index = 3;
  bad.vdev_count = 3;
  CHECK(Contains(WriteLabels(dev, bad, "").message(), "vdev index 3"));
  bad = h;
  bad.ashift = 20;
  CHECK(WriteLabels(dev, bad, "").code() == StatusCode::kInvalidArgument);
  bad = h;
  bad.vdev_size = h.vdev_size + kLabelSize;
  CHECK(Contains(WriteLabels(dev, bad, "").message(), "exceeds mem"));
}

TEST_CASE("ReadLabels opens a vdev when all labels but one are damaged", "[label]") {
  for (int survivor = 0; survivor < kLabelCount; survivor++) {
    INFO("surviving label " << survivor);
    auto dev = OddPoolDevice();
    VdevLayout l = LayoutOf(*dev);
    for (int i = 0; i < kLabelCount; i++) {
      if (i != survivor) Damage(*dev, l.label_offset[i] + kConfigOffset + 2);  // the config
    }
    VdevLabelInfo info = ReadOk(*dev);
    CHECK(info.header_label == survivor);
    CHECK(info.config == "config-A");
    CHECK(info.labels_need_repair);
    for (int i = 0; i < kLabelCount; i++) {
      CHECK(info.label_status[i].ok() == (i == survivor));
      if (i != survivor) CHECK(info.label_status[i].message() == "checksum mismatch");
    }
  }
}

TEST_CASE("ReadLabels refuses a vdev whose four labels are damaged, naming each", "[label]") {
  auto dev = OddPoolDevice();
  VdevLayout l = LayoutOf(*dev);
  Damage(*dev, l.label_offset[0], 0xFF);  // the magic
  Damage(*dev, l.label_offset[1] + 30);   // a field
  Damage(*dev, l.label_offset[2] + 496);  // the checksum itself
  std::vector<uint8_t> zeros(kLabelHeaderSize, 0);
  REQUIRE(dev->Write(l.label_offset[3], zeros.data(), zeros.size()).ok());
  Result<VdevLabelInfo> info = ReadLabels(*dev);
  REQUIRE(info.status().IsCorruption());
  const std::string& m = info.status().message();
  INFO(m);
  CHECK(Contains(m, "no valid label on mem0: label 0: bad magic 0x4c4542414c5346af"));
  CHECK(Contains(m, "label 1: checksum mismatch"));
  CHECK(Contains(m, "label 2: checksum mismatch"));
  CHECK(Contains(m, "label 3: empty (all zeros)"));
}

TEST_CASE("ReadLabels refuses empty, tiny, random and truncated devices", "[label]") {
  MemoryDevice zeros(kOddDevSize, "zeros");
  Result<VdevLabelInfo> r = ReadLabels(zeros);
  CHECK(r.status().IsCorruption());
  CHECK(Contains(r.status().message(), "no valid label on zeros"));

  MemoryDevice tiny(4096, "tiny");
  r = ReadLabels(tiny);
  CHECK(r.status().IsCorruption());
  CHECK(Contains(r.status().message(), "too small"));

  MemoryDevice noise(kOddDevSize, "noise");
  std::vector<uint8_t> junk = Pattern(kOddDevSize, 99);
  REQUIRE(noise.Write(0, junk.data(), junk.size()).ok());
  r = ReadLabels(noise);
  CHECK(r.status().IsCorruption());
  CHECK(Contains(r.status().message(), "bad magic"));

  // A pool whose file lost its tail: the front labels say it is bigger.
  auto dev = OddPoolDevice();
  MemoryDevice cut(12 * kMiB, "cut");
  std::vector<uint8_t> head = ReadBytes(*dev, 0, 12 * kMiB);
  REQUIRE(cut.Write(0, head.data(), head.size()).ok());
  r = ReadLabels(cut);
  CHECK(r.status().IsCorruption());
  CHECK(Contains(r.status().message(),
                 "cut is 12582912 bytes but its labels say the vdev is "
                 "16777216 bytes: the device was truncated"));
}

TEST_CASE("ReadLabels refuses an unknown format version with a clear message", "[label]") {
  auto dev = OddPoolDevice();
  VdevLayout l = LayoutOf(*dev);
  // A well-formed label of version 3 (what a newer poolfs would write) in
  // one copy is enough to refuse the pool.
  std::vector<uint8_t> b = EncodeLabel(TestHeader(*dev), 1, "config-A");
  util::PutLE32(&b[8], 3);
  std::string covered(b.begin(), b.begin() + 496);
  covered += "config-A";
  util::Checksum128 sum = util::Xxh3_128(covered.data(), covered.size());
  util::PutLE64(&b[496], sum.lo);
  util::PutLE64(&b[504], sum.hi);
  REQUIRE(dev->Write(l.label_offset[1], b.data(), b.size()).ok());
  Result<VdevLabelInfo> r = ReadLabels(*dev);
  CHECK(r.status().code() == StatusCode::kNotSupported);
  CHECK(r.status().message() ==
        "mem0 label 1: pool format version 3 is not supported by this poolfs (supports 1 to 2)");
}

TEST_CASE("ReadLabels treats a damaged version field as damage, not a new version", "[label]") {
  auto dev = OddPoolDevice();
  Damage(*dev, LayoutOf(*dev).label_offset[0] + 8, 0x02);  // version 1 -> 3, checksum now bad
  VdevLabelInfo info = ReadOk(*dev);
  CHECK(info.header_label == 1);
  CHECK(info.label_status[0].message() == "checksum mismatch");
}

TEST_CASE("ReadLabels takes the newest config when labels disagree", "[label]") {
  auto dev = OddPoolDevice("old");
  VdevLayout l = LayoutOf(*dev);
  // As if a WriteLabels of txg 5 had written labels 0 and 2 only.
  for (int i : {0, 2}) {
    std::vector<uint8_t> b = EncodeLabel(TestHeader(*dev, 5), i, "new");
    REQUIRE(dev->Write(l.label_offset[i], b.data(), b.size()).ok());
  }
  VdevLabelInfo info = ReadOk(*dev);
  CHECK(info.config == "new");
  CHECK(info.header.config_txg == Txg(5));
  CHECK(info.labels_need_repair);
}

TEST_CASE("ReadLabels refuses a label copied to the wrong place", "[label]") {
  auto dev = OddPoolDevice();
  VdevLayout l = LayoutOf(*dev);
  std::vector<uint8_t> label0 = ReadBytes(*dev, 0, kRingOffset);
  REQUIRE(dev->Write(l.label_offset[3], label0.data(), label0.size()).ok());
  VdevLabelInfo info = ReadOk(*dev);
  CHECK(info.label_status[3].message() == "holds label copy 0 where copy 3 belongs");
}

TEST_CASE("ReadLabels finds the end labels of a device that grew", "[label]") {
  auto dev = OddPoolDevice();
  MemoryDevice grown(kOddDevSize + 3 * kMiB, "grown");
  std::vector<uint8_t> all = ReadBytes(*dev, 0, kOddDevSize);
  REQUIRE(grown.Write(0, all.data(), all.size()).ok());
  VdevLabelInfo info = ReadOk(grown);
  CHECK(info.layout.vdev_size == 16 * kMiB);
  CHECK(info.layout.device_size == kOddDevSize + 3 * kMiB);
  for (const Status& s : info.label_status) CHECK(s.ok());
}

TEST_CASE("WipeLabels erases every label", "[label]") {
  auto dev = OddPoolDevice();
  REQUIRE(WipeLabels(*dev, LayoutOf(*dev)).ok());
  CHECK(ReadLabels(*dev).status().IsCorruption());
}

TEST_CASE("DecodeLabel refuses short buffers and oversized config lengths", "[label]") {
  MemoryDevice dev(kOddDevSize);
  std::vector<uint8_t> b = EncodeLabel(TestHeader(dev), 0, "abc");
  CHECK(DecodeLabel(b.data(), kConfigOffset + 3, 0).ok());
  CHECK(Contains(DecodeLabel(b.data(), kConfigOffset + 2, 0).status().message(), "truncated"));
  CHECK(DecodeLabel(b.data(), 100, 0).status().IsCorruption());
  util::PutLE64(&b[80], kMaxConfigSize + 1);
  CHECK(Contains(DecodeLabel(b.data(), b.size(), 0).status().message(), "config length"));
}

}  // namespace
}  // namespace poolfs::core::vdev
