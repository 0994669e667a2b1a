// ReadIndirectWrites: a chain's indirect write records become plain writes
// of the bytes their blocks hold, and the records end before the first
// whose block cannot be read or does not hold its range.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "zil/intent_log.h"

namespace poolfs::core::zil {
namespace {

PendingRecord Indirect(uint64_t seq, uint64_t offset, uint32_t length, std::string ptr) {
  LogRecord r{RecordType::kWriteIndirect, 5, seq, 9,
              WriteIndirectBody{offset, length, std::move(ptr)}};
  return PendingRecord{1, std::move(r), 0};
}

PendingRecord Truncate(uint64_t seq) {
  return PendingRecord{1, LogRecord{RecordType::kTruncate, 5, seq, 9, TruncateBody{0}}, 0};
}

// Blocks by their "pointer": a 16-byte block "A", an 8-byte "B"; any
// other pointer fails to read.
LogBlockReader Blocks() {
  return [](std::string_view ptr, std::string_view where) -> Result<std::string> {
    static const std::map<std::string, std::string, std::less<>> blocks = {
        {"A", "0123456789abcdef"}, {"B", "ABCDEFGH"}, {"empty", ""}};
    auto it = blocks.find(ptr);
    if (it == blocks.end()) return Status::Corruption(std::string(where) + ": checksum mismatch");
    return it->second;
  };
}

}  // namespace

TEST_CASE("Indirect writes become the bytes of their blocks, at the record's offset", "[zil]") {
  LogChain chain;
  chain.records = {Indirect(1, 16 + 4, 6, "A"), Truncate(2), Indirect(3, 8 * 100 + 7, 1, "B")};
  ReadIndirectWrites(&chain, Blocks());
  CHECK(chain.unwritten.empty());
  CHECK(chain.indirect == 2);
  REQUIRE(chain.records.size() == 3);
  CHECK(chain.records[0].record.type == RecordType::kWrite);
  CHECK(std::get<WriteBody>(chain.records[0].record.body) == WriteBody{20, "456789"});
  CHECK(chain.records[1].record.type == RecordType::kTruncate);
  CHECK(std::get<WriteBody>(chain.records[2].record.body) == WriteBody{807, "H"});
  CHECK(chain.records[2].record.seq == 3);
}

TEST_CASE("The records end before an indirect write whose block does not serve it", "[zil]") {
  struct Case {
    const char* what;
    PendingRecord bad;
    const char* says;
  };
  const Case cases[] = {
      {"unreadable", Indirect(3, 0, 4, "gone"), "checksum mismatch"},
      {"past its block", Indirect(3, 16 + 10, 7, "A"), "pass the end of its block of 16"},
      {"at the top of the offsets", Indirect(3, ~uint64_t{0} - 2, 4, "A"), "pass the end"},
      {"an empty block", Indirect(3, 0, 1, "empty"), "names no bytes"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    LogChain chain;
    chain.records = {Indirect(1, 0, 16, "A"), Truncate(2), c.bad, Truncate(4)};
    ReadIndirectWrites(&chain, Blocks());
    CHECK(chain.records.size() == 2);
    CHECK(chain.indirect == 1);
    CHECK(chain.unwritten.find(c.says) != std::string::npos);
    CHECK(chain.unwritten.find("intent log record 3") != std::string::npos);
  }
}

}  // namespace poolfs::core::zil
