// Zio: write/read round trips, compression decisions, holes, damage on disk,
// I/O failures, rewrite in place, concurrency, and freeing.
#include "zio/zio.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "zio_test_util.h"

namespace poolfs::core::zio {
namespace {

using testing::CompressibleBytes;
using testing::Data;
using testing::RandomBytes;
using testing::TestPool;
using util::Compression;

TEST_CASE("Zio round-trips blocks of every size with each compression", "[zio]") {
  TestPool pool(160 * vdev::kMiB);
  Zio& zio = pool.zio();
  uint64_t seed = 0;
  uint64_t txg = 0;
  for (Compression c : {Compression::kOff, Compression::kLz4, Compression::kZstd}) {
    txg++;  // one txg per compression, so that the frees come back
    for (size_t size : {size_t{1}, size_t{512}, size_t{1000}, size_t{4096}, size_t{4097},
                        size_t{16384}, size_t{32768}, size_t{131072}, size_t{131072 + 7},
                        size_t{1} << 20, size_t{kMaxBlockSize}}) {
      for (bool compressible : {false, true}) {
        std::string data =
            compressible ? CompressibleBytes(size, ++seed) : RandomBytes(size, ++seed);
        INFO(util::CompressionName(c) << " size " << size << " compressible " << compressible);
        auto bp = zio.Write(Data(c), data, Txg(txg), 0);
        INFO(bp.status().ToString());
        REQUIRE(bp.ok());
        REQUIRE(!bp->IsHole());
        REQUIRE(bp->lsize == size);
        REQUIRE(bp->birth == Txg(txg));
        REQUIRE(bp->fill == 1);
        REQUIRE(bp->psize <= bp->dva.size);
        REQUIRE(bp->dva.size % 4096 == 0);
        REQUIRE(bp->dva.size - bp->psize < 4096);
        if (c == Compression::kOff || !compressible || size < 512) {
          REQUIRE(bp->compression == Compression::kOff);
          REQUIRE(bp->psize == size);
          REQUIRE(bp->checksum == util::Xxh3_128(data.data(), size));
        } else {
          REQUIRE(bp->compression == c);
          REQUIRE(bp->psize <= util::CompressLimit(size));
        }
        auto back = zio.Read(*bp);
        REQUIRE(back.ok());
        REQUIRE(*back == data);
        REQUIRE(zio.Free(*bp, Txg(txg)).ok());
      }
    }
    pool.SyncTxgs(txg, txg);
  }
}

TEST_CASE("Zio stores compressible data compressed and says so in the pointer", "[zio]") {
  TestPool pool;
  for (Compression c : {Compression::kLz4, Compression::kZstd}) {
    std::string data = CompressibleBytes(128 * 1024, 5);
    auto bp = pool.zio().Write(Data(c), data, Txg(1), 0);
    REQUIRE(bp.ok());
    REQUIRE(bp->compression == c);
    REQUIRE(bp->psize < bp->lsize / 2);
    REQUIRE(bp->dva.size < bp->lsize);
    // The checksum covers the stored (compressed) bytes.
    std::string stored(bp->psize, '\0');
    REQUIRE(pool.mem().Read(bp->dva.offset, stored.data(), stored.size()).ok());
    REQUIRE(bp->checksum == util::Xxh3_128(stored.data(), stored.size()));
    REQUIRE(*pool.zio().Read(*bp) == data);
  }
}

TEST_CASE("Zio pads stored bytes with zeros to the allocated size", "[zio]") {
  TestPool pool;
  // Dirty the space first so that padding is visible.
  std::string junk(64 * 1024, '\xa5');
  REQUIRE(pool.mem().Write(vdev::kFrontReserved, junk.data(), junk.size()).ok());
  for (Compression c : {Compression::kOff, Compression::kLz4}) {
    std::string data = c == Compression::kOff ? RandomBytes(5000, 1) : CompressibleBytes(20000, 1);
    auto bp = pool.zio().Write(Data(c), data, Txg(1), 0);
    REQUIRE(bp.ok());
    REQUIRE(bp->compression == c);
    REQUIRE(bp->dva.offset < vdev::kFrontReserved + junk.size());
    std::string all(bp->dva.size, '\0');
    REQUIRE(pool.mem().Read(bp->dva.offset, all.data(), all.size()).ok());
    REQUIRE(all.find_first_not_of('\0', bp->psize) == std::string::npos);
  }
}

TEST_CASE("Zio stores a block uncompressed when its first 16 KiB do not compress", "[zio]") {
  TestPool pool;
  // Random head, zeros after: the whole block would compress, but the probe
  // of the first kProbeSize bytes says no (early abort).
  std::string block = RandomBytes(kProbeSize, 1) + std::string(128 * 1024 - kProbeSize, '\0');
  auto bp = pool.zio().Write(Data(), block, Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->compression == Compression::kOff);
  REQUIRE(*pool.zio().Read(*bp) == block);
  // Below kProbeMinSize there is no probe: the same head is compressed.
  std::string small =
      RandomBytes(kProbeSize, 1) + std::string(kProbeMinSize - 1 - kProbeSize, '\0');
  bp = pool.zio().Write(Data(), small, Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->compression == Compression::kLz4);
  // A compressible head and a random rest: the full attempt fails.
  std::string mixed = CompressibleBytes(kProbeSize, 2) + RandomBytes(128 * 1024 - kProbeSize, 2);
  bp = pool.zio().Write(Data(), mixed, Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->compression == Compression::kOff);
  REQUIRE(*pool.zio().Read(*bp) == mixed);
}

TEST_CASE("Zio turns an all-zero data block into a hole without I/O", "[zio]") {
  TestPool pool;
  const auto before = pool.space().Stats();
  std::string zeros(128 * 1024, '\0');
  auto bp = pool.zio().Write(Data(), zeros, Txg(4), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->IsHole());
  REQUIRE(*bp == MakeHole(BlockType::kData, 0, 128 * 1024, Txg(4)));
  REQUIRE(pool.zio().bytes_written() == 0);
  REQUIRE(pool.space().Stats().allocated == before.allocated);
  REQUIRE(*pool.zio().Read(*bp) == zeros);
  REQUIRE(pool.zio().Free(*bp, Txg(4)).ok());
  // So is a dnode block whose dnodes are all free.
  auto dnodes = pool.zio().Write(WriteProps{BlockType::kDnodes, 0, Compression::kZstd, 0},
                                 zeros.substr(0, 16384), Txg(4), 0);
  REQUIRE(dnodes.ok());
  REQUIRE(*dnodes == MakeHole(BlockType::kDnodes, 0, 16384, Txg(4)));
  REQUIRE(*pool.zio().Read(*dnodes) == zeros.substr(0, 16384));
  REQUIRE(pool.zio().bytes_written() == 0);
  // Other metadata is stored even when it is all zeros.
  for (WriteProps props : {WriteProps{BlockType::kZap, 0, Compression::kOff, 1},
                           WriteProps{BlockType::kIndirect, 1, Compression::kLz4, 0}}) {
    auto meta = pool.zio().Write(props, zeros.substr(0, 16384), Txg(4), 0);
    REQUIRE(meta.ok());
    REQUIRE(!meta->IsHole());
    REQUIRE(*pool.zio().Read(*meta) == zeros.substr(0, 16384));
  }
}

TEST_CASE("A bit flipped on disk is Corruption, counted, never data", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/true);
  Zio& zio = pool.zio();
  std::mt19937_64 rng(3);
  uint64_t errors = 0;
  for (Compression c : {Compression::kOff, Compression::kLz4, Compression::kZstd}) {
    for (int i = 0; i < 20; i++) {
      std::string data = c == Compression::kOff ? RandomBytes(8192 + i * 100, i)
                                                : CompressibleBytes(8192 + i * 100, i);
      auto bp = zio.Write(Data(c), data, Txg(1), 0);
      REQUIRE(bp.ok());
      REQUIRE(zio.FlushAll().ok());
      uint64_t at = bp->dva.offset + rng() % bp->psize;
      REQUIRE(pool.fault().FlipBitsOnDisk(at, 1 + rng() % 3).ok());
      auto got = zio.Read(*bp);
      REQUIRE(got.status().IsCorruption());
      REQUIRE(got.status().message().find(bp->ToString()) != std::string::npos);
      REQUIRE(got.status().message().find("checksum mismatch") != std::string::npos);
      REQUIRE(zio.checksum_errors(0) == ++errors);
    }
  }
  // A flip in the zero padding past psize is not covered: the data is intact.
  std::string data = RandomBytes(5000, 9);
  auto bp = zio.Write(Data(Compression::kOff), data, Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(pool.fault().FlipBitsOnDisk(bp->dva.offset + 6000, 8).ok());
  REQUIRE(*zio.Read(*bp) == data);
  REQUIRE(zio.checksum_errors(0) == errors);
}

TEST_CASE("Damaged compressed bytes with a matching checksum are Corruption", "[zio]") {
  TestPool pool;
  std::string data = CompressibleBytes(65536, 4);
  auto bp = pool.zio().Write(Data(Compression::kLz4), data, Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->compression == Compression::kLz4);
  // Garbage that checksums right: decompression must refuse it.
  std::string garbage = RandomBytes(bp->psize, 5);
  REQUIRE(pool.mem().Write(bp->dva.offset, garbage.data(), garbage.size()).ok());
  BlockPtr forged = *bp;
  forged.checksum = util::Xxh3_128(garbage.data(), garbage.size());
  auto got = pool.zio().Read(forged);
  REQUIRE(got.status().IsCorruption());
  REQUIRE(got.status().message().find("lz4") != std::string::npos);
  REQUIRE(pool.zio().checksum_errors(0) == 1);
  // The same bytes read as zstd: refused too.
  forged.compression = Compression::kZstd;
  REQUIRE(pool.zio().Read(forged).status().IsCorruption());
  REQUIRE(pool.zio().checksum_errors(0) == 2);
}

TEST_CASE("Zio refuses pointers that do not fit the pool", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 2);
  std::string data = RandomBytes(4096, 1);
  auto bp = pool.zio().Write(Data(), data, Txg(1), 0);
  REQUIRE(bp.ok());
  BlockPtr other_vdev = *bp;
  other_vdev.dva.vdev = 7;
  REQUIRE(pool.zio().Read(other_vdev).status().IsCorruption());
  BlockPtr past_end = *bp;
  past_end.dva.offset = 64 * vdev::kMiB - 2 * vdev::kLabelSize;  // the back labels
  auto got = pool.zio().Read(past_end);
  REQUIRE(got.status().IsCorruption());
  REQUIRE(got.status().message().find("outside the allocatable area") != std::string::npos);
  BlockPtr invalid = *bp;
  invalid.psize = invalid.lsize + 1;
  REQUIRE(pool.zio().Read(invalid).status().IsCorruption());
  REQUIRE(pool.zio().Free(invalid, Txg(1)).IsCorruption());
  REQUIRE(pool.zio().checksum_errors(0) + pool.zio().checksum_errors(1) == 0);
}

// After txgs 1-4 sync, the space of failed writes (freed in txg 1 or 2) is
// free again, as it was in `before`: deferred like any free, then released.
void CheckFreedAgain(TestPool& pool, const space::SpaceStats& before) {
  pool.SyncTxgs(1, 4);
  const auto after = pool.space().Stats();
  CHECK(after.allocated == before.allocated);
  CHECK(after.free == before.free);
  CHECK(after.deferred == 0);
}

TEST_CASE("A failed block write returns IOError and frees its allocation", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/true);
  const auto before = pool.space().Stats();
  // 1: the single aligned write; 2: the tail of an unaligned uncompressed block.
  for (auto [n, size] : {std::pair{1, 8192}, std::pair{2, 8192 + 100}, std::pair{1, 8192 + 100}}) {
    pool.fault().FailNthIo(n, vdev::IoKind::kWrite);
    auto bp = pool.zio().Write(Data(Compression::kOff), RandomBytes(size, n), Txg(2), 0);
    INFO("write " << n << " of a " << size << "-byte block");
    REQUIRE(bp.status().code() == StatusCode::kIOError);
    REQUIRE(bp.status().message().find("write of block L0 data") != std::string::npos);
    REQUIRE(pool.space().Stats().allocated == before.allocated);
  }
  CheckFreedAgain(pool, before);
  // And the pipeline still works.
  std::string data = RandomBytes(8192, 1);
  auto bp = pool.zio().Write(Data(), data, Txg(5), 0);
  REQUIRE(bp.ok());
  REQUIRE(*pool.zio().Read(*bp) == data);
}

