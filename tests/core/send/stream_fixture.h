// Helpers of the send stream tests: a sample stream with every record type,
// readers over byte strings, record boundaries, and resealing the checksums
// of a stream edited by hand.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "send/stream.h"
#include "util/checksum.h"
#include "util/compress.h"
#include "util/endian.h"

#include <catch2/catch.hpp>

namespace poolfs::core::send::testing {

// Runs `body` on a writer into a string; every call must succeed.
inline std::string WriteStream(const std::function<void(StreamWriter&)>& body) {
  std::string out;
  StreamWriter w([&out](std::string_view b) {
    out += b;
    return Status::Ok();
  });
  body(w);
  REQUIRE(w.bytes() == out.size());
  return out;
}

// A source over `bytes` handing out at most `chunk` bytes per call.
inline std::function<Result<size_t>(std::span<char>)> SourceOf(std::string_view bytes,
                                                               size_t chunk = SIZE_MAX) {
  auto pos = std::make_shared<size_t>(0);
  return [bytes, chunk, pos](std::span<char> out) -> Result<size_t> {
    const size_t n = std::min({out.size(), bytes.size() - *pos, chunk});
    std::memcpy(out.data(), bytes.data() + *pos, n);
    *pos += n;
    return n;
  };
}

// Reads every record of `bytes` (through END, then the end of input).
inline Result<std::vector<Record>> ReadAll(std::string_view bytes, size_t chunk = SIZE_MAX) {
  StreamReader reader(SourceOf(bytes, chunk));
  std::vector<Record> out;
  for (;;) {
    Result<std::optional<Record>> r = reader.Next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) break;
    out.push_back(std::move(**r));
  }
  if (reader.bytes() != bytes.size())
    return Status(StatusCode::kAborted, "the reader stopped before the end of its input");
  return out;
}

// Reads `bytes`, expects Corruption, and returns its message.
inline std::string Refusal(std::string_view bytes) {
  Result<std::vector<Record>> r = ReadAll(bytes);
  REQUIRE(!r.ok());
  INFO(r.status().ToString());
  REQUIRE(r.status().IsCorruption());
  return r.status().message();
}

// The byte offset of each record of a well-framed stream.
inline std::vector<size_t> RecordOffsets(std::string_view bytes) {
  std::vector<size_t> out;
  for (size_t pos = 0; pos + kHeaderSize <= bytes.size();) {
    out.push_back(pos);
    pos += kHeaderSize + util::GetLE32(reinterpret_cast<const uint8_t*>(bytes.data()) + pos + 8);
  }
  return out;
}

// Recomputes the header checksum of the record at `pos` only.
inline void ResealHeader(std::string* bytes, size_t pos) {
  auto* h = reinterpret_cast<uint8_t*>(bytes->data()) + pos;
  util::PutLE64(h + 120, util::Xxh3_64(h, 120));
}

// Recomputes every record's payload checksum, running checksum and header
// checksum, as if the stream had been written as it now is.
inline void ResealAll(std::string* bytes) {
  uint64_t running = kRunningSeed;
  for (size_t pos : RecordOffsets(*bytes)) {
    auto* h = reinterpret_cast<uint8_t*>(bytes->data()) + pos;
    const size_t len = std::min<size_t>(util::GetLE32(h + 8), bytes->size() - pos - kHeaderSize);
    util::PutLE64(h + 88, util::Xxh3_64(h + kHeaderSize, len));
    uint8_t chain[112];
    util::PutLE64(chain, running);
    std::memcpy(chain + 8, h, 104);
    running = util::Xxh3_64(chain, sizeof(chain));
    util::PutLE64(h + 104, running);
    ResealHeader(bytes, pos);
  }
}

