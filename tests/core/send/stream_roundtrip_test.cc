// Send streams: what the writer writes the reader gives back, field for
// field, whatever the chunking of the input; the writer refuses every call
// that would make a stream the reader refuses, and writes nothing for it.
#include "core/send/stream_fixture.h"

namespace poolfs::core::send {
namespace {

using testing::FullBegin;
using testing::kFromGuid;
using testing::kToGuid;
using testing::ReadAll;
using testing::Sample;
using testing::SourceOf;
using testing::WriteStream;

TEST_CASE("A stream with every record type round-trips in any chunking", "[send][stream]") {
  const Sample s;
  const std::string bytes = s.Bytes();
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{128}, size_t{4096}, SIZE_MAX}) {
    INFO("chunk " << chunk);
    Result<std::vector<Record>> got = ReadAll(bytes, chunk);
    REQUIRE(got.ok());
    const std::vector<Record>& r = *got;
    REQUIRE(r.size() == Sample::kRecords);
    for (size_t i = 0; i < r.size(); i++) CHECK(r[i].index == i);
    CHECK(*DecodeBegin(r[0]) == s.begin);
    CHECK(*DecodeObject(r[1]) == s.dir);
    CHECK(*DecodeWrite(r[2]) == s.dir_block);
    CHECK(*DecodeFreeObjects(r[3]) == s.freed_low);
    CHECK(*DecodeObject(r[4]) == s.file);
    CHECK(*DecodeWrite(r[5]) == s.file_block0);
    CHECK(*DecodeFree(r[6]) == s.hole);
    CHECK(*DecodeWrite(r[7]) == s.file_block2);
    CHECK(*DecodeFree(r[8]) == s.tail);
    CHECK(*DecodeObject(r[9]) == s.zap);
    CHECK(*DecodeFreeObjects(r[10]) == s.freed_high);
    uint64_t payload = 0;
    for (size_t i = 0; i + 1 < r.size(); i++) payload += r[i].payload.size();
    CHECK(*DecodeEnd(r[11]) == EndInfo{kToGuid, 11, payload});
    // The compressed block decodes to its logical bytes; the others are theirs.
    CHECK(*LogicalBytes(r[5]) == s.file_block0_logical);
    CHECK(*LogicalBytes(r[7]) == s.file_block2.data);
  }
}

TEST_CASE("The reader returns nothing more after END, and counts its bytes", "[send][stream]") {
  const std::string bytes = Sample().Bytes();
  StreamReader reader(SourceOf(bytes));
  CHECK(!reader.begin().has_value());
  for (size_t i = 0; i < Sample::kRecords; i++) {
    auto r = reader.Next();
    REQUIRE(r.ok());
    REQUIRE(r->has_value());
    if (i == 0) {
      REQUIRE(reader.begin().has_value());
      CHECK(reader.begin()->dataset == "tank/home");
    }
  }
  for (int i = 0; i < 3; i++) {
    auto r = reader.Next();
    REQUIRE(r.ok());
    CHECK(!r->has_value());
  }
  CHECK(reader.bytes() == bytes.size());
}

TEST_CASE("An incremental resuming stream round-trips", "[send][stream]") {
  BeginInfo b = FullBegin(kFeatureResuming);
  b.from_guid = kFromGuid;
  b.from = "sunday";
  b.resume_object = 5;
  b.resume_offset = 8192;
  b.props = {{"atime", "off"}};
  const ObjectInfo file{5, kObjectTypePlain, 4096, 20000, 3, kCompressOff, 0, ""};
  const WriteInfo block{5, 8192, 4096, kCompressOff, std::string(4096, 'x')};
  const std::string bytes = WriteStream([&](StreamWriter& w) {
    REQUIRE(w.Begin(b).ok());
    REQUIRE(w.Object(file).ok());
    REQUIRE(w.Write(block).ok());
    REQUIRE(w.FreeObjects({6, 10}).ok());
    REQUIRE(w.End().ok());
  });
  auto got = ReadAll(bytes);
  REQUIRE(got.ok());
  REQUIRE(got->size() == 5);
  CHECK(*DecodeBegin((*got)[0]) == b);
  CHECK(*DecodeObject((*got)[1]) == file);
  CHECK(*DecodeWrite((*got)[2]) == block);
  CHECK(*DecodeEnd((*got)[4]) == EndInfo{kToGuid, 4, bytes.size() - 5 * kHeaderSize});
}