// Blocks of every kind a write makes, for a pool that stores blocks above
// 64 KiB as gang blocks (set_force_gang_above).
std::vector<std::pair<WriteProps, std::string>> MixedBlocks() {
  const WriteProps dnodes{BlockType::kDnodes, 0, Compression::kLz4, 3};
  return {{Data(), RandomBytes(128 * 1024, 1)},              // a gang
          {Data(), std::string(128 * 1024, '\0')},           // a hole
          {Data(), CompressibleBytes(20000, 2)},             // compressed, padded
          {Data(Compression::kOff), RandomBytes(5000, 3)},   // a partial last sector
          {Data(Compression::kOff), RandomBytes(100, 4)},    // less than a sector
          {dnodes, CompressibleBytes(16384, 5)},             // fill 3
          {Data(Compression::kOff), RandomBytes(8192, 6)}};  // whole sectors
}

TEST_CASE("WriteMany hands adjacent blocks to the device together, up to 1 MiB", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/false, /*recording=*/true);
  std::vector<std::string> data;
  std::vector<BlockWrite> blocks;
  for (int i = 0; i < 20; i++) data.push_back(RandomBytes(128 * 1024, uint64_t(i)));
  for (const std::string& d : data) blocks.push_back({Data(), d});
  auto bps = pool.zio().WriteMany(blocks, Txg(1), 0);
  REQUIRE(bps.ok());
  REQUIRE(bps->size() == data.size());
  for (size_t i = 0; i < data.size(); i++) {
    INFO("block " << i);
    CHECK((*bps)[i].birth == Txg(1));
    CHECK(*pool.zio().Read((*bps)[i]) == data[i]);
  }
  // A fresh allocator hands out consecutive extents: 2.5 MiB in three
  // device writes of eight, eight and four blocks.
  const auto& calls = pool.recorded().calls;
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].off == (*bps)[0].dva.offset);
  for (size_t i = 0; i < 3; i++) {
    INFO("device write " << i);
    CHECK(calls[i].len == (i < 2 ? kAggregateBytes : 512 * 1024));
    CHECK(calls[i].parts == (i < 2 ? 8 : 4));
    if (i > 0) CHECK(calls[i].off == calls[i - 1].off + calls[i - 1].len);
  }
  CHECK(pool.zio().bytes_written() == 20 * 128 * 1024);
}

