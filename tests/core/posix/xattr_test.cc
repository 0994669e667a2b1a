// PosixFs: extended attributes — namespaces, flags, limits, permissions,
// persistence.
#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

TEST_CASE("Xattrs are set read listed and removed", "[posix][xattr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  REQUIRE(Code(f.fs->GetXattr(RootCreds(), a.ino, "user.x")) == StatusCode::kNoData);
  REQUIRE(f.fs->ListXattr(RootCreds(), a.ino).value().empty());
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.x", "one", 0).ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "trusted.t", "two", 0).ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "security.s", std::string("\0bin", 4), 0).ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.empty", "", 0).ok());
  REQUIRE(f.fs->GetXattr(RootCreds(), a.ino, "user.x").value() == "one");
  REQUIRE(f.fs->GetXattr(RootCreds(), a.ino, "security.s").value() == std::string("\0bin", 4));
  REQUIRE(f.fs->GetXattr(RootCreds(), a.ino, "user.empty").value().empty());
  auto names = f.fs->ListXattr(RootCreds(), a.ino).value();
  REQUIRE(names.size() == 4);
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.x", "uno", 0).ok());
  REQUIRE(f.fs->GetXattr(RootCreds(), a.ino, "user.x").value() == "uno");
  REQUIRE(f.fs->RemoveXattr(RootCreds(), a.ino, "user.x").ok());
  REQUIRE(Code(f.fs->RemoveXattr(RootCreds(), a.ino, "user.x")) == StatusCode::kNoData);
  REQUIRE(Code(f.fs->GetXattr(RootCreds(), a.ino, "user.x")) == StatusCode::kNoData);
  f.Remount();
  REQUIRE(f.fs->GetXattr(RootCreds(), a.ino, "trusted.t").value() == "two");
  REQUIRE(f.fs->ListXattr(RootCreds(), a.ino).value().size() == 3);
}

TEST_CASE("Xattr flags limits and namespaces", "[posix][xattr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "1", kXattrReplace)) ==
          StatusCode::kNoData);
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "1", kXattrCreate).ok());
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "2", kXattrCreate)) ==
          StatusCode::kAlreadyExists);
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "2", kXattrReplace).ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.big", std::string(65536, 'b'), 0).ok());
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "user.big", std::string(65537, 'b'), 0)) ==
          StatusCode::kRange);
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "user." + std::string(251, 'n'), "v", 0)) ==
          StatusCode::kRange);
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "system.x", "v", 0)) ==
          StatusCode::kNotSupported);
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "nonamespace", "v", 0)) ==
          StatusCode::kNotSupported);
  REQUIRE(f.fs->GetXattr(RootCreds(), a.ino, "user.big").value().size() == 65536);
}

TEST_CASE("Xattr access follows the namespace and the file's mode", "[posix][xattr]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  Attr mine = f.MustCreate(kRootIno, "mine", 0644, UserCreds(1000, 1000));
  Attr other = f.MustCreate(kRootIno, "other", 0644);
  Creds u = UserCreds(1000, 1000);
  REQUIRE(f.fs->SetXattr(u, mine.ino, "user.k", "v", 0).ok());
  REQUIRE(Code(f.fs->SetXattr(u, other.ino, "user.k", "v", 0)) == StatusCode::kPermissionDenied);
  REQUIRE(f.fs->SetXattr(RootCreds(), other.ino, "user.k", "v", 0).ok());
  REQUIRE(f.fs->GetXattr(u, other.ino, "user.k").value() == "v");
  REQUIRE(Code(f.fs->SetXattr(u, mine.ino, "trusted.k", "v", 0)) == StatusCode::kNotPermitted);
  REQUIRE(f.fs->SetXattr(RootCreds(), mine.ino, "trusted.k", "v", 0).ok());
  REQUIRE(Code(f.fs->GetXattr(u, mine.ino, "trusted.k")) == StatusCode::kNoData);
  auto names = f.fs->ListXattr(u, mine.ino).value();
  REQUIRE(names == std::vector<std::string>{"user.k"});
  REQUIRE(Code(f.fs->SetXattr(u, mine.ino, "security.k", "v", 0)) == StatusCode::kNotPermitted);
  REQUIRE(f.fs->SetXattr(RootCreds(), mine.ino, "security.k", "v", 0).ok());
  REQUIRE(f.fs->GetXattr(u, mine.ino, "security.k").value() == "v");
  auto link = f.fs->Symlink(RootCreds(), kRootIno, "l", "t");
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), link->ino, "user.k", "v", 0)) ==
          StatusCode::kNotPermitted);
}

// The kernel drops a file's capabilities before a write, truncate or
// fallocate by removing security.capability as the writer (and before a
// chown as the owner): Linux lets that through for anyone who may make the
// change, so must we.
TEST_CASE("Whoever may write a file or chown it may remove its security.capability",
          "[posix][xattr]") {
  FsFixture f;
  // A version 2 capability set: magic and flags, then zeros.
  const std::string caps =
      std::string("\x01\x00\x00\x02\x00\x20\x00\x00", 8) + std::string(12, '\0');
  const Creds writer = UserCreds(2000, 2000);
  Attr shared = f.MustCreate(kRootIno, "shared", 0666);
  REQUIRE(f.fs->SetXattr(RootCreds(), shared.ino, "security.capability", caps, 0).ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), shared.ino, "security.other", "x", 0).ok());
  // Setting it, or removing another security.* attribute, stays root's.
  REQUIRE(Code(f.fs->SetXattr(writer, shared.ino, "security.capability", caps, 0)) ==
          StatusCode::kNotPermitted);
  REQUIRE(Code(f.fs->RemoveXattr(writer, shared.ino, "security.other")) ==
          StatusCode::kNotPermitted);
  auto st = f.fs->RemoveXattr(writer, shared.ino, "security.capability");
  INFO(st.ToString());
  REQUIRE(st.ok());
  REQUIRE(Code(f.fs->GetXattr(RootCreds(), shared.ino, "security.capability")) ==
          StatusCode::kNoData);
  // Without write permission: refused, unless the caller owns the file
  // (a chown by its owner drops them too).
  Attr ro = f.MustCreate(kRootIno, "ro", 0644);
  REQUIRE(f.fs->SetXattr(RootCreds(), ro.ino, "security.capability", caps, 0).ok());
  REQUIRE(Code(f.fs->RemoveXattr(writer, ro.ino, "security.capability")) ==
          StatusCode::kNotPermitted);
  REQUIRE(f.fs->SetAttr(RootCreds(), ro.ino,
                        [] {
                          SetAttrRequest r;
                          r.valid = SetAttrRequest::kUid;
                          r.uid = 2000;
                          return r;
                        }())
              .ok());
  f.Chmod(ro.ino, 0444);
  REQUIRE(f.fs->RemoveXattr(writer, ro.ino, "security.capability").ok());
}

TEST_CASE("A file's xattr object is freed with the file", "[posix][xattr]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  const uint64_t objects = f.fs->GetStatus().objects;
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "1", 0).ok());
  REQUIRE(f.fs->GetStatus().objects == objects + 1);
  REQUIRE(f.fs->RemoveXattr(RootCreds(), a.ino, "user.a").ok());
  REQUIRE(f.fs->GetStatus().objects == objects);
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "1", 0).ok());
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f").ok());
  f.fs->Forget(a.ino, 1);
  REQUIRE(f.fs->GetStatus().objects == objects - 1);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
