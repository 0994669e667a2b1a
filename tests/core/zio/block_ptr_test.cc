// BlockPtr: the on-disk forms (format 1's 64 bytes, format 2's 128 with up
// to three copies), round trips, and a decoder that refuses every invalid
// value and survives every single-bit flip.
#include "zio/block_ptr.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "util/endian.h"
#include "vdev/vdev_layout.h"
#include "zio_test_util.h"

namespace poolfs::core::zio {
namespace {

using Bytes = std::array<uint8_t, kBlockPtrSizeV1>;  // format 1, pinned below
using testing::RandomValidBlockPtr;
using testing::RandomValidBlockPtrV2;

Bytes Encode(const BlockPtr& bp) {
  Bytes b{};
  EncodeBlockPtr(bp, b.data(), BpFormat::kV1);
  return b;
}

// An L0 data block of 128 KiB stored as 5000 lz4 bytes in 8 KiB.
BlockPtr SampleData() {
  BlockPtr bp;
  bp.dva = {1, vdev::kFrontReserved + 0x1000, 8192};
  bp.lsize = 131072;
  bp.psize = 5000;
  bp.compression = util::Compression::kLz4;
  bp.type = BlockType::kData;
  bp.level = 0;
  bp.birth = Txg(17);
  bp.fill = 1;
  bp.checksum = {0x0102030405060708, 0x1112131415161718};
  return bp;
}

BlockPtr SampleIndirect() {
  BlockPtr bp = SampleData();
  bp.type = BlockType::kIndirect;
  bp.level = 1;
  bp.fill = 12;
  return bp;
}

// Decodes `b` and returns the status (OK or the refusal).
Status DecodeStatus(const Bytes& b) {
  return DecodeBlockPtr(b.data(), "test", BpFormat::kV1).status();
}

TEST_CASE("BlockPtr encodes little-endian at the documented offsets", "[block_ptr]") {
  const Bytes want = {
      0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,  // vdev 1, asize 8192
      0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,  // offset 0x401000
      0x00, 0x00, 0x02, 0x00, 0x88, 0x13, 0x00, 0x00,  // lsize 131072, psize 5000
      0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00,  // data, L0, lz4, xxh3-128, reserved
      0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // birth 17
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // fill 1
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // checksum lo
      0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,  // checksum hi
  };
  REQUIRE(Encode(SampleData()) == want);
  auto back = DecodeBlockPtr(want.data(), "pinned", BpFormat::kV1);
  REQUIRE(back.ok());
  REQUIRE(*back == SampleData());
}

TEST_CASE("BlockPtr round-trips random valid pointers", "[block_ptr]") {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; i++) {
    BlockPtr bp = RandomValidBlockPtr(rng);
    Bytes b = Encode(bp);
    auto back = DecodeBlockPtr(b.data(), "round trip", BpFormat::kV1);
    INFO(bp.ToString());
    REQUIRE(back.ok());
    REQUIRE(*back == bp);
  }
}

TEST_CASE("All-zero bytes decode to the empty hole", "[block_ptr]") {
  Bytes zero{};
  auto bp = DecodeBlockPtr(zero.data(), "", BpFormat::kV1);
  REQUIRE(bp.ok());
  REQUIRE(bp->IsHole());
  REQUIRE(*bp == BlockPtr{});
  REQUIRE(Encode(BlockPtr{}) == zero);
}

TEST_CASE("A hole keeps its birth, lsize, type and level", "[block_ptr]") {
  BlockPtr hole = MakeHole(BlockType::kData, 0, 131072, Txg(9));
  Bytes b = Encode(hole);
  REQUIRE(b[offsetof(BlockPtrPhys, checksum_type)] == 0);
  auto back = DecodeBlockPtr(b.data(), "", BpFormat::kV1);
  REQUIRE(back.ok());
  REQUIRE(*back == hole);
  REQUIRE(back->ToString() == "L0 data hole lsize 131072 birth 9");
}

TEST_CASE("BlockPtr::ToString names the block", "[block_ptr]") {
  REQUIRE(
      SampleIndirect().ToString() ==
      "L1 indirect vdev 1 off 0x401000 asize 8192 lsize 131072 psize 5000 lz4 birth 17 fill 12");
  REQUIRE(BlockTypeName(BlockType::kSpaceMap) == "spacemap");
  REQUIRE(BlockTypeName(BlockType(200)) == "unknown");
  REQUIRE(ChecksumTypeName(ChecksumType::kXxh3_128) == "xxh3-128");
}

TEST_CASE("DecodeBlockPtr accepts exactly the known values of every enum byte", "[block_ptr]") {
  struct Case {
    const char* name;
    size_t offset;
    BlockPtr base;
    std::vector<int> valid;
  };
  const std::vector<Case> cases = {
      // An L0 block of fill 1: any type but none and indirect.
      {"type", offsetof(BlockPtrPhys, type), SampleData(), {1, 3, 4, 5, 6, 7, 8, 9}},
      // An indirect block: levels 1..31.
      {"level", offsetof(BlockPtrPhys, level), SampleIndirect(), {}},
      // psize < lsize: lz4 or zstd, not off.
      {"compression", offsetof(BlockPtrPhys, compression), SampleData(), {1, 2}},
      {"checksum_type", offsetof(BlockPtrPhys, checksum_type), SampleData(), {1}},
  };
  for (const Case& c : cases) {
    std::vector<int> valid = c.valid;
    if (valid.empty())
      for (int l = 1; l <= kMaxLevel; l++) valid.push_back(l);
    for (int v = 0; v < 256; v++) {
      Bytes b = Encode(c.base);
      b[c.offset] = uint8_t(v);
      Status st = DecodeStatus(b);
      bool want_ok = std::find(valid.begin(), valid.end(), v) != valid.end();
      INFO(c.name << " = " << v << ": " << st.ToString());
      REQUIRE(st.ok() == want_ok);
      if (!st.ok()) {
        REQUIRE(st.IsCorruption());
        REQUIRE(st.message().rfind("test: block pointer ", 0) == 0);
      }
    }
  }
}

TEST_CASE("A gang pointer round-trips and a gang size that cannot hold the block is refused",
          "[block_ptr]") {
  BlockPtr gang = SampleData();  // psize 5000
  gang.dva.size = 4096;          // the header
  gang.gang_asize = 8192;
  REQUIRE(ValidateBlockPtr(gang).ok());
  REQUIRE(DecodeBlockPtr(Encode(gang).data(), "test", BpFormat::kV1).value() == gang);
  REQUIRE(gang.allocated() == 4096 + 8192);
  REQUIRE(gang.ToString().find("gang 8192") != std::string::npos);

  // Every single bit of the field: a hole refuses them all; a stored block
  // takes exactly the values in [psize, psize + 64 KiB) as a gang.
  for (const BlockPtr& base :
       {SampleData(), BlockPtr{}, MakeHole(BlockType::kData, 0, 4096, Txg(3))}) {
    for (int bit = 0; bit < 32; bit++) {
      Bytes b = Encode(base);
      b[offsetof(BlockPtrPhys, gang_sectors) + bit / 8] ^= uint8_t(1 << (bit % 8));
      const uint64_t g = (uint64_t{1} << bit) * kMinSectorSize;
      Result<BlockPtr> got = DecodeBlockPtr(b.data(), "test", BpFormat::kV1);
      const bool fits = !base.IsHole() && g >= base.psize && g - base.psize < kMaxGangHeaderSize;
      INFO("bit " << bit << " hole " << base.IsHole());
      REQUIRE(got.ok() == fits);
      if (fits)
        REQUIRE(got->gang_asize == g);
      else
        REQUIRE(got.status().message().find("gang size") != std::string::npos);
    }
  }

  // A gang header above 64 KiB, a gang size not a multiple of 512.
  BlockPtr big = gang;
  big.dva.size = kMaxGangHeaderSize + 4096;
  REQUIRE(ValidateBlockPtr(big).IsCorruption());
  BlockPtr odd = gang;
  odd.gang_asize = 8192 + 100;
  REQUIRE(ValidateBlockPtr(odd).IsCorruption());
}

TEST_CASE("DecodeBlockPtr refuses a hole with stray fields", "[block_ptr]") {
  const BlockPtr hole = MakeHole(BlockType::kData, 0, 131072, Txg(5));
  // Every field a hole must leave zero (asize is what makes it a hole).
  const std::vector<std::pair<size_t, const char*>> fields = {
      {offsetof(BlockPtrPhys, vdev), "vdev"},
      {offsetof(BlockPtrPhys, offset), "offset"},
      {offsetof(BlockPtrPhys, offset) + 7, "offset"},
      {offsetof(BlockPtrPhys, psize), "psize"},
      {offsetof(BlockPtrPhys, compression), "compression"},
      {offsetof(BlockPtrPhys, checksum_type), "checksum type"},
      {offsetof(BlockPtrPhys, fill), "fill"},
      {offsetof(BlockPtrPhys, checksum_lo), "checksum"},
      {offsetof(BlockPtrPhys, checksum_hi) + 7, "checksum"},
  };
  for (const auto& [off, what] : fields) {
    Bytes b = Encode(hole);
    b[off] = 1;
    Status st = DecodeStatus(b);
    INFO(what << ": " << st.ToString());
    REQUIRE(st.IsCorruption());
    REQUIRE(st.message().find("hole") != std::string::npos);
    REQUIRE(st.message().find(what) != std::string::npos);
  }
  // Birth, lsize, type and level are its own.
  Bytes b = Encode(hole);
  b[offsetof(BlockPtrPhys, level)] = 3;
  b[offsetof(BlockPtrPhys, type)] = uint8_t(BlockType::kIndirect);
  b[offsetof(BlockPtrPhys, birth) + 5] = 0xff;
  REQUIRE(DecodeStatus(b).ok());
  // But the lsize of a hole is bounded like any other.
  util::PutLE32(b.data() + offsetof(BlockPtrPhys, lsize), kMaxBlockSize + 1);
  REQUIRE(DecodeStatus(b).IsCorruption());
}

TEST_CASE("DecodeBlockPtr refuses inconsistent sizes, offsets, births and fills", "[block_ptr]") {
  // Each case damages a valid pointer; the message must contain its text.
  const std::vector<std::pair<const char*, std::function<void(BlockPtr*)>>> cases = {
      {"lsize 0", [](BlockPtr* bp) { bp->lsize = 0; }},
      {"above the maximum", [](BlockPtr* bp) { bp->lsize = kMaxBlockSize + 1; }},
      {"psize 0", [](BlockPtr* bp) { bp->psize = 0; }},
      {"above lsize", [](BlockPtr* bp) { bp->psize = bp->lsize + 1; }},
      {"saving less than 1/8",
       [](BlockPtr* bp) { bp->psize = uint32_t(util::CompressLimit(bp->lsize) + 1); }},
      {"uncompressed but psize", [](BlockPtr* bp) { bp->compression = util::Compression::kOff; }},
      {"below psize", [](BlockPtr* bp) { bp->dva.size = 4096; }},
      {"not a multiple of 512", [](BlockPtr* bp) { bp->dva.size = 8192 + 100; }},
      {"asize 16777728 above the maximum",
       [](BlockPtr* bp) { bp->dva.size = kMaxBlockSize + 512; }},
      {"offset 0x401001", [](BlockPtr* bp) { bp->dva.offset += 1; }},
      {"inside the front labels", [](BlockPtr* bp) { bp->dva.offset = 512; }},
      {"past 2^62", [](BlockPtr* bp) { bp->dva.offset = uint64_t{1} << 63; }},
      {"birth txg 0", [](BlockPtr* bp) { bp->birth = Txg(0); }},
      {"fill 2 (must be 1)", [](BlockPtr* bp) { bp->fill = 2; }},
      {"fill 0 (must be 1)", [](BlockPtr* bp) { bp->fill = 0; }},
      {"at most 256 dnodes",
       [](BlockPtr* bp) {
         bp->type = BlockType::kDnodes;
         bp->fill = 257;
       }},
      {"type none", [](BlockPtr* bp) { bp->type = BlockType::kNone; }},
      {"only indirect blocks", [](BlockPtr* bp) { bp->level = 2; }},
      {"indirect block has level 0", [](BlockPtr* bp) { bp->type = BlockType::kIndirect; }},
  };
  for (const auto& [want, damage] : cases) {
    BlockPtr bp = SampleData();
    damage(&bp);
    // Encode refuses invalid pointers, so write the fields by hand.
    Bytes b = Encode(SampleData());
    util::PutLE32(b.data() + offsetof(BlockPtrPhys, asize), uint32_t(bp.dva.size));
    util::PutLE64(b.data() + offsetof(BlockPtrPhys, offset), bp.dva.offset);
    util::PutLE32(b.data() + offsetof(BlockPtrPhys, lsize), bp.lsize);
    util::PutLE32(b.data() + offsetof(BlockPtrPhys, psize), bp.psize);
    b[offsetof(BlockPtrPhys, type)] = uint8_t(bp.type);
    b[offsetof(BlockPtrPhys, level)] = bp.level;
    b[offsetof(BlockPtrPhys, compression)] = uint8_t(bp.compression);
    util::PutLE64(b.data() + offsetof(BlockPtrPhys, birth), bp.birth.value());
    util::PutLE64(b.data() + offsetof(BlockPtrPhys, fill), bp.fill);
    auto got = DecodeBlockPtr(b.data(), "object 17 L1 blkid 3 slot 12", BpFormat::kV1);
    INFO(want << ": " << got.status().ToString());
    REQUIRE(got.status().IsCorruption());
    REQUIRE(got.status().message().rfind("object 17 L1 blkid 3 slot 12: block pointer", 0) == 0);
    REQUIRE(got.status().message().find(want) != std::string::npos);
    REQUIRE(ValidateBlockPtr(bp).IsCorruption());
  }
}

TEST_CASE("Every single-bit flip is refused or decodes to another valid pointer", "[block_ptr]") {
  std::mt19937_64 rng(7);
  int refused = 0, accepted = 0;
  for (int i = 0; i < 400; i++) {
    const BlockPtr bp = i == 0 ? BlockPtr{} : i == 1 ? SampleData() : RandomValidBlockPtr(rng);
    const Bytes good = Encode(bp);
    for (int bit = 0; bit < int(kBlockPtrSizeV1 * 8); bit++) {
      Bytes b = good;
      b[bit / 8] ^= uint8_t(1 << (bit % 8));
      auto got = DecodeBlockPtr(b.data(), "flip", BpFormat::kV1);
      if (!got.ok()) {
        REQUIRE(got.status().IsCorruption());
        refused++;
        continue;
      }
      accepted++;
      INFO(bp.ToString() << " bit " << bit);
      REQUIRE(!(*got == bp));
      REQUIRE(Encode(*got) == b);  // the encoding is canonical
    }
  }
  // Both outcomes happen (the checksum bits always decode; enum bits mostly not).
  REQUIRE(refused > 0);
  REQUIRE(accepted > 0);
}

// Format 2.
using BytesV2 = std::array<uint8_t, kBlockPtrSizeV2>;

BytesV2 EncodeV2(const BlockPtr& bp) {
  BytesV2 b{};
  EncodeBlockPtr(bp, b.data(), BpFormat::kV2);
  return b;
}

Status DecodeStatusV2(const BytesV2& b) {
  return DecodeBlockPtr(b.data(), "test", BpFormat::kV2).status();
}

// SampleData with copies on vdevs 2 and 0.
BlockPtr SampleThreeCopies() {
  BlockPtr bp = SampleData();
  bp.ditto[0] = {2, vdev::kFrontReserved + 0x80000, 8192};
  bp.ditto[1] = {0, vdev::kFrontReserved + 0x2000, 8192};
  return bp;
}

TEST_CASE("Format 2 block pointers encode their copies little-endian at the documented offsets",
          "[block_ptr]") {
  BytesV2 want{};
  const uint8_t head[] = {
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // copy 0: vdev 1, reserved
      0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,  //   offset 0x401000
      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // copy 1: vdev 2
      0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00,  //   offset 0x480000
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // copy 2: vdev 0
      0x00, 0x20, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,  //   offset 0x402000
      0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // asize 8192, gang sectors 0
      0x00, 0x00, 0x02, 0x00, 0x88, 0x13, 0x00, 0x00,  // lsize 131072, psize 5000
      0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00,  // data, L0, lz4, xxh3-128, reserved
      0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // birth 17
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // fill 1
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // checksum lo
      0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,  // checksum hi
  };
  std::copy(std::begin(head), std::end(head), want.begin());  // bytes 104..127 stay zero
  const BlockPtr bp = SampleThreeCopies();
  REQUIRE(EncodeV2(bp) == want);
  auto back = DecodeBlockPtr(want.data(), "pinned", BpFormat::kV2);
  REQUIRE(back.ok());
  REQUIRE(*back == bp);
  REQUIRE(back->copies() == 3);
  REQUIRE(back->allocated() == 3 * 8192);
}

TEST_CASE("Format 2 round-trips every valid pointer of one to three copies", "[block_ptr]") {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; i++) {
    const BlockPtr bp = RandomValidBlockPtrV2(rng);
    auto back = DecodeBlockPtr(EncodeV2(bp).data(), "round trip", BpFormat::kV2);
    INFO(bp.ToString());
    REQUIRE(back.ok());
    REQUIRE(*back == bp);
  }
  // One copy reads the same in either format.
  const BlockPtr one = SampleData();
  REQUIRE(DecodeBlockPtr(EncodeV2(one).data(), "", BpFormat::kV2).value() ==
          DecodeBlockPtr(Encode(one).data(), "", BpFormat::kV1).value());
}

