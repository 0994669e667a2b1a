// PosixFs: mount, root, lookup, create, mkdir, unlink, rmdir, read, write,
// truncate, readdir, fsync, and their error cases.
#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

TEST_CASE("Mount of a new pool creates the root directory as inode 1", "[posix]") {
  FsFixture f;
  Attr root = f.MustGetAttr(kRootIno);
  REQUIRE(root.ino == 1);
  REQUIRE(S_ISDIR(root.mode));
  REQUIRE((root.mode & 07777) == 0755);
  REQUIRE(root.nlink == 2);
  REQUIRE(root.size == 2);
  REQUIRE(f.List(kRootIno).empty());
  auto up = f.fs->Lookup(RootCreds(), kRootIno, "..");
  REQUIRE(up.ok());
  REQUIRE(up->ino == kRootIno);
}

TEST_CASE("Create then Lookup returns the same inode and attributes", "[posix]") {
  FsFixture f;
  f.Chmod(kRootIno, 0777);
  Attr a = f.MustCreate(kRootIno, "file", 0640, UserCreds(1000, 100));
  REQUIRE(S_ISREG(a.mode));
  REQUIRE((a.mode & 07777) == 0640);
  REQUIRE(a.uid == 1000);
  REQUIRE(a.gid == 100);
  REQUIRE(a.nlink == 1);
  REQUIRE(a.size == 0);
  REQUIRE(a.ino > 3);
  REQUIRE(a.generation > 0);
  auto l = f.fs->Lookup(RootCreds(), kRootIno, "file");
  REQUIRE(l.ok());
  REQUIRE(l->ino == a.ino);
  REQUIRE(l->generation == a.generation);
  REQUIRE(l->mtime == a.mtime);
  REQUIRE(f.posix()->lookups(a.ino) == 2);
  REQUIRE(f.MustGetAttr(kRootIno).size == 3);
}

TEST_CASE("Name errors map to their own status codes", "[posix]") {
  FsFixture f;
  Attr file = f.MustCreate(kRootIno, "file");
  REQUIRE(Code(f.fs->Create(RootCreds(), kRootIno, "file", 0644)) == StatusCode::kAlreadyExists);
  REQUIRE(Code(f.fs->Lookup(RootCreds(), kRootIno, "nope")) == StatusCode::kNotFound);
  REQUIRE(Code(f.fs->Lookup(RootCreds(), kRootIno, std::string(256, 'x'))) ==
          StatusCode::kNameTooLong);
  REQUIRE(f.fs->Create(RootCreds(), kRootIno, std::string(255, 'x'), 0644).ok());
  REQUIRE(Code(f.fs->Lookup(RootCreds(), kRootIno, "")) == StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->Create(RootCreds(), kRootIno, "a/b", 0644)) == StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->Create(RootCreds(), kRootIno, std::string("a\0b", 3), 0644)) ==
          StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->Create(RootCreds(), file.ino, "x", 0644)) == StatusCode::kNotADirectory);
  REQUIRE(Code(f.fs->Lookup(RootCreds(), file.ino, "x")) == StatusCode::kNotADirectory);
  REQUIRE(Code(f.fs->GetAttr(999999)) == StatusCode::kStale);
  REQUIRE(Code(f.fs->Mkdir(RootCreds(), kRootIno, "..", 0755)) == StatusCode::kAlreadyExists);
}

TEST_CASE("Mkdir and Rmdir keep link counts and refuse non-empty directories", "[posix]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d");
  REQUIRE(d.nlink == 2);
  REQUIRE(f.MustGetAttr(kRootIno).nlink == 3);
  Attr sub = f.MustMkdir(d.ino, "sub");
  REQUIRE(f.MustGetAttr(d.ino).nlink == 3);
  auto dotdot = f.fs->Lookup(RootCreds(), sub.ino, "..");
  REQUIRE(dotdot.ok());
  REQUIRE(dotdot->ino == d.ino);
  f.MustCreate(d.ino, "f");
  REQUIRE(Code(f.fs->Rmdir(RootCreds(), kRootIno, "d")) == StatusCode::kNotEmpty);
  REQUIRE(Code(f.fs->Rmdir(RootCreds(), d.ino, "f")) == StatusCode::kNotADirectory);
  REQUIRE(Code(f.fs->Unlink(RootCreds(), d.ino, "sub")) == StatusCode::kIsADirectory);
  REQUIRE(Code(f.fs->Rmdir(RootCreds(), d.ino, ".")) == StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->Rmdir(RootCreds(), d.ino, "nope")) == StatusCode::kNotFound);
  REQUIRE(f.fs->Unlink(RootCreds(), d.ino, "f").ok());
  REQUIRE(f.fs->Rmdir(RootCreds(), d.ino, "sub").ok());
  REQUIRE(f.MustGetAttr(d.ino).nlink == 2);
  REQUIRE(f.fs->Rmdir(RootCreds(), kRootIno, "d").ok());
  REQUIRE(f.MustGetAttr(kRootIno).nlink == 2);
  REQUIRE(f.List(kRootIno).empty());
  // The removed directory, still referenced, refuses new entries.
  REQUIRE(Code(f.fs->Create(RootCreds(), d.ino, "g", 0644)) == StatusCode::kNotFound);
}

