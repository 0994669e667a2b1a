// Access times: relatime (the default), strictatime and noatime on Read,
// ReadDir and Readlink, and the rule itself (AtimeNeedsUpdate).
#include <sys/stat.h>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

constexpr int64_t kDay = 24 * 60 * 60;

// Sets atime, mtime and ctime of `ino` to the given seconds (ctime through
// kCtime, so the SetAttr itself does not make ctime "now").
void SetTimes(FsFixture& f, uint64_t ino, int64_t atime, int64_t mtime, int64_t ctime) {
  SetAttrRequest r;
  r.valid = SetAttrRequest::kAtime | SetAttrRequest::kMtime | SetAttrRequest::kCtime;
  r.atime = {atime, 0};
  r.mtime = {mtime, 0};
  r.ctime = {ctime, 0};
  auto a = f.fs->SetAttr(RootCreds(), ino, r);
  INFO(a.status().ToString());
  REQUIRE(a.ok());
  REQUIRE(a->atime == Timespec{atime, 0});
}

int64_t NowSec() { return Now().sec; }

MountOptions WithAtime(AtimeMode mode) {
  MountOptions o = FastOptions();
  o.atime = mode;
  return o;
}

void ListAll(FsFixture& f, uint64_t dir) {
  Status st = f.fs->ReadDir(RootCreds(), dir, 0, false, [](const DirEntry&) { return true; });
  INFO(st.ToString());
  REQUIRE(st.ok());
}

}  // namespace

TEST_CASE("AtimeNeedsUpdate follows Linux's relatime strictatime and noatime", "[posix][atime]") {
  ZnodePhys z;
  const Timespec now{1'000'000, 500};
  z.atime = {now.sec - 10, 0};
  z.mtime = {now.sec - 20, 0};
  z.ctime = {now.sec - 20, 0};
  // atime after both changes and less than a day old: relatime leaves it.
  REQUIRE_FALSE(AtimeNeedsUpdate(AtimeMode::kRelatime, z, now));
  REQUIRE(AtimeNeedsUpdate(AtimeMode::kStrict, z, now));
  REQUIRE_FALSE(AtimeNeedsUpdate(AtimeMode::kNone, z, now));
  // A change at or after the last access.
  z.mtime = z.atime;
  REQUIRE(AtimeNeedsUpdate(AtimeMode::kRelatime, z, now));
  z.mtime = {now.sec - 20, 0};
  z.ctime = {now.sec - 5, 0};
  REQUIRE(AtimeNeedsUpdate(AtimeMode::kRelatime, z, now));
  REQUIRE_FALSE(AtimeNeedsUpdate(AtimeMode::kNone, z, now));
  // Exactly a day old moves; a nanosecond less does not.
  z.ctime = {now.sec - 2 * kDay, 0};
  z.mtime = z.ctime;
  z.atime = {now.sec - kDay, now.nsec};
  REQUIRE(AtimeNeedsUpdate(AtimeMode::kRelatime, z, now));
  z.atime = {now.sec - kDay, now.nsec + 1};
  REQUIRE_FALSE(AtimeNeedsUpdate(AtimeMode::kRelatime, z, now));
  // Nothing to do when atime is already now.
  z.atime = now;
  z.mtime = now;
  REQUIRE_FALSE(AtimeNeedsUpdate(AtimeMode::kRelatime, z, now));
  REQUIRE_FALSE(AtimeNeedsUpdate(AtimeMode::kStrict, z, now));
}

TEST_CASE("With relatime a read moves atime once after a write", "[posix][atime]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  const Attr written = f.MustGetAttr(a.ino);
  REQUIRE(written.atime <= written.mtime);
  REQUIRE(f.MustRead(a.ino, 0, 100) == "data");
  const Attr read1 = f.MustGetAttr(a.ino);
  REQUIRE(read1.atime > written.mtime);
  REQUIRE(read1.mtime == written.mtime);
  REQUIRE(read1.ctime == written.ctime);  // an atime move is not a change
  // atime is now after every change: further reads leave it.
  f.MustRead(a.ino, 0, 100);
  f.MustRead(a.ino, 2, 1);
  REQUIRE(f.MustGetAttr(a.ino).atime == read1.atime);
  // A read past the end is an access too; a read of nothing is not.
  f.MustWrite(a.ino, 4, "more");
  std::string out;
  REQUIRE(f.fs->Read(a.ino, 0, 0, &out).ok());
  REQUIRE(f.MustGetAttr(a.ino).atime == read1.atime);
  REQUIRE(f.MustRead(a.ino, 100, 10).empty());
  REQUIRE(f.MustGetAttr(a.ino).atime > read1.atime);
}

TEST_CASE("With relatime a read moves an atime that is a day old", "[posix][atime]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  const int64_t now = NowSec();
  SetTimes(f, a.ino, now - kDay - 60, now - 3 * kDay, now - 3 * kDay);
  f.MustRead(a.ino, 0, 4);
  REQUIRE(f.MustGetAttr(a.ino).atime.sec >= now);
  // An hour old, after every change: left alone.
  SetTimes(f, a.ino, now - 3600, now - 3 * kDay, now - 3 * kDay);
  f.MustRead(a.ino, 0, 4);
  REQUIRE(f.MustGetAttr(a.ino).atime == Timespec{now - 3600, 0});
}

