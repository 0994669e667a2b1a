// PosixFs: setattr (chmod, chown, truncate, times with nanoseconds and past
// 2038), permission checks as a non-root caller, setuid/setgid clearing,
// sticky directories, open and access.
#include <fcntl.h>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

Result<Attr> Chmod(FsFixture& f, const Creds& c, uint64_t ino, uint32_t mode) {
  SetAttrRequest r;
  r.valid = SetAttrRequest::kMode;
  r.mode = mode;
  return f.fs->SetAttr(c, ino, r);
}

Result<Attr> Chown(FsFixture& f, const Creds& c, uint64_t ino, uint32_t uid, uint32_t gid) {
  SetAttrRequest r;
  r.valid = SetAttrRequest::kUid | SetAttrRequest::kGid;
  r.uid = uid;
  r.gid = gid;
  return f.fs->SetAttr(c, ino, r);
}

TEST_CASE("SetAttr stores nanosecond timestamps before 1970 and past 2038", "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "t");
  SetAttrRequest r;
  r.valid = SetAttrRequest::kAtime | SetAttrRequest::kMtime | SetAttrRequest::kCtime;
  r.atime = {int64_t(1) << 40, 999999999};  // year ~36812
  r.mtime = {-86400 * 365, 1};              // 1969
  r.ctime = {4102444800, 123456789};        // 2100-01-01
  auto s = f.fs->SetAttr(RootCreds(), a.ino, r);
  REQUIRE(s.ok());
  REQUIRE(s->atime == r.atime);
  f.Remount();
  Attr b = f.MustGetAttr(a.ino);
  REQUIRE(b.atime == r.atime);
  REQUIRE(b.mtime == r.mtime);
  REQUIRE(b.ctime == r.ctime);
}

TEST_CASE("SetAttr now-times need write permission and explicit times need ownership",
          "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "t", 0646);
  SetAttrRequest now;
  now.valid = SetAttrRequest::kAtimeNow | SetAttrRequest::kMtimeNow;
  REQUIRE(f.fs->SetAttr(UserCreds(), a.ino, now).ok());
  SetAttrRequest set;
  set.valid = SetAttrRequest::kMtime;
  set.mtime = {5, 0};
  REQUIRE(Code(f.fs->SetAttr(UserCreds(), a.ino, set)) == StatusCode::kNotPermitted);
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, set).ok());
  Attr b = f.MustCreate(kRootIno, "ro", 0644);
  REQUIRE(Code(f.fs->SetAttr(UserCreds(), b.ino, now)) == StatusCode::kPermissionDenied);
}

