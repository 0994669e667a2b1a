// Copies (ditto blocks): where a write puts them, that a read survives a
// damaged or unreadable copy and heals it, that Rewrite and Free take every
// copy, and that format 1 keeps one.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "zio/zio.h"
#include "zio_test_util.h"

namespace poolfs::core::zio {
namespace {

using testing::Data;
using testing::RandomBytes;
using testing::TestPool;
using util::Compression;

WriteProps Copies(uint8_t n, Compression c = Compression::kLz4) {
  WriteProps p = Data(c);
  p.copies = n;
  return p;
}

// Flips one byte in the middle of `d`'s extent on its device.
void Damage(TestPool& pool, const space::Dva& d) {
  uint8_t b;
  REQUIRE(pool.mem(int(d.vdev)).Read(d.offset + d.size / 2, &b, 1).ok());
  b ^= 0x5a;
  REQUIRE(pool.mem(int(d.vdev)).Write(d.offset + d.size / 2, &b, 1).ok());
}

TEST_CASE("Copies of a block go to different vdevs while there are several", "[zio][copies]") {
  TestPool pool(64 * vdev::kMiB, 3);
  for (int i = 0; i < 20; i++) {
    auto bp = pool.zio().Write(Copies(3), RandomBytes(8192, uint64_t(i)), Txg(1), size_t(i));
    REQUIRE(bp.ok());
    REQUIRE(bp->copies() == 3);
    std::set<uint32_t> vdevs;
    for (int c = 0; c < 3; c++) vdevs.insert(bp->copy(c).vdev);
    REQUIRE(vdevs.size() == 3);
    REQUIRE(bp->allocated() == 3 * bp->dva.size);
  }
  // Two vdevs: copy 2 shares a vdev with copy 0, in another metaslab.
  TestPool two(64 * vdev::kMiB, 2);
  auto bp = two.zio().Write(Copies(3), RandomBytes(8192, 99), Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->copies() == 3);
  REQUIRE(bp->copy(1).vdev != bp->dva.vdev);
}

TEST_CASE("Copies on one vdev lie in metaslabs an eighth of the vdev apart", "[zio][copies]") {
  // 1 GiB: 64 metaslabs of 16 MiB, so an eighth is 8 metaslabs.
  TestPool pool(1024 * vdev::kMiB, 1, 2);
  const uint64_t ms = uint64_t{16} << 20;
  for (int i = 0; i < 200; i++) {
    auto bp = pool.zio().Write(Copies(i % 2 ? 3 : 2),
                               RandomBytes(4096 + 4096 * (i % 8), uint64_t(i)), Txg(1), size_t(i));
    REQUIRE(bp.ok());
    REQUIRE(bp->copies() == (i % 2 ? 3 : 2));
    for (int a = 0; a < bp->copies(); a++)
      for (int b = a + 1; b < bp->copies(); b++) {
        const uint64_t x = bp->copy(a).offset / ms, y = bp->copy(b).offset / ms;
        INFO(bp->ToString());
        REQUIRE((x > y ? x - y : y - x) >= 8);
      }
  }
}

TEST_CASE("A read survives a damaged or unreadable copy and rewrites it", "[zio][copies]") {
  TestPool pool(64 * vdev::kMiB, 2);
  const std::string data = RandomBytes(16384, 5);
  auto bp = pool.zio().Write(Copies(3), data, Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->copies() == 3);
  const uint64_t errors_before = pool.zio().checksum_errors(0) + pool.zio().checksum_errors(1);

  // Copy 0 damaged: the read returns the data from copy 1 and heals copy 0.
  Damage(pool, bp->dva);
  REQUIRE(pool.zio().VerifyCopy(*bp, 0).IsCorruption());
  REQUIRE(pool.zio().Read(*bp).value() == data);
  REQUIRE(pool.zio().repairs() == 1);
  REQUIRE(pool.zio().VerifyCopy(*bp, 0).ok());
  REQUIRE(pool.zio().checksum_errors(0) + pool.zio().checksum_errors(1) >= errors_before + 2);

  // Copies 0 and 1 damaged: copy 2 serves, both are healed.
  Damage(pool, bp->dva);
  Damage(pool, bp->copy(1));
  REQUIRE(pool.zio().Read(*bp).value() == data);
  REQUIRE(pool.zio().repairs() == 3);
  for (int c = 0; c < 3; c++) REQUIRE(pool.zio().VerifyCopy(*bp, c).ok());

  // Every copy damaged: Corruption, and nothing is written.
  for (int c = 0; c < 3; c++) Damage(pool, bp->copy(c));
  auto bad = pool.zio().Read(*bp);
  REQUIRE(bad.status().IsCorruption());
  REQUIRE(pool.zio().repairs() == 3);

  // An I/O error on copy 0's device: served from copy 1 (on the other vdev).
  TestPool faulty(64 * vdev::kMiB, 2, 1, /*faulty=*/true);
  auto bp2 = faulty.zio().Write(Copies(2), data, Txg(1), 0);
  REQUIRE(bp2.ok());
  REQUIRE(bp2->copy(1).vdev != bp2->dva.vdev);
  faulty.fault(int(bp2->dva.vdev)).FailNthIo(1, vdev::IoKind::kRead);
  REQUIRE(faulty.zio().Read(*bp2).value() == data);
}

TEST_CASE("ReadMany falls back to a block's other copies inside a run", "[zio][copies]") {
  TestPool pool(64 * vdev::kMiB, 1);
  std::vector<std::string> datas;
  std::vector<BlockWrite> writes;
  for (int i = 0; i < 6; i++) datas.push_back(RandomBytes(8192, uint64_t(10 + i)));
  for (int i = 0; i < 6; i++) writes.push_back({Copies(2, Compression::kOff), datas[size_t(i)]});
  auto bps = pool.zio().WriteMany(writes, Txg(1), 0);
  REQUIRE(bps.ok());
  // Copy 0 of blocks 2 and 4 damaged: a batched read still returns every
  // block, and both are healed.
  Damage(pool, (*bps)[2].dva);
  Damage(pool, (*bps)[4].dva);
  std::vector<std::string> out(6, std::string(8192, '\0'));
  std::vector<BlockRead> reads;
  for (int i = 0; i < 6; i++)
    reads.push_back({(*bps)[size_t(i)], reinterpret_cast<uint8_t*>(out[size_t(i)].data())});
  REQUIRE(pool.zio().ReadMany(reads).ok());
  for (int i = 0; i < 6; i++) REQUIRE(out[size_t(i)] == datas[size_t(i)]);
  REQUIRE(pool.zio().repairs() == 2);
  REQUIRE(pool.zio().VerifyCopy((*bps)[2], 0).ok());
}

TEST_CASE("RepairCopy rewrites one copy from a good one; repairs off writes nothing",
          "[zio][copies]") {
  TestPool pool(64 * vdev::kMiB, 1);
  const std::string data = RandomBytes(4096, 3);
  auto bp = pool.zio().Write(Copies(2), data, Txg(1), 0);
  REQUIRE(bp.ok());
  Damage(pool, bp->copy(1));
  REQUIRE(pool.zio().VerifyCopy(*bp, 1).IsCorruption());
  REQUIRE(pool.zio().RepairCopy(*bp, 1).ok());
  REQUIRE(pool.zio().VerifyCopy(*bp, 1).ok());

  Damage(pool, bp->dva);
  pool.zio().set_repairs(false);
  REQUIRE(pool.zio().Read(*bp).value() == data);          // from copy 1
  REQUIRE(pool.zio().VerifyCopy(*bp, 0).IsCorruption());  // left as it was
}

TEST_CASE("Rewrite rewrites every copy in place; Free frees every copy", "[zio][copies]") {
  TestPool pool(64 * vdev::kMiB, 2);
  const uint64_t free_before = pool.space().Stats().free;
  auto bp = pool.zio().Write(Copies(3), RandomBytes(8192, 1), Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(pool.space().Stats().free == free_before - bp->allocated());
  const std::string again = RandomBytes(8192, 2);
  auto re = pool.zio().Rewrite(*bp, Copies(3), again, Txg(1));
  REQUIRE(re.ok());
  REQUIRE(re->copies() == 3);
  for (int c = 0; c < 3; c++) {
    REQUIRE(re->copy(c) == bp->copy(c));
    REQUIRE(pool.zio().VerifyCopy(*re, c).ok());
  }
  REQUIRE(pool.zio().Free(*re, Txg(1)).ok());
  pool.SyncTxgs(1, 4);
  REQUIRE(pool.space().Stats().free == free_before);
}

TEST_CASE("A copy with no room is left out, not the write failed", "[zio][copies]") {
  // Fill a small vdev with single-copy blocks, then free one: a block of
  // two copies finds room for copy 0 only.
  TestPool pool(12 * vdev::kMiB, 1);
  std::vector<BlockPtr> bps;
  for (;;) {
    auto bp =
        pool.zio().Write(Copies(1, Compression::kOff), RandomBytes(4096, bps.size()), Txg(1), 0);
    if (!bp.ok()) {
      REQUIRE(bp.status().IsNoSpace());
      break;
    }
    bps.push_back(*bp);
  }
  REQUIRE(bps.size() > 100);
  REQUIRE(pool.zio().Free(bps[50], Txg(2)).ok());
  pool.SyncTxgs(1, 4);
  auto bp = pool.zio().Write(Copies(2, Compression::kOff), RandomBytes(4096, 7), Txg(5), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->copies() == 1);
  REQUIRE(pool.zio().copy_shortfalls() == 1);
  REQUIRE(pool.zio().Read(*bp).value() == RandomBytes(4096, 7));
}

TEST_CASE("Format 1 stores one copy whatever is asked", "[zio][copies]") {
  vdev::MemoryDevice mem(64 * vdev::kMiB, "mem0");
  vdev::VdevLayout layout = *vdev::ComputeVdevLayout(mem.size());
  space::SpaceOptions options;
  options.allocators = 1;
  space::SpaceManager space({{0, layout.alloc_start, layout.alloc_size, 12, 0}}, options);
  Zio zio({{&mem, 12}}, &space, BpFormat::kV1);
  auto bp = zio.Write(Copies(3), RandomBytes(4096, 1), Txg(1), 0);
  REQUIRE(bp.ok());
  REQUIRE(bp->copies() == 1);
  REQUIRE(zio.copy_shortfalls() == 0);
}

}  // namespace
}  // namespace poolfs::core::zio
