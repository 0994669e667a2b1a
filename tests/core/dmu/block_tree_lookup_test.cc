// BlockTree::Lookup between a change and WriteDirty (found by poolfs-stress:
// a read-back in open context found zeros where an object had data). While
// a txg syncs, the dnode releases its tree lock between Set and WriteDirty,
// so readers see the tree in between: a Set that grows the tree leaves the
// new top pointer a hole until WriteDirty, and Lookup must still find every
// block through the cached indirect blocks, not stop at that hole.
#include "dmu/block_tree.h"
#include "dmu/dnode_phys.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

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

// Next walks only what exists: a tree reaching past 2^40 data blocks with
// four blocks in it is walked in four steps, read from disk (a fresh tree
// over the written top, nothing cached), and a damaged indirect block is
// reported with the whole range under it. (Found by the indirect fuzz
// corpus: ObjectSet::Open stepped through every hole of a metadnode whose
// next object id was 2^47 and timed out.)
TEST_CASE("BlockTree::Next skips holes a subtree at a time and reports damage by range", "[dmu]") {
  TreeFixture f;
  const std::vector<uint64_t> blocks = {0, 7, 3000, (uint64_t{1} << 40) + 5};
  zio::BlockPtr top;
  uint8_t nlevels;
  {
    BlockTree tree(&f.zio, "object 1", 1, zio::BlockPtr{}, 0);
    for (uint64_t b : blocks) REQUIRE(tree.Set(b, f.Data('a' + char(b % 7), Txg(1)), Txg(1)).ok());
    REQUIRE(tree.WriteDirty(Txg(1), 0).ok());
    top = tree.top();
    nlevels = tree.nlevels();
  }
  REQUIRE(nlevels == 5);
  BlockTree tree(&f.zio, "object 1", nlevels, top, 0);
  std::vector<uint64_t> seen;
  BlockTree::Walk walk;
  for (uint64_t from = 0;;) {
    const BlockTree::NextBlock next = tree.Next(from, &walk);
    REQUIRE(next.status.ok());
    if (next.first == tree.Capacity()) break;
    REQUIRE(next.end == next.first + 1);
    REQUIRE(next.bp == tree.Lookup(next.first).value());
    seen.push_back(next.first);
    from = next.end;
    REQUIRE(seen.size() <= blocks.size());
  }
  REQUIRE(seen == blocks);
  // Past the tree's reach, and from a tree of one block: none left, first ==
  // end (ObjectSet::Open looped on a metadnode that reached less far than
  // its next object id, found by the indirect fuzz corpus).
  const BlockTree::NextBlock past = tree.Next(tree.Capacity() + 7, &walk);
  REQUIRE(past.first == past.end);
  BlockTree one(&f.zio, "object 2", 1, f.Data('z', Txg(1)), 4096);
  REQUIRE(one.Next(0, &walk).first == 0);
  const BlockTree::NextBlock none = one.Next(1, &walk);
  REQUIRE(none.first == 1);
  REQUIRE(none.end == 1);
  REQUIRE(tree.Next(8, &walk).first == 3000);
  REQUIRE(tree.Next(3001, &walk).first == blocks[3]);

  // Damage the L1 block over blocks 2048..4095 (slot 1 of the L2 block
  // under slot 0 of the L3 under slot 0 of the top): a fresh tree reports
  // that range as unreadable and goes on past it.
  auto child = [&](const zio::BlockPtr& bp, uint64_t slot) {
    const std::string bytes = f.zio.Read(bp).value();
    const zio::BpFormat format = f.zio.format();
    return zio::DecodeBlockPtr(
               reinterpret_cast<const uint8_t*>(bytes.data()) + slot * zio::BlockPtrSize(format),
               "", format)
        .value();
  };
  const zio::BlockPtr l1 = child(child(child(top, 0), 0), 1);
  REQUIRE(l1.level == 1);
  const uint8_t junk = 0x5a;
  REQUIRE(f.dev.Write(l1.dva.offset, &junk, 1).ok());
  BlockTree fresh(&f.zio, "object 1", nlevels, top, 0);
  BlockTree::Walk fw;
  REQUIRE(fresh.Next(0, &fw).first == 0);
  REQUIRE(fresh.Next(1, &fw).first == 7);
  const BlockTree::NextBlock bad = fresh.Next(8, &fw);
  REQUIRE_FALSE(bad.status.ok());
  REQUIRE(bad.first == 2048);
  REQUIRE(bad.end == 4096);
  REQUIRE(fresh.Next(bad.end, &fw).first == blocks[3]);
}

