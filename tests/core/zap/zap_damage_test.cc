// Zap damage: every block kind (micro block, fat header, external pointer
// table, leaf) refused with Corruption naming the zap object and block, for
// structural damage (the decoders' rules) and for damage on the device (the
// pool's block checksum).
#include <cstring>
#include <functional>
#include <random>

#include "util/endian.h"
#include "zap/leaf.h"
#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;
using testing::RandomName;
using util::GetLE16;
using util::GetLE64;
using util::PutLE16;
using util::PutLE64;

// A zap in a chosen shape and the blocks of each kind it has.
struct Damaged {
  Fixture f{64 << 20};
  ObjectId id;
  uint32_t bs = 4096;
  std::vector<std::string> names;
  uint64_t table_block = 0;  // fat with an external table
  uint64_t leaf_block = 0;

  enum Shape { kMicro, kFatEmbedded, kFatExternal };
  explicit Damaged(Shape shape, dmu::ObjectType type = dmu::ObjectType::kZap) {
    ZapOptions o;
    o.block_size = bs;
    auto z = f.NewZap(type, o);
    id = z->id();
    std::mt19937_64 rng(11);
    auto tx = f.NewTx();
    const size_t want = shape == kMicro ? 20 : shape == kFatEmbedded ? 200 : 0;
    while (want ? names.size() < want : !z->Shape().external_table) {
      std::string n = RandomName(rng, shape == kFatExternal ? 200 : 1 + rng() % 30) + "#" +
                      std::to_string(names.size());
      REQUIRE(z->Add(*tx, n, Value{names.size(), 0}).ok());
      names.push_back(n);
    }
    tx->Commit();
    REQUIRE(z->Shape().micro == (shape == kMicro));
    std::string h = Block(0);
    const auto* p = reinterpret_cast<const uint8_t*>(h.data());
    if (shape != kMicro) {
      table_block = GetLE64(p + offsetof(FatHeaderPhys, table_block));
      REQUIRE((table_block != 0) == (shape == kFatExternal));
      if (table_block == 0) {
        leaf_block = GetLE64(p + kFatHeaderSize);
      } else {
        std::string t = Block(table_block);
        leaf_block = GetLE64(reinterpret_cast<const uint8_t*>(t.data()) + kTableHeaderSize);
      }
    }
  }
  std::string Block(uint64_t b) { return f.os->Read(id, b * bs, bs).value(); }
  void Put(uint64_t b, const std::string& bytes) {
    auto tx = f.NewTx();
    REQUIRE(f.os->Write(*tx, id, b * bs, bytes).ok());
  }
  std::string Where(uint64_t b) {
    return "zap object " + std::to_string(id.value()) + " block " + std::to_string(b);
  }
  // Opens the zap and exercises every read path; returns the first error.
  Status Exercise() {
    auto z = Zap::Open(f.os.get(), id);
    if (!z.ok()) return z.status();
    auto tx = f.NewTx();
    for (const std::string& n : names) {
      auto v = (*z)->Lookup(n);
      if (!v.ok()) return v.status();
    }
    auto it = (*z)->Iterate(0, 1 << 20);
    if (!it.ok()) return it.status();
    Status s = (*z)->Update(*tx, names.front(), Value{5, 5});
    if (!s.ok()) return s;
    return Status::Ok();
  }
  // The names stored in leaf block b (from the undamaged block).
  std::vector<std::string> LeafNames(uint64_t b) {
    BlockContext ctx{id.value(), bs, false};
    auto leaf = Leaf::Decode(Block(b), ctx, b);
    REQUIRE(leaf.ok());
    std::vector<std::string> out;
    for (uint32_t i = 0; i < leaf->count(); i++) out.emplace_back(leaf->NameAt(i));
    return out;
  }
};

void ExpectCorruptionAt(Damaged& d, uint64_t block, const std::string& why) {
  Status s = d.Exercise();
  INFO(why << ": " << s.ToString());
  REQUIRE(s.IsCorruption());
  REQUIRE(s.message().find(d.Where(block)) != std::string::npos);
}

