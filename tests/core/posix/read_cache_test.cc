// Reads whose caller keeps the data (the kernel's page cache) leave the
// blocks they return whole out of the block cache, unless
// arc.cache_whole_reads says to keep them; reads in part, and reads
// without the flag (O_DIRECT), cache as before.
#include "posix_fixture.h"

#include <catch2/catch.hpp>

#include <string>

namespace poolfs::core::posix::testing {
namespace {

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = char(i * 131 + i / 4096);
  return s;
}

TEST_CASE("Reads the caller keeps leave whole blocks out of the block cache", "[posix]") {
  FsFixture f;
  const uint64_t ino = f.MustCreate(kRootIno, "f").ino;
  const std::string data = Bytes(1 << 20);  // eight 128 KiB blocks
  f.MustWrite(ino, 0, data);
  f.Remount();  // the blocks now come from the disk
  const uint64_t before = f.fs->GetStatus().arc_bytes;
  std::string out;
  REQUIRE(f.fs->Read(ino, 0, data.size(), &out, kReadCallerKeeps).ok());
  REQUIRE(out == data);
  CHECK(f.fs->GetStatus().arc_bytes == before);
  // Part of a block: cached (the caller has only that part).
  REQUIRE(f.fs->Read(ino, 4096, 4096, &out, kReadCallerKeeps).ok());
  REQUIRE(out == data.substr(4096, 4096));
  const uint64_t one = f.fs->GetStatus().arc_bytes;
  CHECK(one >= before + 128 * 1024);
  // Without the flag (O_DIRECT through the mount): cached.
  REQUIRE(f.fs->Read(ino, 128 * 1024, 256 * 1024, &out).ok());
  CHECK(f.fs->GetStatus().arc_bytes >= one + 256 * 1024);
  // arc.cache_whole_reads, live: cached too.
  CoreTunables t = f.options.tunables;
  t.cache_whole_reads = true;
  REQUIRE(f.fs->SetLive(t).ok());
  const uint64_t three = f.fs->GetStatus().arc_bytes;
  REQUIRE(f.fs->Read(ino, 512 * 1024, 512 * 1024, &out, kReadCallerKeeps).ok());
  REQUIRE(out == data.substr(512 * 1024));
  CHECK(f.fs->GetStatus().arc_bytes >= three + 512 * 1024);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
