// Writes the seed corpus of send_stream_fuzz into the folder given as
// argv[1] (which must exist):
//   send_stream_corpus_gen tests/fuzz/corpus/send_stream
// Each seed is framed as the target's top comment says: a mode byte, then a
// stream. Valid streams (the worked example of the spec, every record type
// with compressed blocks, incremental with properties, resuming, BEGIN and
// END alone), read whole, in small chunks and resealed; then streams each
// broken once ("bad-..."). With --example instead of a folder, prints the
// worked example of core/doc/send-stream-format.md, a header per record.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "send/stream.h"
#include "util/compress.h"
#include "util/endian.h"

namespace {

using namespace poolfs::core::send;  // NOLINT: a tool
using poolfs::Status;

std::string g_dir;
int g_count = 0;

void Check(const Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "send_stream_corpus_gen: %s\n", st.ToString().c_str());
    std::exit(1);
  }
}

std::string Stream(const std::function<void(StreamWriter&)>& body) {
  std::string out;
  StreamWriter w([&out](std::string_view b) {
    out += b;
    return Status::Ok();
  });
  body(w);
  return out;
}

void Write(const std::string& name, uint8_t mode, const std::string& stream) {
  std::string bytes(1, char(mode));
  bytes += stream;
  const std::string path = g_dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
  g_count++;
}

BeginInfo Begin(uint64_t features) {
  BeginInfo b;
  b.features = features;
  b.to_guid = 0x1122334455667788ull;
  b.to_txg = 42;
  b.creation_time = 1764892800;  // 2025-12-05 00:00:00 UTC
  b.dataset = "tank/home";
  b.snapshot = "monday";
  return b;
}

// The worked example: a full stream of one 5-byte file.
std::string Example() {
  return Stream([](StreamWriter& w) {
    Check(w.Begin(Begin(0)));
    Check(w.Object({2, kObjectTypePlain, 512, 5, 40, kCompressLz4, 0, ""}));
    std::string block(512, '\0');
    block.replace(0, 5, "hello");
    Check(w.Write({2, 0, 512, kCompressOff, block}));
    Check(w.End());
  });
}

std::string Compressed(poolfs::util::Compression algo, const std::string& in) {
  std::string out(in.size(), '\0');
  auto n = poolfs::util::Compress(algo, in.data(), in.size(), out.data(), out.size());
  Check(n.status());
  out.resize(*n);
  return out;
}

std::string Pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = char(seed + (i / 32) % 5);
  return s;
}

std::string EveryType() {
  return Stream([](StreamWriter& w) {
    BeginInfo b = Begin(kFeatureCompressed);
    b.props = {{"compression", "lz4"}, {"recordsize", "4096"}};
    Check(w.Begin(b));
    Check(w.Object({1, kObjectTypeDirectory, 512, 512, 5, kCompressOff, 1, "dir-bonus"}));
    Check(w.Write({1, 0, 512, kCompressOff, Pattern(512, 'd')}));
    Check(w.FreeObjects({2, 3}));
    Check(w.Object({5, kObjectTypePlain, 4096, 16384, 9, kCompressZstd, 17, std::string(32, 'z')}));
    Check(w.Write({5, 0, 4096, kCompressLz4,
                   Compressed(poolfs::util::Compression::kLz4, Pattern(4096, 'a'))}));
    Check(w.Free({5, 4096, 4096}));
    Check(w.Write({5, 8192, 4096, kCompressZstd,
                   Compressed(poolfs::util::Compression::kZstd, Pattern(4096, 'c'))}));
    Check(w.Free({5, 12288, kToEnd}));
    Check(w.Object({6, kObjectTypeZap, 512, 0, 9, kCompressOff, 0, ""}));
    Check(w.FreeObjects({7, 100}));
    Check(w.End());
  });
}

std::string Incremental() {
  return Stream([](StreamWriter& w) {
    BeginInfo b = Begin(0);
    b.from_guid = 0x99aabbccddeeff00ull;
    b.from = "sunday";
    b.props = {{"atime", "off"}, {"user:note", "a=b\nc"}};
    Check(w.Begin(b));
    Check(w.FreeObjects({1, 4}));
    Check(w.Object({9, kObjectTypePlain, 1024, 3000, 50, kCompressOff, 0, ""}));
    Check(w.Free({9, 0, 1024}));
    Check(w.Write({9, 2048, 1024, kCompressOff, Pattern(1024, 'i')}));
    Check(w.End());
  });
}

