// Tests for OverlayDevice: reads see the base and then the overlay's own
// writes; the base is never written.

#include "vdev/overlay_device.h"

#include <catch2/catch.hpp>
#include <random>

#include "vdev/memory_device.h"
#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::Pattern;
using testing::ReadBytes;

TEST_CASE("OverlayDevice reads the base, then its own writes, and leaves the base alone",
          "[overlay_device]") {
  MemoryDevice base(kMiB + 1000, "base");  // ends inside a page
  const std::vector<uint8_t> old = Pattern(size_t(base.size()), 7);
  REQUIRE(base.Write(0, old.data(), old.size()).ok());
  OverlayDevice over(&base);
  CHECK(over.size() == base.size());
  CHECK(over.name() == "base (overlay)");
  CHECK(ReadBytes(over, 0, old.size()) == old);

  // Random writes, some across page edges and into the last partial page,
  // mirrored into a model of what the overlay should read.
  std::vector<uint8_t> model = old;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; i++) {
    const uint64_t len = 1 + rng() % 9000;
    const uint64_t off = rng() % (base.size() - len);
    const std::vector<uint8_t> data = Pattern(len, rng());
    REQUIRE(over.Write(off, data.data(), data.size()).ok());
    std::copy(data.begin(), data.end(), model.begin() + ptrdiff_t(off));
  }
  const std::vector<uint8_t> tail = Pattern(500, 9);
  REQUIRE(over.Write(base.size() - 500, tail.data(), tail.size()).ok());
  std::copy(tail.begin(), tail.end(), model.end() - 500);
  REQUIRE(over.Flush().ok());
  CHECK(ReadBytes(over, 0, model.size()) == model);
  for (int i = 0; i < 100; i++) {
    const uint64_t len = 1 + rng() % 20000;
    const uint64_t off = rng() % (base.size() - len);
    CHECK(ReadBytes(over, off, len) == std::vector<uint8_t>(model.begin() + ptrdiff_t(off),
                                                            model.begin() + ptrdiff_t(off + len)));
  }
  CHECK(ReadBytes(base, 0, old.size()) == old);
  CHECK(base.flushes() == 0);
  CHECK(over.bytes_held() > 0);
  CHECK(over.bytes_held() <= base.size() + 4096);
}

TEST_CASE("OverlayDevice refuses I/O outside the device", "[overlay_device]") {
  MemoryDevice base(64 * 1024, "base");
  OverlayDevice over(&base);
  uint8_t b[16] = {};
  CHECK(over.Read(64 * 1024 - 8, b, 16).code() == StatusCode::kInvalidArgument);
  CHECK(over.Write(64 * 1024, b, 1).code() == StatusCode::kInvalidArgument);
  CHECK(over.bytes_held() == 0);
}

}  // namespace
}  // namespace poolfs::core::vdev
