// Tests for uberblocks: the slot encoding, refusal of damaged slots, the ring
// (slot = txg % 128, the previous txg's slot never overwritten), and what
// ReadLabels makes of the four rings.

#include "vdev/uberblock.h"

#include <catch2/catch.hpp>

#include "util/checksum.h"
#include "util/endian.h"
#include "vdev/label.h"
#include "vdev/memory_device.h"
#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::Contains;
using testing::kDevSize;
using testing::LayoutOf;
using testing::PoolDevice;
using testing::ReadOk;
using testing::TestHeader;
using testing::TestUberblock;

void WriteUbs(BlockDevice& dev, uint64_t from, uint64_t to) {
  for (uint64_t t = from; t <= to; t++)
    REQUIRE(WriteUberblock(dev, LayoutOf(dev), TestUberblock(t)).ok());
}

TEST_CASE("EncodeUberblock lays the slot out as documented and round-trips", "[uberblock]") {
  Uberblock ub = TestUberblock(300);
  UberblockBytes b = EncodeUberblock(ub);
  CHECK(std::string(b.begin(), b.begin() + 8) == "PFSUBERB");
  CHECK(util::GetLE32(&b[8]) == 2);  // the newest format, unless the pool has another
  ub.version = 1;
  CHECK(util::GetLE32(&EncodeUberblock(ub)[8]) == 1);
  CHECK(DecodeUberblock(EncodeUberblock(ub).data(), kUberblockSlotSize).value() == ub);
  ub.version = 2;
  CHECK(util::GetLE64(&b[16]) == 300);
  CHECK(util::GetLE64(&b[24]) == ub.pool_guid);
  CHECK(util::GetLE64(&b[32]) == ub.guid_sum);
  CHECK(util::GetLE64(&b[40]) == ub.timestamp_ns);
  CHECK(std::equal(ub.root.begin(), ub.root.end(), b.begin() + 48));
  util::Checksum128 sum = util::Xxh3_128(b.data(), 1008);
  CHECK(util::GetLE64(&b[1008]) == sum.lo);
  CHECK(util::GetLE64(&b[1016]) == sum.hi);
  Result<Uberblock> back = DecodeUberblock(b.data(), b.size());
  REQUIRE(back.ok());
  CHECK(*back == ub);
}

TEST_CASE("DecodeUberblock refuses every single-byte damage", "[uberblock]") {
  UberblockBytes good = EncodeUberblock(TestUberblock(7));
  for (size_t i = 0; i < good.size(); i++) {
    UberblockBytes b = good;
    b[i] ^= 0x10;
    Result<Uberblock> r = DecodeUberblock(b.data(), b.size());
    INFO("byte " << i);
    REQUIRE(r.status().IsCorruption());
  }
  UberblockBytes b = good;
  b[0] ^= 1;
  CHECK(Contains(DecodeUberblock(b.data(), b.size()).status().message(), "bad uberblock magic"));
  b = good;
  b[100] ^= 1;
  CHECK(Contains(DecodeUberblock(b.data(), b.size()).status().message(), "checksum mismatch"));
  CHECK(Contains(DecodeUberblock(good.data(), 1000).status().message(), "truncated"));
}

TEST_CASE("DecodeUberblock calls an all-zero slot empty", "[uberblock]") {
  UberblockBytes zeros{};
  CHECK(DecodeUberblock(zeros.data(), zeros.size()).status().IsNotFound());
}

TEST_CASE("DecodeUberblock refuses a well-formed uberblock of another version", "[uberblock]") {
  UberblockBytes b = EncodeUberblock(TestUberblock(7));
  util::PutLE32(&b[8], 9);
  util::Checksum128 sum = util::Xxh3_128(b.data(), 1008);
  util::PutLE64(&b[1008], sum.lo);
  util::PutLE64(&b[1016], sum.hi);
  Result<Uberblock> r = DecodeUberblock(b.data(), b.size());
  CHECK(r.status().code() == StatusCode::kNotSupported);
  CHECK(r.status().message() ==
        "uberblock format version 9 is not supported by this poolfs (supports 1 to 2)");
  // In a ring, it refuses the whole device.
  auto dev = PoolDevice();
  REQUIRE(dev->Write(LayoutOf(*dev).SlotOffset(2, 7), b.data(), b.size()).ok());
  CHECK(ReadLabels(*dev).status().code() == StatusCode::kNotSupported);
}

TEST_CASE("WriteUberblock fills slot txg % 128 of all four labels", "[uberblock]") {
  auto dev = PoolDevice();
  uint64_t flushes = dev->flushes();
  REQUIRE(WriteUberblock(*dev, LayoutOf(*dev), TestUberblock(130)).ok());
  CHECK(dev->flushes() == flushes + 1);  // between the two halves
  VdevLayout l = LayoutOf(*dev);
  for (int i = 0; i < kLabelCount; i++) {
    UberblockBytes b;
    REQUIRE(dev->Read(l.SlotOffset(i, 2), b.data(), b.size()).ok());
    Result<Uberblock> ub = DecodeUberblock(b.data(), b.size());
    REQUIRE(ub.ok());
    CHECK(*ub == TestUberblock(130));
  }
  VdevLabelInfo info = ReadOk(*dev);
  REQUIRE(info.uberblocks.size() == 1);
  CHECK(info.uberblocks[0].ub == TestUberblock(130));
  CHECK(info.uberblocks[0].label_mask == 0xF);
}

