// PosixFs: lookup references and the unlinked set, read-only mounts,
// statfs figures, a full pool.
#include <fcntl.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Random(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

TEST_CASE("An unlinked file stays usable until Forget drops its last reference",
          "[posix][unlinked]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "still readable");
  const uint64_t objects = f.fs->GetStatus().objects;
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f").ok());
  REQUIRE(f.fs->GetStatus().unlinked_pending == 1);
  REQUIRE(Code(f.fs->Lookup(RootCreds(), kRootIno, "f")) == StatusCode::kNotFound);
  REQUIRE(f.MustGetAttr(a.ino).nlink == 0);
  REQUIRE(f.MustRead(a.ino, 0, 100) == "still readable");
  f.MustWrite(a.ino, 0, "STILL");
  f.fs->Forget(a.ino, 1);
  REQUIRE(Code(f.fs->GetAttr(a.ino)) == StatusCode::kStale);
  REQUIRE(f.fs->GetStatus().unlinked_pending == 0);
  REQUIRE(f.fs->GetStatus().objects == objects - 1);
}

TEST_CASE("A file unlinked without references is freed at once", "[posix][unlinked]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.fs->Forget(a.ino, 1);
  const uint64_t objects = f.fs->GetStatus().objects;
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f").ok());
  REQUIRE(f.fs->GetStatus().unlinked_pending == 0);
  REQUIRE(f.fs->GetStatus().objects == objects - 1);
  REQUIRE(Code(f.fs->GetAttr(a.ino)) == StatusCode::kStale);
}

TEST_CASE("Forget of a linked file evicts it and a later lookup reloads it", "[posix][unlinked]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  const uint64_t cached = f.posix()->cached_inodes();
  f.fs->Forget(a.ino, 1);
  REQUIRE(f.posix()->cached_inodes() == cached - 1);
  auto again = f.fs->Lookup(RootCreds(), kRootIno, "f");
  REQUIRE(again.ok());
  REQUIRE(again->generation == a.generation);
}

TEST_CASE("Inodes the kernel still knows leave memory past the limit and come back intact",
          "[posix][unlinked]") {
  MountOptions o = FastOptions();
  o.tunables.arc.max_bytes = 1 << 20;  // the smallest bound: 1024 inodes and dnodes
  FsFixture f(uint64_t{2} << 30, o);
  constexpr int kFiles = 6000;
  std::vector<Attr> files;
  for (int i = 0; i < kFiles; i++) {
    files.push_back(f.MustCreate(kRootIno, "f" + std::to_string(i)));
    if (i % 3 == 0) f.MustWrite(files.back().ino, 0, "data of " + std::to_string(i));
  }
  // An unlinked file the kernel still knows stays in memory, whatever the
  // pressure, so that its last Forget frees it.
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f0").ok());
  for (int i = 0; i < kFiles; i++) f.MustCreate(kRootIno, "g" + std::to_string(i));
  REQUIRE(f.fs->GetStatus().unlinked_pending == 1);
  CHECK(f.posix()->cached_inodes() < 3 * 1024);
  // Every lookup reference is still counted, in memory or not.
  for (int i = 0; i < kFiles; i++) REQUIRE(f.posix()->lookups(files[i].ino) == 1);
  for (int i = 1; i < kFiles; i++) {
    Attr a = f.MustGetAttr(files[i].ino);
    REQUIRE(a.generation == files[i].generation);
    REQUIRE(a.nlink == 1);
    if (i % 3 == 0) REQUIRE(f.MustRead(files[i].ino, 0, 100) == "data of " + std::to_string(i));
  }
  const uint64_t objects = f.fs->GetStatus().objects;
  f.fs->Forget(files[0].ino, 1);
  REQUIRE(f.fs->GetStatus().unlinked_pending == 0);
  REQUIRE(f.fs->GetStatus().objects == objects - 1);
  // A second lookup of a file dropped from memory: two Forgets to zero.
  auto again = f.fs->Lookup(RootCreds(), kRootIno, "f1");
  REQUIRE(again.ok());
  REQUIRE(f.posix()->lookups(files[1].ino) == 2);
  f.fs->Forget(files[1].ino, 1);
  REQUIRE(f.posix()->lookups(files[1].ino) == 1);
  f.fs->Forget(files[1].ino, 1);
  REQUIRE(f.posix()->lookups(files[1].ino) == 0);
  REQUIRE(f.fs->GetStatus().objects == objects - 1);  // linked: stays
  f.Remount();
  for (int i = 1; i < kFiles; i += 97)
    REQUIRE(f.MustGetAttr(files[i].ino).generation == files[i].generation);
}

