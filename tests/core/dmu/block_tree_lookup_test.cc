// BlockTree::Lookup between a change and WriteDirty (found by poolfs-stress:
// a read-back in open context found zeros where an object had data). While
// a txg syncs, the dnode releases its tree lock between Set and WriteDirty,
// so readers see the tree in between: a Set that grows the tree leaves the
// new top pointer a hole until WriteDirty, and Lookup must still find every
// block through the cached indirect blocks, not stop at that hole.
#include "dmu/block_tree.h"

#include <catch2/catch.hpp>

#include <string>

#include "space/allocator.h"
#include "vdev/memory_device.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {
namespace {

struct TreeFixture {
  TreeFixture()
      : dev(64 << 20),
        space({{0, 4 << 20, (64 << 20) - (8 << 20), 12, 0}}, space::SpaceOptions{}),
        zio({{&dev, 12}}, &space) {}
  zio::BlockPtr Data(char c, Txg t) {
    zio::WriteProps props{zio::BlockType::kData, 0, util::Compression::kOff, 1};
    auto bp = zio.Write(props, std::string(4096, c), t, 0);
    REQUIRE(bp.ok());
    return *bp;
  }
  vdev::MemoryDevice dev;
  space::SpaceManager space;
  zio::Zio zio;
};

TEST_CASE("BlockTree finds existing blocks while it grows, before WriteDirty", "[dmu]") {
  TreeFixture f;
  BlockTree tree(&f.zio, "object 1", 1, zio::BlockPtr{}, 0);
  const zio::BlockPtr a = f.Data('a', Txg(1));
  REQUIRE(tree.Set(1, a, Txg(1)).ok());  // grows to 2 levels
  REQUIRE(tree.WriteDirty(Txg(1), 0).ok());
  REQUIRE(tree.nlevels() == 2);
  REQUIRE(tree.Lookup(1).value() == a);

  const zio::BlockPtr b = f.Data('b', Txg(2));
  REQUIRE(tree.Set(5000, b, Txg(2)).ok());  // past 2048 blocks: grows to 3 levels
  REQUIRE(tree.nlevels() == 3);
  // Not written yet: the new top is still a hole.
  REQUIRE(tree.Lookup(1).value() == a);
  REQUIRE(tree.Lookup(5000).value() == b);
  REQUIRE(tree.WriteDirty(Txg(2), 0).ok());
  REQUIRE(tree.Lookup(1).value() == a);
  REQUIRE(tree.Lookup(5000).value() == b);
}

TEST_CASE("BlockTree finds a block set under a freed range before WriteDirty", "[dmu]") {
  TreeFixture f;
  BlockTree tree(&f.zio, "object 1", 1, zio::BlockPtr{}, 0);
  REQUIRE(tree.Set(3000, f.Data('a', Txg(1)), Txg(1)).ok());
  REQUIRE(tree.WriteDirty(Txg(1), 0).ok());
  // Free everything: the L1 of blocks 2048..4095 becomes a hole in its parent.
  REQUIRE(tree.FreeRange(0, 1 << 20, Txg(2)).ok());
  REQUIRE(tree.WriteDirty(Txg(2), 0).ok());
  REQUIRE(tree.Lookup(3000).value().IsHole());
  const zio::BlockPtr b = f.Data('b', Txg(3));
  REQUIRE(tree.Set(3001, b, Txg(3)).ok());
  REQUIRE(tree.Lookup(3001).value() == b);
  REQUIRE(tree.WriteDirty(Txg(3), 0).ok());
  REQUIRE(tree.Lookup(3001).value() == b);
  REQUIRE(tree.Lookup(3000).value().IsHole());
}

}  // namespace
}  // namespace poolfs::core::dmu
