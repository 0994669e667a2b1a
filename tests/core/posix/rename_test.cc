// PosixFs: rename's rules (NOREPLACE, EXCHANGE, directories over empty and
// non-empty directories, a directory into its own subtree, hard links of
// one file), link and its limits, symlinks and mknod.
#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

Status Rename(FsFixture& f, uint64_t p1, const std::string& a, uint64_t p2, const std::string& b,
              uint32_t flags = 0) {
  return f.fs->Rename(RootCreds(), p1, a, p2, b, flags);
}

uint64_t InoOf(FsFixture& f, uint64_t parent, const std::string& name) {
  auto r = f.fs->Lookup(RootCreds(), parent, name);
  INFO(name << ": " << r.status().ToString());
  REQUIRE(r.ok());
  return r->ino;
}

TEST_CASE("Rename moves a file and replaces an existing file", "[posix][rename]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "a");
  Attr b = f.MustCreate(kRootIno, "b");
  f.MustWrite(a.ino, 0, "A");
  REQUIRE(Rename(f, kRootIno, "a", kRootIno, "c").ok());
  REQUIRE(f.List(kRootIno) == std::vector<std::string>{"b", "c"});
  REQUIRE(InoOf(f, kRootIno, "c") == a.ino);
  REQUIRE(Rename(f, kRootIno, "c", kRootIno, "b").ok());
  REQUIRE(f.List(kRootIno) == std::vector<std::string>{"b"});
  REQUIRE(InoOf(f, kRootIno, "b") == a.ino);
  // b's old inode lost its last link while referenced: unlinked, still readable.
  REQUIRE(f.MustGetAttr(b.ino).nlink == 0);
  REQUIRE(Code(Rename(f, kRootIno, "nope", kRootIno, "x")) == StatusCode::kNotFound);
}

TEST_CASE("Rename with NOREPLACE refuses an existing target", "[posix][rename]") {
  FsFixture f;
  f.MustCreate(kRootIno, "a");
  f.MustCreate(kRootIno, "b");
  REQUIRE(Code(Rename(f, kRootIno, "a", kRootIno, "b", kRenameNoReplace)) ==
          StatusCode::kAlreadyExists);
  REQUIRE(Rename(f, kRootIno, "a", kRootIno, "c", kRenameNoReplace).ok());
  REQUIRE(Code(Rename(f, kRootIno, "c", kRootIno, "b", kRenameNoReplace | kRenameExchange)) ==
          StatusCode::kInvalidArgument);
}

TEST_CASE("Rename with EXCHANGE swaps a file and a directory across parents", "[posix][rename]") {
  FsFixture f;
  Attr d1 = f.MustMkdir(kRootIno, "d1");
  Attr d2 = f.MustMkdir(kRootIno, "d2");
  Attr file = f.MustCreate(d1.ino, "x");
  Attr dir = f.MustMkdir(d2.ino, "y");
  REQUIRE(Code(Rename(f, d1.ino, "x", d2.ino, "missing", kRenameExchange)) ==
          StatusCode::kNotFound);
  REQUIRE(Rename(f, d1.ino, "x", d2.ino, "y", kRenameExchange).ok());
  REQUIRE(InoOf(f, d1.ino, "x") == dir.ino);
  REQUIRE(InoOf(f, d2.ino, "y") == file.ino);
  REQUIRE(InoOf(f, dir.ino, "..") == d1.ino);
  REQUIRE(f.MustGetAttr(d1.ino).nlink == 3);
  REQUIRE(f.MustGetAttr(d2.ino).nlink == 2);
}

TEST_CASE("Rename of a directory replaces only an empty directory", "[posix][rename]") {
  FsFixture f;
  Attr src = f.MustMkdir(kRootIno, "src");
  f.MustMkdir(kRootIno, "empty");
  Attr full = f.MustMkdir(kRootIno, "full");
  f.MustCreate(full.ino, "f");
  f.MustCreate(kRootIno, "file");
  REQUIRE(Code(Rename(f, kRootIno, "src", kRootIno, "full")) == StatusCode::kNotEmpty);
  REQUIRE(Code(Rename(f, kRootIno, "src", kRootIno, "file")) == StatusCode::kNotADirectory);
  REQUIRE(Code(Rename(f, kRootIno, "file", kRootIno, "empty")) == StatusCode::kIsADirectory);
  REQUIRE(f.MustGetAttr(kRootIno).nlink == 5);
  REQUIRE(Rename(f, kRootIno, "src", kRootIno, "empty").ok());
  REQUIRE(InoOf(f, kRootIno, "empty") == src.ino);
  REQUIRE(f.MustGetAttr(kRootIno).nlink == 4);
}

TEST_CASE("Rename refuses to move a directory into its own subtree", "[posix][rename]") {
  FsFixture f;
  Attr a = f.MustMkdir(kRootIno, "a");
  Attr b = f.MustMkdir(a.ino, "b");
  Attr c = f.MustMkdir(b.ino, "c");
  REQUIRE(Code(Rename(f, kRootIno, "a", c.ino, "a")) == StatusCode::kInvalidArgument);
  REQUIRE(Code(Rename(f, kRootIno, "a", a.ino, "x")) == StatusCode::kInvalidArgument);
  // Moving it up is fine, and fixes ".." and link counts.
  REQUIRE(Rename(f, b.ino, "c", kRootIno, "c").ok());
  REQUIRE(InoOf(f, c.ino, "..") == kRootIno);
  REQUIRE(f.MustGetAttr(b.ino).nlink == 2);
  REQUIRE(f.MustGetAttr(kRootIno).nlink == 4);
}