TEST_CASE("WriteMany stores holes, compressed, padded and gang blocks as Write does", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/false, /*recording=*/true);
  pool.zio().set_force_gang_above(64 * 1024);
  // Dirty the space first so that padding is visible.
  std::string junk(vdev::kMiB, '\xa5');
  REQUIRE(pool.mem().Write(vdev::kFrontReserved, junk.data(), junk.size()).ok());
  const std::vector<std::pair<WriteProps, std::string>> in = MixedBlocks();
  std::vector<BlockWrite> blocks;
  for (const auto& [props, data] : in) blocks.push_back({props, data});
  auto bps = pool.zio().WriteMany(blocks, Txg(1), 0);
  REQUIRE(bps.ok());
  REQUIRE(bps->size() == in.size());
  uint64_t stored = 0;
  for (size_t i = 0; i < in.size(); i++) {
    const BlockPtr& bp = (*bps)[i];
    INFO("block " << i << ": " << bp.ToString());
    CHECK(*pool.zio().Read(bp) == in[i].second);
    CHECK(bp.IsHole() == (i == 1));
    CHECK(bp.IsGang() == (i == 0));
    CHECK(bp.type == in[i].first.type);
    CHECK(bp.fill == (i == 1 ? 0 : in[i].first.fill));
    if (bp.IsHole() || bp.IsGang()) continue;
    CHECK(bp.compression == (i == 2 || i == 5 ? Compression::kLz4 : Compression::kOff));
    std::string all(bp.dva.size, '\0');
    REQUIRE(pool.mem().Read(bp.dva.offset, all.data(), all.size()).ok());
    CHECK(all.find_first_not_of('\0', bp.psize) == std::string::npos);
    stored += bp.dva.size;
  }
  CHECK(pool.zio().gang_writes() == 1);
  // The gang block went piece by piece, at once; the five others, adjacent,
  // in one device write of six parts (two for the block with a partial
  // last sector).
  size_t gathered = 0;
  for (const auto& call : pool.recorded().calls) {
    if (call.parts == 0) continue;
    gathered++;
    CHECK(call.len == stored);
    CHECK(call.parts == 6);
  }
  CHECK(gathered == 1);
}

