// Writes the raw-image seeds of tests/fuzz/zap_fuzz.cc (hidden; run by hand,
// the files are committed):
//   POOLFS_ZAP_CORPUS=tests/fuzz/corpus/zap build/bin/zap_tests "[.corpus]"
// Each seed is [mode][the bytes of a zap object built through the API]; the
// operation seeds are written by hand (see the fuzzer's header).
#include <cstdio>
#include <cstdlib>
#include <random>

#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;

void WriteSeed(const std::string& dir, const std::string& name, uint8_t mode,
               const std::string& bytes) {
  std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fputc(mode, f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

TEST_CASE("Zap fuzz corpus: raw images of real zaps", "[.corpus]") {
  const char* dir = std::getenv("POOLFS_ZAP_CORPUS");
  REQUIRE(dir != nullptr);
  struct Seed {
    const char* name;
    bool directory;
    int entries;
    size_t name_len;  // 0: short and varied
  };
  const Seed seeds[] = {
      {"raw-micro-empty", false, 0, 0},       {"raw-micro-dir", true, 12, 0},
      {"raw-micro-full", false, 63, 0},       {"raw-fat-dir", true, 300, 0},
      {"raw-fat-long-names", false, 40, 200},
  };
  for (const Seed& s : seeds) {
    Fixture f;
    ZapOptions o;
    o.block_size = 4096;
    o.salt = 77;
    auto z = f.NewZap(s.directory ? dmu::ObjectType::kDirectory : dmu::ObjectType::kZap, o);
    std::mt19937_64 rng(s.entries);
    {
      auto tx = f.NewTx();
      for (int i = 0; i < s.entries; i++) {
        std::string n = s.name_len ? testing::RandomName(rng, s.name_len)
                                   : "f" + std::to_string(i) + testing::RandomName(rng, rng() % 12);
        REQUIRE(z->Add(*tx, n, Value{uint64_t(i + 100), uint64_t(i % 3)}).ok());
      }
    }
    auto bytes = f.os->Read(z->id(), 0, uint64_t{1} << 30);
    REQUIRE(bytes.ok());
    // 4 KiB blocks, raw, resealed (harmless on intact blocks), changes.
    const uint8_t mode = 0 | (s.directory ? 4 : 0) | 8 | 16 | 32;
    WriteSeed(dir, s.name, mode, *bytes);
  }
}

}  // namespace
}  // namespace poolfs::core::zap