TEST_CASE("Format 2 refuses copies that overlap, differ in size, skip, sit on a gang or stray",
          "[block_ptr]") {
  const BlockPtr good = SampleThreeCopies();
  struct Case {
    const char* want;
    std::function<void(BytesV2&)> damage;
  };
  auto put_dva = [](BytesV2& b, int i, uint32_t vdev, uint64_t off) {
    util::PutLE32(b.data() + i * sizeof(DvaPhys), vdev);
    util::PutLE64(b.data() + i * sizeof(DvaPhys) + 8, off);
  };
  const Case cases[] = {
      {"overlapping", [&](BytesV2& b) { put_dva(b, 1, 1, vdev::kFrontReserved + 0x2000); }},
      {"overlapping", [&](BytesV2& b) { put_dva(b, 2, 2, vdev::kFrontReserved + 0x80000); }},
      {"after an absent one", [&](BytesV2& b) { put_dva(b, 1, 0, 0); }},
      {"offset", [&](BytesV2& b) { put_dva(b, 2, 0, 0x1234); }},
      {"inside the front labels", [&](BytesV2& b) { put_dva(b, 1, 2, 4096); }},
      {"more than one copy",
       [&](BytesV2& b) { util::PutLE32(b.data() + offsetof(BlockPtrPhysV2, gang_sectors), 20); }},
      {"reserved bytes in copy 1", [&](BytesV2& b) { b[sizeof(DvaPhys) + 4] = 1; }},
      {"reserved bytes at 68", [&](BytesV2& b) { b[offsetof(BlockPtrPhysV2, reserved1)] = 1; }},
      {"reserved bytes at 127", [&](BytesV2& b) { b[127] = 0x80; }},
  };
  REQUIRE(DecodeStatusV2(EncodeV2(good)).ok());
  for (const Case& c : cases) {
    BytesV2 b = EncodeV2(good);
    c.damage(b);
    const Status st = DecodeStatusV2(b);
    INFO(c.want << ": " << st.ToString());
    REQUIRE(st.IsCorruption());
    REQUIRE(st.message().find(c.want) != std::string::npos);
  }
  // A hole names no copy.
  BytesV2 hole = EncodeV2(MakeHole(BlockType::kData, 0, 4096, Txg(3)));
  put_dva(hole, 1, 1, vdev::kFrontReserved);
  REQUIRE(DecodeStatusV2(hole).IsCorruption());
}

TEST_CASE("Every single-bit flip of a format 2 pointer is refused or decodes to another valid one",
          "[block_ptr]") {
  std::mt19937_64 rng(13);
  int refused = 0, accepted = 0;
  for (int i = 0; i < 200; i++) {
    const BlockPtr bp = i == 0   ? BlockPtr{}
                        : i == 1 ? SampleThreeCopies()
                                 : RandomValidBlockPtrV2(rng);
    const BytesV2 good = EncodeV2(bp);
    for (int bit = 0; bit < int(kBlockPtrSizeV2 * 8); bit++) {
      BytesV2 b = good;
      b[bit / 8] ^= uint8_t(1 << (bit % 8));
      auto got = DecodeBlockPtr(b.data(), "flip", BpFormat::kV2);
      if (!got.ok()) {
        REQUIRE(got.status().IsCorruption());
        refused++;
        continue;
      }
      accepted++;
      INFO(bp.ToString() << " bit " << bit);
      REQUIRE(!(*got == bp));
      REQUIRE(EncodeV2(*got) == b);
    }
  }
  REQUIRE(refused > 0);
  REQUIRE(accepted > 0);
}

}  // namespace
}  // namespace poolfs::core::zio