// Encodes records as given (their indices too), chaining their running
// checksums: a stream the writer might refuse to make.
inline std::string RawStream(const std::vector<Record>& records) {
  std::string out;
  uint64_t running = kRunningSeed;
  for (const Record& r : records) {
    uint8_t h[kHeaderSize];
    running = EncodeHeader(r, running, h);
    out.append(reinterpret_cast<const char*>(h), kHeaderSize);
    out += r.payload;
  }
  return out;
}

inline Record Rec(RecordType type, uint64_t index, std::array<uint64_t, 8> f,
                  std::string payload = "") {
  Record r;
  r.type = type;
  r.index = index;
  r.f = f;
  r.payload = std::move(payload);
  return r;
}

constexpr uint64_t kToGuid = 0x1234567890abcdefull;
constexpr uint64_t kFromGuid = 0x0fedcba987654321ull;

inline BeginInfo FullBegin(uint64_t features = 0) {
  BeginInfo b;
  b.features = features;
  b.to_guid = kToGuid;
  b.to_txg = 77;
  b.creation_time = 1764900000;
  b.dataset = "tank/home";
  b.snapshot = "monday";
  return b;
}

// A BEGIN record (index 0) of a full stream with `features`.
inline Record BeginRecord(uint64_t features = 0) {
  return Rec(RecordType::kBegin, 0, {kStreamVersion, features, kToGuid, 0, 77, 1764900000, 0, 0},
             EncodeBeginPayload(FullBegin(features)));
}

// Bytes that compress well, distinct per `seed`.
inline std::string Block(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = char(seed + (i / 64) % 7);
  return s;
}

inline std::string Lz4(const std::string& in) {
  std::string out(in.size(), '\0');
  Result<size_t> n =
      util::Compress(util::Compression::kLz4, in.data(), in.size(), out.data(), out.size());
  REQUIRE(n.ok());
  out.resize(*n);
  return out;
}

// The calls of a full stream with every record type (COMPRESSED): its
// records, as the reader returns them, follow.
struct Sample {
  BeginInfo begin;
  ObjectInfo dir, file, zap;
  WriteInfo dir_block, file_block0, file_block2;
  FreeObjectsInfo freed_low, freed_high;
  FreeInfo hole, tail;
  std::string file_block0_logical;

  Sample() {
    begin = FullBegin(kFeatureCompressed);
    begin.props = {{"compression", "lz4"}, {"recordsize", "4096"}, {"user:note", "a\nb"}};
    dir = {1, kObjectTypeDirectory, 512, 512, 5, kCompressOff, 0, ""};
    dir_block = {1, 0, 512, kCompressOff, Block(512, 'd')};
    freed_low = {2, 3};
    file = {5, kObjectTypePlain, 4096, 12288 + 100, 9, kCompressLz4, 17, std::string(64, 'z')};
    file_block0_logical = Block(4096, 'a');
    file_block0 = {5, 0, 4096, kCompressLz4, Lz4(file_block0_logical)};
    hole = {5, 4096, 4096};
    file_block2 = {5, 8192, 4096, kCompressOff, Block(4096, 'c')};
    tail = {5, 12288, kToEnd};
    zap = {6, kObjectTypeZap, 512, 0, 9, kCompressZstd, 0, ""};
    freed_high = {7, 100};
  }

  std::string Bytes() const {
    return WriteStream([this](StreamWriter& w) {
      REQUIRE(w.Begin(begin).ok());
      REQUIRE(w.Object(dir).ok());
      REQUIRE(w.Write(dir_block).ok());
      REQUIRE(w.FreeObjects(freed_low).ok());
      REQUIRE(w.Object(file).ok());
      REQUIRE(w.Write(file_block0).ok());
      REQUIRE(w.Free(hole).ok());
      REQUIRE(w.Write(file_block2).ok());
      REQUIRE(w.Free(tail).ok());
      REQUIRE(w.Object(zap).ok());
      REQUIRE(w.FreeObjects(freed_high).ok());
      REQUIRE(w.End().ok());
    });
  }
  static constexpr size_t kRecords = 12;
};

}  // namespace poolfs::core::send::testing