TEST_CASE("A stream of BEGIN and END alone round-trips", "[send][stream]") {
  const std::string bytes = WriteStream([](StreamWriter& w) {
    REQUIRE(w.Begin(FullBegin()).ok());
    REQUIRE(w.End().ok());
  });
  auto got = ReadAll(bytes);
  REQUIRE(got.ok());
  REQUIRE(got->size() == 2);
  CHECK(DecodeEnd((*got)[1])->records == 1);
}

TEST_CASE("Names are carried whatever bytes the name rules allow", "[send][stream]") {
  // A newline is a valid byte of a dataset name: the payload is
  // length-prefixed, not lines.
  BeginInfo b = FullBegin();
  b.dataset = "tank/a\nb/" + std::string(255, 'c');
  b.snapshot = "s=1\n";
  b.props = {{"a", ""}, {"b", std::string(kMaxPropertyValue, 'v')}};
  const std::string bytes = WriteStream([&](StreamWriter& w) {
    REQUIRE(w.Begin(b).ok());
    REQUIRE(w.End().ok());
  });
  auto got = ReadAll(bytes);
  REQUIRE(got.ok());
  CHECK(*DecodeBegin((*got)[0]) == b);
}

// A writer into a string that counts sink calls.
struct CountingWriter {
  std::string out;
  int calls = 0;
  StreamWriter w{[this](std::string_view b) {
    calls++;
    out += b;
    return Status::Ok();
  }};
};

// Expects InvalidArgument and nothing written.
void ExpectRefused(const Status& st, std::string_view what) {
  INFO(st.ToString());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find(what) != std::string::npos);
}

TEST_CASE("The writer refuses out-of-order calls and writes nothing for them", "[send][stream]") {
  CountingWriter c;
  ExpectRefused(c.w.Object({1, kObjectTypePlain, 512, 0, 1, 0, 0, ""}), "start with BEGIN");
  ExpectRefused(c.w.End(), "start with BEGIN");
  CHECK(c.calls == 0);
  REQUIRE(c.w.Begin(FullBegin()).ok());
  const int after_begin = c.calls;
  const std::string block(4096, 'q');
  ExpectRefused(c.w.Begin(FullBegin()), "second BEGIN");
  ExpectRefused(c.w.Write({5, 0, 4096, 0, block}), "no object is open");
  REQUIRE(c.w.Object({5, kObjectTypePlain, 4096, 0, 1, 0, 0, ""}).ok());
  ExpectRefused(c.w.Object({3, kObjectTypePlain, 4096, 0, 1, 0, 0, ""}), "below 6");
  ExpectRefused(c.w.Object({5, kObjectTypePlain, 4096, 0, 1, 0, 0, ""}), "below 6");
  ExpectRefused(c.w.FreeObjects({5, 1}), "below 6");
  ExpectRefused(c.w.Write({4, 0, 4096, 0, block}), "open object is 5");
  REQUIRE(c.w.Write({5, 8192, 4096, 0, block}).ok());
  ExpectRefused(c.w.Write({5, 4096, 4096, 0, block}), "below 12288");
  ExpectRefused(c.w.Write({5, 8192, 4096, 0, block}), "below 12288");
  ExpectRefused(c.w.Free({5, 12287, 10}), "below 12288");
  ExpectRefused(c.w.Write({5, 16384, 8192, 0, std::string(8192, 'q')}), "block size 4096");
  ExpectRefused(c.w.Write({5, 12288, 4096, kCompressLz4, "abc"}), "COMPRESSED feature");
  ExpectRefused(c.w.Write({5, 12288, 4096, 0, "short"}), "uncompressed payload");
  ExpectRefused(c.w.Write({5, 12289, 4096, 0, block}), "not a multiple");
  REQUIRE(c.w.Free({5, 12288, kToEnd}).ok());
  ExpectRefused(c.w.Write({5, 1 << 20, 4096, 0, block}), "FREE to the end");
  ExpectRefused(c.w.Free({5, 1 << 20, 1}), "FREE to the end");
  ExpectRefused(c.w.Object({6, 9, 4096, 0, 1, 0, 0, ""}), "object type 9");
  ExpectRefused(c.w.Object({6, kObjectTypePlain, 3000, 0, 1, 0, 0, ""}), "block size 3000");
  ExpectRefused(c.w.Object({6, kObjectTypePlain, 512, 0, 0, 0, 0, ""}), "generation is 0");
  ExpectRefused(c.w.Object({6, kObjectTypePlain, 512, 0, 1, 0, 0, std::string(385, 'b')}),
                "exceeds 384");
  ExpectRefused(c.w.FreeObjects({6, 0}), "count is 0");
  ExpectRefused(c.w.FreeObjects({6, kMaxObjectId}), "passes 2^48");
  REQUIRE(c.w.End().ok());
  ExpectRefused(c.w.End(), "after the END");
  ExpectRefused(c.w.FreeObjects({100, 1}), "after the END");
  // Every refusal left the stream as it was: it reads back whole.
  CHECK(c.calls == after_begin + 5);
  auto got = ReadAll(c.out);
  REQUIRE(got.ok());
  CHECK(got->size() == 5);
}

