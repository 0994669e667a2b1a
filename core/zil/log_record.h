// Intent log records: one change to a dataset, as the log stores it.
//
// An intent log is a chain of log blocks (log_block.h), each
// packed with records. A record says what one operation did to the
// dataset — a create, a rename, a write — with everything needed to do it
// again on top of the last synced txg: a record is written before its txg
// syncs, so that fsync can return without waiting for the sync. This file
// is their format and its checks; intent_log.h writes and replays them.
//
// Every record is a 32-byte common header and a body whose layout depends on
// its type, padded with zeros to a multiple of 8 bytes:
//
//     0  u16  type (RecordType)        2  u16  flags: none defined, zero
//     4  u32  record length in bytes, header and padding included
//     8  u64  txg: the open txg the change went into
//    16  u64  seq: the record's sequence number in the pool's log, strictly
//             increasing
//    24  u64  object: the object the record is about (the new object of a
//             create, the file written, the object linked, removed or renamed)
//    32  ...  the body (section 16 of core/doc/on-disk-format.md has every
//             body's table and rule)
//
// The encoding is canonical: a record that decodes re-encodes to the same
// bytes (reserved and padding bytes must be zero, fields a body does not use
// must be zero). EncodeLogRecord and DecodeLogRecord check the same rules,
// so what one writes the other reads.
//
// Thread safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "poolfs/fs.h"
#include "poolfs/status.h"

