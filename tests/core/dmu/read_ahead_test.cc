// ReadAhead and the dnode's stream: blocks read before a sequential reader
// asks, none for a random one; blocks that changed, or whose space holds
// other bytes by the time they are read, never reach a reader; the bound;
// and shared reads (ReadPieces), which leave cached blocks where they lie.
#include "dmu/read_ahead.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <thread>

#include "core/dmu/objset_fixture.h"

namespace poolfs::core::dmu {
namespace {

using namespace testing;  // the fixture (objset_fixture.h)

constexpr uint64_t kBlock = 128 * 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// Waits (up to 10 s) until `done` holds.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 10000; i++) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// Reads the whole object in `chunk`-byte reads from `first` on, as the
// kernel would (kPartial); returns what it read.
std::string ReadAll(ObjectSet& os, ObjectId id, uint64_t size, uint64_t chunk, uint64_t first = 0) {
  std::string out(size - first, '\0');
  for (uint64_t off = first; off < size; off += chunk) {
    const uint64_t n = std::min(chunk, size - off);
    auto got =
        os.ReadInto(id, off, std::span<char>(out.data() + (off - first), n), ReadCaching::kPartial);
    REQUIRE(got.ok());
    REQUIRE(*got == n);
  }
  return out;
}

struct ReadAheadFixture {
  explicit ReadAheadFixture(uint64_t distance = 4 * kMiB)
      : cache({.max_bytes = 64 << 20, .evict_thread = false}),
        ra(&cache, {.distance_bytes = distance, .threads = 2}) {}
  // Reopens the set (nothing of its objects in memory) reading ahead.
  void Cold() {
    f.Reopen();
    f.os->UseCache(&cache, &ra);
  }
  Fixture f;
  arc::Arc cache;
  ReadAhead ra;
};

TEST_CASE("A sequential reader finds the blocks ahead of it read already", "[dmu][prefetch]") {
  ReadAheadFixture t;
  const std::string data = Pattern(1, 16 * kMiB + 1000);
  const ObjectId id = WriteSynced(t.f, data);
  t.Cold();
  REQUIRE(ReadAll(*t.f.os, id, data.size(), kMiB) == data);
  const ReadAheadStats st = t.ra.Stats();
  // The first read starts the stream; from the second on, everything up to
  // the end is asked for ahead (the last, short block too).
  CHECK(st.requested >= data.size() / kBlock - 2 * kMiB / kBlock);
  CHECK(st.hits + st.waits >= st.requested - st.reclaimed);
  CHECK(st.failed == 0);
  CHECK(st.refused == 0);
  CHECK(st.bytes == 0);  // every block asked for was taken
  CHECK(t.f.zio.checksum_errors(0) == 0);
  // Taken blocks were read once, outside the cache.
  CHECK(t.cache.Stats().cached_bytes < 4 * kMiB);
}

TEST_CASE("Reads in a small window out of order still make a stream", "[dmu][prefetch]") {
  ReadAheadFixture t;
  const std::string data = Pattern(2, 8 * kMiB);
  const ObjectId id = WriteSynced(t.f, data);
  t.Cold();
  std::string out(data.size(), '\0');
  // Pairs of reads swapped (the kernel's READs of one file may arrive so).
  for (uint64_t off = 0; off < data.size(); off += 2 * kMiB) {
    for (uint64_t o : {off + kMiB, off}) {
      auto got =
          t.f.os->ReadInto(id, o, std::span<char>(out.data() + o, kMiB), ReadCaching::kPartial);
      REQUIRE(got.ok());
    }
  }
  REQUIRE(out == data);
  CHECK(t.ra.Stats().requested > 0);
}

TEST_CASE("A random reader gets no read ahead", "[dmu][prefetch]") {
  ReadAheadFixture t;
  const std::string data = Pattern(3, 32 * kMiB);
  const ObjectId id = WriteSynced(t.f, data);
  t.Cold();
  std::mt19937_64 rng(3);
  std::string buf(64 * 1024, '\0');
  for (int i = 0; i < 200; i++) {
    // Far apart: never within one read of the last.
    const uint64_t off = (rng() % (data.size() / kBlock)) * kBlock;
    auto got = t.f.os->ReadInto(id, off, std::span<char>(buf), ReadCaching::kPartial);
    REQUIRE(got.ok());
    REQUIRE(buf == data.substr(off, buf.size()));
  }
  // A jump that lands within one read of the last looks sequential once in
  // a while; nothing more.
  CHECK(t.ra.Stats().requested <= 4 * kMiB / kBlock * 4);
}

TEST_CASE("Blocks read ahead and then rewritten never reach a reader", "[dmu][prefetch]") {
  ReadAheadFixture t;
  std::string data = Pattern(4, 8 * kMiB);
  const ObjectId id = WriteSynced(t.f, data);
  t.Cold();
  // Two reads start the stream and ask for what follows.
  REQUIRE(ReadAll(*t.f.os, id, 2 * kMiB, kMiB) == data.substr(0, 2 * kMiB));
  REQUIRE(Eventually([&] {
    const ReadAheadStats st = t.ra.Stats();
    return st.requested > 0 && st.read == st.requested;
  }));
  REQUIRE(t.ra.Stats().bytes > 0);
  // The rest of the file changes, dirty first, then synced (new blocks).
  const std::string fresh = Pattern(5, 6 * kMiB);
  Tx tx(&t.f.txgs);
  REQUIRE(tx.Assign().ok());
  REQUIRE(t.f.os->Write(tx, id, 2 * kMiB, fresh).ok());
  tx.Commit();
  data.replace(2 * kMiB, fresh.size(), fresh);
  CHECK(ReadAll(*t.f.os, id, data.size(), kMiB, 2 * kMiB) == data.substr(2 * kMiB));
  t.f.Sync();
  t.Cold();
  CHECK(ReadAll(*t.f.os, id, data.size(), kMiB) == data);
  CHECK(t.f.zio.checksum_errors(0) == 0);
}

TEST_CASE("A block whose space holds other bytes when read ahead is dropped uncounted",
          "[dmu][prefetch]") {
  ReadAheadFixture t;
  const std::string data = Pattern(6, 4 * kMiB);
  const ObjectId id = WriteSynced(t.f, data);
  // Block 20's space now holds other bytes (as after a free and a reuse).
  const zio::BlockPtr bp = t.f.os->BlockPointer(id, 20).value();
  const std::string other = Pattern(7, bp.dva.size);
  REQUIRE(t.f.dev.Write(bp.dva.offset, other.data(), other.size()).ok());
  t.ra.Request(&t.f.zio, {&bp, 1});
  REQUIRE(Eventually([&] { return t.ra.Stats().failed == 1; }));
  CHECK(t.ra.Stats().bytes == 0);
  CHECK(t.f.zio.checksum_errors(0) == 0);
  arc::ArcData none = t.ra.Take(bp);
  CHECK(none.data() == nullptr);
  // The reader's own read of it finds the damage, and counts it.
  t.Cold();
  std::string buf(kBlock, '\0');
  auto got = t.f.os->ReadInto(id, 20 * kBlock, std::span<char>(buf), ReadCaching::kPartial);
  CHECK(got.status().code() == StatusCode::kCorruption);
  CHECK(t.f.zio.checksum_errors(0) == 1);
}

TEST_CASE("Take hands a block only to a pointer with the same name and checksum",
          "[dmu][prefetch]") {
  ReadAheadFixture t;
  const std::string data = Pattern(8, 2 * kMiB);
  const ObjectId id = WriteSynced(t.f, data);
  const zio::BlockPtr bp = t.f.os->BlockPointer(id, 3).value();
  t.ra.Request(&t.f.zio, {&bp, 1});
  REQUIRE(Eventually([&] { return t.ra.Stats().read == 1; }));
  zio::BlockPtr other = bp;
  other.checksum.lo ^= 1;
  CHECK(t.ra.Take(other).data() == nullptr);  // and the stale entry is gone
  CHECK(t.ra.Stats().bytes == 0);
  t.ra.Request(&t.f.zio, {&bp, 1});
  REQUIRE(Eventually([&] { return t.ra.Stats().read == 2; }));
  arc::ArcData got = t.ra.Take(bp);
  REQUIRE(got.data() != nullptr);
  CHECK(std::string(reinterpret_cast<const char*>(got.data()), got.size()) ==
        data.substr(3 * kBlock, kBlock));
  CHECK(t.ra.Take(bp).data() == nullptr);  // taken once
}

TEST_CASE("Read ahead stays within its room, dropping the oldest blocks nobody took",
          "[dmu][prefetch]") {
  // 512 KiB of distance: room for 2 MiB, 16 blocks.
  ReadAheadFixture t(512 * 1024);
  const std::string data = Pattern(9, 8 * kMiB);
  const ObjectId id = WriteSynced(t.f, data);
  std::vector<zio::BlockPtr> bps;
  for (uint64_t b = 0; b < 24; b++) bps.push_back(t.f.os->BlockPointer(id, b).value());
  t.ra.Request(&t.f.zio, std::span(bps).first(16));
  CHECK(t.ra.Stats().bytes == 16 * kBlock);
  // Once all are read, one is taken and 8 more asked for: the 7 oldest go.
  REQUIRE(Eventually([&] { return t.ra.Stats().read == 16; }));
  REQUIRE(t.ra.Take(bps[15]).data() != nullptr);
  t.ra.Request(&t.f.zio, std::span(bps).subspan(16));
  CHECK(t.ra.Stats().requested == 24);
  CHECK(t.ra.Stats().dropped == 7);
  CHECK(t.ra.Stats().refused == 0);
  CHECK(t.ra.Stats().bytes == 16 * kBlock);
  CHECK(t.ra.Take(bps[0]).data() == nullptr);
  REQUIRE(Eventually([&] { return t.ra.Stats().read == 24; }));
  REQUIRE(t.ra.Take(bps[20]).data() != nullptr);
  // Stop drops the rest; then nothing is asked for or taken.
  t.ra.Stop();
  CHECK(t.ra.Stats().bytes == 0);
  t.ra.Request(&t.f.zio, std::span(bps).first(1));
  CHECK(t.ra.Stats().requested == 24);
  CHECK(t.ra.Take(bps[21]).data() == nullptr);
}

TEST_CASE("A shared read leaves cached blocks where they lie and copies the rest",
          "[dmu][prefetch]") {
  ReadAheadFixture t;
  // Block 0 on disk, 1 cached (read with kAll), 2 dirty, 3 a hole, 4 short.
  std::string data = Pattern(10, 4 * kBlock + 1000);
  std::fill(data.begin() + 3 * kBlock, data.begin() + 4 * kBlock, '\0');
  const ObjectId id = WriteSynced(t.f, data);
  t.Cold();
  REQUIRE(t.f.os->Read(id, kBlock, kBlock).value() == data.substr(kBlock, kBlock));
  Tx tx(&t.f.txgs);
  REQUIRE(tx.Assign().ok());
  const std::string dirty = Pattern(11, kBlock);
  REQUIRE(t.f.os->Write(tx, id, 2 * kBlock, dirty).ok());
  tx.Commit();
  data.replace(2 * kBlock, kBlock, dirty);

  for (ReadCaching caching : {ReadCaching::kPartial, ReadCaching::kAll}) {
    for (uint64_t off : {uint64_t{0}, uint64_t{100}, kBlock + 7}) {
      INFO("off " << off << " caching " << int(caching));
      std::string dst(data.size(), 'S');
      ReadPieces shared;
      auto n = t.f.os->ReadInto(id, off, std::span<char>(dst), caching, &shared);
      REQUIRE(n.ok());
      REQUIRE(*n == data.size() - off);
      std::string joined;
      bool outside = false;
      for (std::span<const char> p : shared.pieces) {
        joined.append(p.data(), p.size());
        outside |= p.data() < dst.data() || p.data() >= dst.data() + dst.size();
      }
      CHECK(joined == data.substr(off));
      // Block 1 (cached) is a piece of the cache's memory, held.
      CHECK(outside);
      CHECK(!shared.holds.empty());
    }
  }
}

}  // namespace
}  // namespace poolfs::core::dmu
