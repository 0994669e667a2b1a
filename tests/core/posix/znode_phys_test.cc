// ZnodePhys and the xattr table: round trips, canonical encodings, and the
// decoders refusing each kind of damage with Corruption naming the object.
#include "posix/znode_phys.h"

#include <sys/stat.h>

#include "util/endian.h"

// After the poolfs headers (Catch2 redefines CHECK quietly as a system header).
#include <catch2/catch.hpp>

namespace poolfs::core::posix {
namespace {

ZnodePhys Sample() {
  ZnodePhys z;
  z.mode = S_IFREG | 04755;
  z.uid = 1000;
  z.gid = 100;
  z.nlink = 3;
  z.parent = 1;
  z.size = 1234567;
  z.xattr = 99;
  z.atime = {int64_t(1) << 40, 999999999};
  z.mtime = {-1, 5};
  z.ctime = {4102444800, 1};
  z.btime = {0, 0};
  return z;
}

void RequireCorrupt(std::string_view bytes, const char* why) {
  auto r = DecodeZnode(bytes, 17);
  INFO(why);
  REQUIRE(!r.ok());
  REQUIRE(r.status().IsCorruption());
  REQUIRE(r.status().message().rfind("object 17 znode", 0) == 0);
}

TEST_CASE("ZnodePhys round-trips every field", "[posix][znode]") {
  ZnodePhys z = Sample();
  std::string b = EncodeZnode(z);
  REQUIRE(b.size() == kZnodeSize);
  auto d = DecodeZnode(b, 1);
  REQUIRE(d.ok());
  REQUIRE(d->mode == z.mode);
  REQUIRE(d->uid == 1000);
  REQUIRE(d->gid == 100);
  REQUIRE(d->nlink == 3);
  REQUIRE(d->size == z.size);
  REQUIRE(d->xattr == 99);
  REQUIRE(d->atime == z.atime);
  REQUIRE(d->mtime == z.mtime);
  REQUIRE(d->ctime == z.ctime);
  REQUIRE(EncodeZnode(*d) == b);
  // The layout is little-endian at fixed offsets.
  const auto* p = reinterpret_cast<const uint8_t*>(b.data());
  REQUIRE(util::GetLE32(p) == kZnodeMagic);
  REQUIRE(util::GetLE32(p + 4) == z.mode);
  REQUIRE(util::GetLE64(p + 40) == z.size);
  REQUIRE(int64_t(util::GetLE64(p + 80)) == -1);
}

TEST_CASE("ZnodePhys keeps a symlink target inline", "[posix][znode]") {
  ZnodePhys z;
  z.mode = S_IFLNK | 0777;
  z.nlink = 1;
  z.parent = 1;
  z.inline_target = std::string(kMaxInlineTarget, 't');
  z.size = kMaxInlineTarget;
  std::string b = EncodeZnode(z);
  REQUIRE(b.size() == kZnodeSize + kMaxInlineTarget);
  auto d = DecodeZnode(b, 1);
  REQUIRE(d.ok());
  REQUIRE(d->inline_target == z.inline_target);
}

TEST_CASE("DecodeZnode refuses damage", "[posix][znode]") {
  const std::string good = EncodeZnode(Sample());
  RequireCorrupt(good.substr(0, 127), "short");
  RequireCorrupt(good + std::string(300, 'x'), "long");
  auto patched = [&](size_t off, uint8_t v) {
    std::string b = good;
    b[off] = char(v);
    return b;
  };
  RequireCorrupt(patched(0, 0), "magic");
  RequireCorrupt(patched(22, 1), "reserved u16");
  RequireCorrupt(patched(60, 1), "reserved u64");
  RequireCorrupt(patched(76, 1), "reserved time word");
  RequireCorrupt(patched(5, 0), "no file type");
  RequireCorrupt(patched(7, 1), "mode bits past S_IFMT");
  {
    std::string b = good;
    util::PutLE32(reinterpret_cast<uint8_t*>(&b[72]), 1000000000);
    RequireCorrupt(b, "nanoseconds");
  }
  RequireCorrupt(good + "abc", "inline target on a regular file");
  RequireCorrupt(patched(24, 1), "rdev on a regular file");
  RequireCorrupt(patched(32, 0), "parent 0 (object 1 has parent 1)");
  ZnodePhys l;
  l.mode = S_IFLNK | 0777;
  l.parent = 1;
  l.size = 0;
  RequireCorrupt(EncodeZnode(l), "empty symlink");
  l.inline_target = "abc";
  l.size = 4;
  RequireCorrupt(EncodeZnode(l), "inline target length differs from size");
}

TEST_CASE("Xattr tables round-trip and refuse damage", "[posix][znode]") {
  XattrMap x{{"security.a", std::string("\0\1", 2)}, {"user.b", ""}, {"user.c", "value"}};
  std::string b = EncodeXattrs(x);
  auto d = DecodeXattrs(b, 5);
  REQUIRE(d.ok());
  REQUIRE(*d == x);
  REQUIRE(DecodeXattrs(EncodeXattrs({}), 5).value().empty());
  auto corrupt = [](std::string_view bytes) {
    auto r = DecodeXattrs(bytes, 5);
    return !r.ok() && r.status().IsCorruption() &&
           r.status().message().rfind("object 5 xattrs", 0) == 0;
  };
  REQUIRE(corrupt(b.substr(0, b.size() - 1)));
  REQUIRE(corrupt(b + "x"));
  REQUIRE(corrupt(""));
  std::string bad_magic = b;
  bad_magic[0] ^= 1;
  REQUIRE(corrupt(bad_magic));
  std::string bad_count = b;
  bad_count[4] = 4;
  REQUIRE(corrupt(bad_count));
  // Names out of order: swap the first entry's name for a later one.
  std::string unordered = b;
  unordered.replace(14, 10, "user.zzzzz");
  REQUIRE(corrupt(unordered));
}

}  // namespace
}  // namespace poolfs::core::posix
