// ZnodePhys: a file's POSIX attributes, stored in its dnode's bonus buffer.
//
// Every file, directory, symlink and special file of a poolfs filesystem is
// one object of the root dataset; its bonus buffer (bonus type kZnodeBonus)
// holds a ZnodePhys, encoded explicitly little-endian:
//
//     0  u32  magic 0x314e5a50 ("PZN1")
//     4  u32  mode (S_IFMT type bits and 07777 permission bits)
//     8  u32  uid               12 u32  gid
//    16  u32  nlink             20 u16  inline symlink target length
//    22  u16  reserved, zero
//    24  u64  rdev (character and block devices only, else zero)
//    32  u64  parent: the directory holding the file (a directory's "..")
//    40  u64  size in bytes (regular files: the object length; directories:
//             zero, the entry count is the zap's; symlinks: target length)
//    48  u64  xattr object (0: none)
//    56  u64  reserved, zero
//    64  16B  atime: i64 seconds since the epoch, u32 ns, u32 zero
//    80  16B  mtime        96 16B ctime        112 16B btime (creation)
//   128  ...  a symlink's target when it fits (up to 256 bytes, so the
//             bonus stays within the dnode's 384); longer targets are the
//             object's data and the inline length is zero.
//
// Section 12 of core/doc/on-disk-format.md has the same table and the rules
// the decoder checks. Thread safety: values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "poolfs/fs.h"
#include "poolfs/status.h"

namespace poolfs::core::posix {

inline constexpr uint32_t kZnodeMagic = 0x314e5a50;  // "PZN1"
inline constexpr uint8_t kZnodeBonus = 0x5a;         // the dnode bonus type of a znode
inline constexpr size_t kZnodeSize = 128;            // without the inline target
inline constexpr size_t kMaxInlineTarget = 256;      // the most of any pool format (1)
inline constexpr size_t kMaxSymlinkTarget = 4095;  // PATH_MAX - 1

struct ZnodePhys {
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint64_t rdev = 0;
  uint64_t parent = 0;
  uint64_t size = 0;
  uint64_t xattr = 0;
  Timespec atime, mtime, ctime, btime;
  std::string inline_target;  // symlinks with a target of at most kMaxInlineTarget bytes
};

// The bonus bytes of `z`: kZnodeSize plus its inline target.
std::string EncodeZnode(const ZnodePhys& z);
// Decodes a bonus buffer. Refuses damage — a short or long buffer, a bad
// magic, nonzero reserved bytes, an unknown file type, nanoseconds past
// 999,999,999, an inline target on a non-symlink or of the wrong length, a
// device number on a non-device — with Corruption naming `object`.
Result<ZnodePhys> DecodeZnode(std::string_view bonus, uint64_t object);

// True for the file types a znode may hold (S_IFREG, S_IFDIR, S_IFLNK,
// S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK).
bool ValidFileType(uint32_t mode);

// A file's extended attributes, stored as the data of its xattr object
// (znode.xattr):
//     0  u32  magic 0x31415850 ("PXA1")      4  u32  entry count
//     8  entries in strictly increasing name order, each
//          u16 name length (1..255), u32 value length (<= 65536),
//          the name, the value
// and nothing after the last entry.
using XattrMap = std::map<std::string, std::string, std::less<>>;
inline constexpr uint32_t kXattrMagic = 0x31415850;  // "PXA1"
std::string EncodeXattrs(const XattrMap& xattrs);
// Refuses a bad magic, a count or length that runs past the end, an empty
// or too long name, a value over 64 KiB, names out of order or repeated,
// and trailing bytes, with Corruption naming `object`.
Result<XattrMap> DecodeXattrs(std::string_view bytes, uint64_t object);

// The current time (CLOCK_REALTIME).
Timespec Now();

}  // namespace poolfs::core::posix