TEST_CASE("A failed WriteMany returns IOError and frees every block of the batch", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/true);
  pool.zio().set_force_gang_above(64 * 1024);
  const auto before = pool.space().Stats();
  std::vector<std::string> data{RandomBytes(128 * 1024, 1)};  // a gang: 3 device writes
  for (int i = 0; i < 4; i++) data.push_back(RandomBytes(8192, uint64_t(2 + i)));
  std::vector<BlockWrite> blocks;
  for (const std::string& d : data) blocks.push_back({Data(Compression::kOff), d});
  // 1: a piece of the gang; 4 and 7: the first and last block of the batch.
  for (int n : {1, 4, 7}) {
    INFO("device write " << n << " fails");
    pool.fault().FailNthIo(uint64_t(n), vdev::IoKind::kWrite);
    auto bps = pool.zio().WriteMany(blocks, Txg(2), 0);
    REQUIRE(bps.status().code() == StatusCode::kIOError);
    CHECK(bps.status().message().find(n == 1 ? "write of gang block" : "write of block L0 data") !=
          std::string::npos);
    CHECK(pool.space().Stats().allocated == before.allocated);
  }
  CheckFreedAgain(pool, before);
  // And the same batch goes through now.
  auto bps = pool.zio().WriteMany(blocks, Txg(5), 0);
  REQUIRE(bps.ok());
  for (size_t i = 0; i < data.size(); i++) CHECK(*pool.zio().Read((*bps)[i]) == data[i]);
}