TEST_CASE("Rename onto another hard link of the same file does nothing", "[posix][rename]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "a");
  REQUIRE(f.fs->Link(RootCreds(), a.ino, kRootIno, "b").ok());
  REQUIRE(Rename(f, kRootIno, "a", kRootIno, "b").ok());
  REQUIRE(f.List(kRootIno) == std::vector<std::string>{"a", "b"});
  REQUIRE(f.MustGetAttr(a.ino).nlink == 2);
}

TEST_CASE("Renamed entries persist across a remount", "[posix][rename]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d");
  Attr a = f.MustCreate(kRootIno, "a");
  REQUIRE(Rename(f, kRootIno, "a", d.ino, "moved").ok());
  REQUIRE(Rename(f, kRootIno, "d", kRootIno, "e").ok());
  f.Remount();
  REQUIRE(f.List(kRootIno) == std::vector<std::string>{"e"});
  REQUIRE(InoOf(f, d.ino, "moved") == a.ino);
}

TEST_CASE("Link counts hard links and refuses directories", "[posix][link]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "a");
  Attr d = f.MustMkdir(kRootIno, "d");
  auto l = f.fs->Link(RootCreds(), a.ino, d.ino, "b");
  REQUIRE(l.ok());
  REQUIRE(l->nlink == 2);
  REQUIRE(Code(f.fs->Link(RootCreds(), a.ino, d.ino, "b")) == StatusCode::kAlreadyExists);
  REQUIRE(Code(f.fs->Link(RootCreds(), d.ino, kRootIno, "d2")) == StatusCode::kNotPermitted);
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "a").ok());
  REQUIRE(f.MustGetAttr(a.ino).nlink == 1);
  f.MustWrite(a.ino, 0, "still here");
  f.Remount();
  REQUIRE(f.MustRead(InoOf(f, d.ino, "b"), 0, 100) == "still here");
}

TEST_CASE("Symlink keeps short targets inline and long ones as data", "[posix][symlink]") {
  FsFixture f;
  auto s = f.fs->Symlink(RootCreds(), kRootIno, "short", "target/path");
  REQUIRE(s.ok());
  REQUIRE(S_ISLNK(s->mode));
  REQUIRE(s->size == 11);
  std::string long_target(3000, 'x');
  auto l = f.fs->Symlink(RootCreds(), kRootIno, "long", long_target);
  REQUIRE(l.ok());
  REQUIRE(Code(f.fs->Symlink(RootCreds(), kRootIno, "toolong", std::string(4096, 'y'))) ==
          StatusCode::kNameTooLong);
  REQUIRE(Code(f.fs->Symlink(RootCreds(), kRootIno, "empty", "")) == StatusCode::kNotFound);
  REQUIRE(Code(f.fs->Readlink(kRootIno)) == StatusCode::kInvalidArgument);
  f.Remount();
  REQUIRE(f.fs->Readlink(s->ino).value() == "target/path");
  REQUIRE(f.fs->Readlink(l->ino).value() == long_target);
}

TEST_CASE("Mknod makes fifos sockets and devices and only root makes devices", "[posix][mknod]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  auto fifo = f.fs->Mknod(UserCreds(), kRootIno, "fifo", S_IFIFO | 0644, 0);
  REQUIRE(fifo.ok());
  REQUIRE(S_ISFIFO(fifo->mode));
  REQUIRE(f.fs->Mknod(UserCreds(), kRootIno, "sock", S_IFSOCK | 0644, 0).ok());
  REQUIRE(f.fs->Mknod(UserCreds(), kRootIno, "reg", S_IFREG | 0644, 0).ok());
  REQUIRE(Code(f.fs->Mknod(UserCreds(), kRootIno, "chr", S_IFCHR | 0644, makedev(1, 3))) ==
          StatusCode::kNotPermitted);
  auto chr = f.fs->Mknod(RootCreds(), kRootIno, "chr", S_IFCHR | 0644, makedev(1, 3));
  REQUIRE(chr.ok());
  auto blk = f.fs->Mknod(RootCreds(), kRootIno, "blk", S_IFBLK | 0600, makedev(8, 1));
  REQUIRE(blk.ok());
  REQUIRE(Code(f.fs->Mknod(RootCreds(), kRootIno, "dir", S_IFDIR | 0755, 0)) ==
          StatusCode::kInvalidArgument);
  f.Remount();
  Attr c = f.MustGetAttr(chr->ino);
  REQUIRE(S_ISCHR(c.mode));
  REQUIRE(c.rdev == makedev(1, 3));
  REQUIRE(f.MustGetAttr(blk->ino).rdev == makedev(8, 1));
  std::string out;
  REQUIRE(Code(f.fs->Read(fifo->ino, 0, 1, &out)) == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
