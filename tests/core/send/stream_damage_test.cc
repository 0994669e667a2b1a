// Send streams: the reader refuses damage of every kind (a flipped bit in
// any header field or payload byte, records dropped, swapped, repeated or
// spliced in, truncation at any byte, bytes after END, a newer version,
// unknown features, order violations) with Corruption naming the record.
#include "core/send/stream_fixture.h"

namespace poolfs::core::send {
namespace {

using testing::BeginRecord;
using testing::kToGuid;
using testing::RawStream;
using testing::ReadAll;
using testing::Rec;
using testing::RecordOffsets;
using testing::Refusal;
using testing::ResealAll;
using testing::ResealHeader;
using testing::Sample;

bool Names(const std::string& message, uint64_t index) {
  return message.find("record " + std::to_string(index) + " ") != std::string::npos;
}

// Expects `message` to name record `index` and to contain `what`.
void ExpectNamed(const std::string& message, uint64_t index, std::string_view what) {
  INFO(message);
  CHECK(Names(message, index));
  CHECK(message.find(what) != std::string::npos);
}

TEST_CASE("A flipped bit anywhere in any header is refused at that record", "[send][damage]") {
  const std::string good = Sample().Bytes();
  const std::vector<size_t> offsets = RecordOffsets(good);
  REQUIRE(offsets.size() == Sample::kRecords);
  for (size_t k = 0; k < offsets.size(); k++) {
    for (size_t byte = 0; byte < kHeaderSize; byte++) {
      for (int bit = 0; bit < 8; bit++) {
        std::string bad = good;
        bad[offsets[k] + byte] ^= char(1 << bit);
        const std::string m = Refusal(bad);
        if (!Names(m, k)) FAIL("record " << k << " byte " << byte << " bit " << bit << ": " << m);
      }
    }
  }
}

TEST_CASE("Each header field's own check names the record and the field", "[send][damage]") {
  const std::string good = Sample().Bytes();
  const size_t at = RecordOffsets(good)[2];  // WRITE object 1 offset 0
  // With the header checksum resealed, the next check in line catches the
  // change: the running checksum covers bytes 0..103.
  struct Case {
    size_t byte;
    int bit;
    const char* what;
  };
  const Case cases[] = {
      {0, 0, "magic 0x52534651"},
      {4, 3, "unknown record type 12"},
      {6, 0, "flags 0x1 set"},
      {8, 0, "running checksum mismatch"},  // payload_len
      {12, 0, "reserved bytes 12..15"},
      {16, 0, "index field is 3, expected 2"},
      {24, 0, "running checksum mismatch"},  // f0
      {80, 0, "running checksum mismatch"},  // f7
      {88, 0, "running checksum mismatch"},  // payload checksum
      {96, 0, "reserved bytes 96..103"},
      {104, 0, "running checksum mismatch"},
      {112, 0, "reserved bytes 112..119"},
  };
  for (const Case& c : cases) {
    INFO("byte " << c.byte);
    std::string bad = good;
    bad[at + c.byte] ^= char(1 << c.bit);
    ResealHeader(&bad, at);
    ExpectNamed(Refusal(bad), 2, c.what);
  }
  std::string bad = good;
  bad[at + 120] ^= 1;
  ExpectNamed(Refusal(bad), 2, "header checksum mismatch");
}

TEST_CASE("Field rules hold with every checksum resealed", "[send][damage]") {
  const std::string good = Sample().Bytes();
  const std::vector<size_t> offsets = RecordOffsets(good);
  auto edit = [&](size_t record, size_t byte, uint64_t value, int width) {
    std::string bad = good;
    auto* p = reinterpret_cast<uint8_t*>(bad.data()) + offsets[record] + byte;
    if (width == 2) util::PutLE16(p, uint16_t(value));
    if (width == 4) util::PutLE32(p, uint32_t(value));
    if (width == 8) util::PutLE64(p, value);
    ResealAll(&bad);
    return Refusal(bad);
  };
  ExpectNamed(edit(2, 80, 1, 8), 2, "unused field f7");
  ExpectNamed(edit(1, 40, 3000, 8), 1, "block size 3000");
  ExpectNamed(edit(1, 32, 1, 8), 1, "object type 1");
  ExpectNamed(edit(2, 8, 511, 4), 2, "uncompressed payload of 511 bytes");
  ExpectNamed(edit(3, 8, 1, 4), 3, "payload_len 1 exceeds 0");
  ExpectNamed(edit(2, 8, 2u << 20, 4), 2, "exceeds 1048576");
  ExpectNamed(edit(0, 4, uint16_t(RecordType::kPackage), 2), 0, "compound stream");
  ExpectNamed(edit(0, 24, 2, 8), 0, "stream version 2 is newer than this reader's (1)");
  ExpectNamed(edit(0, 32, kFeatureCompressed | 8, 8), 0, "unknown feature bits 0x8");
  ExpectNamed(edit(5, 48, kCompressZstd + 1, 8), 5, "compression 3 is unknown");
  ExpectNamed(edit(6, 40, 0, 8), 6, "length is 0");
  ExpectNamed(edit(11, 24, kToGuid + 1, 8), 11, "is not BEGIN's");
  ExpectNamed(edit(11, 32, 10, 8), 11, "counts 10 records before it, not 11");
  ExpectNamed(edit(11, 40, 1, 8), 11, "payload bytes before it");
}

TEST_CASE("A flipped payload byte is refused as a payload checksum mismatch", "[send][damage]") {
  const std::string good = Sample().Bytes();
  const std::vector<size_t> offsets = RecordOffsets(good);
  for (size_t k : {size_t{0}, size_t{4}, size_t{5}}) {  // BEGIN, an OBJECT's bonus, a lz4 WRITE
    const size_t start = offsets[k] + kHeaderSize;
    REQUIRE(start < offsets[k + 1]);
    for (size_t i = start; i < offsets[k + 1]; i++) {
      std::string bad = good;
      bad[i] ^= char(1 << (i % 8));
      ExpectNamed(Refusal(bad), k, "payload checksum mismatch");
    }
  }
}

TEST_CASE("Dropped, swapped, repeated and spliced records are refused where they are",
          "[send][damage]") {
  const std::string good = Sample().Bytes();
  const std::vector<size_t> o = RecordOffsets(good);
  auto rec = [&](size_t k) {
    const size_t end = k + 1 < o.size() ? o[k + 1] : good.size();
    return good.substr(o[k], end - o[k]);
  };
  SECTION("dropped") {
    const std::string bad = good.substr(0, o[3]) + good.substr(o[4]);
    ExpectNamed(Refusal(bad), 3, "index field is 4, expected 3");
  }
  SECTION("swapped") {
    const std::string bad = good.substr(0, o[3]) + rec(4) + rec(3) + good.substr(o[5]);
    ExpectNamed(Refusal(bad), 3, "index field is 4, expected 3");
  }
  SECTION("repeated") {
    const std::string bad = good.substr(0, o[4]) + rec(3) + good.substr(o[4]);
    ExpectNamed(Refusal(bad), 4, "index field is 3, expected 4");
  }
  SECTION("END dropped") {
    ExpectNamed(Refusal(good.substr(0, o[11])), 10, "truncated after record 10 (FREEOBJECTS");
  }
  SECTION("spliced in from another stream of the same shape") {
    Sample other;
    other.begin.to_guid = kToGuid + 1;
    const std::string theirs = other.Bytes();
    const std::vector<size_t> t = RecordOffsets(theirs);
    REQUIRE(t == o);
    // Record 2 is byte for byte the same but for its running checksum.
    const std::string bad =
        good.substr(0, o[2]) + theirs.substr(t[2], t[3] - t[2]) + good.substr(o[3]);
    ExpectNamed(Refusal(bad), 2, "running checksum mismatch");
  }
  SECTION("dropped, and everything after it renumbered and resealed: END's count") {
    std::string bad = good.substr(0, o[3]) + good.substr(o[4]);
    const std::vector<size_t> b = RecordOffsets(bad);
    for (size_t k = 3; k < b.size(); k++)
      util::PutLE64(reinterpret_cast<uint8_t*>(bad.data()) + b[k] + 16, k);
    ResealAll(&bad);
    ExpectNamed(Refusal(bad), 10, "counts 11 records before it, not 10");
  }
}

TEST_CASE("Truncation at every byte is refused, naming where", "[send][damage]") {
  const std::string good = Sample().Bytes();
  const std::vector<size_t> o = RecordOffsets(good);
  size_t k = 0;  // the record the cut falls in
  for (size_t cut = 0; cut < good.size(); cut++) {
    while (k + 1 < o.size() && cut >= o[k + 1]) k++;
    INFO("cut at " << cut);
    const std::string m = Refusal(std::string_view(good).substr(0, cut));
    if (cut == 0) {
      CHECK(m.find("empty") != std::string::npos);
    } else if (cut == o[k]) {
      ExpectNamed(m, k - 1, "truncated after record " + std::to_string(k - 1));
    } else if (cut < o[k] + kHeaderSize) {
      ExpectNamed(m, k, "truncated in the header of record " + std::to_string(k));
    } else {
      ExpectNamed(m, k, "truncated in the payload of record " + std::to_string(k));
    }
  }
  CHECK(ReadAll(good).ok());
}

TEST_CASE("Bytes after END are refused", "[send][damage]") {
  const std::string good = Sample().Bytes();
  for (const std::string& tail : {std::string(1, '\0'), std::string("x"), good}) {
    ExpectNamed(Refusal(good + tail), 11, "bytes after the END record");
  }
}

TEST_CASE("A newer version, unknown features and a reserved type are refused saying which",
          "[send][damage]") {
  Record b = BeginRecord();
  b.f[0] = 2;
  ExpectNamed(Refusal(RawStream({b})), 0, "stream version 2 is newer than this reader's (1)");
  b = BeginRecord(uint64_t{1} << 63);
  ExpectNamed(Refusal(RawStream({b})), 0, "unknown feature bits 0x8000000000000000");
  b = BeginRecord();
  b.type = RecordType::kPackage;
  ExpectNamed(Refusal(RawStream({b})), 0, "compound stream");
  b = BeginRecord();
  b.flags = 2;
  ExpectNamed(Refusal(RawStream({b})), 0, "flags 0x2 set");
}

// Small records for order tests (object 1..; block size 512 unless given).
Record Obj(uint64_t i, uint64_t id, uint64_t bs = 512) {
  return Rec(RecordType::kObject, i, {id, kObjectTypePlain, bs, 0, 1, 0, 0, 0});
}
Record Wr(uint64_t i, uint64_t id, uint64_t off, uint64_t bs = 512, uint64_t comp = 0) {
  return Rec(RecordType::kWrite, i, {id, off, bs, comp, 0, 0, 0, 0},
             std::string(comp == 0 ? bs : 10, 'w'));
}
Record Fr(uint64_t i, uint64_t id, uint64_t off, uint64_t len) {
  return Rec(RecordType::kFree, i, {id, off, len, 0, 0, 0, 0, 0});
}
Record FrObjs(uint64_t i, uint64_t first, uint64_t count) {
  return Rec(RecordType::kFreeObjects, i, {first, count, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("OBJECT's NEW flag is read, and any other flag refused", "[send][damage]") {
  Record o = Obj(1, 1);
  o.flags = kObjectNew;
  auto fresh = DecodeObject(o);
  REQUIRE(fresh.ok());
  CHECK(fresh->fresh);
  const Record end =
      Rec(RecordType::kEnd, 2, {kToGuid, 2, BeginRecord().payload.size(), 0, 0, 0, 0, 0});
  auto read = ReadAll(RawStream({BeginRecord(), o, end}));
  INFO(read.status().ToString());
  REQUIRE(read.ok());
  CHECK((*read)[1].flags == kObjectNew);
  o.flags = kObjectNew | 4;
  ExpectNamed(Refusal(RawStream({BeginRecord(), o})), 1, "only 0x1 is defined for OBJECT");
  Record w = Wr(2, 1, 0);
  w.flags = kObjectNew;
  ExpectNamed(Refusal(RawStream({BeginRecord(), Obj(1, 1), w})), 2, "none is defined for WRITE");
}

TEST_CASE("Order violations are refused naming the record", "[send][damage]") {
  const Record b = BeginRecord();
  ExpectNamed(Refusal(RawStream({Obj(0, 1)})), 0, "does not start with BEGIN");
  ExpectNamed(Refusal(RawStream({b, Wr(1, 1, 0)})), 1, "no object is open");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 1), Wr(2, 1, 1024), Wr(3, 1, 512)})), 3,
              "offset 512 is below 1536");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 1), Wr(2, 1, 512), Wr(3, 1, 512)})), 3,
              "offset 512 is below 1024");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 1), Fr(2, 1, 0, 1000), Fr(3, 1, 999, 5)})), 3,
              "offset 999 is below 1000");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 1), Fr(2, 1, 0, 1000), Wr(3, 1, 512)})), 3,
              "offset 512 is below 1000");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 1), Fr(2, 1, 0, kToEnd), Fr(3, 1, 1 << 20, 1)})), 3,
              "after a FREE to the end");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5), Obj(2, 3)})), 2, "object 3 is below 6");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5), Obj(2, 5)})), 2, "object 5 is below 6");
  ExpectNamed(Refusal(RawStream({b, FrObjs(1, 1, 10), Obj(2, 5)})), 2, "object 5 is below 11");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5), FrObjs(2, 2, 10)})), 2, "first object 2 is below 6");
  ExpectNamed(Refusal(RawStream({b, FrObjs(1, 10, 10), FrObjs(2, 15, 1)})), 2,
              "first object 15 is below 20");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5), FrObjs(2, 6, 1), Wr(3, 5, 0)})), 3,
              "no object is open");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5), Wr(2, 6, 0)})), 2, "open object is 5");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5, 4096), Wr(2, 5, 0, 512)})), 2,
              "not the object's block size 4096");
  ExpectNamed(Refusal(RawStream({b, Obj(1, 5), Wr(2, 5, 0, 512, kCompressLz4)})), 2,
              "without the COMPRESSED feature");
  Record second = BeginRecord();
  second.index = 1;
  ExpectNamed(Refusal(RawStream({b, second})), 1, "second BEGIN");
  ExpectNamed(
      Refusal(RawStream({b, Rec(RecordType::kEnd, 1, {kToGuid, 1, b.payload.size()}), Obj(2, 1)})),
      1, "bytes after the END record");

  Record resuming = BeginRecord(kFeatureResuming);
  resuming.f[6] = 5;
  resuming.f[7] = 1024;
  ExpectNamed(Refusal(RawStream({resuming, Obj(1, 4)})), 1, "before the resume point");
  ExpectNamed(Refusal(RawStream({resuming, Obj(1, 5), Wr(2, 5, 512)})), 2, "below 1024");
  // Past the resume object, offsets start at 0 again.
  const std::string ok =
      RawStream({resuming, Obj(1, 5), Wr(2, 5, 1024), Obj(3, 6), Wr(4, 6, 0),
                 Rec(RecordType::kEnd, 5, {kToGuid, 5, resuming.payload.size() + 1024})});
  CHECK(ReadAll(ok).ok());
}

}  // namespace
}  // namespace poolfs::core::send
