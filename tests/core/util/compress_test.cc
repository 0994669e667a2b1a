// Tests for block compression (core/util/compress.h): round trips, the
// "store uncompressed" rule for data that does not compress, and refusal of
// damaged or mismatched input.

#include "util/compress.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace poolfs::util {
namespace {

// Text-like data that compresses well: a few words repeated with variation.
std::vector<uint8_t> Compressible(size_t len, uint32_t seed) {
  static const char* kWords[] = {"pool ", "vdev ", "label ", "txg ", "block ", "dnode "};
  std::mt19937 rng(seed);
  std::vector<uint8_t> out;
  while (out.size() < len) {
    const char* w = kWords[rng() % 6];
    for (const char* c = w; *c && out.size() < len; c++) out.push_back(uint8_t(*c));
  }
  return out;
}

std::vector<uint8_t> Random(size_t len, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(len);
  for (auto& b : out) b = uint8_t(rng());
  return out;
}

std::vector<uint8_t> CompressOk(Compression algo, const std::vector<uint8_t>& in, int level = 0) {
  std::vector<uint8_t> out(in.size());
  Result<size_t> n = Compress(algo, in.data(), in.size(), out.data(), out.size(), level);
  REQUIRE(n.ok());
  out.resize(*n);
  return out;
}

TEST_CASE("Compress and Decompress round-trip with lz4 and zstd", "[compress]") {
  for (Compression algo : {Compression::kLz4, Compression::kZstd}) {
    for (size_t len : {size_t(4096), size_t(128 * 1024), size_t(1000)}) {
      INFO(CompressionName(algo) << " len " << len);
      std::vector<uint8_t> in = Compressible(len, uint32_t(len));
      std::vector<uint8_t> packed = CompressOk(algo, in);
      CHECK(packed.size() <= CompressLimit(len));
      std::vector<uint8_t> back(len);
      REQUIRE(Decompress(algo, packed.data(), packed.size(), back.data(), back.size()).ok());
      CHECK(back == in);
    }
  }
}

TEST_CASE("Compress of all-zero blocks shrinks them a lot", "[compress]") {
  std::vector<uint8_t> zeros(128 * 1024, 0);
  CHECK(CompressOk(Compression::kLz4, zeros).size() < 1024);
  CHECK(CompressOk(Compression::kZstd, zeros).size() < 1024);
}

TEST_CASE("Compress honours the zstd level", "[compress]") {
  std::vector<uint8_t> in = Compressible(64 * 1024, 7);
  std::vector<uint8_t> fast = CompressOk(Compression::kZstd, in, 1);
  std::vector<uint8_t> strong = CompressOk(Compression::kZstd, in, 19);
  CHECK(strong.size() <= fast.size());
  std::vector<uint8_t> back(in.size());
  REQUIRE(
      Decompress(Compression::kZstd, strong.data(), strong.size(), back.data(), back.size()).ok());
  CHECK(back == in);
}

TEST_CASE("Compress refuses incompressible data so it is stored uncompressed", "[compress]") {
  std::vector<uint8_t> in = Random(128 * 1024, 1);
  std::vector<uint8_t> out(in.size() * 2);  // a large buffer does not change the rule
  for (Compression algo : {Compression::kLz4, Compression::kZstd}) {
    Result<size_t> n = Compress(algo, in.data(), in.size(), out.data(), out.size());
    REQUIRE_FALSE(n.ok());
    CHECK(n.status().code() == StatusCode::kNotSupported);
  }
}

TEST_CASE("Compress refuses output that saves less than an eighth", "[compress]") {
  // Half random, half zeros: compresses to about half, so it passes at the
  // default limit but not when the caller's buffer is smaller than that.
  std::vector<uint8_t> in = Random(8192, 2);
  std::fill(in.begin() + 4096, in.end(), 0);
  std::vector<uint8_t> out(in.size());
  for (Compression algo : {Compression::kLz4, Compression::kZstd}) {
    Result<size_t> n = Compress(algo, in.data(), in.size(), out.data(), out.size());
    REQUIRE(n.ok());
    CHECK(*n <= CompressLimit(in.size()));
    Result<size_t> tight = Compress(algo, in.data(), in.size(), out.data(), 2048);
    CHECK(tight.status().code() == StatusCode::kNotSupported);
  }
  // Three random parts in four leave too little to save.
  std::vector<uint8_t> mostly = Random(8192, 3);
  std::fill(mostly.begin() + 7168, mostly.end(), 0);
  Result<size_t> n =
      Compress(Compression::kLz4, mostly.data(), mostly.size(), out.data(), out.size());
  CHECK(n.status().code() == StatusCode::kNotSupported);
}

TEST_CASE("Compress with compression off says to store uncompressed", "[compress]") {
  std::vector<uint8_t> in(4096, 0), out(4096);
  CHECK(Compress(Compression::kOff, in.data(), in.size(), out.data(), out.size()).status().code() ==
        StatusCode::kNotSupported);
  std::vector<uint8_t> back(4096, 1);
  REQUIRE(Decompress(Compression::kOff, in.data(), in.size(), back.data(), back.size()).ok());
  CHECK(back == in);
  CHECK(Decompress(Compression::kOff, in.data(), 100, back.data(), back.size()).IsCorruption());
}

TEST_CASE("Decompress refuses a wrong expected length", "[compress]") {
  std::vector<uint8_t> in = Compressible(16384, 4);
  for (Compression algo : {Compression::kLz4, Compression::kZstd}) {
    INFO(CompressionName(algo));
    std::vector<uint8_t> packed = CompressOk(algo, in);
    std::vector<uint8_t> small(in.size() - 1), big(in.size() + 1);
    CHECK(
        Decompress(algo, packed.data(), packed.size(), small.data(), small.size()).IsCorruption());
    CHECK(Decompress(algo, packed.data(), packed.size(), big.data(), big.size()).IsCorruption());
  }
}

TEST_CASE("Decompress refuses truncated, extended and garbage input", "[compress]") {
  std::vector<uint8_t> in = Compressible(16384, 5);
  std::vector<uint8_t> back(in.size());
  std::vector<uint8_t> garbage = Random(3000, 6);
  for (Compression algo : {Compression::kLz4, Compression::kZstd}) {
    INFO(CompressionName(algo));
    std::vector<uint8_t> packed = CompressOk(algo, in);
    CHECK(Decompress(algo, packed.data(), packed.size() - 1, back.data(), back.size())
              .IsCorruption());
    CHECK(Decompress(algo, packed.data(), packed.size() / 2, back.data(), back.size())
              .IsCorruption());
    CHECK(Decompress(algo, packed.data(), 0, back.data(), back.size()).IsCorruption());
    std::vector<uint8_t> extended = packed;
    extended.insert(extended.end(), {0x12, 0x34, 0x56, 0x78});
    CHECK(Decompress(algo, extended.data(), extended.size(), back.data(), back.size())
              .IsCorruption());
    CHECK(
        Decompress(algo, garbage.data(), garbage.size(), back.data(), back.size()).IsCorruption());
  }
}

TEST_CASE("Decompress of randomly damaged input never overruns and usually refuses it",
          "[compress]") {
  // lz4 carries no checksum, so a damaged literal may decode "successfully" to
  // wrong bytes (the block checksum catches that); what must hold is that the
  // decoder stays in bounds (ASan checks it) and refuses most damage.
  std::vector<uint8_t> in = Compressible(32768, 8);
  std::mt19937 rng(9);
  for (Compression algo : {Compression::kLz4, Compression::kZstd}) {
    std::vector<uint8_t> packed = CompressOk(algo, in);
    int refused = 0;
    for (int i = 0; i < 200; i++) {
      std::vector<uint8_t> damaged = packed;
      for (int k = 0; k < 4; k++) damaged[rng() % damaged.size()] ^= uint8_t(1 + rng() % 255);
      std::vector<uint8_t> back(in.size() + 64, 0xAA);  // guard bytes past the end
      Status st = Decompress(algo, damaged.data(), damaged.size(), back.data(), in.size());
      if (!st.ok()) {
        CHECK(st.IsCorruption());
        refused++;
      }
      for (size_t j = in.size(); j < back.size(); j++) REQUIRE(back[j] == 0xAA);
    }
    INFO(CompressionName(algo) << " refused " << refused << " of 200");
    CHECK(refused > 50);
  }
}

TEST_CASE("Compress and Decompress work from many threads at once", "[compress]") {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([t, &ok] {
      for (int i = 0; i < 50; i++) {
        std::vector<uint8_t> in = Compressible(8192 + 100 * i, uint32_t(t * 1000 + i));
        Compression algo = (i % 2) ? Compression::kZstd : Compression::kLz4;
        std::vector<uint8_t> out(in.size()), back(in.size());
        Result<size_t> n = Compress(algo, in.data(), in.size(), out.data(), out.size());
        if (!n.ok()) continue;
        if (Decompress(algo, out.data(), *n, back.data(), back.size()).ok() && back == in) {
          ok[t]++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; t++) CHECK(ok[t] == 50);
}

TEST_CASE("ParseCompression accepts the three names and refuses others", "[compress]") {
  CHECK(*ParseCompression("lz4") == Compression::kLz4);
  CHECK(*ParseCompression("zstd") == Compression::kZstd);
  CHECK(*ParseCompression("off") == Compression::kOff);
  Result<Compression> bad = ParseCompression("gzip");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("off, lz4, zstd") != std::string::npos);
  CHECK(IsValidCompression(2));
  CHECK_FALSE(IsValidCompression(3));
}

}  // namespace
}  // namespace poolfs::util