TEST_CASE("The writer refuses a BEGIN the reader would refuse", "[send][stream]") {
  auto refused = [](BeginInfo b, std::string_view what) {
    CountingWriter c;
    ExpectRefused(c.w.Begin(b), what);
    CHECK(c.calls == 0);
  };
  BeginInfo b = FullBegin();
  b.version = 2;
  refused(b, "version");
  b = FullBegin(1u << 2);
  refused(b, "unknown feature bits 0x4");
  b = FullBegin();
  b.to_guid = 0;
  refused(b, "to_guid is 0");
  b = FullBegin();
  b.dataset = "tank/a@b";
  refused(b, "contains '@'");
  b.dataset = "tank/../x";
  refused(b, "'..' cannot be");
  b.dataset = "tank//x";
  refused(b, "1 to 255 bytes, not 0");
  b.dataset = "tank/" + std::string(1020, 'x');
  refused(b, "too long");
  b = FullBegin();
  b.snapshot = "";
  refused(b, "snapshot name");
  b.snapshot = "a%b";
  refused(b, "contains '%'");
  b = FullBegin();
  b.from = "sunday";  // a full stream (from_guid 0)
  refused(b, "incremental");
  b = FullBegin();
  b.from_guid = kFromGuid;  // no from name
  refused(b, "incremental");
  b = FullBegin();
  b.props = {{"b", "1"}, {"a", "2"}};
  refused(b, "strictly increasing");
  b.props = {{"a", "1"}, {"a", "2"}};
  refused(b, "strictly increasing");
  b.props = {{"Upper", "1"}};
  refused(b, "outside [a-z0-9_.:-]");
  b.props = {{"a", std::string("x\0y", 3)}};
  refused(b, "NUL");
  b = FullBegin();
  b.resume_object = 3;
  refused(b, "without the RESUMING feature");
  b = FullBegin(kFeatureResuming);
  refused(b, "resume object 0");
}

TEST_CASE("A resuming stream starts at its resume point", "[send][stream]") {
  BeginInfo b = FullBegin(kFeatureResuming);
  b.resume_object = 5;
  b.resume_offset = 8192;
  const std::string block(4096, 'r');
  CountingWriter c;
  REQUIRE(c.w.Begin(b).ok());
  ExpectRefused(c.w.Object({4, kObjectTypePlain, 4096, 0, 1, 0, 0, ""}), "resume point");
  ExpectRefused(c.w.FreeObjects({1, 10}), "resume point");
  REQUIRE(c.w.Object({5, kObjectTypePlain, 4096, 0, 1, 0, 0, ""}).ok());
  ExpectRefused(c.w.Write({5, 4096, 4096, 0, block}), "below 8192");
  REQUIRE(c.w.Write({5, 8192, 4096, 0, block}).ok());
  REQUIRE(c.w.End().ok());
  CHECK(ReadAll(c.out).ok());
}

TEST_CASE("The writer stops at the sink's first error", "[send][stream]") {
  int calls = 0;
  StreamWriter w([&calls](std::string_view) {
    return ++calls == 2 ? Status::IOError("pipe closed") : Status::Ok();
  });
  // BEGIN is a header and a payload: two calls, the second fails.
  Status st = w.Begin(FullBegin());
  CHECK(st.code() == StatusCode::kIOError);
  Status again = w.End();
  CHECK(again.code() == StatusCode::kIOError);
  CHECK(again.message() == "pipe closed");
  CHECK(calls == 2);
}

TEST_CASE("The source's error passes through the reader", "[send][stream]") {
  const std::string bytes = Sample().Bytes();
  size_t served = 0;
  StreamReader reader([&](std::span<char> out) -> Result<size_t> {
    if (served >= 300) return Status::IOError("disk gone");
    const size_t n = std::min<size_t>(out.size(), 100);
    std::memcpy(out.data(), bytes.data() + served, n);
    served += n;
    return n;
  });
  Status st;
  for (;;) {
    auto r = reader.Next();
    if (!r.ok()) {
      st = r.status();
      break;
    }
    REQUIRE(r->has_value());
  }
  CHECK(st.code() == StatusCode::kIOError);
  CHECK(st.message() == "disk gone");
}

