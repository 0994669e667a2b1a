// One record of every type, with edge values (the longest names, target,
// value and inline data; offsets that end at 2^64 - 1; negative and maximal
// times), for the zil tests and the log block corpus generator.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "zil/log_record.h"

namespace poolfs::core::zil {

// Records of every type, seqs 1, 2, ... and txg 5 (record i of the list
// gets seq first_seq + i).
inline std::vector<LogRecord> SampleRecords(uint64_t first_seq = 1) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const std::string longest(kMaxName, 'n');
  const Timespec t{-1, 999999999};
  std::vector<std::pair<RecordType, RecordBody>> bodies = {
      {RecordType::kCreate, CreateBody{1, longest, S_IFREG | 07777, 1000, 100, 0, t, ""}},
      {RecordType::kMkdir, CreateBody{kMax, "d", S_IFDIR | 0755, kMax >> 32, 0, 0, {}, ""}},
      {RecordType::kMknod, CreateBody{2, "dev", S_IFBLK | 0600, 0, 0, kMax, t, ""}},
      {RecordType::kMknod, CreateBody{2, "fifo", S_IFIFO | 0600, 0, 0, 0, t, ""}},
      {RecordType::kSymlink,
       CreateBody{3, "l", S_IFLNK | 0777, 0, 0, 0, {1 << 30, 0}, std::string(4095, 't')}},
      {RecordType::kLink, EntryBody{4, "a name with spaces\n"}},
      {RecordType::kUnlink, EntryBody{5, longest}},
      {RecordType::kRmdir, EntryBody{6, "."}},
      {RecordType::kRename, RenameBody{7, "from", 8, longest, kRenameExchange}},
      {RecordType::kRename, RenameBody{7, "x", 7, "y", 0}},
      {RecordType::kSetattr, SetattrBody{kSetAll, 07777, 1, 2, kMax, t, {0, 1}, {kMax >> 1, 0}}},
      {RecordType::kSetattr, SetattrBody{kSetSize, 0, 0, 0, 12345, {}, {}, {}}},
      {RecordType::kWrite, WriteBody{kMax - 3, "abc"}},
      {RecordType::kWrite, WriteBody{0, std::string(kMaxInlineWrite, '\xa5')}},
      {RecordType::kWriteIndirect, WriteIndirectBody{1 << 17, 1 << 17, std::string(128, '\1')}},
      {RecordType::kWriteIndirect,
       WriteIndirectBody{kMax - 0xffffffff, 0xffffffff, std::string(kMaxBlockPtrBytes, 'b')}},
      {RecordType::kTruncate, TruncateBody{0}},
      {RecordType::kTruncate, TruncateBody{kMax}},
      {RecordType::kPunch, PunchBody{4096, kMax - 4096}},
      {RecordType::kSetxattr, SetxattrBody{std::string(kMaxXattrName, 'x'),
                                           std::string(kMaxXattrValue, 'v'), kXattrReplace}},
      {RecordType::kSetxattr, SetxattrBody{"user.a/b", "", 0}},
      {RecordType::kRemovexattr, RemovexattrBody{"trusted.z"}},
  };
  std::vector<LogRecord> out;
  for (auto& [type, body] : bodies) {
    const uint64_t seq = first_seq + out.size();
    out.push_back(LogRecord{type, 5, seq, 100 + seq, std::move(body)});
  }
  return out;
}

}  // namespace poolfs::core::zil
