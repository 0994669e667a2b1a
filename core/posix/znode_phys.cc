// ZnodePhys encoding and its checks (the layout is in znode_phys.h).
#include "posix/znode_phys.h"

#include <sys/stat.h>
#include <time.h>

#include "util/endian.h"

namespace poolfs::core::posix {
namespace {

constexpr size_t kTimeOffset = 64;
static_assert(kTimeOffset + 4 * 16 == kZnodeSize, "four timestamps end the fixed part");
static_assert(kZnodeSize + kMaxInlineTarget <= 384, "a znode fits the dnode bonus buffer");

void PutTime(uint8_t* p, const Timespec& t) {
  util::PutLE64(p, uint64_t(t.sec));
  util::PutLE32(p + 8, t.nsec);
  util::PutLE32(p + 12, 0);
}

}  // namespace

bool ValidFileType(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK: return true;
    default: return false;
  }
}

Timespec Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return Timespec{int64_t(ts.tv_sec), uint32_t(ts.tv_nsec)};
}

std::string EncodeZnode(const ZnodePhys& z) {
  std::string out(kZnodeSize + z.inline_target.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  util::PutLE32(p + 0, kZnodeMagic);
  util::PutLE32(p + 4, z.mode);
  util::PutLE32(p + 8, z.uid);
  util::PutLE32(p + 12, z.gid);
  util::PutLE32(p + 16, z.nlink);
  util::PutLE16(p + 20, uint16_t(z.inline_target.size()));
  util::PutLE64(p + 24, z.rdev);
  util::PutLE64(p + 32, z.parent);
  util::PutLE64(p + 40, z.size);
  util::PutLE64(p + 48, z.xattr);
  PutTime(p + kTimeOffset, z.atime);
  PutTime(p + kTimeOffset + 16, z.mtime);
  PutTime(p + kTimeOffset + 32, z.ctime);
  PutTime(p + kTimeOffset + 48, z.btime);
  out.replace(kZnodeSize, z.inline_target.size(), z.inline_target);
  return out;
}

Result<ZnodePhys> DecodeZnode(std::string_view bonus, uint64_t object) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption("object " + std::to_string(object) + " znode: " + what);
  };
  if (bonus.size() < kZnodeSize || bonus.size() > kZnodeSize + kMaxInlineTarget)
    return bad("bonus of " + std::to_string(bonus.size()) + " bytes (expected " +
               std::to_string(kZnodeSize) + " to " + std::to_string(kZnodeSize + kMaxInlineTarget) +
               ")");
  const auto* p = reinterpret_cast<const uint8_t*>(bonus.data());
  if (util::GetLE32(p) != kZnodeMagic) return bad("bad magic");
  if (util::GetLE16(p + 22) != 0 || util::GetLE64(p + 56) != 0) return bad("reserved bytes set");
  ZnodePhys z;
  z.mode = util::GetLE32(p + 4);
  z.uid = util::GetLE32(p + 8);
  z.gid = util::GetLE32(p + 12);
  z.nlink = util::GetLE32(p + 16);
  const uint16_t inline_len = util::GetLE16(p + 20);
  z.rdev = util::GetLE64(p + 24);
  z.parent = util::GetLE64(p + 32);
  z.size = util::GetLE64(p + 40);
  z.xattr = util::GetLE64(p + 48);
  Timespec* times[] = {&z.atime, &z.mtime, &z.ctime, &z.btime};
  for (int i = 0; i < 4; i++) {
    const uint8_t* t = p + kTimeOffset + 16 * i;
    times[i]->sec = int64_t(util::GetLE64(t));
    times[i]->nsec = util::GetLE32(t + 8);
    if (times[i]->nsec >= 1000000000u) return bad("timestamp nanoseconds out of range");
    if (util::GetLE32(t + 12) != 0) return bad("reserved bytes set");
  }
  if ((z.mode & ~uint32_t(S_IFMT | 07777)) != 0 || !ValidFileType(z.mode))
    return bad("bad mode " + std::to_string(z.mode));
  const uint32_t type = z.mode & S_IFMT;
  if (inline_len != bonus.size() - kZnodeSize) return bad("inline target length mismatch");
  if (inline_len != 0) {
    if (type != S_IFLNK) return bad("inline target on a non-symlink");
    if (z.size != inline_len) return bad("symlink size differs from its inline target");
    z.inline_target.assign(bonus.substr(kZnodeSize));
  }
  if (type == S_IFLNK && (z.size == 0 || z.size > kMaxSymlinkTarget))
    return bad("symlink target of " + std::to_string(z.size) + " bytes");
  if (z.rdev != 0 && type != S_IFCHR && type != S_IFBLK)
    return bad("device number on a non-device");
  if (z.parent == 0) return bad("no parent");
  return z;
}

std::string EncodeXattrs(const XattrMap& xattrs) {
  std::string out;
  util::AppendLE32(&out, kXattrMagic);
  util::AppendLE32(&out, uint32_t(xattrs.size()));
  for (const auto& [name, value] : xattrs) {
    uint8_t len[2];
    util::PutLE16(len, uint16_t(name.size()));
    out.append(reinterpret_cast<const char*>(len), 2);
    util::AppendLE32(&out, uint32_t(value.size()));
    out += name;
    out += value;
  }
  return out;
}

Result<XattrMap> DecodeXattrs(std::string_view bytes, uint64_t object) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption("object " + std::to_string(object) + " xattrs: " + what);
  };
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < 8) return bad("shorter than its header");
  if (util::GetLE32(p) != kXattrMagic) return bad("bad magic");
  const uint32_t count = util::GetLE32(p + 4);
  XattrMap out;
  size_t off = 8;
  for (uint32_t i = 0; i < count; i++) {
    if (bytes.size() - off < 6) return bad("entry " + std::to_string(i) + " runs past the end");
    const uint16_t name_len = util::GetLE16(p + off);
    const uint32_t value_len = util::GetLE32(p + off + 2);
    off += 6;
    if (name_len == 0 || name_len > 255)
      return bad("entry " + std::to_string(i) + ": bad name length");
    if (value_len > 65536) return bad("entry " + std::to_string(i) + ": value over 64 KiB");
    if (bytes.size() - off < size_t{name_len} + value_len)
      return bad("entry " + std::to_string(i) + " runs past the end");
    std::string name(bytes.substr(off, name_len));
    if (!out.empty() && !(out.rbegin()->first < name))
      return bad("entry " + std::to_string(i) + " out of order");
    out.emplace_hint(out.end(), std::move(name),
                     std::string(bytes.substr(off + name_len, value_len)));
    off += name_len + value_len;
  }
  if (off != bytes.size()) return bad("bytes after the last entry");
  return out;
}

}  // namespace poolfs::core::posix
