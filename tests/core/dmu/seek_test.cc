// Dnode::Seek (SEEK_DATA and SEEK_HOLE) against a model of which blocks
// hold data, over writes, whole-block punches and truncates that are
// synced, left in open txgs or reopened from disk.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "objset_fixture.h"

namespace poolfs::core::dmu::testing {
namespace {

constexpr uint32_t kSeekBlock = 4096;

// The model's answer: the first byte at or after `off` (before `end`) in a
// block whose state is `want_data`, else `end`.
uint64_t ModelSeek(const std::vector<bool>& data, uint64_t off, uint64_t end, bool hole) {
  for (uint64_t b = off / kSeekBlock; b * kSeekBlock < end; b++) {
    const bool is_data = b < data.size() && data[b];
    if (is_data != hole) return std::min(end, std::max(off, b * kSeekBlock));
  }
  return end;
}

TEST_CASE("Seek finds data and holes in synced and unsynced blocks", "[dmu][seek]") {
  Fixture f;
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  const ObjectId id = f.os->Create(tx, ObjectType::kPlain, kSeekBlock).value();
  // Data in blocks 2 and 1000; the end at block 1003.
  REQUIRE(f.os->Write(tx, id, 2 * kSeekBlock + 10, "x").ok());
  REQUIRE(f.os->Write(tx, id, 1000 * kSeekBlock, std::string(3 * kSeekBlock, 'y')).ok());
  tx.Commit();
  const uint64_t end = 1003 * kSeekBlock;
  auto check = [&](const char* when) {
    INFO(when);
    CHECK(f.os->Seek(id, 0, end, false).value() == 2 * kSeekBlock);
    CHECK(f.os->Seek(id, 2 * kSeekBlock + 5, end, false).value() == 2 * kSeekBlock + 5);
    CHECK(f.os->Seek(id, 3 * kSeekBlock, end, false).value() == 1000 * kSeekBlock);
    CHECK(f.os->Seek(id, 0, end, true).value() == 0);
    CHECK(f.os->Seek(id, 2 * kSeekBlock, end, true).value() == 3 * kSeekBlock);
    CHECK(f.os->Seek(id, 1000 * kSeekBlock, end, true).value() == end);  // the end is a hole
    CHECK(f.os->Seek(id, end, end, false).value() == end);
  };
  check("unsynced");
  f.Sync();
  check("synced");
  f.Reopen();
  check("reopened");
  // A punch of a whole synced block, not yet synced: a hole at once; a
  // write into a synced hole: data at once.
  Tx tx2(&f.txgs);
  REQUIRE(tx2.Assign().ok());
  REQUIRE(f.os->Punch(tx2, id, 1001 * kSeekBlock, kSeekBlock).ok());
  REQUIRE(f.os->Write(tx2, id, 500 * kSeekBlock, "z").ok());
  tx2.Commit();
  CHECK(f.os->Seek(id, 1000 * kSeekBlock, end, true).value() == 1001 * kSeekBlock);
  CHECK(f.os->Seek(id, 1001 * kSeekBlock, end, false).value() == 1002 * kSeekBlock);
  CHECK(f.os->Seek(id, 3 * kSeekBlock, end, false).value() == 500 * kSeekBlock);
}

TEST_CASE("Seek agrees with a model over random changes, syncs and reopens",
          "[dmu][seek][single-threaded]") {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    Fixture f;
    std::mt19937_64 rng(seed);
    Tx tx0(&f.txgs);
    REQUIRE(tx0.Assign().ok());
    const ObjectId id = f.os->Create(tx0, ObjectType::kPlain, kSeekBlock).value();
    tx0.Commit();
    std::vector<bool> data;  // by block
    uint64_t length = 0;
    const uint64_t reach = 3000;  // blocks
    for (int round = 0; round < 40; round++) {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      for (int op = 0; op < 6; op++) {
        const uint64_t b = rng() % reach, n = 1 + rng() % 20;
        const int what = int(rng() % 8);
        if (what < 4) {  // a write of n blocks at an offset inside block b
          const uint64_t off = b * kSeekBlock + rng() % kSeekBlock;
          const uint64_t len = n * kSeekBlock - (off % kSeekBlock);
          REQUIRE(f.os->Write(tx, id, off, std::string(len, 'd')).ok());
          if (data.size() < b + n) data.resize(b + n, false);
          for (uint64_t i = b; i < b + n; i++) data[i] = true;
          length = std::max(length, off + len);
        } else if (what < 7) {  // a punch of whole blocks
          REQUIRE(f.os->Punch(tx, id, b * kSeekBlock, n * kSeekBlock).ok());
          for (uint64_t i = b; i < b + n && i < data.size(); i++) data[i] = false;
        } else {  // a truncate to a block boundary
          const uint64_t blocks = rng() % reach;
          REQUIRE(f.os->Truncate(tx, id, blocks * kSeekBlock).ok());
          if (data.size() > blocks) data.resize(blocks);
          length = blocks * kSeekBlock;
        }
      }
      tx.Commit();
      if (round % 3 == 1) f.Sync();
      if (round % 7 == 6) {
        f.Sync();
        f.Reopen();
      }
      for (int probe = 0; probe < 30; probe++) {
        const uint64_t off = rng() % (length + 1);
        for (bool hole : {false, true}) {
          INFO("seed " << seed << " round " << round << " off " << off << " hole " << hole
                       << " length " << length);
          auto got = f.os->Seek(id, off, length, hole);
          REQUIRE(got.ok());
          REQUIRE(*got == ModelSeek(data, off, length, hole));
        }
      }
    }
  }
}

}  // namespace
}  // namespace poolfs::core::dmu::testing
