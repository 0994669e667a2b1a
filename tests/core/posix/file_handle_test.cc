// Lookups of "." and "..": how the kernel turns a file handle (node id and
// generation: open_by_handle_at, an NFS export) back into a file it no
// longer holds, and connects a directory to the tree. A handle stays good
// for the life of the file: after links, renames and a remount, in any
// dataset; once the file is gone it is Stale.
#include <fcntl.h>

#include "poolfs/pool_admin.h"
#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

// Lookup of `name` ("." or "..") in `ino`, as the kernel asks it: by root,
// taking a reference the test gives back.
Result<Attr> HandleLookup(FsFixture& f, uint64_t ino, std::string_view name) {
  auto r = f.fs->Lookup(RootCreds(), ino, name);
  if (r.ok()) f.fs->Forget(r->ino, 1);
  return r;
}

}  // namespace

TEST_CASE("Lookup of \".\" finds any inode by number after links, renames and a remount",
          "[posix][handle]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d", 0700);
  Attr file = f.MustCreate(d.ino, "f", 0);
  Attr link = *f.fs->Symlink(RootCreds(), d.ino, "l", "f");
  Attr fifo = *f.fs->Mknod(RootCreds(), kRootIno, "p", S_IFIFO | 0600, 0);
  REQUIRE(f.fs->Link(RootCreds(), file.ino, kRootIno, "hard").ok());
  REQUIRE(f.fs->Rename(RootCreds(), d.ino, "f", kRootIno, "moved", 0).ok());
  REQUIRE(f.fs->Rename(RootCreds(), kRootIno, "d", kRootIno, "e", 0).ok());
  f.Remount();
  for (const Attr& a : {d, file, link, fifo}) {
    INFO("inode " << a.ino);
    auto r = HandleLookup(f, a.ino, ".");
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    CHECK(r->ino == a.ino);
    CHECK(r->generation == a.generation);
    CHECK(r->mode == a.mode);
  }
  // Without search permission on the way there too: the kernel asks for a
  // caller who may use the handle.
  REQUIRE(f.fs->Lookup(UserCreds(), file.ino, ".").ok());
  f.fs->Forget(file.ino, 1);
  // The reference is one the kernel holds, as for any name it looks up.
  auto r = f.fs->Lookup(RootCreds(), file.ino, ".");
  REQUIRE(r.ok());
  CHECK(f.posix()->lookups(file.ino) == 1);
  f.fs->Forget(file.ino, 1);
  CHECK(f.posix()->lookups(file.ino) == 0);
}

TEST_CASE("Lookup of \"..\" gives a directory's parent, also after a rename", "[posix][handle]") {
  FsFixture f;
  Attr a = f.MustMkdir(kRootIno, "a");
  Attr b = f.MustMkdir(a.ino, "b");
  Attr c = f.MustMkdir(b.ino, "c");
  Attr file = f.MustCreate(c.ino, "f");
  REQUIRE(f.fs->Rename(RootCreds(), b.ino, "c", a.ino, "c2", 0).ok());
  f.Remount();
  auto up = HandleLookup(f, c.ino, "..");
  REQUIRE(up.ok());
  CHECK(up->ino == a.ino);
  CHECK(HandleLookup(f, a.ino, "..")->ino == kRootIno);
  CHECK(HandleLookup(f, kRootIno, "..")->ino == kRootIno);
  CHECK(Code(HandleLookup(f, file.ino, "..")) == StatusCode::kNotADirectory);
}

TEST_CASE("Lookup of \".\" of a removed file is Stale once it is freed", "[posix][handle]") {
  FsFixture f;
  Attr file = f.MustCreate(kRootIno, "f");  // the kernel holds a reference
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f").ok());
  // Unlinked but still held (open): still there.
  REQUIRE(HandleLookup(f, file.ino, ".").ok());
  f.fs->Forget(file.ino, 1);  // the last reference: freed
  CHECK(Code(f.fs->Lookup(RootCreds(), file.ino, ".")) == StatusCode::kStale);
  f.Remount();
  CHECK(Code(f.fs->Lookup(RootCreds(), file.ino, ".")) == StatusCode::kStale);
}

TEST_CASE("Lookup of \"..\" of a child dataset's root gives its parent dataset's root",
          "[posix][handle][datasets]") {
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin != nullptr);
  REQUIRE(admin->Create("pool/home", false, {}).ok());
  REQUIRE(admin->Create("pool/home/alice", false, {}).ok());
  f.Remount();
  auto home = f.fs->Lookup(RootCreds(), kRootIno, "home");
  REQUIRE(home.ok());
  auto alice = f.fs->Lookup(RootCreds(), home->ino, "alice");
  REQUIRE(alice.ok());
  Attr sub = f.MustMkdir(alice->ino, "sub");
  Attr file = f.MustCreate(sub.ino, "f");
  f.Remount();
  CHECK(HandleLookup(f, file.ino, ".")->ino == file.ino);
  CHECK(HandleLookup(f, sub.ino, "..")->ino == alice->ino);
  CHECK(HandleLookup(f, alice->ino, "..")->ino == home->ino);
  CHECK(HandleLookup(f, home->ino, "..")->ino == kRootIno);
  auto dot = HandleLookup(f, alice->ino, ".");
  REQUIRE(dot.ok());
  CHECK(dot->ino == alice->ino);
  CHECK(dot->generation == alice->generation);
}

}  // namespace poolfs::core::posix::testing