TEST_CASE("Write and Read round-trip data with holes and short reads at the end", "[posix]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "data");
  f.MustWrite(a.ino, 0, "hello");
  f.MustWrite(a.ino, 300000, "world");
  REQUIRE(f.MustGetAttr(a.ino).size == 300005);
  REQUIRE(f.MustRead(a.ino, 0, 5) == "hello");
  REQUIRE(f.MustRead(a.ino, 5, 10) == std::string(10, '\0'));
  REQUIRE(f.MustRead(a.ino, 299998, 100) == std::string(2, '\0') + "world");
  REQUIRE(f.MustRead(a.ino, 400000, 10).empty());
  std::string big(1 << 20, 'q');
  for (size_t i = 0; i < big.size(); i++) big[i] = char('a' + i % 26);
  f.MustWrite(a.ino, 0, big);
  REQUIRE(f.MustRead(a.ino, 0, big.size()) == big);
  Attr root = f.MustGetAttr(kRootIno);
  std::string out;
  REQUIRE(Code(f.fs->Read(kRootIno, 0, 10, &out)) == StatusCode::kIsADirectory);
  REQUIRE(Code(f.fs->Write(RootCreds(), kRootIno, 0, "x")) == StatusCode::kIsADirectory);
  (void)root;
}

// The reads the Read tests make of a file of `size` bytes (three blocks and
// more): past its end, two whole blocks, one across two blocks, its tail,
// at its end.
struct ReadCase {
  uint64_t off, len;
};
std::vector<ReadCase> ReadCases(uint64_t size) {
  return {
      {0, size + 4096}, {128 * 1024, 256 * 1024}, {3, 128 * 1024}, {size - 10, 100}, {size, 10}};
}

