// setuid/setgid clearing by the filesystem itself, as Linux clears them: the
// FUSE mount leaves it to poolfs (FUSE_HANDLE_KILLPRIV_V2), so a write,
// truncate or chown arrives alone and Write/SetAttr must clear the bits.
// Linux's rules (6.x, what ext4 and tmpfs do here): a write, truncate or
// fallocate by a caller without CAP_FSETID (here: not root) clears setuid,
// and setgid when the group may execute or the caller is not in the file's
// group (setgid without group execute stays for members); a chown of a
// non-directory clears setuid whoever asks, and setgid under the same
// condition (root counts as a member).
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

TEST_CASE("A write keeps setgid without group execute only for a member of the file's group",
          "[posix][attr][killsuid]") {
  FsFixture f;
  // The files are root's, group 0.
  const uint64_t member = SetidFile(f, "member", 02747);
  f.MustWrite(member, 0, "y", UserCreds(2000, 0));
  REQUIRE(Perm(f, member) == 02747);
  const uint64_t supplementary = SetidFile(f, "supplementary", 02747);
  f.MustWrite(supplementary, 0, "y", UserCreds(2000, 2000, {0}));
  REQUIRE(Perm(f, supplementary) == 02747);
  const uint64_t other = SetidFile(f, "other", 02666);
  f.MustWrite(other, 0, "y", UserCreds(2000, 2000));
  REQUIRE(Perm(f, other) == 0666);
  const uint64_t exec = SetidFile(f, "exec", 02777);
  f.MustWrite(exec, 0, "y", UserCreds(2000, 0));
  REQUIRE(Perm(f, exec) == 0777);
  const uint64_t both = SetidFile(f, "both", 06777);
  f.MustWrite(both, 0, "y", UserCreds(2000, 2000));
  REQUIRE(Perm(f, both) == 0777);
}

TEST_CASE("Truncate and punching a hole clear setuid and setgid as a write does",
          "[posix][attr][killsuid]") {
  FsFixture f;
  const Creds other = UserCreds(2000, 2000);
  const uint64_t t = SetidFile(f, "t", 02666);
  REQUIRE(Truncate(f, other, t, 1).ok());
  REQUIRE(Perm(f, t) == 0666);
  {
    const uint32_t mode = kFallocKeepSize | kFallocPunchHole;
    const uint64_t ino = SetidFile(f, "fa" + std::to_string(mode), 06666);
    REQUIRE(f.fs->Fallocate(other, ino, mode, 0, 8192).ok());
    REQUIRE(Perm(f, ino) == 0666);
    const uint64_t kept = SetidFile(f, "member" + std::to_string(mode), 06666);
    REQUIRE(f.fs->Fallocate(UserCreds(2000, 0), kept, mode, 0, 8192).ok());
    REQUIRE(Perm(f, kept) == 02666);  // a member keeps setgid without group execute
    const uint64_t root = SetidFile(f, "root" + std::to_string(mode), 06777);
    REQUIRE(f.fs->Fallocate(RootCreds(), root, mode, 0, 8192).ok());
    REQUIRE(Perm(f, root) == 06777);
  }
}

TEST_CASE("A chown clears setgid without group execute when the caller is outside the group",
          "[posix][attr][killsuid]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  // The owner, a member of group 100 only, gives its file of group 0 to
  // group 100: it was not in the file's group, so setgid goes.
  Attr a = f.MustCreate(kRootIno, "a", 0644, UserCreds(1000, 100));
  SetAttrRequest r;
  r.valid = SetAttrRequest::kGid;
  r.gid = 0;
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, r).ok());
  f.Chmod(a.ino, 02745);
  r.gid = 100;
  REQUIRE(f.fs->SetAttr(UserCreds(1000, 100), a.ino, r).ok());
  REQUIRE(Perm(f, a.ino) == 0745);
  // A member keeps it; so does root, whatever the group.
  f.Chmod(a.ino, 02745);
  r.gid = 200;
  REQUIRE(f.fs->SetAttr(UserCreds(1000, 100, {200}), a.ino, r).ok());
  REQUIRE(Perm(f, a.ino) == 02745);
  r.gid = 300;
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, r).ok());
  REQUIRE(Perm(f, a.ino) == 02745);
  // Setuid goes whoever asks, setgid too when group-executable.
  f.Chmod(a.ino, 06755);
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, r).ok());
  REQUIRE(Perm(f, a.ino) == 0755);
}