// A damaged tree whose pointers share a block: a walk reads each indirect
// block once and refuses the second pointer to it, so a few blocks cannot
// make a walk of 2^40 steps.
TEST_CASE("BlockTree::Next refuses an indirect block reached through two pointers", "[dmu]") {
  TreeFixture f;
  zio::BlockPtr l1;
  {
    BlockTree tree(&f.zio, "object 1", 1, zio::BlockPtr{}, 0);
    REQUIRE(tree.Set(0, f.Data('a', Txg(1)), Txg(1)).ok());
    REQUIRE(tree.Set(5, f.Data('b', Txg(1)), Txg(1)).ok());
    REQUIRE(tree.WriteDirty(Txg(1), 0).ok());
    REQUIRE(tree.nlevels() == 2);
    l1 = tree.top();
  }
  // An L2 block whose slots 0 and 1 both point to that L1 block.
  const zio::BpFormat format = f.zio.format();
  std::string l2(IndirectBlockSize(format), '\0');
  zio::EncodeBlockPtr(l1, reinterpret_cast<uint8_t*>(l2.data()), format);
  zio::EncodeBlockPtr(l1, reinterpret_cast<uint8_t*>(l2.data()) + zio::BlockPtrSize(format),
                      format);
  zio::WriteProps props{zio::BlockType::kIndirect, 2, util::Compression::kLz4, 4};
  const zio::BlockPtr top = f.zio.Write(props, l2, Txg(2), 0).value();

  BlockTree tree(&f.zio, "object 1", 3, top, 0);
  BlockTree::Walk walk;
  REQUIRE(tree.Next(0, &walk).first == 0);
  REQUIRE(tree.Next(1, &walk).first == 5);
  const BlockTree::NextBlock shared = tree.Next(6, &walk);
  REQUIRE(shared.status.IsCorruption());
  REQUIRE(shared.status.message().find("second pointer") != std::string::npos);
  REQUIRE(shared.first == 2048);
  REQUIRE(shared.end == 4096);
  REQUIRE(tree.Next(shared.end, &walk).first == tree.Capacity());
}

TEST_CASE("BlockTree keeps at most kMaxCachedL1 clean level-1 blocks and reloads the rest",
          "[dmu]") {
  TreeFixture f;
  BlockTree tree(&f.zio, "object 1", 1, zio::BlockPtr{}, 0);
  constexpr uint64_t kL1s = 3 * BlockTree::kMaxCachedL1;
  std::vector<zio::BlockPtr> bps;
  for (uint64_t i = 0; i < kL1s; i++) {
    bps.push_back(f.Data(char('a' + i % 26), Txg(1)));
    REQUIRE(tree.Set(i << kIndirectShift, bps.back(), Txg(1)).ok());
  }
  // Dirty: none may go, whatever Lookup does.
  for (uint64_t i = 0; i < kL1s; i++) REQUIRE(tree.Lookup(i << kIndirectShift).value() == bps[i]);
  REQUIRE(tree.cached_indirects() >= kL1s);
  REQUIRE(tree.WriteDirty(Txg(1), 0).ok());
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t i = 0; i < kL1s; i++) {
      REQUIRE(tree.Lookup(i << kIndirectShift).value() == bps[i]);
      REQUIRE(tree.Lookup((i << kIndirectShift) + 1).value().IsHole());
      // The level-1 blocks, plus the one level-2 block above them.
      REQUIRE(tree.cached_indirects() <= BlockTree::kMaxCachedL1 + 2);
    }
  }
  // Changes under dropped blocks load them again, and stay until written.
  const zio::BlockPtr z = f.Data('z', Txg(2));
  REQUIRE(tree.Set(7 + (3 << kIndirectShift), z, Txg(2)).ok());
  for (uint64_t i = 0; i < kL1s; i++) REQUIRE(tree.Lookup(i << kIndirectShift).value() == bps[i]);
  REQUIRE(tree.Lookup(7 + (3 << kIndirectShift)).value() == z);
  REQUIRE(tree.WriteDirty(Txg(2), 0).ok());
  BlockTree again(&f.zio, "object 1", tree.nlevels(), tree.top(), tree.used());
  for (uint64_t i = 0; i < kL1s; i++) REQUIRE(again.Lookup(i << kIndirectShift).value() == bps[i]);
  REQUIRE(again.Lookup(7 + (3 << kIndirectShift)).value() == z);
  REQUIRE(again.used() == tree.used());
}

}  // namespace
}  // namespace poolfs::core::dmu
