// Writes the seed corpus of space_map_fuzz into the folder given as argv[1]:
// valid maps of various shapes and geometries, the same maps damaged (bit
// flips, truncations, trailing bytes), maps that break a structural rule with
// valid checksums (so that the decoder's record checks are reached), and
// random byte strings that drive the fuzzer's recipe mode.
//   space_map_corpus_gen tests/fuzz/corpus/space_map
// The corpus also holds found-* files: inputs kept from fuzzing runs because
// they reached code the generated files do not (libFuzzer -merge=1); this
// program neither writes nor removes them.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "space/space_map.h"
#include "space_map_fuzz.h"
#include "util/checksum.h"
#include "util/endian.h"

namespace {

using poolfs::Txg;
using namespace poolfs::core::space;
using poolfs::util::GetLE64;
using poolfs::util::PutLE64;

std::string g_dir;
int g_count = 0;

void Write(const std::string& name, const std::string& bytes) {
  const std::string path = g_dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
  g_count++;
}

uint64_t Word(const std::string& b, size_t i) {
  return GetLE64(reinterpret_cast<const uint8_t*>(b.data()) + 8 * i);
}
void SetWord(std::string* b, size_t i, uint64_t v) {
  PutLE64(reinterpret_cast<uint8_t*>(b->data()) + 8 * i, v);
}
uint64_t Xxh(const std::string& b, size_t first_word, size_t words) {
  return poolfs::util::Xxh3_64(b.data() + 8 * first_word, 8 * words);
}

// Recomputes every checksum of a structurally walkable map (see section 10
// of core/doc/on-disk-format.md), so that a deliberate rule break survives
// the checksum checks.
std::string Rechecksum(std::string b) {
  SetWord(&b, 4, Xxh(b, 0, 4));
  size_t i = 5;
  const size_t n = b.size() / 8;
  while (i < n) {
    const uint64_t w = Word(b, i);
    if ((w >> 60) == 0x5 && i + 3 <= n) {
      SetWord(&b, i + 2, Xxh(b, i - 1, 3));
      break;
    }
    const size_t words = ((w >> 50) & 1023) + 1;
    if (i + words + 2 > n) break;
    SetWord(&b, i + words + 1, Xxh(b, i - 1, words + 2));
    i += words + 2;
  }
  return b;
}

std::string RandomMap(const SpaceMapGeometry& g, uint64_t seed, size_t records, int per_txg) {
  std::mt19937_64 rng(seed);
  const uint64_t sectors = g.size >> g.shift;
  SpaceMapWriter w(g);
  uint64_t txg = 1 + rng() % 100;
  for (size_t i = 0; i < records; i++) {
    if (rng() % per_txg == 0) txg += 1 + rng() % 2;
    const uint64_t run =
        std::min<uint64_t>(sectors, rng() % 6 == 0 ? 1 + rng() % sectors : 1 + rng() % 32);
    const uint64_t off = rng() % (sectors - run + 1);
    w.Append(rng() % 2 ? SmType::kFree : SmType::kAlloc, Txg(txg), g.start + (off << g.shift),
             run << g.shift);
  }
  return w.bytes();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  const SpaceMapGeometry g = poolfs::fuzz::kSpaceMapFuzzGeometry;
  const uint64_t s = uint64_t{1} << g.shift;

  // Valid maps in the fixed geometry.
  Write("valid-empty", SpaceMapWriter(g).bytes());
  {
    SpaceMapWriter w(g);
    w.Append(SmType::kAlloc, Txg(1), g.start, s);
    Write("valid-one-record", w.bytes());
    w.Append(SmType::kAlloc, Txg(kSpaceMapMaxTxg), g.start + g.size - 40000 * s, 40000 * s);
    Write("valid-two-word-max-txg", w.bytes());
  }
  Write("valid-condensed",
        CondenseSpaceMap(
            g, Txg(9),
            {{g.start + s, 4 * s}, {g.start + 100 * s, 70000 * s}, {g.start + g.size - s, s}}));
  Write("valid-condensed-all-free", CondenseSpaceMap(g, Txg(3), {{g.start, g.size}}));
  for (int i = 0; i < 6; i++) {
    Write("valid-random-" + std::to_string(i), RandomMap(g, 100 + i, 3 + 9 * i, 1 + i % 3 * 4));
  }
  Write("valid-split-groups", RandomMap(g, 7, 1100, 100000));
  {
    SpaceMapWriter w(g);
    w.Append(SmType::kAlloc, Txg(5), g.start, 8 * s);
    auto r = SpaceMapWriter::Resume(g, w.bytes());
    r->Append(SmType::kFree, Txg(5), g.start + 2 * s, s);
    Write("valid-resumed-same-txg", r->bytes());
  }
  // Valid maps in other geometries (the fuzzer decodes them with their own).
  const SpaceMapGeometry others[] = {{0, uint64_t{1} << 34, 12},
                                     {uint64_t{1} << 62, uint64_t{1} << 61, 16},
                                     {uint64_t{7} << 20, uint64_t{3} << 20, 10},
                                     {0, uint64_t{1} << 60, 9}};
  for (int i = 0; i < 4; i++) {
    Write("valid-geometry-" + std::to_string(i), RandomMap(others[i], 200 + i, 12, 3));
  }
  {
    SpaceMapWriter w(others[3]);
    w.Append(SmType::kFree, Txg(2), (uint64_t{1} << 59) + 512, uint64_t{1} << 40);
    Write("valid-far-offset", w.bytes());
  }

  // Damaged copies of one valid map: bit flips, cuts, trailing bytes.
  const std::string base = RandomMap(g, 42, 10, 4);
  for (size_t bit : {size_t{3}, size_t{70}, size_t{85}, size_t{130}, size_t{260}, size_t{330},
                     size_t{400}, 8 * base.size() - 100, 8 * base.size() - 1}) {
    std::string d = base;
    d[bit / 8] = char(d[bit / 8] ^ (1 << (bit % 8)));
    Write("flip-bit-" + std::to_string(bit), d);
  }
  for (size_t len :
       {0ul, 20ul, 40ul, 47ul, 56ul, base.size() - 24, base.size() - 9, base.size() - 1}) {
    Write("cut-" + std::to_string(len), base.substr(0, len));
  }
  Write("trailing-word", base + std::string(8, '\0'));
  Write("trailing-byte", base + "x");

  // Rule breaks behind valid checksums. Word 5 is the first group header.
  {
    SpaceMapWriter w(g);
    w.Append(SmType::kAlloc, Txg(4), g.start, s);
    w.Append(SmType::kAlloc, Txg(4), g.start + 2 * s, s);
    w.Append(SmType::kFree, Txg(6), g.start + 50000 * s, 40000 * s);
    const std::string m = w.bytes();  // words: 0-4 header, 5 gh, 6-7, 8 sum, 9 gh, 10-11, 12 sum
    std::string d = m;
    SetWord(&d, 7, uint64_t{1} << 47 | ((g.size >> g.shift) - 1));  // 2 sectors at the last
    Write("rule-run-past-end", Rechecksum(d));
    d = m;
    SetWord(&d, 9, (Word(d, 9) & ~((uint64_t{1} << 50) - 1)) | 3);  // txg 6 -> 3
    Write("rule-txg-backwards", Rechecksum(d));
    d = m;
    SetWord(&d, 10, (Word(d, 10) & ~((uint64_t{1} << 62) - 1)) | 5);  // short run in two words
    Write("rule-non-canonical", Rechecksum(d));
    d = m;
    SetWord(&d, 9, Word(d, 9) & ~(uint64_t{1023} << 50));  // group of 1 word: two-word entry cut
    Write("rule-two-word-cut", Rechecksum(d));
    d = m;
    SetWord(&d, 13, Word(d, 13) + 1);  // record count off by one
    Write("rule-count-mismatch", Rechecksum(d));
    d = m;
    SetWord(&d, 14, Word(d, 14) + 512);  // allocated bytes wrong
    Write("rule-alloc-mismatch", Rechecksum(d));
    d = m;
    SetWord(&d, 1, Word(d, 1) + 1);  // version 2
    Write("rule-version-2", Rechecksum(d));
    d = m;
    SetWord(&d, 3, Word(d, 3) * 2);  // another geometry
    Write("rule-other-geometry", Rechecksum(d));
    d = m.substr(0, 8 * 9);  // no end marker after the first group
    Write("rule-no-end-marker", d);
    d = m.substr(0, 8 * 9) + m.substr(8 * 5, 8 * 4) + m.substr(m.size() - 24);
    Write("rule-repeated-group", Rechecksum(d));
  }

  // Random bytes for the recipe mode.
  std::mt19937_64 rng(5);
  for (size_t len : {16, 64, 200, 1000}) {
    std::string r(len, '\0');
    for (char& c : r) c = char(rng());
    Write("recipe-" + std::to_string(len), r);
  }
  std::printf("wrote %d files to %s\n", g_count, g_dir.c_str());
  return 0;
}