// FUSE's writeback cache: the kernel sends its own "now" as values, with
// ctime, for a writer's truncate or utimens(NOW).
TEST_CASE("Times sent with ctime need what now-times need: the owner or write access",
          "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "w", 0646);
  SetAttrRequest kernel;
  kernel.valid = SetAttrRequest::kSize | SetAttrRequest::kMtime | SetAttrRequest::kCtime;
  kernel.size = 3;
  kernel.mtime = kernel.ctime = {1'800'000'000, 5};
  REQUIRE(f.fs->SetAttr(UserCreds(), a.ino, kernel).ok());
  Attr got = f.MustGetAttr(a.ino);
  CHECK(got.size == 3);
  CHECK(got.mtime == kernel.mtime);
  CHECK(got.ctime == kernel.ctime);
  Attr b = f.MustCreate(kRootIno, "r", 0644);
  CHECK(Code(f.fs->SetAttr(UserCreds(), b.ino, kernel)) == StatusCode::kPermissionDenied);
  // Through a descriptor open for writing, whatever the mode says now.
  kernel.valid |= SetAttrRequest::kOpenFile;
  CHECK(f.fs->SetAttr(UserCreds(), b.ino, kernel).ok());
  // Without ctime, a time set is the owner's.
  SetAttrRequest set;
  set.valid = SetAttrRequest::kMtime;
  set.mtime = {5, 0};
  CHECK(Code(f.fs->SetAttr(UserCreds(), a.ino, set)) == StatusCode::kNotPermitted);
}

TEST_CASE("Chmod is for the owner or root and clears setgid for a non-member", "[posix][attr]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  Attr a = f.MustCreate(kRootIno, "f", 0644, UserCreds(1000, 1000));
  REQUIRE(Code(Chmod(f, UserCreds(2000, 2000), a.ino, 0777)) == StatusCode::kNotPermitted);
  REQUIRE(Chown(f, RootCreds(), a.ino, 1000, 50).ok());
  auto r = Chmod(f, UserCreds(1000, 1000), a.ino, 02755);
  REQUIRE(r.ok());
  REQUIRE((r->mode & 07777) == 0755);  // not in group 50
  r = Chmod(f, UserCreds(1000, 1000, {50}), a.ino, 02755);
  REQUIRE(r.ok());
  REQUIRE((r->mode & 07777) == 02755);
}

TEST_CASE("Chown is root's and the owner may only change the group to its own", "[posix][attr]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  Attr a = f.MustCreate(kRootIno, "f", 0755, UserCreds(1000, 1000));
  REQUIRE(Code(Chown(f, UserCreds(1000, 1000), a.ino, 2000, 1000)) == StatusCode::kNotPermitted);
  REQUIRE(Code(Chown(f, UserCreds(1000, 1000), a.ino, 1000, 77)) == StatusCode::kNotPermitted);
  REQUIRE(Chown(f, UserCreds(1000, 1000, {77}), a.ino, 1000, 77).ok());
  REQUIRE(Code(Chown(f, UserCreds(3000, 3000), a.ino, 1000, 77)) == StatusCode::kNotPermitted);
  // Chown clears setuid, and setgid when group-executable, even for root.
  REQUIRE(Chmod(f, RootCreds(), a.ino, 06755).ok());
  auto r = Chown(f, RootCreds(), a.ino, 5, 5);
  REQUIRE(r.ok());
  REQUIRE(r->uid == 5);
  REQUIRE((r->mode & 07777) == 0755);
  REQUIRE(Chmod(f, RootCreds(), a.ino, 02745).ok());
  r = Chown(f, RootCreds(), a.ino, 6, 6);
  REQUIRE((r->mode & 07777) == 02745);  // setgid without group x stays (mandatory locking)
}

TEST_CASE("A write by a non-root caller clears setuid and setgid", "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f", 0777);
  REQUIRE(Chmod(f, RootCreds(), a.ino, 06777).ok());
  f.MustWrite(a.ino, 0, "root keeps the bits");
  REQUIRE((f.MustGetAttr(a.ino).mode & 07777) == 06777);
  f.MustWrite(a.ino, 0, "a user does not", UserCreds());
  REQUIRE((f.MustGetAttr(a.ino).mode & 07777) == 0777);
}

TEST_CASE("Mode bits decide access for owner group and others", "[posix][perm]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  Attr a = f.MustCreate(kRootIno, "f", 0640, UserCreds(1000, 100));
  REQUIRE(f.fs->Open(UserCreds(1000, 100), a.ino, O_RDWR).ok());
  REQUIRE(f.fs->Open(UserCreds(2000, 100), a.ino, O_RDONLY).ok());
  REQUIRE(Code(f.fs->Open(UserCreds(2000, 100), a.ino, O_WRONLY)) == StatusCode::kPermissionDenied);
  REQUIRE(f.fs->Open(UserCreds(2000, 5, {100}), a.ino, O_RDONLY).ok());
  REQUIRE(Code(f.fs->Open(UserCreds(3000, 3000), a.ino, O_RDONLY)) ==
          StatusCode::kPermissionDenied);
  REQUIRE(Code(f.fs->Open(UserCreds(1000, 100), a.ino, O_RDONLY | O_TRUNC)) == StatusCode::kOk);
  REQUIRE(f.fs->Open(RootCreds(), a.ino, O_RDWR).ok());
  REQUIRE(Code(f.fs->Access(RootCreds(), a.ino, X_OK)) == StatusCode::kPermissionDenied);
  REQUIRE(f.fs->Access(UserCreds(1000, 100), a.ino, R_OK | W_OK).ok());
  REQUIRE(Code(f.fs->Open(RootCreds(), kRootIno, O_WRONLY)) == StatusCode::kIsADirectory);
  // Owner bits apply to the owner even when group bits would allow more.
  REQUIRE(Chmod(f, RootCreds(), a.ino, 0070).ok());
  REQUIRE(Code(f.fs->Open(UserCreds(1000, 100), a.ino, O_RDONLY)) == StatusCode::kPermissionDenied);
}

