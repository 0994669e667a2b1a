// Tests for MemoryDevice: I/O, bounds, clones, concurrency.

#include "vdev/memory_device.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::Contains;
using testing::Pattern;
using testing::ReadBytes;

TEST_CASE("MemoryDevice reads back what it wrote and starts zeroed", "[memory_device]") {
  MemoryDevice dev(1 * kMiB, "mem0");
  CHECK(dev.size() == kMiB);
  CHECK(dev.name() == "mem0");
  CHECK(ReadBytes(dev, 1000, 100) == std::vector<uint8_t>(100, 0));
  std::vector<uint8_t> a = Pattern(5000, 1);
  REQUIRE(dev.Write(3, a.data(), a.size()).ok());
  CHECK(ReadBytes(dev, 3, a.size()) == a);
  REQUIRE(dev.Flush().ok());
  CHECK(dev.flushes() == 1);
}

TEST_CASE("MemoryDevice refuses I/O outside the device", "[memory_device]") {
  MemoryDevice dev(4096, "mem0");
  uint8_t buf[8];
  Status st = dev.Read(4090, buf, 8);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(st.message(), "read of 8 bytes at offset 4090 is outside mem0 (size 4096)"));
  CHECK(dev.Write(~uint64_t(0), buf, 8).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("MemoryDevice clones are independent copies", "[memory_device]") {
  MemoryDevice dev(64 * 1024);
  std::vector<uint8_t> a = Pattern(100, 1), b = Pattern(100, 2);
  REQUIRE(dev.Write(0, a.data(), a.size()).ok());
  std::unique_ptr<MemoryDevice> copy = dev.Clone();
  REQUIRE(dev.Write(0, b.data(), b.size()).ok());
  CHECK(ReadBytes(*copy, 0, 100) == a);
  CHECK(ReadBytes(dev, 0, 100) == b);
  CHECK(copy->Contents().size() == dev.size());
}

TEST_CASE("MemoryDevice serves concurrent writers of disjoint ranges", "[memory_device]") {
  MemoryDevice dev(4 * kMiB);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};  // Catch2 assertions are not thread-safe
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&dev, &failures, t] {
      for (int i = 0; i < 128; i++) {
        uint64_t off = (uint64_t(i) * 4 + t) * 4096;
        std::vector<uint8_t> d = Pattern(4096, off);
        if (!dev.Write(off, d.data(), d.size()).ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  for (uint64_t off = 0; off < 512 * 4096; off += 4096) {
    REQUIRE(ReadBytes(dev, off, 4096) == Pattern(4096, off));
  }
}

}  // namespace
}  // namespace poolfs::core::vdev