TEST_CASE("LogicalBytes refuses a payload that does not decode to the logical length",
          "[send][stream]") {
  const std::string half = testing::Block(2048, 'h');
  Record r = testing::Rec(RecordType::kWrite, 3, {5, 0, 4096, kCompressLz4, 0, 0, 0, 0},
                          testing::Lz4(half));
  auto got = LogicalBytes(r);
  REQUIRE(!got.ok());
  CHECK(got.status().IsCorruption());
  CHECK(got.status().message().find("record 3 (WRITE object 5 offset 0)") != std::string::npos);
  r.f[2] = 2048;
  CHECK(*LogicalBytes(r) == half);
  r.payload = "garbage!";
  CHECK(LogicalBytes(r).status().IsCorruption());
  r.f[3] = kCompressZstd;
  CHECK(LogicalBytes(r).status().IsCorruption());
}

TEST_CASE("Typed decoders refuse a record of another type", "[send][stream]") {
  const Record begin = testing::BeginRecord();
  CHECK(DecodeBegin(begin).ok());
  CHECK(DecodeObject(begin).status().IsCorruption());
  CHECK(DecodeWrite(begin).status().IsCorruption());
  CHECK(DecodeFree(begin).status().IsCorruption());
  CHECK(DecodeFreeObjects(begin).status().IsCorruption());
  CHECK(DecodeEnd(begin).status().IsCorruption());
  CHECK(LogicalBytes(begin).status().IsCorruption());
}

}  // namespace
}  // namespace poolfs::core::send

namespace poolfs::core::send {
namespace {

TEST_CASE("The spec's worked example is what the writer writes", "[send][stream]") {
  // core/doc/send-stream-format.md, section 8.
  BeginInfo b;
  b.to_guid = 0x1122334455667788ull;
  b.to_txg = 42;
  b.creation_time = 1764892800;
  b.dataset = "tank/home";
  b.snapshot = "monday";
  std::string block(512, '\0');
  block.replace(0, 5, "hello");
  const std::string s = WriteStream([&](StreamWriter& w) {
    REQUIRE(w.Begin(b).ok());
    REQUIRE(w.Object({2, kObjectTypePlain, 512, 5, 40, kCompressLz4, 0, ""}).ok());
    REQUIRE(w.Write({2, 0, 512, kCompressOff, block}).ok());
    REQUIRE(w.End().ok());
  });
  REQUIRE(s.size() == 1062);
  CHECK(testing::RecordOffsets(s) == std::vector<size_t>{0, 166, 294, 934});
  const uint8_t write_header[kHeaderSize] = {
      0x50, 0x46, 0x53, 0x52, 0x04, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x41, 0x08,
      0x01, 0x6e, 0x55, 0xce, 0xce, 0x87, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x57,
      0xc8, 0x99, 0x2e, 0xb0, 0x26, 0x1a, 0x76, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x57, 0xc6, 0xb4, 0xb4, 0x5e, 0xcb, 0x6f, 0x7f};
  CHECK(s.substr(294, kHeaderSize) ==
        std::string(reinterpret_cast<const char*>(write_header), kHeaderSize));
  // END's running checksum R(3).
  CHECK(util::GetLE64(reinterpret_cast<const uint8_t*>(s.data()) + 934 + 104) ==
        0x73187f40c8fa042cull);
  CHECK(util::Xxh3_64("", 0) == 0x2d06800538d394c2ull);  // the empty payload's checksum
}

}  // namespace
}  // namespace poolfs::core::send