TEST_CASE("Directory permissions guard lookup create and remove", "[posix][perm]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d", 0755);
  f.MustCreate(d.ino, "f");
  REQUIRE(Code(f.fs->Create(UserCreds(), d.ino, "g", 0644)) == StatusCode::kPermissionDenied);
  REQUIRE(Code(f.fs->Unlink(UserCreds(), d.ino, "f")) == StatusCode::kPermissionDenied);
  REQUIRE(f.fs->Lookup(UserCreds(), d.ino, "f").ok());
  REQUIRE(Chmod(f, RootCreds(), d.ino, 0700).ok());
  REQUIRE(Code(f.fs->Lookup(UserCreds(), d.ino, "f")) == StatusCode::kPermissionDenied);
  int n = 0;
  REQUIRE(Code(f.fs->ReadDir(UserCreds(), d.ino, 0, false, [&](const DirEntry&) {
            n++;
            return true;
          })) == StatusCode::kPermissionDenied);
  // With default_permissions the kernel checks mode bits: we do not.
  f.Unmount();
  f.options.kernel_checks_permissions = true;
  f.Mount();
  REQUIRE(f.fs->Lookup(UserCreds(), d.ino, "f").ok());
}

TEST_CASE("A sticky directory lets only owners remove or rename entries", "[posix][perm]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "tmp", 01777);
  f.MustCreate(d.ino, "mine", 0644, UserCreds(1000, 1000));
  f.MustCreate(d.ino, "theirs", 0644, UserCreds(2000, 2000));
  REQUIRE(Code(f.fs->Unlink(UserCreds(1000, 1000), d.ino, "theirs")) == StatusCode::kNotPermitted);
  REQUIRE(Code(f.fs->Rename(UserCreds(1000, 1000), d.ino, "theirs", d.ino, "x", 0)) ==
          StatusCode::kNotPermitted);
  REQUIRE(Code(f.fs->Rename(UserCreds(1000, 1000), d.ino, "mine", d.ino, "theirs", 0)) ==
          StatusCode::kNotPermitted);
  REQUIRE(f.fs->Unlink(UserCreds(1000, 1000), d.ino, "mine").ok());
  REQUIRE(f.fs->Unlink(RootCreds(), d.ino, "theirs").ok());
}

TEST_CASE("Files created in a setgid directory take its group", "[posix][perm]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "shared", 0777);
  REQUIRE(Chown(f, RootCreds(), d.ino, 0, 500).ok());
  REQUIRE(Chmod(f, RootCreds(), d.ino, 02777).ok());
  Attr file = f.MustCreate(d.ino, "f", 0644, UserCreds(1000, 1000));
  REQUIRE(file.gid == 500);
  Attr sub = f.MustMkdir(d.ino, "sub", 0755, UserCreds(1000, 1000));
  REQUIRE(sub.gid == 500);
  REQUIRE((sub.mode & S_ISGID) != 0);
}

TEST_CASE("Truncate needs write permission and refuses directories", "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f", 0644);
  SetAttrRequest r;
  r.valid = SetAttrRequest::kSize;
  r.size = 0;
  REQUIRE(Code(f.fs->SetAttr(UserCreds(), a.ino, r)) == StatusCode::kPermissionDenied);
  REQUIRE(Code(f.fs->SetAttr(RootCreds(), kRootIno, r)) == StatusCode::kIsADirectory);
}

TEST_CASE("A truncate through a descriptor open for writing needs no write permission",
          "[posix][attr]") {
  FsFixture f;
  const Creds user = UserCreds(1000, 1000);
  Attr d = f.MustMkdir(kRootIno, "d", 0777);
  // open(O_CREAT | O_RDWR, 0) then ftruncate: the new file's mode grants
  // nothing, the descriptor was opened for writing all the same.
  Attr mine = f.MustCreate(d.ino, "mine", 0, user);
  SetAttrRequest r;
  r.valid = SetAttrRequest::kSize | SetAttrRequest::kOpenFile;
  r.size = 100;
  auto got = f.fs->SetAttr(user, mine.ino, r);
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  REQUIRE(got->size == 100);
  // Another user's file it opened for writing before the owner took the
  // write permission away.
  Attr theirs = f.MustCreate(kRootIno, "theirs", 0644);
  r.size = 7;
  REQUIRE(f.fs->SetAttr(user, theirs.ino, r).ok());
  REQUIRE(f.MustGetAttr(theirs.ino).size == 7);
  // By path (no descriptor) the mode bits still decide.
  r.valid = SetAttrRequest::kSize;
  REQUIRE(Code(f.fs->SetAttr(user, theirs.ino, r)) == StatusCode::kPermissionDenied);
  REQUIRE(Code(f.fs->SetAttr(user, mine.ino, r)) == StatusCode::kPermissionDenied);
}