TEST_CASE("Read into a caller's buffer returns the bytes read and writes none past them",
          "[posix]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "data");
  std::string data(3 * 128 * 1024 + 777, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = char(i * 7 + i / 4096);
  f.MustWrite(a.ino, 0, data);
  f.Remount();  // the blocks on disk only
  for (uint32_t flags : {uint32_t{kReadCallerKeeps}, 0u}) {
    for (const ReadCase& c : ReadCases(data.size())) {
      INFO("flags " << flags << " off " << c.off << " len " << c.len);
      std::string buf(c.len + 128, 'S');
      Result<size_t> n = f.fs->Read(a.ino, c.off, std::span<char>(buf.data() + 64, c.len), flags);
      REQUIRE(n.ok());
      const size_t want = std::min<uint64_t>(c.len, data.size() - c.off);
      REQUIRE(*n == want);
      CHECK(buf.compare(64, want, data, c.off, want) == 0);
      CHECK(buf.find_first_not_of('S', 64 + want) == std::string::npos);
      CHECK(buf.find_first_not_of('S') == (want == 0 ? std::string::npos : 64));
    }
  }
  // A read of nothing, and of a directory.
  char byte = 'S';
  CHECK(f.fs->Read(a.ino, 0, std::span<char>(&byte, 0)).value() == 0);
  CHECK(Code(f.fs->Read(kRootIno, 0, std::span<char>(&byte, 1))) == StatusCode::kIsADirectory);
  CHECK(byte == 'S');
}

TEST_CASE("ReadShared returns Read's bytes, cached blocks left where they lie", "[posix]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "data");
  std::string data(3 * 128 * 1024 + 777, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = char(i * 5 + i / 4096);
  f.MustWrite(a.ino, 0, data);
  f.Remount();  // the blocks on disk only
  bool held = false;
  // Twice: on disk the first time; the second time, reads without the
  // flag (and reads of part of a block) find them cached.
  for (int round = 0; round < 2; round++) {
    for (uint32_t flags : {uint32_t{kReadCallerKeeps}, 0u}) {
      for (const ReadCase& c : ReadCases(data.size())) {
        INFO("round " << round << " flags " << flags << " off " << c.off << " len " << c.len);
        std::string scratch(c.len, 'S');
        SharedRead got;
        REQUIRE(f.fs->ReadShared(a.ino, c.off, std::span<char>(scratch), flags, &got).ok());
        const size_t want = std::min<uint64_t>(c.len, data.size() - c.off);
        REQUIRE(got.size() == want);
        std::string joined;
        for (std::span<const char> p : got.pieces) {
          joined.append(p.data(), p.size());
          held |= p.data() < scratch.data() || p.data() >= scratch.data() + scratch.size();
        }
        CHECK(joined == data.substr(c.off, want));
        if (got.hold == nullptr) {  // nothing outside scratch
          for (std::span<const char> p : got.pieces) CHECK(p.data() >= scratch.data());
        }
      }
    }
  }
  CHECK(held);
  SharedRead got;
  char byte = 'S';
  CHECK(Code(f.fs->ReadShared(kRootIno, 0, std::span<char>(&byte, 1), 0, &got)) ==
        StatusCode::kIsADirectory);
}

TEST_CASE("Truncate shrinks and extends a file with zeros", "[posix]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "t");
  f.MustWrite(a.ino, 0, std::string(200000, 'x'));
  SetAttrRequest req;
  req.valid = SetAttrRequest::kSize;
  req.size = 10;
  auto r = f.fs->SetAttr(RootCreds(), a.ino, req);
  REQUIRE(r.ok());
  REQUIRE(r->size == 10);
  req.size = 100;
  REQUIRE(f.fs->SetAttr(RootCreds(), a.ino, req).ok());
  REQUIRE(f.MustRead(a.ino, 0, 1000) == std::string(10, 'x') + std::string(90, '\0'));
  req.size = kMaxFileSize + 1;
  REQUIRE(Code(f.fs->SetAttr(RootCreds(), a.ino, req)) == StatusCode::kFileTooLarge);
}

TEST_CASE("A write past the maximum file size is FileTooLarge", "[posix]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "big");
  REQUIRE(Code(f.fs->Write(RootCreds(), a.ino, kMaxFileSize - 2, "abc")) ==
          StatusCode::kFileTooLarge);
  REQUIRE(Code(f.fs->Write(RootCreds(), a.ino, kMaxFileSize, "a")) == StatusCode::kFileTooLarge);
  f.MustWrite(a.ino, kMaxFileSize - 3, "abc");
  REQUIRE(f.MustGetAttr(a.ino).size == kMaxFileSize);
  REQUIRE(f.MustRead(a.ino, kMaxFileSize - 3, 10) == "abc");
}

TEST_CASE("Fsync commits the intent log and does not wait for a txg sync", "[posix]") {
  MountOptions o = FastOptions();
  o.tunables.txg.timeout_ms = 60000;  // nothing syncs unless waited for
  FsFixture f(uint64_t{256} << 20, o);
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "durable");
  const FsStatus before = f.fs->GetStatus();
  REQUIRE(f.fs->Fsync(a.ino, false).ok());
  const FsStatus after = f.fs->GetStatus();
  CHECK(after.log.commits == before.log.commits + 1);
  CHECK(after.log.records >= before.log.records + 2);  // the create and the write
  CHECK(after.last_synced_txg == before.last_synced_txg);
  REQUIRE(f.fs->Fsync(kRootIno, false).ok());
}

TEST_CASE("Inode numbers generations attributes and data persist across remounts", "[posix]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "dir", 0777);
  Attr a = f.MustCreate(d.ino, "file", 0600, UserCreds(42, 43));
  f.MustWrite(a.ino, 5, "payload");
  a = f.MustGetAttr(a.ino);
  f.Remount();
  auto ld = f.fs->Lookup(RootCreds(), kRootIno, "dir");
  REQUIRE(ld.ok());
  REQUIRE(ld->ino == d.ino);
  REQUIRE(ld->generation == d.generation);
  auto la = f.fs->Lookup(RootCreds(), d.ino, "file");
  REQUIRE(la.ok());
  REQUIRE(la->ino == a.ino);
  REQUIRE(la->generation == a.generation);
  REQUIRE(la->mode == a.mode);
  REQUIRE(la->uid == 42);
  REQUIRE(la->gid == 43);
  REQUIRE(la->size == 12);
  REQUIRE(la->mtime == a.mtime);
  REQUIRE(la->ctime == a.ctime);
  REQUIRE(la->btime == a.btime);
  REQUIRE(f.MustRead(a.ino, 0, 100) == std::string(5, '\0') + "payload");
  REQUIRE(f.MustGetAttr(kRootIno).nlink == 3);
}

TEST_CASE("ReadDir lists dot entries then every name with its type", "[posix]") {
  FsFixture f;
  f.MustCreate(kRootIno, "a");
  Attr d = f.MustMkdir(kRootIno, "b");
  std::vector<DirEntry> seen;
  REQUIRE(f.fs->ReadDir(RootCreds(), kRootIno, 0, false,
                        [&](const DirEntry& e) {
                          seen.push_back(e);
                          return true;
                        })
              .ok());
  REQUIRE(seen.size() == 4);
  REQUIRE(seen[0].name == ".");
  REQUIRE(seen[1].name == "..");
  for (auto& e : seen) {
    if (e.name == "b") {
      REQUIRE(e.ino == d.ino);
      REQUIRE(e.type == S_IFDIR);
    }
    if (e.name == "a") REQUIRE(e.type == S_IFREG);
  }
}

TEST_CASE("ReadDir cookies stay valid while entries are added and removed", "[posix]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d");
  std::set<std::string> stay;
  for (int i = 0; i < 400; i++) {
    std::string n = "stay" + std::to_string(i);
    f.MustCreate(d.ino, n);
    stay.insert(n);
  }
  for (int i = 0; i < 100; i++) f.MustCreate(d.ino, "gone" + std::to_string(i));
  std::multiset<std::string> got;
  uint64_t cookie = 0;
  int round = 0;
  for (;;) {
    // Take 7 entries per call, changing the directory between calls.
    int taken = 0;
    uint64_t next = cookie;
    REQUIRE(f.fs->ReadDir(RootCreds(), d.ino, cookie, false,
                          [&](const DirEntry& e) {
                            if (taken == 7) return false;
                            taken++;
                            got.insert(e.name);
                            next = e.next_cookie;
                            return true;
                          })
                .ok());
    if (taken == 0) break;
    cookie = next;
    if (round < 100) {
      REQUIRE(f.fs->Unlink(RootCreds(), d.ino, "gone" + std::to_string(round)).ok());
      f.MustCreate(d.ino, "new" + std::to_string(round));
    }
    round++;
  }
  for (const auto& n : stay) {
    INFO(n);
    REQUIRE(got.count(n) == 1);
  }
  for (const auto& n : got) REQUIRE(got.count(n) == 1);
}

TEST_CASE("ReadDir plus takes one lookup reference per entry taken", "[posix]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "a");
  Attr b = f.MustCreate(kRootIno, "b");
  f.fs->Forget(a.ino, 1);
  f.fs->Forget(b.ino, 1);
  int n = 0;
  REQUIRE(f.fs->ReadDir(RootCreds(), kRootIno, 0, true,
                        [&](const DirEntry& e) {
                          if (n == 3) return false;  // ".", "..", one file
                          n++;
                          if (e.name == "a" || e.name == "b") REQUIRE(e.attr.ino == e.ino);
                          return true;
                        })
              .ok());
  REQUIRE(f.posix()->lookups(a.ino) + f.posix()->lookups(b.ino) == 1);
}

TEST_CASE("Calls after Unmount fail with Aborted", "[posix]") {
  FsFixture f;
  REQUIRE(f.fs->Unmount().ok());
  REQUIRE(f.fs->Unmount().ok());
  REQUIRE(Code(f.fs->GetAttr(kRootIno)) == StatusCode::kAborted);
  f.fs.reset();
  f.Mount();
  REQUIRE(f.MustGetAttr(kRootIno).ino == 1);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
