// Tests for BlockBuffers: a written block's memory serves the next dirty
// block of its size, within the bound, and blocks may outlive their source.
#include "dmu/block_buffers.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

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
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; i++) {
        auto a = buffers.New(k128K);
        auto b = buffers.New(k128K);
        a->assign(100, 'a');
        b->assign(100, 'b');
        CHECK(a->data() != b->data());
      }
    });
  for (auto& th : threads) th.join();
  BlockBuffers::Stats s = buffers.stats();
  CHECK(s.reused + s.allocated == 4 * 2000 * 2);
  CHECK(s.kept_bytes <= 8 * k128K);
  CHECK(s.reused > 0);
}

}  // namespace
}  // namespace poolfs::core::dmu