TEST_CASE("The unlinked set survives an unmount without Forget and is freed at the next mount",
          "[posix][unlinked]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, std::string(500000, 'u'));
  Attr d = f.MustMkdir(kRootIno, "d");
  REQUIRE(f.fs->SetXattr(RootCreds(), a.ino, "user.k", "v", 0).ok());
  const uint64_t objects = f.fs->GetStatus().objects;
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f").ok());
  REQUIRE(f.fs->Rmdir(RootCreds(), kRootIno, "d").ok());
  REQUIRE(f.fs->GetStatus().unlinked_pending == 2);
  f.Remount();
  REQUIRE(f.fs->GetStatus().unlinked_pending == 0);
  REQUIRE(f.fs->GetStatus().objects == objects - 3);  // file, its xattrs, directory
  REQUIRE(Code(f.fs->GetAttr(a.ino)) == StatusCode::kStale);
  REQUIRE(Code(f.fs->GetAttr(d.ino)) == StatusCode::kStale);
}

TEST_CASE("A read-only mount refuses every change and writes nothing", "[posix][readonly]") {
  FsFixture f;
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, "data");
  f.Unmount();
  const std::string before = FileBytes(f.path);
  f.options.read_only = true;
  f.Mount();
  auto l = f.fs->Lookup(RootCreds(), kRootIno, "f");
  REQUIRE(l.ok());
  REQUIRE(f.MustRead(a.ino, 0, 10) == "data");
  REQUIRE(Code(f.fs->Create(RootCreds(), kRootIno, "g", 0644)) == StatusCode::kReadOnly);
  REQUIRE(Code(f.fs->Write(RootCreds(), a.ino, 0, "x")) == StatusCode::kReadOnly);
  REQUIRE(Code(f.fs->Unlink(RootCreds(), kRootIno, "f")) == StatusCode::kReadOnly);
  REQUIRE(Code(f.fs->Open(RootCreds(), a.ino, O_WRONLY)) == StatusCode::kReadOnly);
  REQUIRE(Code(f.fs->SetXattr(RootCreds(), a.ino, "user.a", "b", 0)) == StatusCode::kReadOnly);
  f.fs->Forget(a.ino, 1);
  REQUIRE(f.fs->Fsync(a.ino, false).ok());
  f.Unmount();
  REQUIRE(FileBytes(f.path) == before);
}

TEST_CASE("A read-only mount that would have to write fails with ReadOnly", "[posix][readonly]") {
  SECTION("no root directory yet") {
    char tmpl[] = "/tmp/posix-ro-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    std::string path = std::string(tmpl) + "/pool";
    REQUIRE(CreatePool({path}, 64 << 20, {}).ok());
    MountOptions o = FastOptions();
    o.read_only = true;
    auto r = Filesystem::Mount({path}, o);
    REQUIRE(Code(r) == StatusCode::kReadOnly);
    o.read_only = false;
    REQUIRE(Filesystem::Mount({path}, o).ok());  // the pool was exported again
    std::filesystem::remove_all(tmpl);
  }
}

TEST_CASE("A read-only mount leaves unlinked files for the next read-write mount",
          "[posix][readonly]") {
  FsFixture f;
  f.MustCreate(kRootIno, "f");
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f").ok());
  f.Unmount();
  const std::string before = FileBytes(f.path);
  f.options.read_only = true;
  f.Mount();
  REQUIRE(Code(f.fs->Lookup(RootCreds(), kRootIno, "f")) == StatusCode::kNotFound);
  f.Unmount();
  REQUIRE(FileBytes(f.path) == before);
  f.options.read_only = false;
  f.Mount();  // frees them
  f.Unmount();
}

TEST_CASE("StatFs reports the pool's space and object figures", "[posix][statfs]") {
  FsFixture f;
  auto s = f.fs->StatFs(kRootIno);
  REQUIRE(s.ok());
  REQUIRE(s->block_size == 4096);
  REQUIRE(s->blocks > (200u << 20) / 4096);
  REQUIRE(s->blocks <= (256u << 20) / 4096);
  REQUIRE(s->blocks_free <= s->blocks);
  REQUIRE(s->blocks_available < s->blocks_free);
  REQUIRE(s->files > s->files_free);
  REQUIRE(s->name_max == 255);
  Attr a = f.MustCreate(kRootIno, "f");
  f.MustWrite(a.ino, 0, Random(1, 8 << 20));
  REQUIRE(f.fs->Fsync(a.ino, false).ok());
  auto t = f.fs->StatFs(kRootIno);
  REQUIRE(t.ok());
  REQUIRE(t->blocks_free + (8 << 20) / 4096 <= s->blocks_free);
  REQUIRE(t->files_free < s->files_free);
}