// Bytes [8, 16) of every block held a checksum of the block in development
// builds before the first release; they are written as zero now and not
// read (zap_phys.h).
void UnusedBytesIgnored(Damaged& d, uint64_t block) {
  const std::string good = d.Block(block);
  REQUIRE(GetLE64(reinterpret_cast<const uint8_t*>(good.data()) + 8) == 0);
  std::string old = good;
  PutLE64(reinterpret_cast<uint8_t*>(old.data()) + 8, 0x0123456789abcdefull);
  d.Put(block, old);
  INFO(d.Exercise().ToString());
  REQUIRE(d.Exercise().ok());
  d.Put(block, good);
}

TEST_CASE("Zap writes bytes 8..16 of each block kind as zero and does not read them", "[zap]") {
  SECTION("micro block") {
    Damaged d(Damaged::kMicro);
    UnusedBytesIgnored(d, 0);
  }
  SECTION("fat header and leaf") {
    Damaged d(Damaged::kFatEmbedded);
    UnusedBytesIgnored(d, 0);
    UnusedBytesIgnored(d, d.leaf_block);
  }
  SECTION("external pointer table") {
    Damaged d(Damaged::kFatExternal);
    UnusedBytesIgnored(d, d.table_block);
  }
}

// Applies `edit` to block b and expects Corruption naming b from every path
// that reads it.
void Structural(Damaged& d, uint64_t b, const std::string& why,
                const std::function<void(uint8_t*)>& edit) {
  const std::string good = d.Block(b);
  std::string bad = good;
  edit(reinterpret_cast<uint8_t*>(bad.data()));
  d.Put(b, bad);
  ExpectCorruptionAt(d, b, why);
  d.Put(b, good);
}

