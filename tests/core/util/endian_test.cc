// Tests for the little-endian codec (core/util/endian.h): exact byte layout,
// whatever the host order, and round trips at the edges of each width.

#include "util/endian.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace poolfs::util {
namespace {

TEST_CASE("PutLE16/32/64 write the least significant byte first", "[endian]") {
  std::array<uint8_t, 8> b{};
  PutLE16(b.data(), 0x1234);
  CHECK(b[0] == 0x34);
  CHECK(b[1] == 0x12);

  b.fill(0xEE);
  PutLE32(b.data(), 0x12345678u);
  CHECK(b == std::array<uint8_t, 8>{0x78, 0x56, 0x34, 0x12, 0xEE, 0xEE, 0xEE, 0xEE});

  PutLE64(b.data(), 0x0102030405060708ull);
  CHECK(b == std::array<uint8_t, 8>{0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01});
}

TEST_CASE("Put writes exactly its width and no more", "[endian]") {
  std::array<uint8_t, 10> b;
  b.fill(0xEE);
  PutLE16(b.data() + 1, 0);
  CHECK(b[0] == 0xEE);
  CHECK(b[3] == 0xEE);

  b.fill(0xEE);
  PutLE32(b.data() + 1, 0);
  CHECK(b[0] == 0xEE);
  CHECK(b[5] == 0xEE);

  b.fill(0xEE);
  PutLE64(b.data() + 1, 0);
  CHECK(b[0] == 0xEE);
  CHECK(b[9] == 0xEE);
  for (int i = 1; i <= 8; i++) CHECK(b[i] == 0);
}

TEST_CASE("GetLE16/32/64 read the least significant byte first", "[endian]") {
  const uint8_t b[8] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  CHECK(GetLE16(b) == 0x0708);
  CHECK(GetLE32(b) == 0x05060708u);
  CHECK(GetLE64(b) == 0x0102030405060708ull);
}

TEST_CASE("Get reads bytes with the high bit set without sign extension", "[endian]") {
  const uint8_t b[8] = {0xFF, 0x80, 0xFF, 0x80, 0xFF, 0x80, 0xFF, 0x80};
  CHECK(GetLE16(b) == 0x80FF);
  CHECK(GetLE32(b) == 0x80FF80FFu);
  CHECK(GetLE64(b) == 0x80FF80FF80FF80FFull);
}

TEST_CASE("LE values round-trip at the edges of each width", "[endian]") {
  uint8_t b[8];
  for (uint16_t v :
       {uint16_t{0}, uint16_t{1}, uint16_t{0x7FFF}, uint16_t{0x8000}, uint16_t{0xFFFF}}) {
    PutLE16(b, v);
    CHECK(GetLE16(b) == v);
  }
  for (uint32_t v : {0u, 1u, 0xFFu, 0x100u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
    PutLE32(b, v);
    CHECK(GetLE32(b) == v);
  }
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0xFFFFFFFF}, uint64_t{0x100000000},
                     uint64_t{0x7FFFFFFFFFFFFFFF}, uint64_t{0x8000000000000000}, ~uint64_t{0}}) {
    PutLE64(b, v);
    CHECK(GetLE64(b) == v);
  }
}

TEST_CASE("LE64 round-trips a walking bit through every position", "[endian]") {
  uint8_t b[8];
  for (int bit = 0; bit < 64; bit++) {
    uint64_t v = uint64_t{1} << bit;
    PutLE64(b, v);
    INFO("bit " << bit);
    CHECK(GetLE64(b) == v);
    CHECK(b[bit / 8] == uint8_t(1u << (bit % 8)));
  }
}

TEST_CASE("AppendLE32/64 append the same bytes Put writes", "[endian]") {
  std::string out = "x";
  AppendLE32(&out, 0xA1B2C3D4u);
  AppendLE64(&out, 0x1122334455667788ull);
  REQUIRE(out.size() == 1 + 4 + 8);
  CHECK(out[0] == 'x');
  const std::string expected("x\xD4\xC3\xB2\xA1\x88\x77\x66\x55\x44\x33\x22\x11", 13);
  CHECK(out == expected);

  const auto* p = reinterpret_cast<const uint8_t*>(out.data());
  CHECK(GetLE32(p + 1) == 0xA1B2C3D4u);
  CHECK(GetLE64(p + 5) == 0x1122334455667788ull);
}

TEST_CASE("Put and Get work at unaligned offsets", "[endian]") {
  uint8_t buf[32] = {};
  for (int off = 0; off < 8; off++) {
    PutLE64(buf + off, 0xDEADBEEFCAFEF00Dull);
    PutLE32(buf + off + 8, 0x0BADF00Du);
    PutLE16(buf + off + 12, 0xBEEF);
    INFO("offset " << off);
    CHECK(GetLE64(buf + off) == 0xDEADBEEFCAFEF00Dull);
    CHECK(GetLE32(buf + off + 8) == 0x0BADF00Du);
    CHECK(GetLE16(buf + off + 12) == 0xBEEF);
  }
}

}  // namespace
}  // namespace poolfs::util