std::string Resuming() {
  return Stream([](StreamWriter& w) {
    BeginInfo b = Begin(kFeatureResuming | kFeatureCompressed);
    b.resume_object = 9;
    b.resume_offset = 2048;
    Check(w.Begin(b));
    Check(w.Object({9, kObjectTypePlain, 1024, 4096, 50, kCompressOff, 0, ""}));
    Check(w.Write({9, 2048, 1024, kCompressOff, Pattern(1024, 'r')}));
    Check(w.Free({9, 3072, kToEnd}));
    Check(w.Object({10, kObjectTypePlain, 512, 512, 51, kCompressOff, 0, ""}));
    Check(w.End());
  });
}

std::string BeginEnd() {
  return Stream([](StreamWriter& w) {
    Check(w.Begin(Begin(0)));
    Check(w.End());
  });
}

// The header of the record at `pos` of `s`, as 16-byte hex lines.
void PrintHeader(const std::string& s, size_t pos) {
  for (size_t line = 0; line < kHeaderSize; line += 16) {
    std::printf("%3zu:", line);
    for (size_t i = 0; i < 16; i++)
      std::printf(" %02x", static_cast<unsigned>(static_cast<uint8_t>(s[pos + line + i])));
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: %s <corpus folder, e.g. tests/fuzz/corpus/send_stream> | --example\n",
                 argv[0]);
    return 2;
  }
  if (std::string_view(argv[1]) == "--example") {
    const std::string s = Example();
    for (size_t pos = 0, k = 0; pos < s.size(); k++) {
      const uint32_t len =
          poolfs::util::GetLE32(reinterpret_cast<const uint8_t*>(s.data()) + pos + 8);
      std::printf("record %zu at byte %zu, payload %u bytes:\n", k, pos, len);
      PrintHeader(s, pos);
      if (k == 0) {
        std::printf("payload:");
        for (uint32_t i = 0; i < len; i++)
          std::printf(" %02x", static_cast<unsigned>(static_cast<uint8_t>(s[pos + 128 + i])));
        std::printf("\n");
      }
      pos += kHeaderSize + len;
    }
    std::printf("total %zu bytes\n", s.size());
    return 0;
  }
  g_dir = argv[1];

  const std::string example = Example();
  const std::string every = EveryType();
  const std::string valid[][2] = {{"example", example},
                                  {"every-type", every},
                                  {"incremental", Incremental()},
                                  {"resuming", Resuming()},
                                  {"begin-end", BeginEnd()}};
  for (const auto& [name, s] : valid) {
    Write(name, 0, s);
    Write(name + "-resealed", 1, s);
  }
  Write("every-type-chunk-1", 1 << 1, every);
  Write("every-type-chunk-100", 100 << 1, every);

  // Broken once each.
  Write("bad-empty", 0, "");
  Write("bad-truncated-header", 0, example.substr(0, 200));
  Write("bad-truncated-payload", 0, example.substr(0, 128 + 20));
  Write("bad-no-end", 0, example.substr(0, example.size() - kHeaderSize));
  Write("bad-trailing", 0, example + "x");
  std::string flipped = every;
  flipped[every.size() / 2] ^= 4;
  Write("bad-flipped-bit", 0, flipped);
  auto field = [](std::string s, size_t record_pos, size_t byte, uint64_t v) {
    poolfs::util::PutLE64(reinterpret_cast<uint8_t*>(s.data()) + record_pos + byte, v);
    return s;
  };
  // Mode 1 renumbers and reseals, so each of these reaches its field or
  // order rule.
  Write("bad-version-2", 1, field(example, 0, 24, 2));
  Write("bad-unknown-feature", 1, field(example, 0, 32, 1u << 5));
  const size_t object_pos =
      kHeaderSize + poolfs::util::GetLE32(reinterpret_cast<const uint8_t*>(example.data()) + 8);
  Write("bad-block-size", 1, field(example, object_pos, 40, 1000));
  Write("bad-object-0", 1, field(example, object_pos, 24, 0));
  const size_t write_pos = object_pos + kHeaderSize;
  Write("bad-write-other-object", 1, field(example, write_pos, 24, 3));
  Write("bad-end-count", 1, field(example, example.size() - kHeaderSize, 32, 7));
  std::string dropped = example.substr(0, object_pos) + example.substr(write_pos);
  Write("bad-object-dropped", 1, dropped);

  std::printf("wrote %d seeds to %s\n", g_count, g_dir.c_str());
  return 0;
}
