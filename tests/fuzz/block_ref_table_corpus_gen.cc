// Writes the seed corpus of block_ref_table_fuzz into the folder given as
// argv[1] (which must exist):
//   block_ref_table_corpus_gen tests/fuzz/corpus/block_ref_table
// Each seed is framed as the target's top comment says: a u16 picking the
// pool's vdev count, then the table's bytes. Valid tables of no entry, one
// entry, many entries on several vdevs and the extremes of every field;
// then each rule of section 9.4 of core/doc/on-disk-format.md broken once,
// in an entry after a good one, and lengths that are not whole entries.
// Names say what each holds ("bad-..." for the refused ones).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "util/endian.h"
#include "zio/block_ref_table.h"

namespace {

using poolfs::core::zio::BlockRefTable;

std::string g_dir;
int g_count = 0;

// An entry as stored, any field settable (the reserved one too).
struct Raw {
  uint64_t offset;
  uint32_t vdev;
  uint32_t reserved;
  uint64_t refs;
  uint64_t allocated;
};

std::string Bytes(const std::vector<Raw>& entries) {
  std::string out(entries.size() * BlockRefTable::kEntrySize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (const Raw& e : entries) {
    poolfs::util::PutLE64(p, e.offset);
    poolfs::util::PutLE32(p + 8, e.vdev);
    poolfs::util::PutLE32(p + 12, e.reserved);
    poolfs::util::PutLE64(p + 16, e.refs);
    poolfs::util::PutLE64(p + 24, e.allocated);
    p += BlockRefTable::kEntrySize;
  }
  return out;
}

// A seed for a pool of `vdevs` vdevs (1..4096).
void Write(const std::string& name, uint32_t vdevs, const std::string& table) {
  std::string bytes(2, '\0');
  poolfs::util::PutLE16(reinterpret_cast<uint8_t*>(bytes.data()), uint16_t(vdevs - 1));
  bytes += table;
  const std::string path = g_dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
  g_count++;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder, e.g. tests/fuzz/corpus/block_ref_table>\n",
                 argv[0]);
    return 2;
  }
  g_dir = argv[1];
  constexpr uint64_t kMaxAllocated = 3 * (uint64_t{16} << 20);  // three 16 MiB copies
  constexpr uint64_t kLast = std::numeric_limits<uint64_t>::max() / 512 * 512;

  // Valid tables.
  Write("empty", 1, "");
  Write("empty-4096-vdevs", 4096, "");
  const Raw one{0x400000, 0, 0, 1, 131072};
  Write("one", 1, Bytes({one}));
  Write("one-3-copies", 2, Bytes({{0x1200000, 1, 0, 7, 3 * 8192}}));
  std::mt19937_64 rng(9);
  std::vector<Raw> many;
  for (uint32_t vdev = 0; vdev < 3; vdev++) {
    uint64_t offset = 0x400000 + 0x1000 * (rng() % 16);
    for (int i = 0; i < 40; i++) {
      const uint64_t allocated = (1 + rng() % 3) * 4096 * (1 + rng() % 32);
      many.push_back({offset, vdev, 0, 1 + rng() % (rng() % 4 == 0 ? 100000 : 4), allocated});
      offset += allocated + 4096 * (rng() % 8);
    }
  }
  Write("many", 3, Bytes(many));
  // One vdev's entries only, of a pool of 3; and a pool of 4096 with the
  // last vdev.
  Write("many-vdev-0-of-3", 3, Bytes(std::vector<Raw>(many.begin(), many.begin() + 40)));
  Write("extremes", 4096,
        Bytes({{0, 0, 0, std::numeric_limits<uint64_t>::max(), 512},
               {kLast - kMaxAllocated, 0, 0, 1, kMaxAllocated},
               {512, 4095, 0, 2, 4096}}));

  // Each rule broken once, in the second entry.
  const Raw good{0x800000, 1, 0, 2, 16384};
  auto bad = [&](const std::string& name, Raw e, uint32_t vdevs = 2) {
    Write("bad-" + name, vdevs, Bytes({one, e}));
  };
  bad("reserved", {good.offset, good.vdev, 1, good.refs, good.allocated});
  bad("reserved-high", {good.offset, good.vdev, 0x80000000u, good.refs, good.allocated});
  bad("vdev-out-of-range", {good.offset, 2, 0, good.refs, good.allocated});
  bad("vdev-huge", {good.offset, 0xffffffffu, 0, good.refs, good.allocated});
  bad("offset-unaligned", {good.offset + 1, good.vdev, 0, good.refs, good.allocated});
  bad("offset-half-sector", {good.offset + 256, good.vdev, 0, good.refs, good.allocated});
  bad("refs-0", {good.offset, good.vdev, 0, 0, good.allocated});
  bad("allocated-0", {good.offset, good.vdev, 0, good.refs, 0});
  bad("allocated-unaligned", {good.offset, good.vdev, 0, good.refs, 4097});
  bad("allocated-too-large", {good.offset, good.vdev, 0, good.refs, kMaxAllocated + 512});
  bad("extent-wraps", {kLast, good.vdev, 0, good.refs, 1024});
  // Order: (vdev, offset) strictly ascending.
  Write("bad-order-offset", 1, Bytes({{0x900000, 0, 0, 1, 4096}, {0x800000, 0, 0, 1, 4096}}));
  Write("bad-order-vdev", 2, Bytes({{0x800000, 1, 0, 1, 4096}, {0x900000, 0, 0, 1, 4096}}));
  Write("bad-repeated", 1, Bytes({one, one}));
  std::vector<Raw> swapped = many;
  std::swap(swapped[70], swapped[71]);
  Write("bad-many-swapped", 3, Bytes(swapped));
  std::vector<Raw> vdevs_short = many;
  Write("bad-many-vdevs-short", 2, Bytes(vdevs_short));  // vdev 2's entries
  // Lengths that are not whole entries.
  const std::string table = Bytes(many);
  Write("bad-length-1", 1, std::string(1, '\0'));
  Write("bad-length-31", 1, Bytes({one}).substr(0, 31));
  Write("bad-truncated", 3, table.substr(0, table.size() - 5));
  Write("bad-trailing", 3, table + "x");
  std::printf("wrote %d files\n", g_count);
  return 0;
}