TEST_CASE("A failed block read is IOError naming the block", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/true);
  std::string data = RandomBytes(8192, 1);
  auto bp = pool.zio().Write(Data(), data, Txg(1), 0);
  REQUIRE(bp.ok());
  pool.fault().FailNthIo(1, vdev::IoKind::kRead);
  auto got = pool.zio().Read(*bp);
  REQUIRE(got.status().code() == StatusCode::kIOError);
  REQUIRE(got.status().message().find(bp->ToString()) != std::string::npos);
  REQUIRE(pool.zio().checksum_errors(0) == 0);
  REQUIRE(*pool.zio().Read(*bp) == data);
}

TEST_CASE("ReadMany reads adjacent blocks with one device read, up to 1 MiB", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/false, /*recording=*/true);
  std::vector<std::string> data;
  std::vector<BlockWrite> writes;
  for (int i = 0; i < 20; i++) data.push_back(RandomBytes(128 * 1024, uint64_t(i)));
  for (const std::string& d : data) writes.push_back({Data(), d});
  auto bps = pool.zio().WriteMany(writes, Txg(1), 0);
  REQUIRE(bps.ok());
  // Asked for out of order, block 10 left out: adjacent are 0-9 and 11-19.
  std::vector<std::string> got(data.size(), std::string(128 * 1024, '\0'));
  std::vector<BlockRead> reads;
  const std::vector<size_t> asked{19, 3, 0, 1, 2, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18};
  for (size_t i : asked) reads.push_back({(*bps)[i], reinterpret_cast<uint8_t*>(got[i].data())});
  pool.recorded().reads.clear();
  REQUIRE(pool.zio().ReadMany(reads).ok());
  for (size_t i : asked) {
    INFO("block " << i);
    CHECK(got[i] == data[i]);
  }
  CHECK(got[10] == std::string(128 * 1024, '\0'));
  // Blocks 0-7 (1 MiB), 8-9, 11-18, 19: four device reads.
  const auto& calls = pool.recorded().reads;
  REQUIRE(calls.size() == 4);
  const std::vector<std::pair<size_t, size_t>> runs{{0, 8}, {8, 2}, {11, 8}, {19, 1}};
  for (size_t k = 0; k < runs.size(); k++) {
    INFO("device read " << k);
    CHECK(calls[k].off == (*bps)[runs[k].first].dva.offset);
    CHECK(calls[k].len == runs[k].second * 128 * 1024);
    CHECK(calls[k].parts == (runs[k].second == 1 ? 0 : runs[k].second));
  }
  CHECK(pool.zio().bytes_read() == 19 * 128 * 1024);
}

