// Writes the seed corpora of label_fuzz and uberblock_fuzz into
// <root>/label and <root>/uberblock (folders that must exist):
//   vdev_corpus_gen tests/fuzz/corpus
// Seeds: valid labels and uberblocks of both format versions (2, what new
// pools get, and 1, which this build still reads), the same damaged (bit
// flips, truncation), well-formed ones of versions it does not read (0, 3,
// 9), and ones that break a field rule with a checksum the fuzzer recomputes
// (mode bit 0, see the targets), so that every check of the decoders is
// reached. The corpora
// also hold found-* files: inputs kept from fuzzing runs (libFuzzer -merge=1)
// because they reached code the generated seeds do not; this program neither
// writes nor removes them.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/endian.h"
#include "vdev/label.h"
#include "vdev/uberblock.h"

namespace {

using namespace poolfs::core::vdev;
using poolfs::Txg;
using poolfs::util::PutLE32;
using poolfs::util::PutLE64;

int g_count = 0;

void Write(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
  g_count++;
}

LabelHeader Header(uint32_t version = kFormatVersion) {
  LabelHeader h;
  h.version = version;
  h.pool_guid = 0x0123456789abcdefull;
  h.vdev_guid = 0xfedcba9876543210ull;
  h.vdev_index = 1;
  h.vdev_count = 3;
  h.ashift = 12;
  h.vdev_size = 64 * kMiB;
  h.config_txg = Txg(42);
  return h;
}

// The fuzzer's compact form: mode, the 512-byte header, the config bytes.
std::vector<uint8_t> Compact(uint8_t mode, const std::vector<uint8_t>& label, size_t config_len) {
  std::vector<uint8_t> out{mode};
  out.insert(out.end(), label.begin(), label.begin() + kLabelHeaderSize);
  out.insert(out.end(), label.begin() + kConfigOffset, label.begin() + kConfigOffset + config_len);
  return out;
}

void Labels(const std::string& dir) {
  const std::string config = "vdevs: /pool/a.pool /pool/b.pool /pool/c.pool";
  for (int index = 0; index < kLabelCount; index++) {
    Write(dir + "/valid-" + std::to_string(index),
          Compact(0, EncodeLabel(Header(), index, config), config.size()));
  }
  std::string big(3000, 'x');
  for (size_t i = 0; i < big.size(); i++) big[i] = char('a' + i % 26);
  Write(dir + "/valid-big-config", Compact(0, EncodeLabel(Header(), 0, big), big.size()));
  Write(dir + "/valid-no-config", Compact(0, EncodeLabel(Header(), 2, ""), 0));
  Write(dir + "/valid-v1-0", Compact(0, EncodeLabel(Header(1), 0, config), config.size()));
  Write(dir + "/valid-v1-3", Compact(0, EncodeLabel(Header(1), 3, config), config.size()));
  std::vector<uint8_t> raw{2};
  std::vector<uint8_t> full = EncodeLabel(Header(), 1, config);
  raw.insert(raw.end(), full.begin(), full.begin() + kConfigOffset + config.size());
  Write(dir + "/raw-valid", raw);

  const std::vector<uint8_t> good = EncodeLabel(Header(), 0, config);
  for (size_t bit : {0, 70, 100, 130, 350, 640, 900, 3990, 4010}) {
    std::vector<uint8_t> c = Compact(0, good, config.size());
    c[1 + bit / 8] ^= uint8_t(1u << (bit % 8));
    Write(dir + "/flip-bit-" + std::to_string(bit), c);
  }
  std::vector<uint8_t> c = Compact(0, good, config.size());
  Write(dir + "/truncated-config", std::vector<uint8_t>(c.begin(), c.end() - 5));
  Write(dir + "/truncated-header", std::vector<uint8_t>(c.begin(), c.begin() + 200));
  Write(dir + "/zeros", std::vector<uint8_t>(1 + kLabelHeaderSize, 0));

  // Field rule breaks; mode 1 makes the fuzzer fix the checksum.
  struct Patch {
    const char* name;
    size_t off;
    int width;
    uint64_t value;
  };
  for (const Patch& p : std::vector<Patch>{{"version-1", 8, 4, 1},
                                           {"version-3", 8, 4, 3},
                                           {"version-0", 8, 4, 0},
                                           {"pool-guid-0", 16, 8, 0},
                                           {"vdev-guid-0", 24, 8, 0},
                                           {"index-past-count", 32, 4, 3},
                                           {"count-0", 36, 4, 0},
                                           {"ashift-30", 40, 4, 30},
                                           {"ashift-8", 40, 4, 8},
                                           {"size-unaligned", 48, 8, 64 * kMiB + 4096},
                                           {"size-tiny", 48, 8, kLabelSize},
                                           {"alloc-start", 56, 8, 0},
                                           {"alloc-size", 64, 8, 1},
                                           {"config-len-huge", 80, 8, ~0ull},
                                           {"config-len-long", 80, 8, config.size() + 1}}) {
    std::vector<uint8_t> b = Compact(1, good, config.size());
    if (p.width == 4)
      PutLE32(&b[1 + p.off], uint32_t(p.value));
    else
      PutLE64(&b[1 + p.off], p.value);
    Write(dir + "/field-" + p.name, b);
  }
  std::vector<uint8_t> idx = Compact(1, EncodeLabel(Header(), 3, config), config.size());
  Write(dir + "/label-index-3", idx);  // decoded as copies 0..3: three mismatches
}

void Uberblocks(const std::string& dir) {
  Uberblock ub;
  ub.txg = Txg(1234);
  ub.pool_guid = 0x0123456789abcdefull;
  ub.guid_sum = 0x1111;
  ub.timestamp_ns = 1700000000000000000ull;
  for (size_t i = 0; i < ub.root.size(); i++) ub.root[i] = uint8_t(i * 7);
  UberblockBytes good = EncodeUberblock(ub);
  auto with_mode = [](uint8_t mode, const UberblockBytes& b) {
    std::vector<uint8_t> v{mode};
    v.insert(v.end(), b.begin(), b.end());
    return v;
  };
  Write(dir + "/valid", with_mode(0, good));
  Uberblock v1 = ub;
  v1.version = 1;
  Write(dir + "/valid-v1", with_mode(0, EncodeUberblock(v1)));
  Write(dir + "/zeros", std::vector<uint8_t>(1 + kUberblockSlotSize, 0));
  for (size_t bit : {3, 64, 130, 200, 400, 5000, 8070, 8100}) {
    std::vector<uint8_t> v = with_mode(0, good);
    v[1 + bit / 8] ^= uint8_t(1u << (bit % 8));
    Write(dir + "/flip-bit-" + std::to_string(bit), v);
  }
  std::vector<uint8_t> v = with_mode(0, good);
  Write(dir + "/truncated", std::vector<uint8_t>(v.begin(), v.begin() + 700));
  v = with_mode(1, good);
  PutLE32(&v[1 + 8], 9);
  Write(dir + "/version-9", v);
  v = with_mode(1, good);
  PutLE32(&v[1 + 8], 3);
  Write(dir + "/version-3", v);
  v = with_mode(1, good);
  PutLE32(&v[1 + 8], 1);
  Write(dir + "/version-1", v);
  v = with_mode(1, good);
  PutLE64(&v[1 + 24], 0);
  Write(dir + "/pool-guid-0", v);
  v = with_mode(1, good);
  v.insert(v.end(), 100, 0xAB);  // trailing bytes are ignored
  Write(dir + "/long", v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus root, e.g. tests/fuzz/corpus>\n", argv[0]);
    return 2;
  }
  std::string root = argv[1];
  Labels(root + "/label");
  Uberblocks(root + "/uberblock");
  std::printf("wrote %d files\n", g_count);
  return 0;
}