TEST_CASE("Fallocate punches holes", "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, std::string(300000, 'z'));
  REQUIRE(f.fs->Fallocate(RootCreds(), a.ino, kFallocPunchHole | kFallocKeepSize, 10, 200000).ok());
  std::string got = f.MustRead(a.ino, 0, 300000);
  REQUIRE(got.substr(0, 10) == std::string(10, 'z'));
  REQUIRE(got.substr(10, 200000) == std::string(200000, '\0'));
  REQUIRE(got.substr(200010) == std::string(99990, 'z'));
  // Past the end: nothing to punch, the size stays.
  REQUIRE(f.fs->Fallocate(RootCreds(), a.ino, kFallocPunchHole | kFallocKeepSize, 299990, 1000)
              .ok());
  REQUIRE(f.MustGetAttr(a.ino).size == 300000);
  REQUIRE(f.MustRead(a.ino, 299989, 100) == "z" + std::string(10, '\0'));
  REQUIRE(Code(f.fs->Fallocate(RootCreds(), a.ino, kFallocPunchHole, 0, 10)) ==
          StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->Fallocate(RootCreds(), a.ino, kFallocPunchHole | kFallocKeepSize, 0, 0)) ==
          StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->Fallocate(RootCreds(), kRootIno, kFallocPunchHole | kFallocKeepSize, 0,
                               10)) == StatusCode::kIsADirectory);
  REQUIRE(Code(f.fs->Fallocate(RootCreds(), a.ino, kFallocPunchHole | kFallocKeepSize,
                               kMaxFileSize, 1)) == StatusCode::kFileTooLarge);
}

TEST_CASE("Seek finds a file's data and holes and NoSuchOffset past its end", "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  constexpr uint64_t k = 128 << 10;  // the recordsize: whole blocks
  f.MustWrite(a.ino, 0, std::string(2 * k, 'a'));
  f.MustWrite(a.ino, 6 * k, std::string(k, 'b'));
  SetAttrRequest r;
  r.valid = SetAttrRequest::kSize;
  r.size = 10 * k;
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, r).ok());
  auto seek = [&](uint64_t off, bool hole) { return f.fs->Seek(a.ino, off, hole); };
  CHECK(seek(0, false).value() == 0);
  CHECK(seek(0, true).value() == 2 * k);
  CHECK(seek(2 * k, false).value() == 6 * k);
  CHECK(seek(6 * k + 5, true).value() == 7 * k);
  CHECK(seek(7 * k, true).value() == 7 * k);
  CHECK(Code(seek(7 * k, false).status()) == StatusCode::kNoSuchOffset);  // only a hole is left
  CHECK(Code(seek(10 * k, true).status()) == StatusCode::kNoSuchOffset);  // at the end
  REQUIRE(f.fs->Fallocate(RootCreds(), a.ino, kFallocPunchHole | kFallocKeepSize, 0, k).ok());
  CHECK(seek(0, false).value() == k);
  CHECK(Code(f.fs->Seek(kRootIno, 0, false).status()) == StatusCode::kIsADirectory);
}

// Preallocation would promise that writes into the range cannot fail with
// ENOSPC; copy-on-write cannot keep that promise, so it is refused and the
// file is left exactly as it was (size, data, times, mode).
TEST_CASE("Fallocate refuses preallocation and leaves the file as it was", "[posix][attr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f", 06666);
  f.MustWrite(a.ino, 0, "abc");
  const Attr before = f.MustGetAttr(a.ino);
  const uint32_t modes[] = {0, kFallocKeepSize, kFallocZeroRange,
                            kFallocZeroRange | kFallocKeepSize};
  for (uint32_t mode : modes) {
    INFO("fallocate mode " << mode);
    for (const Creds& c : {RootCreds(), UserCreds(2000, 2000)}) {
      const Status st = f.fs->Fallocate(c, a.ino, mode, 0, uint64_t{1} << 30);
      INFO(st.ToString());
      REQUIRE(st.code() == StatusCode::kNotSupported);
      REQUIRE(st.ToString().find("preallocation") != std::string::npos);
    }
    const Attr after = f.MustGetAttr(a.ino);
    REQUIRE(after.size == 3);
    REQUIRE(after.mode == before.mode);
    REQUIRE(after.ctime == before.ctime);
    REQUIRE(after.mtime == before.mtime);
  }
  REQUIRE(f.MustRead(a.ino, 0, 10) == "abc");
}

}  // namespace
}  // namespace poolfs::core::posix::testing
