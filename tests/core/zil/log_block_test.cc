// Log blocks: packing and decoding, the end of a chain (NotFound) told apart
// from damage inside a block that verifies (Corruption), and every one-byte
// change and truncation refused.
#include "zil/log_block.h"

#include <cstring>

#include "core/zil/sample_records.h"
#include "util/checksum.h"
#include "util/endian.h"

// After the poolfs headers (Catch2 redefines CHECK quietly as a system header).
#include <catch2/catch.hpp>

namespace poolfs::core::zil {
namespace {

const LogBlockId kId{0x9001, 3, 0xc4a1, 7};
const LogBlockAddress kNext{1, 0x40000, 8192};

LogRecord Write(uint64_t seq, uint64_t txg, size_t n) {
  return LogRecord{RecordType::kWrite, txg, seq, 20, WriteBody{seq * 4096, std::string(n, 'w')}};
}

// A 4 KiB block of three small records (seqs 10, 11, 12).
std::vector<uint8_t> SmallBlock() {
  LogBlockWriter w(kId, 6, 4096);
  REQUIRE(*w.Add(Write(10, 5, 100)));
  REQUIRE(*w.Add(LogRecord{RecordType::kLink, 5, 11, 21, EntryBody{1, "name"}}));
  REQUIRE(*w.Add(LogRecord{RecordType::kTruncate, 6, 12, 20, TruncateBody{7}}));
  return w.Finish(kNext);
}

// Recomputes the checksum of a block whose bytes were changed, written
// here from the format's rule (XXH3-128 of the 32-byte key, then the block
// with bytes 112..127 zeroed), so that the decoder sees a block that is
// ours and must judge its contents.
void Reseal(std::vector<uint8_t>& b, const LogBlockId& id = kId) {
  std::vector<uint8_t> keyed(32 + b.size());
  util::PutLE64(keyed.data(), id.pool_guid);
  util::PutLE64(keyed.data() + 8, id.dataset);
  util::PutLE64(keyed.data() + 16, id.chain_id);
  util::PutLE64(keyed.data() + 24, id.seq);
  std::memcpy(keyed.data() + 32, b.data(), b.size());
  std::memset(keyed.data() + 32 + 112, 0, 16);
  const auto sum = util::Xxh3_128(keyed.data(), keyed.size());
  util::PutLE64(b.data() + 112, sum.lo);
  util::PutLE64(b.data() + 120, sum.hi);
}

// Decodes `b` as block kId and returns the status it fails with.
Status Refusal(const std::vector<uint8_t>& b, const LogBlockId& id = kId) {
  auto d = DecodeLogBlock(b, id);
  REQUIRE(!d.ok());
  return d.status();
}

std::string Corrupt(const std::vector<uint8_t>& b) {
  Status st = Refusal(b);
  REQUIRE(st.IsCorruption());
  return st.message();
}

TEST_CASE("A log block decodes to its header and records", "[zil][block]") {
  const auto b = SmallBlock();
  REQUIRE(b.size() == 4096);
  REQUIRE(util::GetLE64(b.data()) == kLogBlockMagic);
  REQUIRE(util::GetLE64(b.data() + 40) == 7);
  auto d = DecodeLogBlock(b, kId);
  REQUIRE(d.ok());
  REQUIRE(d->txg == 6);
  REQUIRE(d->next == kNext);
  REQUIRE(d->records.size() == 3);
  REQUIRE(d->records[1] == LogRecord{RecordType::kLink, 5, 11, 21, EntryBody{1, "name"}});

  LogBlockWriter empty(kId, 1, 4096);
  auto e = DecodeLogBlock(empty.Finish({}), kId);
  REQUIRE(e.ok());
  REQUIRE(e->records.empty());
  REQUIRE(e->next.IsEnd());
}

TEST_CASE("A log block packed full decodes to every record added", "[zil][block]") {
  for (uint32_t size : {kMinLogBlockSize, 3 * kMinLogBlockSize, kMaxLogBlockSize}) {
    LogBlockWriter w(kId, 9, size);
    std::vector<LogRecord> added;
    for (uint64_t seq = 1;; seq++) {
      LogRecord r = Write(seq, 9, 200 + seq % 13);
      auto fit = w.Add(r);
      REQUIRE(fit.ok());
      if (!*fit) break;
      added.push_back(r);
    }
    REQUIRE(w.record_count() == added.size());
    const auto b = w.Finish({});
    const uint32_t used = util::GetLE32(b.data() + 72);
    REQUIRE(used > size - 264);  // the record refused needed at most 264 bytes
    auto d = DecodeLogBlock(b, kId);
    REQUIRE(d.ok());
    REQUIRE(d->records == added);
  }
  // Every sample record, in a block of the largest size where it fits.
  for (const LogRecord& r : SampleRecords(40)) {
    LogBlockWriter w(kId, 5, kMaxLogBlockSize);
    REQUIRE(*w.Add(r));
    const auto b = w.Finish(kNext);
    auto d = DecodeLogBlock(b, kId);
    REQUIRE(d.ok());
    REQUIRE(d->records == std::vector<LogRecord>{r});
  }
}

TEST_CASE("LogBlockWriter refuses records that can never fit or are out of order", "[zil][block]") {
  LogBlockWriter w(kId, 6, 4096);
  auto big = w.Add(Write(1, 5, 4096 - 128 - 44 + 1));
  REQUIRE(big.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(big.status().message().ends_with("never fits a log block of 4096 bytes"));
  REQUIRE(*w.Add(Write(1, 5, 4096 - 128 - 44)));  // exactly full
  REQUIRE(!*w.Add(LogRecord{RecordType::kTruncate, 5, 2, 1, TruncateBody{0}}));

  LogBlockWriter o(kId, 6, 4096);
  REQUIRE(*o.Add(Write(5, 5, 1)));
  REQUIRE(o.Add(Write(5, 5, 1))
              .status()
              .message()
              .ends_with("not above the block's last record seq 5"));
  REQUIRE(o.Add(Write(6, 7, 1)).status().message().ends_with("txg above the block's 6"));
  REQUIRE(o.Add(Write(6, 6, 0)).status().message().ends_with("write: data of 0 bytes"));
  REQUIRE(o.record_count() == 1);
  REQUIRE(*o.Add(Write(6, 6, 1)));
  REQUIRE(DecodeLogBlock(o.Finish({}), kId)->records.size() == 2);
}

TEST_CASE("Every one-byte change of a log block is refused", "[zil][block]") {
  const auto good = SmallBlock();
  for (size_t i = 0; i < good.size(); i++) {
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      auto b = good;
      b[i] ^= flip;
      auto d = DecodeLogBlock(b, kId);
      INFO("byte " << i << " ^ " << int(flip));
      REQUIRE(!d.ok());
      REQUIRE((d.status().IsNotFound() || d.status().IsCorruption()));
    }
  }
}

TEST_CASE("A log block cut short at any length is refused", "[zil][block]") {
  LogBlockWriter w(kId, 6, 8192);
  REQUIRE(*w.Add(Write(1, 6, 5000)));
  const auto good = w.Finish({});
  for (size_t n = 0; n < good.size(); n++) {
    auto d = DecodeLogBlock(std::span(good).first(n), kId);
    INFO("length " << n);
    REQUIRE(!d.ok());
    // 4 KiB is a block size: its bytes are not the block (NotFound);
    // every other length is no block size at all.
    REQUIRE(d.status().code() ==
            (n == 4096 ? StatusCode::kNotFound : StatusCode::kInvalidArgument));
  }
}

TEST_CASE("A block of another chain, seq, dataset or pool is the end of the chain",
          "[zil][block]") {
  const auto b = SmallBlock();
  for (LogBlockId other : {LogBlockId{kId.pool_guid, kId.dataset, kId.chain_id + 1, kId.seq},
                           LogBlockId{kId.pool_guid, kId.dataset, kId.chain_id, kId.seq + 1},
                           LogBlockId{kId.pool_guid, kId.dataset + 1, kId.chain_id, kId.seq},
                           LogBlockId{kId.pool_guid + 1, kId.dataset, kId.chain_id, kId.seq}}) {
    Status st = Refusal(b, other);
    REQUIRE(st.IsNotFound());
    REQUIRE(st.message().find("not the next block of chain") != std::string::npos);
  }
  REQUIRE(Refusal(b, {kId.pool_guid, kId.dataset, kId.chain_id + 1, kId.seq}).message() ==
          "log block 7 of dataset 3: not the next block of chain 50338 (block 7 of chain 50337 "
          "of dataset 3)");
  // Never written, or written over by something else.
  REQUIRE(Refusal(std::vector<uint8_t>(4096, 0)).message().ends_with("(no log block magic)"));
  // The identity in the header rewritten to the expected one: the key of
  // the checksum still tells the blocks apart.
  const LogBlockId old{kId.pool_guid, kId.dataset, kId.chain_id, kId.seq + 1};
  LogBlockWriter w(old, 6, 4096);
  auto stale = w.Finish({});
  util::PutLE64(stale.data() + 40, kId.seq);
  REQUIRE(Refusal(stale).message().ends_with("(checksum mismatch)"));
}

TEST_CASE("Damage inside a block that verifies is Corruption naming the record and field",
          "[zil][block]") {
  const auto good = SmallBlock();
  // Records: seq 10 at byte 128 (write of 100 bytes: 144 long), seq 11 at
  // byte 272 (link "name": 48 long), seq 12 at byte 320 (truncate: 40 long).
  auto damaged = [&](auto change) {
    auto b = good;
    change(b.data());
    Reseal(b);
    return Corrupt(b);
  };
  const std::string at = "log block 7 of dataset 3";
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 8, 2); }) == at + ": version 2");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 12, 8192); }) ==
          at + ": block size 8192 in a block of 4096 bytes");
  REQUIRE(damaged([](uint8_t* p) { p[100] = 1; }) == at + ": nonzero reserved bytes");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 48, 0); }) == at + ": txg 0");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 68, 1000); }) ==
          at + ": next block of 1000 bytes");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 72, 4097); }) ==
          at + ": 4097 bytes used in a block of 4096");
  REQUIRE(damaged([](uint8_t* p) { p[4000] = 7; }) == at + ": nonzero bytes after the 360 used");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 76, 4); }) ==
          at + ": 3 records where the header says 4");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 88, 13); }) ==
          at + ": last record seq 12 where the header says 13");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 80, 0); }) ==
          at + ": 3 records with seqs 0 to 12");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 80, 11); }) ==
          at + ", record 0 at byte 128: seq 10 out of order");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 88, 11); }) ==
          at + ", record 2 at byte 320: seq 12 past the block's last 11");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 272 + 16, 10); }) ==
          at + ", record 1 at byte 272: seq 10 out of order");
  REQUIRE(damaged([](uint8_t* p) { p[272 + 42] = '/'; }) ==
          at + ", record 1 at byte 272: link: name contains '/'");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE16(p + 272 + 40, 300); }) ==
          at + ", record 1 at byte 272: link: body runs past the record's 48 bytes");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE16(p + 272, 99); }) ==
          at + ", record 1 at byte 272: bad type 99");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 272 + 4, 37); }) ==
          at + ", record 1 at byte 272: length 37 with 88 bytes left");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE32(p + 272 + 4, 96); }) ==
          at + ", record 1 at byte 272: length 96 with 88 bytes left");
  REQUIRE(damaged([](uint8_t* p) { util::PutLE64(p + 320 + 8, 7); }) ==
          at + ", record 2 at byte 320: txg 7 above the block's 6");
  REQUIRE(damaged([](uint8_t* p) {
            util::PutLE32(p + 72, 344);
            std::memset(p + 344, 0, 16);
          }) == at + ", record 2 at byte 320: 24 bytes left, less than a record header");
  // A size over its limit, in a block that verifies: a write's data grown
  // by one byte, taken from its record's padding.
  LogBlockWriter w(kId, 6, kMaxLogBlockSize);
  REQUIRE(*w.Add(Write(10, 5, kMaxInlineWrite)));
  auto big = w.Finish({});
  util::PutLE32(big.data() + 128 + 40, kMaxInlineWrite + 1);
  big[128 + 44 + kMaxInlineWrite] = 'w';
  Reseal(big);
  REQUIRE(Corrupt(big) == at + ", record 0 at byte 128: write: data of 65537 bytes");
}

}  // namespace
}  // namespace poolfs::core::zil