TEST_CASE("Zap refuses structural damage in each block kind", "[zap]") {
  SECTION("micro block") {
    Damaged d(Damaged::kMicro, dmu::ObjectType::kDirectory);
    auto E = [](uint8_t* p, int i) { return p + kMicroHeaderSize + kMicroEntrySize * i; };
    Structural(d, 0, "object", [](uint8_t* p) { p[16] ^= 1; });
    Structural(d, 0, "version", [](uint8_t* p) { p[32] = 2; });
    Structural(d, 0, "reserved", [](uint8_t* p) { p[33] = 1; });
    Structural(d, 0, "reserved tail", [](uint8_t* p) { p[63] = 1; });
    Structural(d, 0, "count past capacity", [](uint8_t* p) { util::PutLE32(p + 36, 64); });
    Structural(d, 0, "count one high", [](uint8_t* p) { util::PutLE32(p + 36, 21); });
    Structural(d, 0, "count one low", [](uint8_t* p) { util::PutLE32(p + 36, 19); });
    Structural(d, 0, "key order", [&](uint8_t* p) {
      uint8_t tmp[64];
      std::memcpy(tmp, E(p, 3), 64);
      std::memcpy(E(p, 3), E(p, 4), 64);
      std::memcpy(E(p, 4), tmp, 64);
    });
    Structural(d, 0, "key past 2^62", [&](uint8_t* p) { PutLE64(E(p, 19), kKeyLimit); });
    Structural(d, 0, "key not the hash", [&](uint8_t* p) { E(p, 7)[25] ^= 1; });
    Structural(d, 0, "empty name", [&](uint8_t* p) { E(p, 2)[24] = 0; });
    Structural(d, 0, "name too long", [&](uint8_t* p) { E(p, 2)[24] = 40; });
    Structural(d, 0, "bytes after a name", [&](uint8_t* p) { E(p, 2)[63] = 'x'; });
    Structural(d, 0, "slash in a directory", [&](uint8_t* p) { E(p, 2)[25] = '/'; });
    Structural(d, 0, "another kind's magic", [](uint8_t* p) { PutLE64(p, kLeafMagic); });
  }
  SECTION("fat header") {
    Damaged d(Damaged::kFatEmbedded);
    const uint64_t depth = d.Block(0)[33];
    REQUIRE(depth >= 2);
    auto T = [](uint8_t* p, int i) { return p + kFatHeaderSize + 8 * i; };
    Structural(d, 0, "object", [](uint8_t* p) { p[16] ^= 1; });
    Structural(d, 0, "version", [](uint8_t* p) { p[32] = 0; });
    Structural(d, 0, "depth past 26", [](uint8_t* p) { p[33] = 27; });
    Structural(d, 0, "depth one low", [](uint8_t* p) { p[33]--; });
    Structural(d, 0, "depth one high", [](uint8_t* p) { p[33]++; });
    Structural(d, 0, "reserved", [](uint8_t* p) { p[35] = 1; });
    Structural(d, 0, "reserved tail", [](uint8_t* p) { p[127] = 1; });
    Structural(d, 0, "next block", [](uint8_t* p) { PutLE64(p + 48, GetLE64(p + 48) + 1); });
    Structural(d, 0, "leaves", [](uint8_t* p) { PutLE64(p + 56, GetLE64(p + 56) + 1); });
    Structural(d, 0, "external table when it fits", [](uint8_t* p) { PutLE64(p + 64, 1); });
    Structural(d, 0, "pointer to block 0", [&](uint8_t* p) { PutLE64(T(p, 0), 0); });
    Structural(d, 0, "pointer past the end",
               [&](uint8_t* p) { PutLE64(T(p, 0), GetLE64(p + 48)); });
    Structural(d, 0, "runs out of place", [&](uint8_t* p) {
      // Swap the first slot with the first slot of another leaf.
      uint64_t a = GetLE64(T(p, 0));
      int j = 1;
      while (GetLE64(T(p, j)) == a) j++;
      PutLE64(T(p, 0), GetLE64(T(p, j)));
      PutLE64(T(p, j), a);
    });
    Structural(d, 0, "bytes after the table", [&](uint8_t* p) { p[d.bs - 1] = 1; });
  }
  SECTION("external pointer table") {
    Damaged d(Damaged::kFatExternal);
    const uint64_t b = d.table_block;
    Structural(d, b, "object", [](uint8_t* p) { p[16] ^= 1; });
    Structural(d, b, "block", [](uint8_t* p) { p[24] ^= 1; });
    Structural(d, b, "depth", [](uint8_t* p) { p[32]++; });
    Structural(d, b, "reserved", [](uint8_t* p) { p[33] = 1; });
    Structural(d, b, "count", [](uint8_t* p) { util::PutLE32(p + 36, util::GetLE32(p + 36) - 1); });
    Structural(d, b, "first index", [](uint8_t* p) { PutLE64(p + 40, 1); });
    Structural(d, b, "pointer to the table", [&](uint8_t* p) { PutLE64(p + kTableHeaderSize, b); });
    Structural(d, b, "wrong kind", [](uint8_t* p) { PutLE64(p, kFatMagic); });
  }
  SECTION("leaf") {
    Damaged d(Damaged::kFatEmbedded, dmu::ObjectType::kDirectory);
    const uint64_t b = d.leaf_block;
    auto S = [](uint8_t* p, int i) { return p + kLeafHeaderSize + 2 * i; };
    auto Entry = [&](uint8_t* p, int i) { return p + GetLE16(S(p, i)); };
    Structural(d, b, "object", [](uint8_t* p) { p[16] ^= 1; });
    Structural(d, b, "block", [](uint8_t* p) { p[24] ^= 1; });
    Structural(d, b, "depth past 26", [](uint8_t* p) { p[40] = 27; });
    Structural(d, b, "prefix wider than depth", [](uint8_t* p) { PutLE64(p + 32, 1ull << p[40]); });
    Structural(d, b, "depth one deeper", [](uint8_t* p) { p[40]++; });
    Structural(d, b, "depth one shallower", [](uint8_t* p) {
      p[40]--;
      PutLE64(p + 32, GetLE64(p + 32) >> 1);
    });
    Structural(d, b, "reserved", [](uint8_t* p) { p[41] = 1; });
    Structural(d, b, "reserved tail", [](uint8_t* p) { p[63] = 1; });
    Structural(d, b, "count past the heap", [](uint8_t* p) { PutLE16(p + 42, 2100); });
    Structural(d, b, "heap past the block", [&](uint8_t* p) { PutLE16(p + 44, d.bs + 2); });
    Structural(d, b, "slot outside the heap", [&](uint8_t* p) { PutLE16(S(p, 0), 70); });
    Structural(d, b, "slot at the block's end", [&](uint8_t* p) { PutLE16(S(p, 0), d.bs - 10); });
    Structural(d, b, "two slots on one entry",
               [&](uint8_t* p) { PutLE16(S(p, 1), GetLE16(S(p, 0))); });
    Structural(d, b, "slots out of order", [&](uint8_t* p) {
      uint16_t a = GetLE16(S(p, 0));
      PutLE16(S(p, 0), GetLE16(S(p, 1)));
      PutLE16(S(p, 1), a);
    });
    Structural(d, b, "key past 2^62", [&](uint8_t* p) { PutLE64(Entry(p, 0), kKeyLimit + 5); });
    Structural(d, b, "hash outside the prefix", [&](uint8_t* p) {
      uint8_t* e = Entry(p, 0);
      PutLE64(e, GetLE64(e) ^ (uint64_t{1} << 61));
    });
    Structural(d, b, "empty name", [&](uint8_t* p) { Entry(p, 0)[24] = 0; });
    Structural(d, b, "slash in a directory", [&](uint8_t* p) { Entry(p, 0)[25] = '/'; });
    Structural(d, b, "NUL in a directory", [&](uint8_t* p) { Entry(p, 0)[25] = 0; });
    Structural(d, b, "name past the block", [&](uint8_t* p) {
      // The entry nearest the end of the block claims a longer name.
      int last = 0;
      for (int i = 1; i < GetLE16(p + 42); i++)
        if (GetLE16(S(p, i)) > GetLE16(S(p, last))) last = i;
      Entry(p, last)[24] = 255;
    });
    Structural(d, b, "another kind's magic", [](uint8_t* p) { PutLE64(p, kTableMagic); });
  }
}