// The kernel's request for the clearing on its own: chown(f, -1, -1), and
// before a write or hole punch by a caller without CAP_FSETID.
TEST_CASE("A change of nothing but kClearPrivileges clears what a chown would, from anyone",
          "[posix][attr][killsuid]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  SetAttrRequest clear;
  clear.valid = SetAttrRequest::kClearPrivileges;
  const uint64_t ino = SetidFile(f, "f", 06755);
  const Timespec ctime = f.MustGetAttr(ino).ctime;
  REQUIRE(f.fs->SetAttr(RootCreds(), ino, clear).ok());
  CHECK(Perm(f, ino) == 0755);
  CHECK(f.MustGetAttr(ino).ctime >= ctime);
  // Setgid without group execute stays for root and for members, not for
  // others; a non-owner may ask (it clears, never grants).
  f.Chmod(ino, 02745);
  REQUIRE(f.fs->SetAttr(RootCreds(), ino, clear).ok());
  CHECK(Perm(f, ino) == 02745);
  REQUIRE(f.fs->SetAttr(UserCreds(1000, 0), ino, clear).ok());
  CHECK(Perm(f, ino) == 02745);
  REQUIRE(f.fs->SetAttr(UserCreds(1000, 100), ino, clear).ok());
  CHECK(Perm(f, ino) == 0745);
  // A directory keeps both.
  Attr d = f.MustMkdir(kRootIno, "d", 0755);
  f.Chmod(d.ino, 06755);
  REQUIRE(f.fs->SetAttr(RootCreds(), d.ino, clear).ok());
  CHECK(Perm(f, d.ino) == 06755);
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
TEST_CASE("A writer that is not the owner may clear what its write would clear, or part of it",
          "[posix][attr][killsuid]") {
  FsFixture f;
  const Creds other = UserCreds(2000, 2000);
  const uint64_t ino = SetidFile(f, "shared", 06777);
  // More than a write clears, or a different mode: refused.
  REQUIRE(Code(ChmodAs(f, other, ino, 0777 & ~0002u)) == StatusCode::kNotPermitted);
  REQUIRE(Code(ChmodAs(f, other, ino, 06777)) == StatusCode::kNotPermitted);  // no change
  REQUIRE(Perm(f, ino) == 06777);
  auto r = ChmodAs(f, other, ino, 0777);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE((r->mode & 07777) == 0777);
  // Part of it: the FUSE kernel's older rule keeps setgid without group
  // execute, and the write that follows clears it for a non-member.
  const uint64_t g = SetidFile(f, "g", 06745);
  f.Chmod(g, 06747);
  REQUIRE(Code(ChmodAs(f, other, g, 06745)) == StatusCode::kNotPermitted);  // not a setid bit
  REQUIRE(ChmodAs(f, other, g, 02747).ok());
  REQUIRE(Perm(f, g) == 02747);
  f.MustWrite(g, 0, "w", other);
  REQUIRE(Perm(f, g) == 0747);
  // A member of the group may not clear setgid without group execute: its
  // write would not.
  const uint64_t m = SetidFile(f, "m", 06767);
  REQUIRE(Code(ChmodAs(f, UserCreds(2000, 0), m, 0767)) == StatusCode::kNotPermitted);
  REQUIRE(ChmodAs(f, UserCreds(2000, 0), m, 02767).ok());
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
