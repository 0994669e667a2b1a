// Tests for the block checksums (core/util/checksum.h). The known answers pin
// the on-disk checksum: if libxxhash or our wrapper ever changed what it
// computes, every existing pool would read as corrupt, so these must never be
// "updated" to make a test pass. The empty-input values are the published
// XXH3 reference values (seed 0); the others were computed once with
// libxxhash 0.8.1 and pinned.

#include "util/checksum.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace poolfs::util {
namespace {

// A 4 KiB block whose bytes are (i * 31 + 7) mod 256.
std::vector<uint8_t> PatternBlock() {
  std::vector<uint8_t> b(4096);
  for (size_t i = 0; i < b.size(); i++) b[i] = uint8_t(i * 31 + 7);
  return b;
}

TEST_CASE("Xxh3_128 matches pinned known answers", "[checksum]") {
  CHECK(Xxh3_128("", 0) == Checksum128{0x6001c324468d497full, 0x99aa06d3014798d8ull});
  CHECK(Xxh3_128("abc", 3) == Checksum128{0x78af5f94892f3950ull, 0x06b05ab6733a6185ull});
  CHECK(Xxh3_128("poolfs", 6) == Checksum128{0xa8aa324fa09be037ull, 0x7f921189e57608a4ull});
  std::vector<uint8_t> block = PatternBlock();
  CHECK(Xxh3_128(block.data(), block.size()) ==
        Checksum128{0xa3c19f8174cde0bbull, 0x49d3842b33d51e8aull});
}

TEST_CASE("Xxh3_64 matches pinned known answers", "[checksum]") {
  CHECK(Xxh3_64("", 0) == 0x2d06800538d394c2ull);
  CHECK(Xxh3_64("a", 1) == 0xe6c632b61e964e1full);
  CHECK(Xxh3_64("abc", 3) == 0x78af5f94892f3950ull);
  CHECK(Xxh3_64("poolfs", 6) == 0xbb56493ef8d1eb72ull);
  std::vector<uint8_t> block = PatternBlock();
  CHECK(Xxh3_64(block.data(), block.size()) == 0xa3c19f8174cde0bbull);
}

TEST_CASE("Checksums are deterministic across calls and buffer copies", "[checksum]") {
  std::vector<uint8_t> a = PatternBlock();
  std::vector<uint8_t> b = a;  // same bytes at a different address
  CHECK(Xxh3_128(a.data(), a.size()) == Xxh3_128(a.data(), a.size()));
  CHECK(Xxh3_128(a.data(), a.size()) == Xxh3_128(b.data(), b.size()));
  CHECK(Xxh3_64(a.data(), a.size()) == Xxh3_64(b.data(), b.size()));
}

TEST_CASE("Flipping any single bit of a block changes its checksum", "[checksum]") {
  std::vector<uint8_t> block = PatternBlock();
  const Checksum128 base128 = Xxh3_128(block.data(), block.size());
  const uint64_t base64 = Xxh3_64(block.data(), block.size());
  // Every bit of the first and last 64 bytes, and one bit in every 61st byte
  // in between: enough to reach each of XXH3's input stripes.
  std::vector<std::pair<size_t, int>> flips;
  for (size_t i = 0; i < 64; i++) {
    for (int bit = 0; bit < 8; bit++) {
      flips.emplace_back(i, bit);
      flips.emplace_back(block.size() - 1 - i, bit);
    }
  }
  for (size_t i = 64; i < block.size() - 64; i += 61) flips.emplace_back(i, int(i % 8));

  for (auto [byte, bit] : flips) {
    block[byte] ^= uint8_t(1u << bit);
    const Checksum128 flipped = Xxh3_128(block.data(), block.size());
    if (flipped == base128 || Xxh3_64(block.data(), block.size()) == base64) {
      FAIL("flip of byte " << byte << " bit " << bit << " left the checksum unchanged");
    }
    block[byte] ^= uint8_t(1u << bit);
  }
  // Restored, the block checksums as before.
  CHECK(Xxh3_128(block.data(), block.size()) == base128);
}

TEST_CASE("Checksums depend on the length, not only on the bytes", "[checksum]") {
  const std::string zeros(64, '\0');
  std::set<std::pair<uint64_t, uint64_t>> seen128;
  std::set<uint64_t> seen64;
  for (size_t len = 0; len <= zeros.size(); len++) {
    Checksum128 c = Xxh3_128(zeros.data(), len);
    seen128.emplace(c.lo, c.hi);
    seen64.insert(Xxh3_64(zeros.data(), len));
  }
  CHECK(seen128.size() == zeros.size() + 1);
  CHECK(seen64.size() == zeros.size() + 1);
}

TEST_CASE("Checksum128 compares both halves", "[checksum]") {
  CHECK(Checksum128{1, 2} == Checksum128{1, 2});
  CHECK_FALSE(Checksum128{1, 2} == Checksum128{1, 3});
  CHECK_FALSE(Checksum128{1, 2} == Checksum128{0, 2});
  CHECK(Checksum128{} == Checksum128{0, 0});
}

}  // namespace
}  // namespace poolfs::util