TEST_CASE("ReadMany reads holes, compressed, padded and gang blocks as Read does", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/false, /*recording=*/true);
  pool.zio().set_force_gang_above(64 * 1024);
  const std::vector<std::pair<WriteProps, std::string>> in = MixedBlocks();
  std::vector<BlockWrite> writes;
  for (const auto& [props, data] : in) writes.push_back({props, data});
  auto bps = pool.zio().WriteMany(writes, Txg(1), 0);
  REQUIRE(bps.ok());
  std::vector<std::string> got;
  for (const auto& [props, data] : in) got.emplace_back(data.size(), '\x5a');
  std::vector<BlockRead> reads;
  for (size_t i = 0; i < in.size(); i++)
    reads.push_back({(*bps)[i], reinterpret_cast<uint8_t*>(got[i].data())});
  pool.recorded().reads.clear();
  REQUIRE(pool.zio().ReadMany(reads).ok());
  for (size_t i = 0; i < in.size(); i++) {
    INFO("block " << i << ": " << (*bps)[i].ToString());
    CHECK(got[i] == in[i].second);
  }
  // The gang block's header and pieces one by one; the five stored blocks,
  // adjacent, in one device read of five parts (each a whole extent).
  uint64_t first = UINT64_MAX, stored = 0;
  for (size_t i = 2; i < in.size(); i++) {
    first = std::min(first, (*bps)[i].dva.offset);
    stored += (*bps)[i].dva.size;
  }
  size_t gathered = 0;
  for (const auto& call : pool.recorded().reads) {
    if (call.parts == 0) continue;
    gathered++;
    CHECK(call.off == first);
    CHECK(call.len == stored);
    CHECK(call.parts == 5);
  }
  CHECK(gathered == 1);
}

TEST_CASE("ReadMany fails as Read does: damage is Corruption, a failed run IOError", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 1, 1, /*faulty=*/true);
  std::vector<std::string> data;
  std::vector<BlockWrite> writes;
  for (int i = 0; i < 4; i++) data.push_back(RandomBytes(16384, uint64_t(i)));
  for (const std::string& d : data) writes.push_back({Data(Compression::kOff), d});
  auto bps = pool.zio().WriteMany(writes, Txg(1), 0);
  REQUIRE(bps.ok());
  std::vector<std::string> got(data.size(), std::string(16384, '\0'));
  std::vector<BlockRead> reads;
  for (size_t i = 0; i < data.size(); i++)
    reads.push_back({(*bps)[i], reinterpret_cast<uint8_t*>(got[i].data())});

  pool.fault().FailNthIo(1, vdev::IoKind::kRead);
  Status st = pool.zio().ReadMany(reads);
  REQUIRE(st.code() == StatusCode::kIOError);
  CHECK(st.message().find("read of 4 adjacent blocks from " + (*bps)[0].ToString()) !=
        std::string::npos);
  CHECK(pool.zio().checksum_errors(0) == 0);

  // One flipped bit in the third block: that block is named, and counted.
  pool.fault().FlipBitOnRead((*bps)[2].dva.offset + 100, 0x10);
  st = pool.zio().ReadMany(reads);
  REQUIRE(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find((*bps)[2].ToString()) != std::string::npos);
  CHECK(pool.zio().checksum_errors(0) == 1);
  CHECK(got[0] == data[0]);
  CHECK(got[1] == data[1]);
}