TEST_CASE("Zap changes that meet a damaged leaf fail and change nothing", "[zap]") {
  Damaged d(Damaged::kFatEmbedded);
  auto z = d.f.OpenZap(d.id);
  const std::vector<std::string> in_leaf = d.LeafNames(d.leaf_block);
  REQUIRE_FALSE(in_leaf.empty());
  const std::string good = d.Block(d.leaf_block);
  std::string bad = good;
  bad[offsetof(LeafHeaderPhys, reserved0)] = 1;
  d.Put(d.leaf_block, bad);
  const uint64_t count = z->Count();
  {
    auto tx = d.f.NewTx();
    REQUIRE(z->Lookup(in_leaf[0]).status().IsCorruption());
    REQUIRE(z->Add(*tx, in_leaf[0], {}).IsCorruption());
    REQUIRE(z->Remove(*tx, in_leaf[0]).IsCorruption());
    REQUIRE(z->Update(*tx, in_leaf[0], {}).IsCorruption());
  }
  REQUIRE(z->Count() == count);
  REQUIRE(d.Block(d.leaf_block) == bad);
  d.Put(d.leaf_block, good);
  REQUIRE(z->Lookup(in_leaf[0]).ok());
}

TEST_CASE("Zap reports blocks damaged on the device as Corruption naming the zap block", "[zap]") {
  Damaged d(Damaged::kFatExternal);
  d.f.Reopen();
  REQUIRE(d.Exercise().ok());
  // Zap blocks begin with their magic; compressed or not, it is stored as is
  // near the block's start. Damage every copy on the device (old copies too).
  const auto bytes = d.f.dev.Contents();
  const uint64_t magic = kLeafMagic;
  int hits = 0;
  for (size_t off = 0; off + 16 <= bytes.size(); off += 1) {
    if (bytes[off] != uint8_t(magic) || GetLE64(bytes.data() + off) != magic) continue;
    uint8_t b = bytes[off + 9] ^ 0xff;
    REQUIRE(d.f.dev.Write(off + 9, &b, 1).ok());
    hits++;
  }
  REQUIRE(hits > 0);
  d.f.Reopen();  // nothing cached: every read goes to the device
  Status s = d.Exercise();
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  REQUIRE(s.message().find("zap object " + std::to_string(d.id.value()) + " block ") !=
          std::string::npos);
}

}  // namespace
}  // namespace poolfs::core::zap
