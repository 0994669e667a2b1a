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
