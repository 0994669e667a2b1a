// Log block encoding and its checks (the layout is in log_block.h).
#include "zil/log_block.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "util/check.h"
#include "util/checksum.h"
#include "util/endian.h"

namespace poolfs::core::zil {
namespace {

constexpr size_t kChecksumOffset = 112;
constexpr size_t kKeySize = 32;

// The largest record of the format: a setxattr of the longest name and value
// (a write of kMaxInlineWrite bytes is smaller). Every record fits a block of
// the largest size.
static_assert(kRecordHeaderSize + 10 + kMaxXattrName + kMaxXattrValue + 8 <=
              kMaxLogBlockSize - kLogBlockHeaderSize);

// XXH3-128 of the block's identity (pool guid, dataset, chain id, seq, 8
// bytes each) followed by the block with its checksum field zeroed.
util::Checksum128 KeyedChecksum(std::span<const uint8_t> block, const LogBlockId& id) {
  std::vector<uint8_t> keyed(kKeySize + block.size());
  util::PutLE64(keyed.data(), id.pool_guid);
  util::PutLE64(keyed.data() + 8, id.dataset);
  util::PutLE64(keyed.data() + 16, id.chain_id);
  util::PutLE64(keyed.data() + 24, id.seq);
  std::memcpy(keyed.data() + kKeySize, block.data(), block.size());
  std::memset(keyed.data() + kKeySize + kChecksumOffset, 0, 16);
  return util::Xxh3_128(keyed.data(), keyed.size());
}

bool AllZero(std::span<const uint8_t> b) {
  for (uint8_t x : b)
    if (x != 0) return false;
  return true;
}

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

bool ValidLogBlockSize(uint64_t size) {
  return size >= kMinLogBlockSize && size <= kMaxLogBlockSize && size % kMinLogBlockSize == 0;
}

LogBlockWriter::LogBlockWriter(const LogBlockId& id, uint64_t txg, uint32_t block_size)
    : id_(id), txg_(txg), block_size_(block_size) {
  POOLFS_CHECK(ValidLogBlockSize(block_size));
  POOLFS_CHECK(txg != 0);
}

Result<bool> LogBlockWriter::Add(const LogRecord& record) {
  auto refuse = [&](const std::string& what) {
    return Status::InvalidArgument("log record seq " + Num(record.seq) + ": " + what);
  };
  if (count_ > 0 && record.seq <= last_seq_)
    return refuse("not above the block's last record seq " + Num(last_seq_));
  if (record.txg > txg_) return refuse("txg above the block's " + Num(txg_));
  const size_t used = records_.size();
  auto length = EncodeLogRecord(record, &records_);
  if (!length.ok()) return length.status();
  if (*length > block_size_ - kLogBlockHeaderSize) {
    records_.resize(used);
    return refuse("record of " + Num(*length) + " bytes never fits a log block of " +
                  Num(block_size_) + " bytes");
  }
  if (records_.size() > block_size_ - kLogBlockHeaderSize) {
    records_.resize(used);
    return false;
  }
  if (count_ == 0) first_seq_ = record.seq;
  last_seq_ = record.seq;
  count_++;
  return true;
}

std::vector<uint8_t> LogBlockWriter::Finish(const LogBlockAddress& next) const {
  POOLFS_CHECK(next == LogBlockAddress{} || ValidLogBlockSize(next.size));
  std::vector<uint8_t> block(block_size_, 0);
  uint8_t* p = block.data();
  util::PutLE64(p, kLogBlockMagic);
  util::PutLE32(p + 8, kLogBlockVersion);
  util::PutLE32(p + 12, block_size_);
  util::PutLE64(p + 16, id_.pool_guid);
  util::PutLE64(p + 24, id_.dataset);
  util::PutLE64(p + 32, id_.chain_id);
  util::PutLE64(p + 40, id_.seq);
  util::PutLE64(p + 48, txg_);
  util::PutLE64(p + 56, next.offset);
  util::PutLE32(p + 64, next.vdev);
  util::PutLE32(p + 68, next.size);
  util::PutLE32(p + 72, uint32_t(kLogBlockHeaderSize + records_.size()));
  util::PutLE32(p + 76, uint32_t(count_));
  util::PutLE64(p + 80, first_seq_);
  util::PutLE64(p + 88, last_seq_);
  std::copy(records_.begin(), records_.end(), p + kLogBlockHeaderSize);
  const util::Checksum128 sum = KeyedChecksum(block, id_);
  util::PutLE64(p + kChecksumOffset, sum.lo);
  util::PutLE64(p + kChecksumOffset + 8, sum.hi);
  return block;
}

Result<DecodedLogBlock> DecodeLogBlock(std::span<const uint8_t> bytes, const LogBlockId& expect) {
  const std::string where = "log block " + Num(expect.seq) + " of dataset " + Num(expect.dataset);
  auto not_ours = [&](const std::string& why) {
    return Status::NotFound(where + ": not the next block of chain " + Num(expect.chain_id) + " (" +
                            why + ")");
  };
  auto bad = [&](const std::string& what) { return Status::Corruption(where + ": " + what); };
  if (!ValidLogBlockSize(bytes.size()))
    return Status::InvalidArgument(where + ": " + Num(bytes.size()) +
                                   " bytes is not a log block size");
  const uint8_t* p = bytes.data();
  if (util::GetLE64(p) != kLogBlockMagic) return not_ours("no log block magic");
  const LogBlockId stored{util::GetLE64(p + 16), util::GetLE64(p + 24), util::GetLE64(p + 32),
                          util::GetLE64(p + 40)};
  if (stored.pool_guid != expect.pool_guid || stored.dataset != expect.dataset ||
      stored.chain_id != expect.chain_id || stored.seq != expect.seq)
    return not_ours("block " + Num(stored.seq) + " of chain " + Num(stored.chain_id) +
                    " of dataset " + Num(stored.dataset));
  const util::Checksum128 sum{util::GetLE64(p + kChecksumOffset),
                              util::GetLE64(p + kChecksumOffset + 8)};
  if (KeyedChecksum(bytes, expect) != sum) return not_ours("checksum mismatch");

  // The block is ours and intact as written: from here on, damage is Corruption.
  if (util::GetLE32(p + 8) != kLogBlockVersion) return bad("version " + Num(util::GetLE32(p + 8)));
  if (util::GetLE32(p + 12) != bytes.size())
    return bad("block size " + Num(util::GetLE32(p + 12)) + " in a block of " + Num(bytes.size()) +
               " bytes");
  if (!AllZero(bytes.subspan(96, 16))) return bad("nonzero reserved bytes");
  DecodedLogBlock out;
  out.txg = util::GetLE64(p + 48);
  if (out.txg == 0) return bad("txg 0");
  out.next = {util::GetLE32(p + 64), util::GetLE64(p + 56), util::GetLE32(p + 68)};
  if (!(out.next == LogBlockAddress{}) && !ValidLogBlockSize(out.next.size))
    return bad("next block of " + Num(out.next.size) + " bytes");
  const uint32_t used = util::GetLE32(p + 72);
  const uint32_t count = util::GetLE32(p + 76);
  const uint64_t first = util::GetLE64(p + 80);
  const uint64_t last = util::GetLE64(p + 88);
  if (used < kLogBlockHeaderSize || used > bytes.size())
    return bad(Num(used) + " bytes used in a block of " + Num(bytes.size()));
  if (!AllZero(bytes.subspan(used))) return bad("nonzero bytes after the " + Num(used) + " used");
  if (count == 0 ? first != 0 || last != 0 : first == 0 || first > last)
    return bad(Num(count) + " records with seqs " + Num(first) + " to " + Num(last));

  size_t off = kLogBlockHeaderSize;
  while (off < used) {
    const std::string at = where + ", record " + Num(out.records.size()) + " at byte " + Num(off);
    auto bad_record = [&](const std::string& what) { return Status::Corruption(at + ": " + what); };
    if (used - off < kRecordHeaderSize)
      return bad_record(Num(used - off) + " bytes left, less than a record header");
    const uint32_t length = util::GetLE32(p + off + 4);
    if (length < kRecordHeaderSize || length % 8 != 0 || length > used - off)
      return bad_record("length " + Num(length) + " with " + Num(used - off) + " bytes left");
    auto rec = DecodeLogRecord(bytes.subspan(off, length), at);
    if (!rec.ok()) return rec.status();
    if (out.records.empty() ? rec->seq != first : rec->seq <= out.records.back().seq)
      return bad_record("seq " + Num(rec->seq) + " out of order");
    if (rec->seq > last)
      return bad_record("seq " + Num(rec->seq) + " past the block's last " + Num(last));
    if (rec->txg > out.txg)
      return bad_record("txg " + Num(rec->txg) + " above the block's " + Num(out.txg));
    out.records.push_back(std::move(*rec));
    off += length;
  }
  if (out.records.size() != count)
    return bad(Num(out.records.size()) + " records where the header says " + Num(count));
  if (count != 0 && out.records.back().seq != last)
    return bad("last record seq " + Num(out.records.back().seq) + " where the header says " +
               Num(last));
  return out;
}

}  // namespace poolfs::core::zil
