// Writes the seed corpus of log_block_fuzz into <folder> (which must exist):
//   log_block_corpus_gen tests/fuzz/corpus/log_block
// Seeds: an empty 4 KiB block and 8 KiB blocks of every record type in full
// (mode 0), and the same cut where their records end for the fuzzer to pad
// and reseal (mode 3), all as block 7 of the chain log_block_fuzz expects.
// The sample records of more than 8 KiB are left out.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/zil/sample_records.h"
#include "util/endian.h"
#include "zil/log_block.h"

namespace {

using namespace poolfs::core::zil;

void Write(const std::string& path, uint8_t mode, const std::vector<uint8_t>& block,
           size_t length) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fputc(mode, f) == EOF ||
      std::fwrite(block.data(), 1, length, f) != length) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
    return 2;
  }
  const LogBlockId id{0x9001, 3, 0xc4a1, 7};
  const LogBlockAddress next{2, 0x123000, 8192};
  std::vector<std::vector<uint8_t>> blocks = {LogBlockWriter(id, 1, 4096).Finish({})};
  LogBlockWriter w(id, 5, 8192);
  for (const LogRecord& r : SampleRecords()) {
    auto added = w.Add(r);
    if (!added.ok()) continue;  // larger than any 8 KiB block
    if (!*added) {
      blocks.push_back(w.Finish(next));
      w = LogBlockWriter(id, 5, 8192);
      (void)*w.Add(r);
    }
  }
  blocks.push_back(w.Finish({}));
  for (size_t i = 0; i < blocks.size(); i++) {
    const std::string stem = std::string(argv[1]) + "/seed-" + std::to_string(i);
    Write(stem + "-full", 0, blocks[i], blocks[i].size());
    Write(stem + "-cut", 3, blocks[i], poolfs::util::GetLE32(blocks[i].data() + 72));
  }
  std::printf("wrote %zu seeds\n", 2 * blocks.size());
  return 0;
}
