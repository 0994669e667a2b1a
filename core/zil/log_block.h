// Log blocks: the intent log's unit of writing, a header and packed records.
//
// An intent log is a chain of log blocks. Each block names the next
// one, whose place is decided before the block is written, so that a reader
// follows the chain from its first block until a block does not verify: the
// address the last written block names holds either nothing yet or an older
// block, and that is where the log ends. A block therefore proves it is
// the expected one: its header names the pool, the dataset, the chain (a
// random id drawn per chain, so that a block of an earlier chain left at the
// same address never passes) and its place in the chain (1 for the first
// block), and its checksum is keyed by all four, so a stale, misplaced or
// torn block fails.
//
// Layout (128-byte header, little-endian; section 16 of
// core/doc/on-disk-format.md has the same table and every rule):
//
//     0  u64  magic "PFSLOGB1"           8  u32  version 1
//    12  u32  block size: a multiple of 4 KiB, 4 KiB to 128 KiB
//    16  u64  pool guid                 24  u64  dataset id
//    32  u64  chain id                  40  u64  block seq (first block: 1)
//    48  u64  txg: the open txg when the block was written
//    56  u64  next block offset         64  u32  next block vdev
//    68  u32  next block size (0 with offset and vdev 0: the end of the chain)
//    72  u32  bytes used: the header and the records
//    76  u32  record count
//    80  u64  first record seq          88  u64  last record seq (0 and 0: none)
//    96  16B  reserved, zero
//   112  16B  XXH3-128 (low, high) of the block keyed by its identity
//   128  ...  records (log_record.h), then zeros to the block's end
//
// The writer packs records with LogBlockWriter; DecodeLogBlock reads a block
// back. A pool's one chain lies in a log area (intent_log.h); each block
// holds the records of the dataset its header names.
//
// Thread safety: LogBlockWriter is a value owned by one thread; the rest are
// values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "poolfs/status.h"
#include "zil/log_record.h"

namespace poolfs::core::zil {

inline constexpr uint64_t kLogBlockMagic = 0x3142474f4c534650;  // "PFSLOGB1"
inline constexpr uint32_t kLogBlockVersion = 1;
inline constexpr size_t kLogBlockHeaderSize = 128;
inline constexpr uint32_t kMinLogBlockSize = 4096;
inline constexpr uint32_t kMaxLogBlockSize = uint32_t{128} << 10;

// True for a multiple of 4 KiB from 4 KiB to 128 KiB.
bool ValidLogBlockSize(uint64_t size);

// Where a log block is: all zero names no block (the end of the chain).
struct LogBlockAddress {
  uint32_t vdev = 0;
  uint64_t offset = 0;
  uint32_t size = 0;  // a ValidLogBlockSize, or 0 for the end
  bool IsEnd() const { return size == 0; }
  bool operator==(const LogBlockAddress&) const = default;
};

// Which block of which chain: what a writer stamps on a block and what a
// reader expects of the block it reads next.
struct LogBlockId {
  uint64_t pool_guid = 0;
  uint64_t dataset = 0;
  uint64_t chain_id = 0;
  uint64_t seq = 0;  // the block's place in the chain, from 1
};

struct DecodedLogBlock {
  uint64_t txg = 0;
  LogBlockAddress next;
  std::vector<LogRecord> records;  // seqs strictly increasing, txgs <= the block's
};

// Packs records into one log block of a fixed size.
class LogBlockWriter {
 public:
  // A block `id` written in `txg` (nonzero), of `block_size` bytes (a
  // ValidLogBlockSize; anything else is a caller bug and aborts).
  LogBlockWriter(const LogBlockId& id, uint64_t txg, uint32_t block_size);

  // Appends `record` and returns true, or returns false and changes nothing
  // when it does not fit the space left (it fits an empty block of this
  // size: finish this block and start the next). Fails with InvalidArgument
  // when the record is invalid (EncodeLogRecord), larger than any block of
  // this size can hold, has a seq not above the last record's, or a txg
  // above the block's. (Records' txgs need not rise with their seqs: two
  // changes of different files may end in either order.)
  Result<bool> Add(const LogRecord& record);

  size_t record_count() const { return count_; }

  // The block's bytes: header, the records added, zeros, naming `next` (the
  // end, or an address with a ValidLogBlockSize; anything else aborts).
  std::vector<uint8_t> Finish(const LogBlockAddress& next) const;

 private:
  LogBlockId id_;
  uint64_t txg_;
  uint32_t block_size_;
  std::vector<uint8_t> records_;  // encoded, packed
  size_t count_ = 0;
  uint64_t first_seq_ = 0;
  uint64_t last_seq_ = 0;
};

// Decodes the log block `bytes`, which should be block `expect`. Fails with
//   NotFound when the bytes are not that block: no magic, another pool,
//     dataset, chain or seq, or a checksum that does not match. For a reader
//     following a chain this is its normal end, not damage.
//   Corruption when the block is that block and verifies but its contents
//     break the format: a version other than 1, bad bounds, nonzero reserved
//     or unused bytes, a next address of a bad size, a malformed record, or
//     records out of order ("log block 7 of dataset 3, record 12 at byte
//     4096: create: name of 300 bytes").
//   InvalidArgument when bytes.size() is not a ValidLogBlockSize (a caller
//     bug: block addresses carry valid sizes).
Result<DecodedLogBlock> DecodeLogBlock(std::span<const uint8_t> bytes, const LogBlockId& expect);

}  // namespace poolfs::core::zil
