// Sparse files: st_blocks counts what is allocated (and what was written
// since the last sync), never the size of what was never written.
#include <string>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

TEST_CASE("st_blocks counts allocated and unsynced bytes, not the size", "[posix][sparse]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "sparse");
  SetAttrRequest req;
  req.valid = SetAttrRequest::kSize;
  req.size = uint64_t{1} << 40;
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, req).ok());
  REQUIRE(f.MustGetAttr(a.ino).size == uint64_t{1} << 40);
  REQUIRE(f.MustGetAttr(a.ino).blocks == 0);
  REQUIRE(f.fs->Fsync(a.ino, false).ok());
  REQUIRE(f.MustGetAttr(a.ino).blocks == 0);

  // Written, not synced: the written bytes count at once.
  const std::string data(1 << 20, 'x');
  f.MustWrite(a.ino, 4096 * 1000, data);
  const uint64_t unsynced = f.MustGetAttr(a.ino).blocks;
  REQUIRE(unsynced >= data.size() / 512);
  REQUIRE(unsynced < 4 * data.size() / 512);
  // Synced (a remount syncs; an fsync need not: the intent log may hold
  // the write): what the blocks hold (compressed), not the 1 TiB.
  f.Remount();
  const uint64_t synced = f.MustGetAttr(a.ino).blocks;
  REQUIRE(synced > 0);
  REQUIRE(synced < 4 * data.size() / 512);
  f.Remount();
  REQUIRE(f.MustGetAttr(a.ino).blocks == synced);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