TEST_CASE("Rewrite stores new contents at the same DVA in the same txg", "[zio]") {
  TestPool pool;
  Zio& zio = pool.zio();
  WriteProps props{BlockType::kConfig, 0, Compression::kLz4, 1};
  std::string v1 = CompressibleBytes(16384, 1);
  auto bp = zio.Write(props, v1, Txg(8), 0);
  REQUIRE(bp.ok());
  const auto allocated = pool.space().Stats().allocated;

  std::string v2 = CompressibleBytes(12000, 2);  // compresses to fewer bytes than v1
  auto bp2 = zio.Rewrite(*bp, props, v2, Txg(8));
  REQUIRE(bp2.ok());
  REQUIRE(bp2->dva == bp->dva);
  REQUIRE(bp2->birth == Txg(8));
  REQUIRE(!(bp2->checksum == bp->checksum));
  REQUIRE(*zio.Read(*bp2) == v2);
  REQUIRE(zio.Read(*bp).status().IsCorruption());  // the old pointer no longer verifies
  REQUIRE(pool.space().Stats().allocated == allocated);

  // Smaller contents and other props fit too.
  std::string v3 = RandomBytes(100, 3);
  auto bp3 = zio.Rewrite(*bp2, {BlockType::kZap, 0, Compression::kOff, 1}, v3, Txg(8));
  REQUIRE(bp3.ok());
  REQUIRE(bp3->type == BlockType::kZap);
  REQUIRE(bp3->psize == 100);
  REQUIRE(*zio.Read(*bp3) == v3);

  // Contents that no longer fit: NoSpace, nothing written.
  const uint64_t written = zio.bytes_written();
  auto too_big = zio.Rewrite(*bp3, props, RandomBytes(bp->dva.size + 1, 4), Txg(8));
  REQUIRE(too_big.status().IsNoSpace());
  REQUIRE(zio.bytes_written() == written);
  REQUIRE(*zio.Read(*bp3) == v3);
}

TEST_CASE("Concurrent writes from 4 threads with 2 allocators never overlap", "[zio]") {
  TestPool pool(256 * vdev::kMiB, 2, /*allocators=*/2);
  Zio& zio = pool.zio();
  struct Written {
    BlockPtr bp;
    std::string data;
  };
  std::vector<std::vector<Written>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 150; i++) {
        size_t size = 512 + rng() % (200 * 1024);
        std::string data = rng() % 2 ? RandomBytes(size, rng()) : CompressibleBytes(size, rng());
        Compression c = Compression(rng() % 3);
        auto bp = zio.Write(Data(c), data, Txg(1), size_t(t % 2));
        if (!bp.ok())
          FAIL_CHECK(bp.status().ToString());
        else
          got[t].push_back({*bp, std::move(data)});
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<space::Dva> dvas;
  for (const auto& per : got)
    for (const Written& w : per) dvas.push_back(w.bp.dva);
  REQUIRE(dvas.size() == 600);
  std::sort(dvas.begin(), dvas.end(), [](const space::Dva& a, const space::Dva& b) {
    return a.vdev != b.vdev ? a.vdev < b.vdev : a.offset < b.offset;
  });
  for (size_t i = 1; i < dvas.size(); i++)
    if (dvas[i].vdev == dvas[i - 1].vdev)
      REQUIRE(dvas[i - 1].offset + dvas[i - 1].size <= dvas[i].offset);
  REQUIRE((dvas.front().vdev == 0 && dvas.back().vdev == 1));  // striped over both
  // Read everything back, concurrently too.
  threads.clear();
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (const Written& w : got[(t + 1) % 4]) {
        auto r = zio.Read(w.bp);
        if (!r.ok() || *r != w.data) bad++;
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(bad == 0);
}

TEST_CASE("Free returns a block's space after the defer txgs", "[zio]") {
  TestPool pool;
  const auto empty = pool.space().Stats();
  std::vector<BlockPtr> bps;
  for (int i = 0; i < 10; i++) {
    auto bp = pool.zio().Write(Data(Compression::kOff), RandomBytes(65536, i), Txg(1), 0);
    REQUIRE(bp.ok());
    bps.push_back(*bp);
  }
  pool.SyncTxgs(1, 1);
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 10 * 65536);
  for (const BlockPtr& bp : bps) REQUIRE(pool.zio().Free(bp, Txg(2)).ok());
  // A double free is Corruption from the space layer.
  REQUIRE(pool.zio().Free(bps[3], Txg(2)).IsCorruption());
  auto s = pool.space().Stats();
  REQUIRE(s.allocated == empty.allocated);
  REQUIRE(s.deferred == 10 * 65536);
  pool.SyncTxgs(2, 3);
  REQUIRE(pool.space().Stats().deferred == 10 * 65536);  // not reusable yet
  pool.SyncTxgs(4, 4);
  s = pool.space().Stats();
  REQUIRE(s.deferred == 0);
  REQUIRE(s.free == empty.free);
}

