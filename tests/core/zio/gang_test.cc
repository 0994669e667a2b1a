// Gang blocks: a block that finds no contiguous room is stored in pieces,
// reads back, frees every piece, refuses damage, and a pool with no room
// even for pieces is NoSpace with nothing leaked. And the gang header codec.
#include "zio/gang.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "zio/zio.h"
#include "zio_test_util.h"

namespace poolfs::core::zio {
namespace {

using testing::CompressibleBytes;
using testing::Data;
using testing::RandomBytes;
using testing::TestPool;
using util::Compression;

// Fills the pool with 4 KiB blocks in txg 1, frees every other one in txg 2
// and syncs past the defer txgs: half the pool is free, no two free sectors
// are adjacent. Returns the blocks still held.
std::vector<BlockPtr> Checkerboard(TestPool& pool) {
  std::vector<BlockPtr> all;
  for (int i = 0;; i++) {
    auto bp = pool.zio().Write(Data(Compression::kOff), RandomBytes(4096, i), Txg(1), 0);
    if (!bp.ok()) {
      REQUIRE(bp.status().IsNoSpace());
      break;
    }
    REQUIRE_FALSE(bp->IsGang());
    all.push_back(*bp);
  }
  pool.SyncTxgs(1, 1);
  std::sort(all.begin(), all.end(),
            [](const BlockPtr& a, const BlockPtr& b) { return a.dva.offset < b.dva.offset; });
  std::vector<BlockPtr> kept;
  for (size_t i = 0; i < all.size(); i++) {
    if (i % 2 == 0)
      REQUIRE(pool.zio().Free(all[i], Txg(2)).ok());
    else
      kept.push_back(all[i]);
  }
  pool.SyncTxgs(2, 4);
  return kept;
}

TEST_CASE("A block with no contiguous room is stored as a gang that reads back and frees",
          "[zio][gang]") {
  TestPool pool(vdev::kMinVdevSize);
  Checkerboard(pool);
  const space::SpaceStats before = pool.space().Stats();
  REQUIRE(before.free > 256 * 1024);

  uint64_t t = 5;
  for (Compression c : {Compression::kOff, Compression::kLz4}) {
    INFO("compression " << int(c));
    const std::string data =
        c == Compression::kOff ? RandomBytes(131072, 7) : CompressibleBytes(131072, 7);
    auto bp = pool.zio().Write(Data(c), data, Txg(t), 0);
    REQUIRE(bp.ok());
    REQUIRE(bp->IsGang());
    REQUIRE(bp->compression == c);
    // Every piece is one free sector: psize rounded up to sectors.
    REQUIRE(bp->gang_asize == (bp->psize + 4095) / 4096 * 4096);
    auto kids = pool.zio().GangChildren(*bp);
    REQUIRE(kids.ok());
    REQUIRE(kids->size() == bp->gang_asize / 4096);
    REQUIRE(pool.zio().Read(*bp).value() == data);
    REQUIRE(pool.space().Stats().allocated == before.allocated + bp->allocated());
    REQUIRE(pool.zio().Free(*bp, Txg(t + 1)).ok());
    REQUIRE(pool.space().Stats().allocated == before.allocated);
    pool.SyncTxgs(t, t + 3);
    t += 4;
  }
  REQUIRE(pool.zio().gang_writes() == 2);
  REQUIRE(pool.zio().gang_leaks() == 0);
  REQUIRE(pool.space().Stats().free == before.free);
}

TEST_CASE("A gang block is rewritten in place only into the same pieces", "[zio][gang]") {
  TestPool pool(vdev::kMinVdevSize);
  Checkerboard(pool);
  auto bp = pool.zio().Write(Data(Compression::kOff), RandomBytes(65536, 1), Txg(5), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->IsGang());
  const auto kids = pool.zio().GangChildren(*bp).value();
  const uint64_t written = pool.zio().bytes_written();
  // The same size: the same pieces and header, new bytes.
  auto again = pool.zio().Rewrite(*bp, Data(Compression::kOff), RandomBytes(65536, 2), Txg(5));
  REQUIRE(again.ok());
  REQUIRE(again->dva == bp->dva);
  REQUIRE(again->gang_asize == bp->gang_asize);
  REQUIRE(pool.zio().GangChildren(*again).value() == kids);
  REQUIRE(pool.zio().Read(*again).value() == RandomBytes(65536, 2));
  REQUIRE(pool.zio().bytes_written() == written + 65536);
  // Smaller by a whole sector: it would leave a piece empty, so NoSpace and
  // the block is untouched.
  auto smaller = pool.zio().Rewrite(*again, Data(Compression::kOff), RandomBytes(61440, 3), Txg(5));
  REQUIRE(smaller.status().IsNoSpace());
  REQUIRE(pool.zio().Read(*again).value() == RandomBytes(65536, 2));
}

TEST_CASE("A damaged gang header or child is Corruption and a damaged header leaks on free",
          "[zio][gang]") {
  TestPool pool(vdev::kMinVdevSize);
  Checkerboard(pool);
  const std::string data = RandomBytes(65536, 3);
  auto bp = pool.zio().Write(Data(Compression::kOff), data, Txg(5), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->IsGang());
  auto kids = pool.zio().GangChildren(*bp);
  REQUIRE(kids.ok());

  // A child's byte: the block's checksum catches it.
  uint8_t b = 0;
  REQUIRE(pool.mem().Read((*kids)[1].offset + 100, &b, 1).ok());
  b ^= 0x10;
  REQUIRE(pool.mem().Write((*kids)[1].offset + 100, &b, 1).ok());
  auto read = pool.zio().Read(*bp);
  REQUIRE(read.status().IsCorruption());
  REQUIRE(read.status().message().find("checksum mismatch") != std::string::npos);
  b ^= 0x10;
  REQUIRE(pool.mem().Write((*kids)[1].offset + 100, &b, 1).ok());
  REQUIRE(pool.zio().Read(*bp).value() == data);

  // A header's byte: its own checksum catches it, before any child is read.
  const uint64_t errors = pool.zio().checksum_errors(0);
  REQUIRE(pool.mem().Read(bp->dva.offset + 40, &b, 1).ok());
  b ^= 0x01;
  REQUIRE(pool.mem().Write(bp->dva.offset + 40, &b, 1).ok());
  read = pool.zio().Read(*bp);
  REQUIRE(read.status().IsCorruption());
  REQUIRE(read.status().message().find("gang header") != std::string::npos);
  REQUIRE(pool.zio().checksum_errors(0) == errors + 1);
  // Freeing it frees the header only: the children leak (counted) rather
  // than failing the caller's sync.
  const space::SpaceStats before = pool.space().Stats();
  REQUIRE(pool.zio().Free(*bp, Txg(6)).ok());
  REQUIRE(pool.zio().gang_leaks() == 1);
  REQUIRE(pool.space().Stats().allocated == before.allocated - bp->dva.size);
}

TEST_CASE("A pool without a free sector is NoSpace even as a gang and leaks nothing",
          "[zio][gang]") {
  TestPool pool(vdev::kMinVdevSize);
  std::vector<BlockPtr> kept = Checkerboard(pool);
  // Take the free sectors but a few.
  std::vector<BlockPtr> more;
  for (int i = 0;; i++) {
    auto bp = pool.zio().Write(Data(Compression::kOff), RandomBytes(4096, i), Txg(5), 0);
    if (!bp.ok()) break;
    more.push_back(*bp);
  }
  REQUIRE(more.size() > 8);
  for (size_t i = 0; i < 3; i++) REQUIRE(pool.zio().Free(more[i], Txg(6)).ok());
  pool.SyncTxgs(5, 8);
  const space::SpaceStats before = pool.space().Stats();
  REQUIRE(before.free == 3 * 4096);
  // 3 free sectors: 8 KiB fits as a gang of 2 pieces and a header.
  auto fits = pool.zio().Write(Data(Compression::kOff), RandomBytes(8192, 1), Txg(9), 0);
  REQUIRE(fits.ok());
  REQUIRE(fits->IsGang());
  REQUIRE(pool.zio().Free(*fits, Txg(10)).ok());
  pool.SyncTxgs(9, 12);
  // 12 KiB needs 3 pieces and a header: NoSpace, and every piece taken is
  // given back.
  auto full = pool.zio().Write(Data(Compression::kOff), RandomBytes(12288, 2), Txg(13), 0);
  REQUIRE(full.status().IsNoSpace());
  REQUIRE(full.status().message().find("nor as a gang block") != std::string::npos);
  pool.SyncTxgs(13, 16);
  REQUIRE(pool.space().Stats().free == before.free);
}

TEST_CASE("Gang headers round-trip and refuse every damaged byte", "[zio][gang]") {
  const std::vector<space::Dva> kids = {
      {0, vdev::kFrontReserved, 8192}, {1, vdev::kFrontReserved + 65536, 4096}, {0, 1 << 30, 512}};
  const std::string h = EncodeGangHeader(kids, 4096);
  REQUIRE(h.size() == 4096);
  REQUIRE(DecodeGangHeader(h, "x").value() == kids);
  // Every byte of the used part and some of the padding: any change is
  // refused (magic, count, reserved, checksum, a child, padding).
  for (size_t i = 0; i < GangHeaderBytes(kids.size()) + 64; i++) {
    std::string bad = h;
    bad[i] ^= 0x04;
    auto got = DecodeGangHeader(bad, "block 7");
    INFO("byte " << i);
    REQUIRE(got.status().IsCorruption());
    REQUIRE(got.status().message().rfind("block 7: gang header ", 0) == 0);
  }
  REQUIRE(DecodeGangHeader(h.substr(0, 40), "").status().IsCorruption());
  REQUIRE(DecodeGangHeader(std::string(4096, '\0'), "").status().IsCorruption());
}

}  // namespace
}  // namespace poolfs::core::zio
