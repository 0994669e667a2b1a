// Log records: every type round-trips, the encoder refuses what the decoder
// would, and the decoder refuses damage naming the record and the field.
#include "zil/log_record.h"

#include <sys/stat.h>

#include <set>

#include "core/zil/sample_records.h"
#include "util/endian.h"

// After the poolfs headers (Catch2 redefines CHECK quietly as a system header).
#include <catch2/catch.hpp>

namespace poolfs::core::zil {
namespace {

std::vector<uint8_t> Encode(const LogRecord& r) {
  std::vector<uint8_t> out;
  auto n = EncodeLogRecord(r, &out);
  REQUIRE(n.ok());
  REQUIRE(*n == out.size());
  return out;
}

// Decodes `bytes`, expects Corruption, and returns its message.
std::string RecordRefusal(const std::vector<uint8_t>& bytes) {
  auto r = DecodeLogRecord(bytes, "here");
  REQUIRE(!r.ok());
  REQUIRE(r.status().IsCorruption());
  return r.status().message();
}

LogRecord Link(std::string name) {
  return LogRecord{RecordType::kLink, 9, 3, 44, EntryBody{2, std::move(name)}};
}

TEST_CASE("Every log record type round-trips with edge values", "[zil][record]") {
  const auto records = SampleRecords();
  std::set<RecordType> types;
  for (const LogRecord& r : records) {
    INFO(RecordTypeName(r.type));
    const auto bytes = Encode(r);
    REQUIRE(bytes.size() % 8 == 0);
    REQUIRE(util::GetLE16(bytes.data()) == uint16_t(r.type));
    REQUIRE(util::GetLE32(bytes.data() + 4) == bytes.size());
    REQUIRE(util::GetLE64(bytes.data() + 16) == r.seq);
    auto d = DecodeLogRecord(bytes, "here");
    REQUIRE(d.ok());
    REQUIRE(*d == r);
    REQUIRE(Encode(*d) == bytes);
    types.insert(r.type);
  }
  REQUIRE(types.size() == kMaxRecordType);
}

TEST_CASE("A log record body is laid out at the documented offsets", "[zil][record]") {
  const auto b = Encode(LogRecord{RecordType::kWrite, 7, 8, 9, WriteBody{0x1122, "xyz"}});
  REQUIRE(b.size() == 48);  // 32 + 8 + 4 + 3, padded
  REQUIRE(util::GetLE64(b.data() + 8) == 7);
  REQUIRE(util::GetLE64(b.data() + 24) == 9);
  REQUIRE(util::GetLE64(b.data() + 32) == 0x1122);
  REQUIRE(util::GetLE32(b.data() + 40) == 3);
  REQUIRE(std::string(b.begin() + 44, b.begin() + 47) == "xyz");
  REQUIRE(b[47] == 0);
}

TEST_CASE("EncodeLogRecord refuses a record the decoder would refuse", "[zil][record]") {
  auto refused = [](const LogRecord& r) {
    std::vector<uint8_t> out{1, 2, 3};
    auto n = EncodeLogRecord(r, &out);
    REQUIRE(!n.ok());
    REQUIRE(n.status().code() == StatusCode::kInvalidArgument);
    REQUIRE(out.size() == 3);  // nothing appended
    return n.status().message();
  };
  REQUIRE(refused(Link(std::string(256, 'n'))) == "log record seq 3: link: name of 256 bytes");
  REQUIRE(refused(Link("")) == "log record seq 3: link: name empty");
  REQUIRE(refused(Link("a/b")).ends_with("name contains '/'"));
  REQUIRE(refused(Link(std::string("a\0b", 3))).ends_with("name contains NUL"));
  LogRecord r = Link("ok");
  r.seq = 0;
  REQUIRE(refused(r).ends_with("link: seq 0"));
  r = Link("ok");
  r.type = RecordType::kRename;
  REQUIRE(refused(r).ends_with("rename: body of another type"));
  r.type = RecordType(99);
  REQUIRE(refused(r).ends_with("bad type 99"));

  const Timespec t{};
  auto create = [&](RecordType type, uint32_t mode, uint64_t rdev, std::string target) {
    return LogRecord{type, 1, 1, 1, CreateBody{1, "f", mode, 0, 0, rdev, t, std::move(target)}};
  };
  REQUIRE(refused(create(RecordType::kCreate, S_IFDIR | 0755, 0, "")).ends_with("fit the type"));
  REQUIRE(refused(create(RecordType::kMknod, S_IFREG, 0, "")).ends_with("fit the type"));
  REQUIRE(refused(create(RecordType::kCreate, S_IFREG | 010000, 0, "")).ends_with("fit the type"));
  REQUIRE(refused(create(RecordType::kCreate, S_IFREG, 5, "")).ends_with("on a non-device"));
  REQUIRE(refused(create(RecordType::kSymlink, S_IFLNK, 0, "")).ends_with("target of 0 bytes"));
  REQUIRE(refused(create(RecordType::kSymlink, S_IFLNK, 0, std::string(4096, 't')))
              .ends_with("target of 4096 bytes"));
  REQUIRE(refused(create(RecordType::kCreate, S_IFREG, 0, "t")).ends_with("target of 1 bytes"));

  auto other = [](RecordType type, RecordBody body) { return LogRecord{type, 1, 1, 1, body}; };
  REQUIRE(refused(other(RecordType::kWrite, WriteBody{0, ""})).ends_with("data of 0 bytes"));
  REQUIRE(refused(other(RecordType::kWrite, WriteBody{0, std::string(kMaxInlineWrite + 1, 'd')}))
              .ends_with("data of 65537 bytes"));
  REQUIRE(refused(other(RecordType::kWrite, WriteBody{~uint64_t{0}, "ab"})).ends_with("2^64"));
  REQUIRE(refused(other(RecordType::kPunch, PunchBody{1, 0})).ends_with("length 0"));
  REQUIRE(refused(other(RecordType::kWriteIndirect, WriteIndirectBody{0, 1, ""}))
              .ends_with("block pointer of 0 bytes"));
  REQUIRE(refused(other(RecordType::kSetattr, SetattrBody{kSetUid, 0, 1, 2, 0, {}, {}, {}}))
              .ends_with("a field outside the mask is set"));
  REQUIRE(refused(other(RecordType::kSetattr, SetattrBody{128, 0, 0, 0, 0, {}, {}, {}}))
              .ends_with("mask 128"));
  REQUIRE(refused(other(RecordType::kSetattr,
                        SetattrBody{kSetAtime, 0, 0, 0, 0, {0, 1000000000}, {}, {}}))
              .ends_with("atime nanoseconds 1000000000"));
  REQUIRE(refused(other(RecordType::kRename, RenameBody{1, "a", 2, "b", 3})).ends_with("flags 3"));
  REQUIRE(refused(other(RecordType::kSetxattr,
                        SetxattrBody{"user.v", std::string(kMaxXattrValue + 1, 'v'), 0}))
              .ends_with("xattr value of 65537 bytes"));
  REQUIRE(refused(other(RecordType::kRemovexattr, RemovexattrBody{""})).ends_with("name empty"));
}

TEST_CASE("DecodeLogRecord refuses damage, naming the field", "[zil][record]") {
  const auto good = Encode(Link(std::string(255, 'n')));  // 32 + 10 + 255 = 297, padded to 304
  REQUIRE(good.size() == 304);

  auto b = good;
  util::PutLE16(b.data(), 99);
  REQUIRE(RecordRefusal(b) == "here: bad type 99");
  b = good;
  util::PutLE16(b.data(), 0);
  REQUIRE(RecordRefusal(b) == "here: bad type 0");
  b = good;
  util::PutLE16(b.data() + 2, 1);
  REQUIRE(RecordRefusal(b) == "here: link: flags 1 (none is defined)");
  b = good;
  util::PutLE32(b.data() + 4, 296);
  REQUIRE(RecordRefusal(b) == "here: link: length 296 in a record of 304 bytes");
  // A name one byte too long, its last byte taken from the padding.
  b = good;
  util::PutLE16(b.data() + 40, 256);
  b[297] = 'n';
  REQUIRE(RecordRefusal(b) == "here: link: name of 256 bytes");
  // A name length that runs past the record.
  b = good;
  util::PutLE16(b.data() + 40, 263);
  REQUIRE(RecordRefusal(b) == "here: link: body runs past the record's 304 bytes");
  // Garbage after the body: a whole word, and a nonzero padding byte.
  b = good;
  b.resize(312, 0);
  util::PutLE32(b.data() + 4, 312);
  REQUIRE(RecordRefusal(b) == "here: link: 8 bytes after the body");
  b = good;
  b[303] = 1;
  REQUIRE(RecordRefusal(b) == "here: link: nonzero padding at record byte 303");
  b = good;
  b[50] = '/';
  REQUIRE(RecordRefusal(b) == "here: link: name contains '/'");
  REQUIRE(RecordRefusal(std::vector<uint8_t>(good.begin(), good.begin() + 31)) ==
          "here: record of 31 bytes");
  // A truncated fixed part: a punch record cut to its header and offset.
  auto p = Encode(LogRecord{RecordType::kPunch, 1, 1, 1, PunchBody{0, 1}});
  p.resize(40);
  util::PutLE32(p.data() + 4, 40);
  REQUIRE(RecordRefusal(p) == "here: punch: body runs past the record's 40 bytes");
}

}  // namespace
}  // namespace poolfs::core::zil
