// setuid/setgid clearing by the filesystem itself, as Linux clears them: the
// FUSE mount leaves it to poolfs (FUSE_CAP_HANDLE_KILLPRIV), so a write,
// truncate or chown arrives alone and Write/SetAttr must clear the bits.
// Linux's rules: a write or truncate by a caller without CAP_FSETID (here:
// not root) clears setuid, and setgid when the group may execute (setgid
// without group execute marks mandatory locking and stays); a chown of a
// non-directory clears them whoever asks.
#include <fcntl.h>
#include <sys/stat.h>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

uint32_t Perm(FsFixture& f, uint64_t ino) { return f.MustGetAttr(ino).mode & 07777; }

Result<Attr> Truncate(FsFixture& f, const Creds& c, uint64_t ino, uint64_t size) {
  SetAttrRequest r;
  r.valid = SetAttrRequest::kSize;
  r.size = size;
  return f.fs->SetAttr(c, ino, r);
}

// A file of root's with `mode` that everybody may write.
uint64_t SetidFile(FsFixture& f, const std::string& name, uint32_t mode) {
  Attr a = f.MustCreate(kRootIno, name, 0666);
  f.MustWrite(a.ino, 0, "x");
  f.Chmod(a.ino, mode);
  REQUIRE(Perm(f, a.ino) == mode);
  return a.ino;
}

}  // namespace

TEST_CASE("A non-owner's write to a setuid file it may write succeeds and clears setuid",
          "[posix][attr][killsuid]") {
  FsFixture f;
  const uint64_t ino = SetidFile(f, "shared", 04777);
  REQUIRE(f.fs->Open(UserCreds(2000, 2000), ino, O_WRONLY).ok());
  f.MustWrite(ino, 0, "z", UserCreds(2000, 2000));
  REQUIRE(Perm(f, ino) == 0777);
  REQUIRE(f.MustRead(ino, 0, 10) == "z");
}

TEST_CASE("A write keeps setgid when the group may not execute", "[posix][attr][killsuid]") {
  FsFixture f;
  const uint64_t ino = SetidFile(f, "g", 02747);
  f.MustWrite(ino, 0, "y", UserCreds(2000, 2000));
  REQUIRE(Perm(f, ino) == 02747);
  const uint64_t both = SetidFile(f, "both", 06777);
  f.MustWrite(both, 0, "y", UserCreds(2000, 2000));
  REQUIRE(Perm(f, both) == 0777);
}

TEST_CASE("A truncate by a non-root caller clears setuid and executable setgid",
          "[posix][attr][killsuid]") {
  FsFixture f;
  const uint64_t ino = SetidFile(f, "t", 06777);
  auto r = Truncate(f, UserCreds(2000, 2000), ino, 100);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE((r->mode & 07777) == 0777);
  REQUIRE(r->size == 100);
  // The kernel sends open(O_TRUNC) of an empty file as a truncate to 0:
  // the bits go all the same.
  const uint64_t empty = SetidFile(f, "empty", 04777);
  REQUIRE(Truncate(f, RootCreds(), empty, 0).ok());
  REQUIRE(Perm(f, empty) == 04777);  // root keeps them
  REQUIRE(Truncate(f, UserCreds(2000, 2000), empty, 0).ok());
  REQUIRE(Perm(f, empty) == 0777);
}

TEST_CASE("Root's writes and truncates keep setuid and setgid", "[posix][attr][killsuid]") {
  FsFixture f;
  const uint64_t ino = SetidFile(f, "r", 06755);
  f.MustWrite(ino, 0, "root");
  REQUIRE(Truncate(f, RootCreds(), ino, 2).ok());
  REQUIRE(Perm(f, ino) == 06755);
}

TEST_CASE("A non-owner without write permission is refused and the bits stay",
          "[posix][attr][killsuid]") {
  FsFixture f;
  const uint64_t ino = SetidFile(f, "ro", 04755);
  REQUIRE(Code(f.fs->Open(UserCreds(2000, 2000), ino, O_WRONLY)) == StatusCode::kPermissionDenied);
  REQUIRE(Code(Truncate(f, UserCreds(2000, 2000), ino, 0)) == StatusCode::kPermissionDenied);
  REQUIRE(Perm(f, ino) == 04755);
}

}  // namespace poolfs::core::posix::testing

namespace poolfs::core::posix::testing {
namespace {

Result<Attr> ChmodAs(FsFixture& f, const Creds& c, uint64_t ino, uint32_t mode) {
  SetAttrRequest r;
  r.valid = SetAttrRequest::kMode;
  r.mode = mode;
  return f.fs->SetAttr(c, ino, r);
}

}  // namespace

// Without FUSE_CAP_HANDLE_KILLPRIV (libfuse 3.14 cannot pass it on) the
// kernel sends, before a write or truncate, a chmod with the writer's
// credentials that clears the bits: the filesystem must accept it.
TEST_CASE("A writer that is not the owner may clear exactly what its write would clear",
          "[posix][attr][killsuid]") {
  FsFixture f;
  const Creds other = UserCreds(2000, 2000);
  const uint64_t ino = SetidFile(f, "shared", 06777);
  // More than a write clears, or a different mode: refused.
  REQUIRE(Code(ChmodAs(f, other, ino, 0777 & ~0002u)) == StatusCode::kNotPermitted);
  REQUIRE(Code(ChmodAs(f, other, ino, 02777)) == StatusCode::kNotPermitted);  // setgid kept
  REQUIRE(Code(ChmodAs(f, other, ino, 06777)) == StatusCode::kNotPermitted);  // no change
  REQUIRE(Perm(f, ino) == 06777);
  auto r = ChmodAs(f, other, ino, 0777);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE((r->mode & 07777) == 0777);
  // Setgid without group execute stays, for a non-member too.
  const uint64_t g = SetidFile(f, "g", 06745);
  f.Chmod(g, 06747);
  REQUIRE(ChmodAs(f, other, g, 02747).ok());
  REQUIRE(Perm(f, g) == 02747);
  // Without write permission: refused, the bits stay.
  const uint64_t ro = SetidFile(f, "ro", 04755);
  REQUIRE(Code(ChmodAs(f, other, ro, 0755)) == StatusCode::kNotPermitted);
  REQUIRE(Perm(f, ro) == 04755);
  // Directories are never written: refused.
  Attr d = f.MustMkdir(kRootIno, "d", 0777);
  f.Chmod(d.ino, 02777);
  REQUIRE(Code(ChmodAs(f, other, d.ino, 0777)) == StatusCode::kNotPermitted);
}

}  // namespace poolfs::core::posix::testing