TEST_CASE("Zio returns NoSpace when the pool is full", "[zio]") {
  TestPool pool(vdev::kMinVdevSize);
  int written = 0;
  Status last;
  for (int i = 0; i < 100; i++) {
    auto bp = pool.zio().Write(Data(), RandomBytes(512 * 1024, i), Txg(1), 0);
    if (!bp.ok()) {
      last = bp.status();
      break;
    }
    written++;
  }
  REQUIRE(last.IsNoSpace());
  REQUIRE(written >= 6);  // 4 MiB allocatable
  REQUIRE(pool.zio().bytes_written() == uint64_t(written) * 512 * 1024);
}

TEST_CASE("Zio refuses invalid write arguments", "[zio]") {
  TestPool pool;
  std::string data = RandomBytes(4096, 1);
  auto invalid = [&](WriteProps p, std::string_view d, Txg txg) {
    return pool.zio().Write(p, d, txg, 0).status().code() == StatusCode::kInvalidArgument;
  };
  REQUIRE(invalid({BlockType::kNone, 0, Compression::kLz4, 1}, data, Txg(1)));
  REQUIRE(invalid({BlockType(42), 0, Compression::kLz4, 1}, data, Txg(1)));
  REQUIRE(invalid({BlockType::kData, 1, Compression::kLz4, 1}, data, Txg(1)));
  REQUIRE(invalid({BlockType::kIndirect, 0, Compression::kLz4, 1}, data, Txg(1)));
  REQUIRE(invalid({BlockType::kData, 0, Compression::kLz4, 2}, data, Txg(1)));
  REQUIRE(invalid({BlockType::kDnodes, 0, Compression::kLz4, 9}, data, Txg(1)));
  REQUIRE(invalid({BlockType::kData, 0, Compression(9), 1}, data, Txg(1)));
  REQUIRE(invalid(Data(), "", Txg(1)));
  REQUIRE(invalid(Data(), data, Txg(0)));
  REQUIRE(invalid(Data(), std::string(kMaxBlockSize + 1, 'x'), Txg(1)));
  REQUIRE(pool.zio().bytes_written() == 0);
}

TEST_CASE("FlushAll flushes every vdev and counts bytes", "[zio]") {
  TestPool pool(64 * vdev::kMiB, 2);
  const uint64_t f0 = pool.mem(0).flushes(), f1 = pool.mem(1).flushes();
  REQUIRE(pool.zio().FlushAll().ok());
  REQUIRE(pool.mem(0).flushes() == f0 + 1);
  REQUIRE(pool.mem(1).flushes() == f1 + 1);
  auto bp = pool.zio().Write(Data(Compression::kOff), RandomBytes(10000, 1), Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(pool.zio().bytes_written() == 12288);
  REQUIRE(pool.zio().Read(*bp).ok());
  REQUIRE(pool.zio().bytes_read() == 10000);
  REQUIRE(pool.zio().vdev_count() == 2);
  REQUIRE(&pool.zio().device(1) == &pool.mem(1));
}

}  // namespace
}  // namespace poolfs::core::zio