namespace poolfs::core::send::testing {
namespace {

// A compound stream: the PACKAGE of `info`, then for each of its entries a
// stream of BEGIN and END alone, chained (or not, with `chain` false).
std::string Compound(const PackageInfo& info, bool chain = true) {
  std::string out;
  auto sink = [&out](std::string_view b) {
    out += b;
    return Status::Ok();
  };
  auto running = WritePackage(info, sink);
  REQUIRE(running.ok());
  uint64_t at = *running;
  for (const PackageEntry& e : info.streams) {
    StreamWriter w(sink, chain ? at : kRunningSeed);
    BeginInfo b;
    b.to_guid = e.to_guid;
    b.from_guid = e.from_guid;
    b.dataset = e.path.empty() ? info.dataset : info.dataset + "/" + e.path;
    b.snapshot = "s";
    if (e.from_guid != 0) b.from = "r";
    REQUIRE(w.Begin(b).ok());
    REQUIRE(w.End().ok());
    at = w.running();
  }
  return out;
}

Result<std::vector<Record>> ReadPackaged(std::string_view bytes) {
  StreamReader reader(SourceOf(bytes, 100), ReaderOptions{.packages = true});
  std::vector<Record> out;
  for (;;) {
    auto r = reader.Next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) return out;
    out.push_back(std::move(**r));
  }
}

TEST_CASE("A compound stream reads as its PACKAGE and the streams it lists, in order",
          "[send][stream][package]") {
  PackageInfo info;
  info.dataset = "tank/home";
  info.streams = {{"", 11, 0}, {"", 12, 11}, {"kid/grand", 21, 0}};
  const std::string bytes = Compound(info);
  auto read = ReadPackaged(bytes);
  INFO(read.status().ToString());
  REQUIRE(read.ok());
  REQUIRE(read->size() == 7);
  CHECK((*read)[0].type == RecordType::kPackage);
  CHECK((*read)[1].type == RecordType::kBegin);
  CHECK((*read)[6].type == RecordType::kEnd);
  auto back = DecodePackagePayload((*read)[0].payload, "here");
  REQUIRE(back.ok());
  CHECK(*back == info);

  // Cut between two streams, or anywhere: refused, saying how many came.
  PackageInfo two = info;
  two.streams.pop_back();
  const size_t third =
      Compound(two).size() + (EncodePackagePayload(info).size() - EncodePackagePayload(two).size());
  auto cut = ReadPackaged(bytes.substr(0, third));
  CHECK_THAT(cut.status().message(), Catch::Contains("the package lists 3 streams, 2 came"));
  for (size_t len = 1; len < bytes.size(); len += 37)
    CHECK(ReadPackaged(bytes.substr(0, len)).status().code() == StatusCode::kCorruption);
  // Bytes after the last stream.
  CHECK(ReadPackaged(bytes + "x").status().code() == StatusCode::kCorruption);
  // Streams not chained to the package, or not the ones it lists.
  CHECK_THAT(ReadPackaged(Compound(info, false)).status().message(),
             Catch::Contains("running checksum mismatch"));
  PackageInfo other = info;
  other.streams[1].to_guid = 13;
  std::string mixed = Compound(other);
  // The listing says 12, the stream is 13: resealing the package alone
  // cannot help, the chain runs through it.
  const std::string head =
      Compound(info).substr(0, kHeaderSize + EncodePackagePayload(info).size());
  CHECK(ReadPackaged(head + mixed.substr(head.size())).status().code() == StatusCode::kCorruption);
  // A PACKAGE is refused by a reader of one stream, and inside a stream.
  StreamReader plain(SourceOf(bytes));
  auto first = plain.Next();
  CHECK_THAT(first.status().message(), Catch::Contains("compound stream"));
}

TEST_CASE("The PACKAGE payload decoder refuses every bad listing", "[send][stream][package]") {
  PackageInfo good;
  good.dataset = "tank/home";
  good.streams = {{"", 1, 0}, {"a/b", 2, 0}};
  REQUIRE(DecodePackagePayload(EncodePackagePayload(good), "p").ok());
  struct Bad {
    std::function<void(PackageInfo&)> change;
    const char* says;
  };
  const Bad bad[] = {
      {[](PackageInfo& p) { p.dataset.clear(); }, "the dataset name"},
      {[](PackageInfo& p) { p.streams[0].to_guid = 0; }, "to_guid 0"},
      {[](PackageInfo& p) { p.streams[1] = p.streams[0]; }, "repeats"},
      {[](PackageInfo& p) { p.streams[1].path = "/a"; }, "not a dataset path"},
      {[](PackageInfo& p) { p.streams[1].path = "a//b"; }, "not a dataset path"},
      {[](PackageInfo& p) { p.streams[1].path = "a@b"; }, "not a dataset path"},
      {[](PackageInfo& p) { p.streams.clear(); }, "lists no stream"},
  };
  for (const Bad& b : bad) {
    PackageInfo p = good;
    b.change(p);
    auto r = DecodePackagePayload(EncodePackagePayload(p), "p");
    INFO(b.says);
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK_THAT(r.status().message(), Catch::Contains(b.says));
  }
  const std::string bytes = EncodePackagePayload(good);
  for (size_t len = 0; len < bytes.size(); len++)
    if (len != EncodePackagePayload({good.dataset, {good.streams[0]}}).size())  // one entry: good
      CHECK_FALSE(DecodePackagePayload(bytes.substr(0, len), "p").ok());
}

}  // namespace
}  // namespace poolfs::core::send::testing