TEST_CASE("The uberblock ring keeps the newest 128 txgs, newest first", "[uberblock]") {
  auto dev = PoolDevice();
  WriteUbs(*dev, 1, 300);
  VdevLabelInfo info = ReadOk(*dev);
  REQUIRE(info.uberblocks.size() == 128);
  for (size_t i = 0; i < 128; i++) {
    CHECK(info.uberblocks[i].ub == TestUberblock(300 - i));
    CHECK(info.uberblocks[i].label_mask == 0xF);
  }
  CHECK(info.ring_errors.empty());
}

TEST_CASE("Writing txg T leaves the uberblock of T-1 intact", "[uberblock]") {
  auto dev = PoolDevice();
  WriteUbs(*dev, 10, 11);
  VdevLabelInfo info = ReadOk(*dev);
  REQUIRE(info.uberblocks.size() == 2);
  CHECK(info.uberblocks[1].ub == TestUberblock(10));
}

TEST_CASE("A damaged ring slot is reported and the other copies are used", "[uberblock]") {
  auto dev = PoolDevice();
  WriteUbs(*dev, 1, 5);
  VdevLayout l = LayoutOf(*dev);
  uint8_t b = 0x55;
  REQUIRE(dev->Write(l.SlotOffset(1, 5) + 200, &b, 1).ok());
  VdevLabelInfo info = ReadOk(*dev);
  REQUIRE(info.uberblocks.size() == 5);
  CHECK(info.uberblocks[0].ub == TestUberblock(5));
  CHECK(info.uberblocks[0].label_mask == 0xD);  // not label 1
  REQUIRE(info.ring_errors.size() == 1);
  CHECK(Contains(info.ring_errors[0], "label 1 slot 5: uberblock checksum mismatch"));
}

TEST_CASE("Uberblocks of another pool or in the wrong slot are refused", "[uberblock]") {
  auto dev = PoolDevice();
  VdevLayout l = LayoutOf(*dev);
  Uberblock foreign = TestUberblock(3);
  foreign.pool_guid = 42;
  UberblockBytes fb = EncodeUberblock(foreign);
  REQUIRE(dev->Write(l.SlotOffset(0, 3), fb.data(), fb.size()).ok());
  UberblockBytes misplaced = EncodeUberblock(TestUberblock(4));
  REQUIRE(dev->Write(l.SlotOffset(2, 9), misplaced.data(), misplaced.size()).ok());
  VdevLabelInfo info = ReadOk(*dev);
  CHECK(info.uberblocks.empty());
  REQUIRE(info.ring_errors.size() == 2);
  CHECK(Contains(info.ring_errors[0], "label 0 slot 3: uberblock of another pool"));
  CHECK(info.ring_errors[1] == "label 2 slot 9: holds txg 4, which belongs in slot 4");
}

TEST_CASE("The rings of a label with a damaged header still count", "[uberblock]") {
  auto dev = PoolDevice();
  WriteUbs(*dev, 1, 2);
  uint8_t b = 0;
  VdevLayout l = LayoutOf(*dev);
  for (int i : {0, 1, 2}) REQUIRE(dev->Write(l.label_offset[i] + 3, &b, 1).ok());  // headers
  // Damage slot 2 in label 3, the only label whose header is intact.
  b = 0xEE;
  REQUIRE(dev->Write(l.SlotOffset(3, 2) + 9, &b, 1).ok());
  VdevLabelInfo info = ReadOk(*dev);
  CHECK(info.header_label == 3);
  REQUIRE(info.uberblocks.size() == 2);
  CHECK(info.uberblocks[0].ub == TestUberblock(2));
  CHECK(info.uberblocks[0].label_mask == 0x7);
}

TEST_CASE("Uberblocks with the same txg but different content are all kept", "[uberblock]") {
  // A txg written, not durable everywhere, then written again differently
  // after an import that fell back: import must be able to try both.
  auto dev = PoolDevice();
  VdevLayout l = LayoutOf(*dev);
  REQUIRE(WriteUberblock(*dev, l, TestUberblock(8, 0)).ok());
  UberblockBytes second = EncodeUberblock(TestUberblock(8, 1));
  for (int i : {1, 3}) REQUIRE(dev->Write(l.SlotOffset(i, 8), second.data(), second.size()).ok());
  VdevLabelInfo info = ReadOk(*dev);
  REQUIRE(info.uberblocks.size() == 2);
  CHECK(info.uberblocks[0].ub == TestUberblock(8, 1));  // the later timestamp first
  CHECK(info.uberblocks[0].label_mask == 0xA);
  CHECK(info.uberblocks[1].ub == TestUberblock(8, 0));
  CHECK(info.uberblocks[1].label_mask == 0x5);
}

TEST_CASE("WriteUberblock refuses a zero pool GUID and a layout larger than the device",
          "[uberblock]") {
  auto dev = PoolDevice();
  Uberblock ub = TestUberblock(1);
  ub.pool_guid = 0;
  CHECK(WriteUberblock(*dev, LayoutOf(*dev), ub).code() == StatusCode::kInvalidArgument);
  VdevLayout big = *ComputeVdevLayout(kDevSize * 2);
  CHECK(WriteUberblock(*dev, big, TestUberblock(1)).code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace poolfs::core::vdev
