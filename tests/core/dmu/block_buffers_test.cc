// Tests for BlockBuffers: a written block's memory serves the next dirty
// block of its size, within the bound, blocks may outlive their source, and
// a ReleaseBatch gives back what drops in its scope with one lock; and the
// sync's tasks release the dirty copies they wrote that way.
#include "dmu/block_buffers.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/dmu/objset_fixture.h"

namespace poolfs::core::dmu {
namespace {

constexpr uint32_t k128K = 128 * 1024;

TEST_CASE("A released block's memory is handed to the next block of its size", "[block_buffers]") {
  BlockBuffers buffers(uint64_t{1} << 20);
  const char* first = nullptr;
  {
    auto a = buffers.New(k128K);
    CHECK(a->empty());
    CHECK(a->capacity() >= k128K);
    a->assign(k128K, 'x');
    first = a->data();
  }
  CHECK(buffers.stats().kept_bytes == k128K);
  auto b = buffers.New(k128K);
  CHECK(b->empty());  // nothing of the old block shows
  CHECK(b->data() == first);
  CHECK(buffers.stats().reused == 1);
  CHECK(buffers.stats().allocated == 1);
  CHECK(buffers.stats().kept_bytes == 0);
  // Another size does not take it.
  b.reset();
  auto c = buffers.New(64 * 1024);
  CHECK(c->data() != first);
  CHECK(buffers.stats().allocated == 2);
}

TEST_CASE("BlockBuffers keeps at most its bound and never small buffers", "[block_buffers]") {
  BlockBuffers buffers(3 * k128K);
  {
    std::vector<std::shared_ptr<std::string>> blocks;
    for (int i = 0; i < 5; i++) blocks.push_back(buffers.New(k128K));
    for (int i = 0; i < 5; i++) blocks.push_back(buffers.New(4096));
  }
  CHECK(buffers.stats().kept_bytes == 3 * k128K);
  CHECK(buffers.stats().allocated == 5);  // the small ones are not counted
  for (int i = 0; i < 3; i++) CHECK(buffers.New(k128K) != nullptr);
  CHECK(buffers.stats().reused == 3);
}

TEST_CASE("BlockBuffers::Trim keeps only what the writes since the last Trim asked for",
          "[block_buffers]") {
  BlockBuffers buffers(uint64_t{64} << 20);
  {
    std::vector<std::shared_ptr<std::string>> blocks;
    for (int i = 0; i < 8; i++) blocks.push_back(buffers.New(k128K));
  }
  CHECK(buffers.stats().kept_bytes == 8 * k128K);
  // A txg that asked for all eight keeps them.
  CHECK(buffers.Trim() == 0);
  CHECK(buffers.stats().kept_bytes == 8 * k128K);
  // One that asked for three (and gave them back) keeps three.
  for (int i = 0; i < 3; i++) buffers.New(k128K);
  CHECK(buffers.Trim() == 5 * k128K);
  CHECK(buffers.stats().kept_bytes == 3 * k128K);
  // Writes stopped: everything goes.
  CHECK(buffers.Trim() == 3 * k128K);
  CHECK(buffers.stats().kept_bytes == 0);
  CHECK(buffers.stats().trimmed_bytes == 8 * k128K);
}

TEST_CASE("A block may outlive the BlockBuffers that made it", "[block_buffers]") {
  std::shared_ptr<std::string> survivor;
  {
    BlockBuffers buffers(uint64_t{1} << 20);
    survivor = buffers.New(k128K);
    survivor->assign(k128K, 'y');
    auto kept = buffers.New(k128K);  // released into the lists, freed with them
  }
  CHECK(survivor->size() == k128K);
  survivor.reset();  // returns to lists that only the block still holds
}

TEST_CASE("BlockBuffers from many threads: every buffer is either kept or freed once",
          "[block_buffers]") {
  BlockBuffers buffers(8 * k128K);
  std::vector<std::thread> threads;
  std::atomic<int> shared{0};  // Catch2's assertions are for the main thread only
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; i++) {
        auto a = buffers.New(k128K);
        auto b = buffers.New(k128K);
        a->assign(100, 'a');
        b->assign(100, 'b');
        if (a->data() == b->data()) shared++;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(shared.load() == 0);
  BlockBuffers::Stats s = buffers.stats();
  CHECK(s.reused + s.allocated == 4 * 2000 * 2);
  CHECK(s.kept_bytes <= 8 * k128K);
  CHECK(s.reused > 0);
}

TEST_CASE("A ReleaseBatch gives back what drops in its scope together, then reuses it",
          "[block_buffers]") {
  BlockBuffers buffers(uint64_t{16} << 20);
  std::vector<std::shared_ptr<std::string>> blocks;
  for (int i = 0; i < 32; i++) blocks.push_back(buffers.New(k128K));
  auto small = buffers.New(4096);  // below kMinKept: malloc's, never gathered
  auto survivor = blocks[5];       // a reader still holds one
  {
    BlockBuffers::ReleaseBatch batch(&buffers);
    blocks.clear();
    small.reset();
    // Nothing is back until the scope ends.
    CHECK(buffers.stats().kept_bytes == 0);
    CHECK(buffers.stats().batches == 0);
  }
  BlockBuffers::Stats s = buffers.stats();
  CHECK(s.batches == 1);
  CHECK(s.given_batched == 31);
  CHECK(s.given_alone == 0);
  CHECK(s.kept_bytes == 31 * uint64_t{k128K});
  survivor.reset();  // outside any batch: alone
  s = buffers.stats();
  CHECK(s.given_alone == 1);
  CHECK(s.kept_bytes == 32 * uint64_t{k128K});
  for (int i = 0; i < 32; i++) blocks.push_back(buffers.New(k128K));
  CHECK(buffers.stats().reused == 32);
}

TEST_CASE("A ReleaseBatch past the bound keeps what fits and frees the rest", "[block_buffers]") {
  BlockBuffers buffers(4 * k128K);
  {
    BlockBuffers::ReleaseBatch batch(&buffers);
    std::vector<std::shared_ptr<std::string>> blocks;
    for (int i = 0; i < 10; i++) blocks.push_back(buffers.New(k128K));
  }
  CHECK(buffers.stats().kept_bytes == 4 * k128K);
  CHECK(buffers.stats().given_batched == 10);
}

TEST_CASE("ReleaseBatch scopes nest, gather only their own buffers, and only on their thread",
          "[block_buffers]") {
  BlockBuffers a(uint64_t{8} << 20), b(uint64_t{8} << 20);
  auto from_a = a.New(k128K);
  auto from_b = b.New(k128K);
  auto other_thread = a.New(k128K);
  {
    BlockBuffers::ReleaseBatch outer(&a);
    {
      BlockBuffers::ReleaseBatch inner(&b);
      from_b.reset();  // b's: into the inner batch
      from_a.reset();  // a's, but the innermost batch is b's: alone
      std::thread([&] { other_thread.reset(); }).join();  // another thread: alone
    }
    CHECK(b.stats().batches == 1);
    CHECK(b.stats().given_batched == 1);
    CHECK(a.stats().given_alone == 2);
    BlockBuffers::ReleaseBatch none(nullptr);  // gathers nothing
    auto late = a.New(k128K);
    late.reset();
    CHECK(a.stats().given_alone == 3);
  }
  CHECK(a.stats().batches == 0);  // the outer batch had nothing to give
}

TEST_CASE("A sync gives the dirty copies it wrote back in batches, not one by one",
          "[block_buffers]") {
  testing::Fixture f;
  BlockBuffers buffers(uint64_t{64} << 20);
  f.os->UseBlockBuffers(&buffers);
  // One large file (written by both strands, then SyncEnd by the last) and
  // several small ones (each written whole by one strand).
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  ObjectId big = f.os->Create(tx, ObjectType::kPlain).value();
  REQUIRE(f.os->Write(tx, big, 0, testing::Pattern(1, 100 * k128K)).ok());
  for (int i = 0; i < 8; i++) {
    ObjectId id = f.os->Create(tx, ObjectType::kPlain).value();
    REQUIRE(f.os->Write(tx, id, 0, testing::Pattern(10 + i, 4 * k128K)).ok());
  }
  tx.Commit();
  f.Sync();
  BlockBuffers::Stats s = buffers.stats();
  CHECK(s.allocated >= 132);
  CHECK(s.given_batched >= 132);
  CHECK(s.given_alone == 0);
  CHECK(s.batches >= 2);            // a batch per task, not per buffer
  CHECK(s.batches < s.given_batched / 8);
  CHECK(s.kept_bytes >= 132 * uint64_t{k128K});
}

}  // namespace
}  // namespace poolfs::core::dmu