namespace poolfs::core::zil {

// What a record does. On-disk values: never renumber.
enum class RecordType : uint16_t {
  kCreate = 1,          // CreateBody, a regular file
  kMkdir = 2,           // CreateBody, a directory
  kMknod = 3,           // CreateBody, a fifo, socket or device
  kSymlink = 4,         // CreateBody with a target
  kLink = 5,            // EntryBody: a new name for `object`
  kUnlink = 6,          // EntryBody: the name of `object` removed
  kRmdir = 7,           // EntryBody: the directory `object` removed
  kRename = 8,          // RenameBody: `object` moved (or exchanged)
  kSetattr = 9,         // SetattrBody
  kWrite = 10,          // WriteBody: data stored in the record
  kWriteIndirect = 11,  // WriteIndirectBody: data written in place, its block pointer
  kTruncate = 12,       // TruncateBody
  kPunch = 13,          // PunchBody: a hole punched (fallocate)
  kSetxattr = 14,       // SetxattrBody
  kRemovexattr = 15,    // RemovexattrBody
};
inline constexpr uint16_t kMaxRecordType = 15;

// Returns "create", "mkdir", ...; "unknown" for any other value.
std::string_view RecordTypeName(RecordType type);

inline constexpr size_t kRecordHeaderSize = 32;
inline constexpr size_t kMaxName = 255;            // a directory entry's name
inline constexpr size_t kMaxSymlinkTarget = 4095;  // PATH_MAX - 1
inline constexpr size_t kMaxXattrName = 255;
inline constexpr size_t kMaxXattrValue = size_t{64} << 10;
// The most data a kWrite record carries; larger writes take several records.
inline constexpr size_t kMaxInlineWrite = size_t{64} << 10;
// The longest block pointer a kWriteIndirect record carries (the pool's
// encoded BlockPtrPhys: 64 or 128 bytes today).
inline constexpr size_t kMaxBlockPtrBytes = 256;

// Rename flags, the values of renameat2(2).
inline constexpr uint32_t kRenameNoReplace = 1;
inline constexpr uint32_t kRenameExchange = 2;
// Setxattr flags, the values of setxattr(2).
inline constexpr uint32_t kXattrCreate = 1;
inline constexpr uint32_t kXattrReplace = 2;

// Setattr mask bits: which of SetattrBody's fields the change set.
inline constexpr uint32_t kSetMode = 1;
inline constexpr uint32_t kSetUid = 2;
inline constexpr uint32_t kSetGid = 4;
inline constexpr uint32_t kSetSize = 8;
inline constexpr uint32_t kSetAtime = 16;
inline constexpr uint32_t kSetMtime = 32;
inline constexpr uint32_t kSetCtime = 64;
inline constexpr uint32_t kSetAll = 127;

// kCreate, kMkdir, kMknod, kSymlink. The new object is the record's
// `object`; its generation is the record's txg. `time` is the new file's
// atime, mtime, ctime and btime, and the parent's new mtime and ctime.
struct CreateBody {
  uint64_t parent = 0;
  std::string name;
  uint32_t mode = 0;  // S_IFMT bits matching the type, and 07777 bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t rdev = 0;  // character and block devices only
  Timespec time;
  std::string target;  // kSymlink only: 1..kMaxSymlinkTarget bytes
  bool operator==(const CreateBody&) const = default;
};

// kLink, kUnlink, kRmdir: the entry `name` of directory `parent`.
struct EntryBody {
  uint64_t parent = 0;
  std::string name;
  bool operator==(const EntryBody&) const = default;
};

struct RenameBody {
  uint64_t src_parent = 0;
  std::string src_name;
  uint64_t dst_parent = 0;
  std::string dst_name;
  uint32_t flags = 0;  // kRenameNoReplace or kRenameExchange, not both
  bool operator==(const RenameBody&) const = default;
};

// Fields outside `mask` are zero.
struct SetattrBody {
  uint32_t mask = 0;  // nonzero, within kSetAll
  uint32_t mode = 0;  // 07777 bits only
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  Timespec atime, mtime, ctime;
  bool operator==(const SetattrBody&) const = default;
};

struct WriteBody {
  uint64_t offset = 0;
  std::string data;  // 1..kMaxInlineWrite bytes
  bool operator==(const WriteBody&) const = default;
};

// `length` bytes at `offset` were written in place, into the block
// `block_ptr` names. The bytes are the pool's encoded block pointer; this
// codec does not read them.
struct WriteIndirectBody {
  uint64_t offset = 0;
  uint32_t length = 0;    // nonzero
  std::string block_ptr;  // 1..kMaxBlockPtrBytes bytes
  bool operator==(const WriteIndirectBody&) const = default;
};

struct TruncateBody {
  uint64_t size = 0;
  bool operator==(const TruncateBody&) const = default;
};

struct PunchBody {
  uint64_t offset = 0;
  uint64_t length = 0;  // nonzero
  bool operator==(const PunchBody&) const = default;
};

struct SetxattrBody {
  std::string name;    // 1..kMaxXattrName bytes, no NUL
  std::string value;   // at most kMaxXattrValue bytes
  uint32_t flags = 0;  // kXattrCreate or kXattrReplace, not both
  bool operator==(const SetxattrBody&) const = default;
};

struct RemovexattrBody {
  std::string name;
  bool operator==(const RemovexattrBody&) const = default;
};

using RecordBody =
    std::variant<CreateBody, EntryBody, RenameBody, SetattrBody, WriteBody, WriteIndirectBody,
                 TruncateBody, PunchBody, SetxattrBody, RemovexattrBody>;

struct LogRecord {
  RecordType type = RecordType::kCreate;
  uint64_t txg = 0;
  uint64_t seq = 0;
  uint64_t object = 0;
  RecordBody body;  // the alternative `type` names
  bool operator==(const LogRecord&) const = default;
};

// Appends the encoding of `record` to `out` and returns its length (a
// multiple of 8). Fails with InvalidArgument, appending nothing, when the
// record breaks a rule DecodeLogRecord checks: a body that is not the
// type's, an invalid name, a size over its limit.
Result<size_t> EncodeLogRecord(const LogRecord& record, std::vector<uint8_t>* out);

// Decodes the record that is exactly `bytes` (its length field must say
// bytes.size()). Refuses any damage with Corruption "<where>: <what>", e.g.
// "log block 7 of dataset 3, record 12 at byte 4096: name of 300 bytes".
Result<LogRecord> DecodeLogRecord(std::span<const uint8_t> bytes, std::string_view where);

}  // namespace poolfs::core::zil
