// BlockTree::WriteBlock across the MOS sync's passes of one txg: a block
// born in the txg is rewritten in place, and one that outgrows its extent
// moves once, not once per pass. (Found by poolfs-stress --mode mounts: a
// space map or the pool directory growing by a few bytes a pass moved in
// pass after pass, each move changing a space map and deferring a free
// into the directory, until a txg's MOS sync took 7 passes.)
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "dmu/block_tree.h"
#include "space/allocator.h"
#include "vdev/memory_device.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {
namespace {

constexpr uint32_t kMosBlock = 16384;  // a MOS object's block size

struct RewriteFixture {
  RewriteFixture()
      : dev(64 << 20),
        space({{0, 4 << 20, (64 << 20) - (8 << 20), 9, 0}}, space::SpaceOptions{}),
        zio({{&dev, 9}}, &space) {}
  vdev::MemoryDevice dev;
  space::SpaceManager space;
  zio::Zio zio;
};

// A block of kMosBlock bytes whose first `n` bytes do not compress and whose
// rest is zeros: it stores in about n bytes with lz4.
std::string Grown(size_t n) {
  std::mt19937_64 rng(7);  // the same prefix every time: the block grows
  std::string s(kMosBlock, '\0');
  for (size_t i = 0; i < n; i++) s[i] = char(rng());
  return s;
}

TEST_CASE("A block that outgrows its extent within a txg moves once, then fits in place",
          "[dmu][mos]") {
  RewriteFixture f;
  const Txg t(5);
  const zio::WriteProps props{zio::BlockType::kData, 0, util::Compression::kLz4, 1};
  auto first = BlockTree::WriteBlock(&f.zio, props, Grown(1000), zio::BlockPtr{}, t, 0);
  REQUIRE(first.ok());
  REQUIRE(first->dva.size < 2048);  // stored compressed
  // A later pass: a few bytes more still fit its sectors' slack...
  auto same = BlockTree::WriteBlock(&f.zio, props, Grown(1001), *first, t, 0);
  REQUIRE(same.ok());
  REQUIRE(same->dva == first->dva);
  // ...past them the block moves, once: stored whole...
  auto moved = BlockTree::WriteBlock(&f.zio, props, Grown(1600), *same, t, 0);
  REQUIRE(moved.ok());
  REQUIRE(!(moved->dva == first->dva));
  REQUIRE(moved->dva.size == kMosBlock);
  // ...and stays so for the rest of the txg: every later pass rewrites it
  // where it is, however it grows.
  zio::BlockPtr bp = *moved;
  for (size_t n = 1700; n <= 12000; n += 700) {
    INFO(n << " incompressible bytes");
    auto again = BlockTree::WriteBlock(&f.zio, props, Grown(n), bp, t, 0);
    REQUIRE(again.ok());
    REQUIRE(again->dva == moved->dva);
    REQUIRE(f.zio.Read(*again).value() == Grown(n));
    bp = *again;
  }
  // A block born in an earlier txg is written anew, compressed as ever.
  auto next = BlockTree::WriteBlock(&f.zio, props, Grown(1000), bp, Txg(6), 0);
  REQUIRE(next.ok());
  REQUIRE(next->dva.size < 2048);
}

TEST_CASE("A gang block that outgrows its pieces within a txg moves once, then fits in place",
          "[dmu][mos]") {
  RewriteFixture f;
  f.zio.set_force_gang_above(1024);  // every block of more than 2 sectors is a gang
  const Txg t(5);
  const zio::WriteProps props{zio::BlockType::kData, 0, util::Compression::kLz4, 1};
  auto first = BlockTree::WriteBlock(&f.zio, props, Grown(1500), zio::BlockPtr{}, t, 0);
  REQUIRE(first.ok());
  REQUIRE(first->IsGang());
  // Its compressed bytes need more sectors: its pieces no longer fit them.
  auto moved = BlockTree::WriteBlock(&f.zio, props, Grown(2200), *first, t, 0);
  REQUIRE(moved.ok());
  REQUIRE(moved->IsGang());
  REQUIRE(!(moved->dva == first->dva));
  zio::BlockPtr bp = *moved;
  for (size_t n = 2300; n <= 9000; n += 900) {
    INFO(n << " incompressible bytes");
    auto again = BlockTree::WriteBlock(&f.zio, props, Grown(n), bp, t, 0);
    REQUIRE(again.ok());
    REQUIRE(again->dva == moved->dva);
    REQUIRE(f.zio.Read(*again).value() == Grown(n));
    bp = *again;
  }
}

}  // namespace
}  // namespace poolfs::core::dmu
