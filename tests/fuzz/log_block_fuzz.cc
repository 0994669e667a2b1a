// libFuzzer target for the intent log's decoder (core/zil/log_block.h):
// DecodeLogBlock, and through it DecodeLogRecord, expecting block 7 of chain
// 0xc4a1 of dataset 3 of pool 0x9001.
//
// Input: [mode byte][bytes...]. Mode bit 0: the bytes are padded with zeros
// to the next log block size (so a seed may stop where the records end).
// Mode bit 1: the keyed checksum is recomputed over the (padded) bytes
// before decoding, so that the fuzzer reaches the checks behind it.
//
// Properties checked (a violation aborts):
//   - decoding never crashes, and fails only with InvalidArgument (exactly
//     when the length is no log block size), NotFound (not the expected
//     block) or Corruption, naming the block ("log block 7 of dataset 3: ");
//   - a block with the expected magic and identity and a correct checksum
//     is never NotFound;
//   - the encoding is canonical: whatever decodes, packed again by
//     LogBlockWriter with the same identity, txg, size and next address,
//     gives exactly the input bytes;
//   - ReadIndirectWrites over the decoded records, with blocks made up
//     from their pointers' bytes (some unreadable, some empty, most
//     shorter than the record's range), never crashes, leaves no indirect
//     write behind, turns each it keeps into a write of exactly its
//     length, and says why it stopped exactly when it dropped records.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "util/checksum.h"
#include "util/endian.h"
#include "zil/intent_log.h"
#include "zil/log_block.h"

namespace {

using namespace poolfs::core::zil;
using poolfs::StatusCode;
using poolfs::util::GetLE64;
using poolfs::util::PutLE64;

const LogBlockId kExpect{0x9001, 3, 0xc4a1, 7};

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "log_block_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The format's checksum rule, written here from section 16 of
// core/doc/on-disk-format.md: XXH3-128 of the 32-byte key, then the block
// with bytes 112..127 zeroed.
void Reseal(std::vector<uint8_t>& b) {
  std::vector<uint8_t> keyed(32 + b.size());
  PutLE64(keyed.data(), kExpect.pool_guid);
  PutLE64(keyed.data() + 8, kExpect.dataset);
  PutLE64(keyed.data() + 16, kExpect.chain_id);
  PutLE64(keyed.data() + 24, kExpect.seq);
  std::memcpy(keyed.data() + 32, b.data(), b.size());
  std::memset(keyed.data() + 32 + 112, 0, 16);
  const auto sum = poolfs::util::Xxh3_128(keyed.data(), keyed.size());
  PutLE64(b.data() + 112, sum.lo);
  PutLE64(b.data() + 120, sum.hi);
}

bool Ours(const std::vector<uint8_t>& b) {
  return b.size() >= kLogBlockHeaderSize && GetLE64(b.data()) == kLogBlockMagic &&
         GetLE64(b.data() + 16) == kExpect.pool_guid && GetLE64(b.data() + 24) == kExpect.dataset &&
         GetLE64(b.data() + 32) == kExpect.chain_id && GetLE64(b.data() + 40) == kExpect.seq;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> block(data + 1, data + size);
  if (data[0] & 1) {
    size_t padded = kMinLogBlockSize;
    while (padded < block.size()) padded += kMinLogBlockSize;
    block.resize(padded, 0);
  }
  const bool resealed = (data[0] & 2) && ValidLogBlockSize(block.size());
  if (resealed) Reseal(block);

  auto d = DecodeLogBlock(block, kExpect);
  if (!d.ok()) {
    const poolfs::Status& st = d.status();
    if ((st.code() == StatusCode::kInvalidArgument) == ValidLogBlockSize(block.size()))
      Fail("InvalidArgument is not exactly a bad length", st.ToString());
    if (st.code() != StatusCode::kInvalidArgument && st.code() != StatusCode::kNotFound &&
        st.code() != StatusCode::kCorruption)
      Fail("undocumented status", st.ToString());
    if (st.message().rfind("log block 7 of dataset 3: ", 0) != 0 &&
        st.message().rfind("log block 7 of dataset 3, record ", 0) != 0)
      Fail("failure does not name the block", st.ToString());
    if (resealed && Ours(block) && st.code() == StatusCode::kNotFound)
      Fail("a verified block of the chain is NotFound", st.ToString());
    return 0;
  }
  LogBlockWriter w(kExpect, d->txg, uint32_t(block.size()));
  for (const LogRecord& r : d->records) {
    auto added = w.Add(r);
    if (!added.ok() || !*added)
      Fail("a decoded record is not packed again",
           added.ok() ? "does not fit" : added.status().ToString());
  }
  if (w.Finish(d->next) != block) Fail("not canonical", "re-encoding differs from the input");

  LogChain chain;
  for (const LogRecord& r : d->records) chain.records.push_back(PendingRecord{3, r, 0});
  ReadIndirectWrites(&chain, [](std::string_view ptr, std::string_view where)
                                 -> poolfs::Result<std::string> {
    if (ptr.empty() || (ptr[0] & 1)) return poolfs::Status::Corruption(std::string(where));
    return std::string(uint8_t(ptr[0]) * 16 % 4096, 'x');
  });
  if (chain.unwritten.empty() != (chain.records.size() == d->records.size()))
    Fail("ReadIndirectWrites", "dropped records without saying why, or said why for none");
  for (size_t i = 0; i < chain.records.size(); i++) {
    const LogRecord& before = d->records[i];
    const LogRecord& after = chain.records[i].record;
    if (after.type == RecordType::kWriteIndirect) Fail("ReadIndirectWrites", "left one behind");
    if (before.type != RecordType::kWriteIndirect) continue;
    const auto* write = std::get_if<WriteBody>(&after.body);
    if (after.type != RecordType::kWrite || write == nullptr ||
        write->data.size() != std::get<WriteIndirectBody>(before.body).length)
      Fail("ReadIndirectWrites", "an indirect write became something else");
  }
  return 0;
}
