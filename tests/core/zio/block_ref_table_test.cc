// BlockRefTable: its on-disk form (Encode/Decode, and every damage Decode
// refuses), the life of a count (pending in a txg, applied at its sync,
// dropped by frees), and what a Zio free does with a counted block.
#include "zio/block_ref_table.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "util/endian.h"
#include "zio_test_util.h"

// A named namespace, not an anonymous one: the test programs build as unity
// builds, where the anonymous namespaces of several files are one.
namespace poolfs::core::zio::brt_test {

using Entries = BlockRefTable::Entries;
using Release = BlockRefTable::Release;

// A stored level-0 data block of `size` allocated bytes at (vdev, offset).
BlockPtr DataBlock(uint32_t vdev, uint64_t offset, uint64_t size = 4096) {
  BlockPtr bp;
  bp.type = BlockType::kData;
  bp.level = 0;
  bp.lsize = uint32_t(size);
  bp.psize = uint32_t(size);
  bp.dva = {vdev, offset, size};
  bp.birth = Txg(1);
  bp.fill = 1;
  return bp;
}

// The encoding of entries given in order, without Encode (so that the
// layout is checked, not assumed): u64 offset, u32 vdev, u32 reserved, u64
// refs, u64 allocated.
struct RawEntry {
  uint64_t offset;
  uint32_t vdev;
  uint32_t reserved;
  uint64_t refs;
  uint64_t allocated;
};
std::string Raw(const std::vector<RawEntry>& entries) {
  std::string out(entries.size() * BlockRefTable::kEntrySize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (const RawEntry& e : entries) {
    util::PutLE64(p, e.offset);
    util::PutLE32(p + 8, e.vdev);
    util::PutLE32(p + 12, e.reserved);
    util::PutLE64(p + 16, e.refs);
    util::PutLE64(p + 24, e.allocated);
    p += BlockRefTable::kEntrySize;
  }
  return out;
}

// Decode's refusal of `bytes`: Corruption, whose message has every one of
// `parts`.
void RequireRefused(const std::string& bytes, uint32_t vdevs,
                    const std::vector<std::string>& parts) {
  Result<Entries> r = BlockRefTable::Decode(bytes, vdevs);
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  REQUIRE(r.status().IsCorruption());
  for (const std::string& part : parts) CHECK(r.status().message().find(part) != std::string::npos);
}

TEST_CASE("BlockRefTable encodes 32-byte entries in key order and decodes them back",
          "[zio][brt]") {
  // None: no bytes.
  REQUIRE(BlockRefTable::Encode({}).empty());
  REQUIRE(BlockRefTable::Decode("", 1).value().empty());

  // One entry, byte by byte.
  Entries one;
  one[{1, 0x123400}] = {3, 8192};
  const std::string bytes = BlockRefTable::Encode(one);
  REQUIRE(bytes == Raw({{0x123400, 1, 0, 3, 8192}}));
  REQUIRE(bytes.size() == 32);
  REQUIRE(BlockRefTable::Decode(bytes, 2).value() == one);

  // Many, on several vdevs: ascending by vdev, then offset; the encoding is
  // canonical (what decodes re-encodes to the same bytes).
  std::mt19937_64 rng(42);
  Entries many;
  while (many.size() < 2000) {
    const uint32_t vdev = uint32_t(rng() % 3);
    const uint64_t offset = (rng() % (uint64_t{1} << 40)) * 512;
    const uint64_t allocated = (1 + rng() % 3) * (1 + rng() % 32768) * 512;
    many[{vdev, offset}] = {1 + rng() % 1000, allocated};
  }
  const std::string encoded = BlockRefTable::Encode(many);
  REQUIRE(encoded.size() == many.size() * 32);
  Result<Entries> back = BlockRefTable::Decode(encoded, 3);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  REQUIRE(*back == many);
  REQUIRE(BlockRefTable::Encode(*back) == encoded);
  // The first entry is the smallest key.
  const auto& [key, entry] = *many.begin();
  REQUIRE(encoded.substr(0, 32) == Raw({{key.second, key.first, 0, entry.refs, entry.allocated}}));

  // The extremes of each field that are still valid.
  Entries edges;
  edges[{0, 0}] = {std::numeric_limits<uint64_t>::max(), 512};
  edges[{4095, std::numeric_limits<uint64_t>::max() / 512 * 512 - 3 * kMaxBlockSize}] = {
      1, uint64_t{kMaxCopies} * kMaxBlockSize};
  REQUIRE(BlockRefTable::Decode(BlockRefTable::Encode(edges), 4096).value() == edges);
}

TEST_CASE("BlockRefTable::Decode refuses every kind of damage and names the entry", "[zio][brt]") {
  // Three good entries on two vdevs; each damage is to the second (or, for
  // the order, the third), so the message must say which.
  const RawEntry a{0x10000, 0, 0, 1, 4096}, b{0x20000, 0, 0, 2, 8192}, c{0x8000, 1, 0, 5, 512};
  REQUIRE(BlockRefTable::Decode(Raw({a, b, c}), 2).ok());
  auto with_b = [&](RawEntry bad) { return Raw({a, bad, c}); };

  SECTION("a length that is not whole entries") {
    for (size_t cut : {size_t{1}, size_t{31}, size_t{33}, size_t{95}}) {
      const std::string bytes = Raw({a, b, c}).substr(0, cut);
      RequireRefused(bytes, 2, {std::to_string(cut) + " bytes", "not a multiple of the 32-byte"});
    }
    RequireRefused(Raw({a, b, c}) + "x", 2, {"97 bytes"});
  }
  SECTION("entries out of order or repeated") {
    RequireRefused(Raw({b, a, c}), 2, {"entry 1 (vdev 0 offset 65536)", "out of order"});
    RequireRefused(Raw({a, a, c}), 2, {"entry 1 (vdev 0 offset 65536)", "out of order"});
    RequireRefused(Raw({a, b, b}), 2, {"entry 2 (vdev 0 offset 131072)", "out of order"});
    // By vdev first: vdev 1's entry, at a lower offset, comes after vdev 0's.
    RequireRefused(Raw({a, c, b}), 2, {"entry 2 (vdev 0 offset 131072)", "out of order"});
  }
  SECTION("a count of zero") {
    RequireRefused(with_b({b.offset, b.vdev, 0, 0, b.allocated}), 2,
                   {"entry 1 (vdev 0 offset 131072)", "counts no reference"});
  }
  SECTION("a reserved field that is not zero") {
    for (uint32_t reserved : {1u, 0x80000000u})
      RequireRefused(with_b({b.offset, b.vdev, reserved, b.refs, b.allocated}), 2,
                     {"entry 1 (vdev 0 offset 131072)", "reserved field is not zero"});
  }
  SECTION("a vdev the pool does not have") {
    RequireRefused(with_b({b.offset, 2, 0, b.refs, b.allocated}), 2,
                   {"entry 1 (vdev 2 offset 131072)", "the pool has 2 vdevs"});
    RequireRefused(Raw({a, b, c}), 1, {"entry 2 (vdev 1 offset 32768)", "the pool has 1 vdevs"});
  }
  SECTION("an offset that is not a multiple of 512") {
    for (uint64_t off : {b.offset + 1, b.offset + 256, b.offset + 511})
      RequireRefused(with_b({off, b.vdev, 0, b.refs, b.allocated}), 2,
                     {"entry 1 (vdev 0 offset " + std::to_string(off) + ")",
                      "offset is not a multiple of 512"});
  }
  SECTION("an allocated size no block has") {
    for (uint64_t size : {uint64_t{0}, uint64_t{100}, uint64_t{4097},
                          uint64_t{kMaxCopies} * kMaxBlockSize + 512, ~uint64_t{0} / 512 * 512})
      RequireRefused(with_b({b.offset, b.vdev, 0, b.refs, size}), 2,
                     {"entry 1 (vdev 0 offset 131072)",
                      "allocated size " + std::to_string(size) + " is not a block's"});
  }
  SECTION("an extent past the end of any device") {
    const uint64_t last = std::numeric_limits<uint64_t>::max() / 512 * 512;
    RequireRefused(Raw({a, {last, 0, 0, 1, 1024}}), 2,
                   {"entry 1 (vdev 0 offset " + std::to_string(last) + ")", "passes the end"});
  }
}

TEST_CASE("BlockRefTable counts a clone from its txg's sync on and each free takes one",
          "[zio][brt]") {
  BlockRefTable table;
  const BlockPtr x = DataBlock(0, 0x40000, 8192), y = DataBlock(1, 0x40000, 4096);
  // Nothing counted: every free frees.
  REQUIRE(table.Drop(x, Txg(3)) == Release::kFree);
  REQUIRE_FALSE(table.TakeDirty());
  REQUIRE(table.stats().entries == 0);

  // Two clones of x and one of y made in txg 5, pending until its sync.
  table.AddPending(Txg(5), x);
  table.AddPending(Txg(5), x);
  table.AddPending(Txg(5), y);
  REQUIRE(table.stats().pending == 3);
  REQUIRE(table.stats().entries == 0);
  REQUIRE(table.Snapshot().empty());
  // A free in an earlier txg (4) must not release a block a clone of 5
  // needs; a free of 5 itself, or later, comes after 5's references are
  // applied (the sync applies them first), so the table does not hold it.
  REQUIRE(table.Drop(x, Txg(4)) == Release::kDefer);
  REQUIRE(table.Drop(x, Txg(5)) == Release::kFree);
  REQUIRE(table.Drop(x, Txg(6)) == Release::kFree);
  REQUIRE_FALSE(table.TakeDirty());

  // Txg 5's sync: the counts join.
  table.ApplyPending(Txg(5));
  BlockRefTable::Stats s = table.stats();
  REQUIRE(s.pending == 0);
  REQUIRE(s.entries == 2);
  REQUIRE(s.saved_bytes == 2 * 8192 + 4096);
  REQUIRE(table.TakeDirty());
  REQUIRE_FALSE(table.TakeDirty());
  Entries want;
  want[{0, 0x40000}] = {2, 8192};
  want[{1, 0x40000}] = {1, 4096};
  REQUIRE(table.Snapshot() == want);
  // Applying again, or a txg with nothing pending, changes nothing.
  table.ApplyPending(Txg(5));
  table.ApplyPending(Txg(6));
  REQUIRE_FALSE(table.TakeDirty());
  REQUIRE(table.Snapshot() == want);

  // Three references to x: two frees are kept (the entry goes at zero), the
  // third frees.
  REQUIRE(table.Drop(x, Txg(7)) == Release::kKept);
  REQUIRE(table.TakeDirty());
  REQUIRE(table.Snapshot().at({0, 0x40000}).refs == 1);
  REQUIRE(table.stats().saved_bytes == 8192 + 4096);
  REQUIRE(table.Drop(x, Txg(7)) == Release::kKept);
  REQUIRE(table.Snapshot().count({0, 0x40000}) == 0);
  REQUIRE(table.Drop(x, Txg(7)) == Release::kFree);
  REQUIRE(table.Drop(y, Txg(8)) == Release::kKept);
  REQUIRE(table.Drop(y, Txg(8)) == Release::kFree);
  REQUIRE(table.Snapshot().empty());
  s = table.stats();
  REQUIRE(s.entries == 0);
  REQUIRE(s.saved_bytes == 0);
  REQUIRE(table.TakeDirty());
  REQUIRE_FALSE(table.TakeDirty());
}

TEST_CASE("BlockRefTable forgets a cancelled clone and holds frees only for later txgs",
          "[zio][brt]") {
  BlockRefTable table;
  const BlockPtr x = DataBlock(0, 0x80000);
  // Added and cancelled in the same txg: as if never made.
  table.AddPending(Txg(9), x);
  table.AddPending(Txg(9), x);
  table.CancelPending(Txg(9), x);
  REQUIRE(table.stats().pending == 1);
  table.CancelPending(Txg(9), x);
  REQUIRE(table.stats().pending == 0);
  REQUIRE(table.Drop(x, Txg(8)) == Release::kFree);
  table.ApplyPending(Txg(9));
  REQUIRE(table.Snapshot().empty());
  REQUIRE_FALSE(table.TakeDirty());

  // Pending references of several unsynced txgs at once (the ring holds
  // them): a free waits while any later one is pending.
  table.AddPending(Txg(10), x);
  table.AddPending(Txg(12), x);
  REQUIRE(table.Drop(x, Txg(9)) == Release::kDefer);
  REQUIRE(table.Drop(x, Txg(11)) == Release::kDefer);
  REQUIRE(table.Drop(x, Txg(12)) == Release::kFree);
  table.ApplyPending(Txg(10));
  REQUIRE(table.Snapshot().at({0, 0x80000}) == BlockRefTable::Entry{1, 4096});
  // Counted now: a free of 11 is kept, whatever 12 has pending.
  REQUIRE(table.Drop(x, Txg(11)) == Release::kKept);
  REQUIRE(table.Drop(x, Txg(11)) == Release::kDefer);  // 12's clone still needs it
  table.ApplyPending(Txg(12));
  REQUIRE(table.Snapshot().at({0, 0x80000}).refs == 1);
  REQUIRE(table.Drop(x, Txg(13)) == Release::kKept);
  REQUIRE(table.Drop(x, Txg(13)) == Release::kFree);
}

TEST_CASE("BlockRefTable counts only level-0 data blocks and loads what import read",
          "[zio][brt]") {
  BlockRefTable table;
  Entries loaded;
  loaded[{0, 0x10000}] = {2, 16384};
  loaded[{0, 0x20000}] = {1, 4096};
  table.Load(loaded);
  REQUIRE_FALSE(table.TakeDirty());  // as stored
  REQUIRE(table.Snapshot() == loaded);
  REQUIRE(table.stats().entries == 2);
  REQUIRE(table.stats().saved_bytes == 2 * 16384 + 4096);

  // Pointers at a counted extent that are not clonable data blocks: an
  // indirect block, a dnode block, a gang block. Their frees free (the
  // table is not asked), and the entry stays.
  BlockPtr indirect = DataBlock(0, 0x10000, 16384);
  indirect.type = BlockType::kIndirect;
  indirect.level = 1;
  BlockPtr dnodes = DataBlock(0, 0x10000, 16384);
  dnodes.type = BlockType::kDnodes;
  BlockPtr gang = DataBlock(0, 0x10000, 512);
  gang.gang_asize = 16384;
  for (const BlockPtr& bp : {indirect, dnodes, gang}) {
    REQUIRE_FALSE(BlockRefTable::Clonable(bp));
    REQUIRE(table.Drop(bp, Txg(2)) == Release::kFree);
  }
  REQUIRE_FALSE(BlockRefTable::Clonable(BlockPtr{}));
  REQUIRE(BlockRefTable::Clonable(DataBlock(0, 0x10000, 16384)));
  REQUIRE(table.Snapshot() == loaded);
  REQUIRE_FALSE(table.TakeDirty());

  // A block of several copies is keyed by its first and counts them all.
  BlockPtr copies = DataBlock(1, 0x30000, 4096);
  copies.ditto[0] = {1, 0x90000, 4096};
  copies.ditto[1] = {0, 0x90000, 4096};
  REQUIRE(BlockRefTable::KeyOf(copies) == BlockRefTable::Key{1, 0x30000});
  table.AddPending(Txg(3), copies);
  table.ApplyPending(Txg(3));
  REQUIRE(table.Snapshot().at({1, 0x30000}) == BlockRefTable::Entry{1, 3 * 4096});

  // Load replaces everything, and what it loads is not dirty.
  table.Load({});
  REQUIRE(table.Snapshot().empty());
  REQUIRE_FALSE(table.TakeDirty());
  REQUIRE(table.Drop(copies, Txg(4)) == Release::kFree);
}

TEST_CASE(
    "Zio keeps a counted block's space until its last free, and holds a free a later "
    "clone needs",
    "[zio][brt]") {
  testing::TestPool pool;
  BlockRefTable table;
  pool.zio().set_ref_table(&table);
  REQUIRE(pool.zio().ref_table() == &table);
  const space::SpaceStats empty = pool.space().Stats();
  auto write = [&](uint64_t seed) {
    auto bp = pool.zio().Write(testing::Data(util::Compression::kOff),
                               testing::RandomBytes(65536, seed), Txg(1), 0);
    REQUIRE(bp.ok());
    return *bp;
  };
  const BlockPtr a = write(1), b = write(2), plain = write(3);
  pool.SyncTxgs(1, 1);
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 3 * 65536);

  // a is cloned twice in txg 2; its sync applies the references first, then
  // frees the source's pointer: the space stays.
  table.AddPending(Txg(2), a);
  table.AddPending(Txg(2), a);
  table.ApplyPending(Txg(2));
  REQUIRE(pool.zio().Free(a, Txg(2)).ok());
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 3 * 65536);
  REQUIRE(pool.space().Stats().deferred == 0);
  // A block nothing cloned frees as always.
  REQUIRE(pool.zio().Free(plain, Txg(2)).ok());
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 2 * 65536);
  pool.SyncTxgs(2, 2);
  REQUIRE(pool.zio().Free(a, Txg(3)).ok());
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 2 * 65536);
  REQUIRE(table.stats().entries == 0);
  // The last reference's free frees it.
  REQUIRE(pool.zio().Free(a, Txg(3)).ok());
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 65536);
  pool.SyncTxgs(3, 3);

  // b is cloned in txg 5 (not synced) and freed in txg 4: the free is held
  // for the pool's deferred frees, the space kept.
  REQUIRE(pool.zio().TakeHeldFrees().empty());
  table.AddPending(Txg(5), b);
  REQUIRE(pool.zio().Free(b, Txg(4)).ok());
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 65536);
  std::vector<BlockPtr> held = pool.zio().TakeHeldFrees();
  REQUIRE(held == std::vector<BlockPtr>{b});
  REQUIRE(pool.zio().TakeHeldFrees().empty());
  pool.SyncTxgs(4, 4);
  // Txg 5's sync applies the clone, then frees what 4 held: the clone's
  // reference is what remains.
  table.ApplyPending(Txg(5));
  REQUIRE(pool.zio().Free(held[0], Txg(5)).ok());
  REQUIRE(pool.zio().TakeHeldFrees().empty());
  REQUIRE(pool.space().Stats().allocated == empty.allocated + 65536);
  pool.SyncTxgs(5, 5);
  // The clone's free is the last.
  REQUIRE(pool.zio().Free(b, Txg(6)).ok());
  REQUIRE(pool.space().Stats().allocated == empty.allocated);
  pool.SyncTxgs(6, 9);
  const space::SpaceStats end = pool.space().Stats();
  REQUIRE(end.free == empty.free);
  REQUIRE(end.deferred == 0);
}

}  // namespace poolfs::core::zio::brt_test