TEST_CASE("With relatime readdir and readlink move atime after a change", "[posix][atime]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d");
  f.MustCreate(d.ino, "f");  // the directory's mtime and ctime move
  const Attr before = f.MustGetAttr(d.ino);
  ListAll(f, d.ino);
  const Attr listed = f.MustGetAttr(d.ino);
  REQUIRE(listed.atime > before.mtime);
  REQUIRE(listed.mtime == before.mtime);
  ListAll(f, d.ino);
  REQUIRE(f.MustGetAttr(d.ino).atime == listed.atime);

  auto l = f.fs->Symlink(RootCreds(), kRootIno, "l", "target");
  REQUIRE(l.ok());
  const int64_t now = NowSec();
  SetTimes(f, l->ino, now - 100, now - 50, now - 50);  // changed after the last access
  auto t = f.fs->Readlink(l->ino);
  REQUIRE(t.ok());
  REQUIRE(*t == "target");
  REQUIRE(f.MustGetAttr(l->ino).atime.sec >= now);
}

TEST_CASE("With noatime reads never move atime", "[posix][atime]") {
  FsFixture f(uint64_t{256} << 20, WithAtime(AtimeMode::kNone));
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  const Attr written = f.MustGetAttr(a.ino);
  const Attr root = f.MustGetAttr(kRootIno);  // changed by the create
  REQUIRE(root.atime <= root.mtime);
  f.MustRead(a.ino, 0, 4);
  ListAll(f, kRootIno);
  REQUIRE(f.MustGetAttr(a.ino).atime == written.atime);
  REQUIRE(f.MustGetAttr(kRootIno).atime == root.atime);
}

TEST_CASE("With strictatime every read moves atime", "[posix][atime]") {
  FsFixture f(uint64_t{256} << 20, WithAtime(AtimeMode::kStrict));
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  const int64_t now = NowSec();
  SetTimes(f, a.ino, now - 60, now - 120, now - 120);  // after every change
  f.MustRead(a.ino, 0, 4);
  const Timespec first = f.MustGetAttr(a.ino).atime;
  REQUIRE(first.sec >= now);
  SetTimes(f, a.ino, now - 60, now - 120, now - 120);
  f.MustRead(a.ino, 0, 4);
  REQUIRE(f.MustGetAttr(a.ino).atime.sec >= now);
}

TEST_CASE("An atime moved by a read survives a remount", "[posix][atime]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  f.MustRead(a.ino, 0, 4);
  const Attr read = f.MustGetAttr(a.ino);
  REQUIRE(read.atime > read.mtime);
  REQUIRE(f.fs->Fsync(a.ino, false).ok());
  f.Remount();
  REQUIRE(f.MustGetAttr(a.ino).atime == read.atime);
}

TEST_CASE("A read-only mount reads without moving atime", "[posix][atime]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  const Attr written = f.MustGetAttr(a.ino);
  f.Unmount();
  f.options.read_only = true;
  f.Mount();
  REQUIRE(f.MustRead(a.ino, 0, 4) == "data");
  ListAll(f, kRootIno);
  REQUIRE(f.MustGetAttr(a.ino).atime == written.atime);
}

}  // namespace poolfs::core::posix::testing

namespace poolfs::core::posix::testing {
namespace {

// The kernel serves cached reads without a request and drops a file's
// pages itself only when it sees mtime or size move: a change of ctime
// alone after a read must ask it to drop them, once, so that relatime's
// next read reaches the filesystem.
TEST_CASE("A ctime-only change after a read asks the kernel to drop the file's pages",
          "[posix][atime]") {
  FsFixture f;
  std::vector<uint64_t> dropped;  // called from inside the calls, on this thread
  f.fs->SetPageDropper([&](uint64_t ino) { dropped.push_back(ino); });
  Attr a = f.MustCreate(kRootIno, "f", 0644);
  f.MustWrite(a.ino, 0, "data");
  f.Chmod(a.ino, 0640);  // never read since its change: nothing cached to hide it
  REQUIRE(dropped.empty());
  f.MustRead(a.ino, 0, 10);  // atime after every change now
  f.Chmod(a.ino, 0600);
  REQUIRE(dropped == std::vector<uint64_t>{a.ino});
  f.Chmod(a.ino, 0644);  // still unread: once is enough
  REQUIRE(dropped.size() == 1);
  // A write moves mtime: the kernel drops the pages itself.
  f.MustRead(a.ino, 0, 10);
  f.MustWrite(a.ino, 0, "x");
  REQUIRE(dropped.size() == 1);
  // utimens of atime into the past, and an xattr, after reads.
  f.MustRead(a.ino, 0, 10);
  SetAttrRequest r;
  r.valid = SetAttrRequest::kAtime;
  r.atime = {NowSec() - 2 * kDay, 0};
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, r).ok());
  REQUIRE(dropped.size() == 2);
  f.MustRead(a.ino, 0, 10);
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.k", "v", 0).ok());
  REQUIRE(dropped.size() == 3);
  // Directories are read through requests: never.
  Attr d = f.MustMkdir(kRootIno, "d");
  ListAll(f, d.ino);
  f.Chmod(d.ino, 0700);
  REQUIRE(dropped.size() == 3);
  f.fs->SetPageDropper({});
}

TEST_CASE("Under noatime no change asks the kernel to drop pages", "[posix][atime]") {
  FsFixture f(uint64_t{256} << 20, WithAtime(AtimeMode::kNone));
  int calls = 0;
  f.fs->SetPageDropper([&](uint64_t) { ++calls; });
  Attr a = f.MustCreate(kRootIno, "f", 0644);
  f.MustWrite(a.ino, 0, "data");
  SetTimes(f, a.ino, NowSec() - 10, NowSec() - 100, NowSec() - 100);
  f.Chmod(a.ino, 0600);
  REQUIRE(calls == 0);
  f.fs->SetPageDropper({});
}

}  // namespace
}  // namespace poolfs::core::posix::testing