TEST_CASE("A full pool refuses writes with NoSpace and keeps what it stored", "[posix][nospace]") {
  MountOptions o = FastOptions();
  o.tunables.txg.dirty_max_bytes = 16 << 20;
  FsFixture f(96 << 20, o);
  std::vector<std::pair<uint64_t, std::string>> stored;
  Status last;
  for (int i = 0; i < 200; i++) {
    auto a = f.fs->Create(RootCreds(), kRootIno, "f" + std::to_string(i), 0644);
    if (!a.ok()) {
      last = a.status();
      break;
    }
    std::string data = Random(i, 1 << 20);
    auto w = f.fs->Write(RootCreds(), a->ino, 0, data);
    if (!w.ok()) {
      last = w.status();
      break;
    }
    stored.emplace_back(a->ino, data);
  }
  INFO(last.ToString());
  REQUIRE(last.code() == StatusCode::kNoSpace);
  REQUIRE(stored.size() > 40);
  // Removing makes room again.
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "f0").ok());
  f.fs->Forget(stored[0].first, 1);
  stored.erase(stored.begin());
  f.Remount();
  for (auto& [ino, data] : stored) {
    INFO(ino);
    REQUIRE(f.MustRead(ino, 0, data.size()) == data);
  }
}

TEST_CASE("Writes after a removal from a full pool wait for its frees to come back",
          "[posix][nospace]") {
  // One file fills the pool; once the txg of its removal has synced, its
  // blocks wait out their deferral (two more syncs) while nothing else is
  // dirty, and a txg syncs only every second on its own. Writes of half
  // the pool must wait for the space, not fail.
  MountOptions o = FastOptions();
  o.tunables.txg.timeout_ms = 1000;
  o.tunables.txg.dirty_max_bytes = 16 << 20;
  FsFixture f(96 << 20, o);
  Attr big = f.MustCreate(kRootIno, "big");
  uint64_t written = 0;
  while (true) {
    auto w = f.fs->Write(RootCreds(), big.ino, written, Random(written, 1 << 20));
    if (!w.ok()) {
      INFO(w.status().ToString());
      REQUIRE(w.status().code() == StatusCode::kNoSpace);
      break;
    }
    written += 1 << 20;
  }
  REQUIRE(written >= (64u << 20));
  f.fs->Forget(big.ino, 1);
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "big").ok());
  bool deferred = false;
  for (int i = 0; i < 120000 && !deferred; i++) {  // a bound against hanging: 120 s
    deferred = f.fs->GetStatus().space_deferred >= written / 2;
    if (!deferred) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(deferred);
  Attr again = f.MustCreate(kRootIno, "again");
  const std::string data = Random(7, 48 << 20);
  for (uint64_t off = 0; off < data.size(); off += 1 << 20) {
    const auto w =
        f.fs->Write(RootCreds(), again.ino, off, std::string_view(data).substr(off, 1 << 20));
    INFO("at " << off << ": " << w.status().ToString());
    REQUIRE(w.ok());
  }
  f.Remount();
  REQUIRE(f.MustRead(again.ino, 0, data.size()) == data);
}

}  // namespace
}  // namespace poolfs::core::posix::testing

namespace poolfs::core::posix::testing {
namespace {

TEST_CASE("A pool checks clean offline after files are made and removed", "[posix][check]") {
  FsFixture f;
  Attr d = f.MustMkdir(kRootIno, "d");
  for (int i = 0; i < 50; i++) {
    Attr a = f.MustCreate(d.ino, "f" + std::to_string(i));
    f.MustWrite(a.ino, 0, std::string(1000 + i * 3000, 'c'));
    if (i % 3 == 0) REQUIRE(f.fs->Unlink(RootCreds(), d.ino, "f" + std::to_string(i)).ok());
    f.fs->Forget(a.ino, 1);
  }
  f.Unmount();
  auto report = CheckPool({f.path});
  REQUIRE(report.ok());
  std::string problems = report->Summary();
  for (auto& p : report->problems) problems += "\n" + p.where + ": " + p.what;
  INFO(problems);
  REQUIRE(report->ok());
}

}  // namespace
}  // namespace poolfs::core::posix::testing
