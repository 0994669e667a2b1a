// The intent log through the filesystem: what fsync returned for survives a
// crash right after it, by replay at the next mount, exactly once; what was
// not fsynced and not synced is gone. A crash is a copy of the pool file
// taken while the pool is imported (the txg timeout is long, so no sync
// runs meanwhile: the copy is the last synced txg plus the log, as after a
// SIGKILL).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

MountOptions SlowSyncOptions() {
  MountOptions o = FastOptions();
  o.tunables.txg.timeout_ms = 60000;
  return o;
}

// The pool file as a crash would leave it: copied while imported.
std::string CrashCopy(const FsFixture& f, const std::string& name) {
  const std::string copy = f.dir + "/" + name;
  std::filesystem::copy_file(f.path, copy);
  return copy;
}

std::unique_ptr<Filesystem> MountCopy(const std::string& path, const MountOptions& o) {
  auto r = Filesystem::Mount({path}, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(*r);
}


std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Attr MustLookup(Filesystem& fs, uint64_t parent, const std::string& name) {
  auto r = fs.Lookup(RootCreds(), parent, name);
  INFO(name << ": " << r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("fsync makes every change before it survive a crash, replayed once",
          "[posix][zil]") {
  FsFixture f(uint64_t{256} << 20, SlowSyncOptions());
  Attr d = f.MustMkdir(kRootIno, "d", 0750);
  Attr file = f.MustCreate(d.ino, "f", 0640);
  f.MustWrite(file.ino, 0, std::string(10000, 'a'));
  f.MustWrite(file.ino, 5000, "hello");
  f.MustWrite(file.ino, 200000, std::string(70000, 'z'));  // two records
  f.Chmod(file.ino, 0604);
  REQUIRE(f.fs->SetXattr(RootCreds(), file.ino, "user.k", "v1", 0).ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), file.ino, "user.gone", "x", 0).ok());
  REQUIRE(f.fs->RemoveXattr(RootCreds(), file.ino, "user.gone").ok());
  REQUIRE(f.fs->Link(RootCreds(), file.ino, kRootIno, "hard").ok());
  REQUIRE(f.fs->Symlink(RootCreds(), d.ino, "sym", "f").ok());
  Attr sub = f.MustMkdir(d.ino, "sub", 0700);
  Attr tmp = f.MustCreate(sub.ino, "tmp", 0600);
  f.MustWrite(tmp.ino, 0, "temporary");
  REQUIRE(f.fs->Rename(RootCreds(), sub.ino, "tmp", d.ino, "moved", 0).ok());
  Attr doomed = f.MustCreate(d.ino, "doomed", 0600);
  REQUIRE(f.fs->Unlink(RootCreds(), d.ino, "doomed").ok());
  SetAttrRequest trunc;
  trunc.valid = SetAttrRequest::kSize;
  trunc.size = 250000;
  REQUIRE(f.fs->SetAttr(RootCreds(), file.ino, trunc).ok());
  Status synced = f.fs->Fsync(file.ino, false);
  INFO(synced.ToString());
  REQUIRE(synced.ok());
  // After the fsync: not durable, and gone after the crash.
  f.MustCreate(d.ino, "late", 0600);
  const Attr want = f.MustGetAttr(file.ino);
  const std::string want_data = f.MustRead(file.ino, 0, 300000);
  (void)doomed;

  const std::string copy = CrashCopy(f, "crashed");
  FsStatus before = f.fs->GetStatus();
  CHECK(before.log.enabled);
  CHECK(before.log.commits >= 1);
  CHECK(before.log.records >= 15);
  f.Unmount();

  // The check reads the log the crashed pool's uberblock names.
  {
    auto report = CheckPool({copy}, CheckOptions{});
    REQUIRE(report.ok());
    INFO(report->Summary());
    CHECK(report->ok());
    CHECK(report->log_blocks >= 1);
    CHECK(report->log_records >= 15);
    CHECK(report->Summary().find("for the next read-write mount to replay") != std::string::npos);
  }

  for (int mount = 0; mount < 2; mount++) {
    INFO("mount " << mount << " of the crashed copy");
    auto fs = MountCopy(copy, SlowSyncOptions());
    FsStatus s = fs->GetStatus();
    // Replayed at the first mount only.
    CHECK(s.log.replayed == (mount == 0 ? s.log.replayed : 0));
    if (mount == 0) CHECK(s.log.replayed >= 15);
    Attr d2 = MustLookup(*fs, kRootIno, "d");
    CHECK((d2.mode & 07777) == 0750);
    Attr f2 = MustLookup(*fs, d2.ino, "f");
    CHECK((f2.mode & 07777) == 0604);
    CHECK(f2.size == want.size);
    CHECK(f2.nlink == 2);
    CHECK(f2.mtime == want.mtime);
    std::string data;
    REQUIRE(fs->Read(f2.ino, 0, 300000, &data).ok());
    CHECK(data == want_data);
    CHECK(fs->GetXattr(RootCreds(), f2.ino, "user.k").value() == "v1");
    CHECK(!fs->GetXattr(RootCreds(), f2.ino, "user.gone").ok());
    CHECK(MustLookup(*fs, kRootIno, "hard").ino == f2.ino);
    CHECK(fs->Readlink(MustLookup(*fs, d2.ino, "sym").ino).value() == "f");
    Attr sub2 = MustLookup(*fs, d2.ino, "sub");
    CHECK((sub2.mode & 07777) == 0700);
    CHECK(fs->Lookup(RootCreds(), sub2.ino, "tmp").status().IsNotFound());
    Attr moved = MustLookup(*fs, d2.ino, "moved");
    std::string tmp_data;
    REQUIRE(fs->Read(moved.ino, 0, 100, &tmp_data).ok());
    CHECK(tmp_data == "temporary");
    CHECK(fs->Lookup(RootCreds(), d2.ino, "doomed").status().IsNotFound());
    CHECK(fs->Lookup(RootCreds(), d2.ino, "late").status().IsNotFound());
    REQUIRE(fs->Unmount().ok());
  }
  // Exported cleanly: no log left.
  auto report = CheckPool({copy}, CheckOptions{});
  REQUIRE(report.ok());
  CHECK(report->ok());
  CHECK(report->log_blocks == 0);
}

TEST_CASE("A pool exported cleanly has no log to replay", "[posix][zil]") {
  FsFixture f(uint64_t{256} << 20, SlowSyncOptions());
  Attr file = f.MustCreate(kRootIno, "f", 0644);
  f.MustWrite(file.ino, 0, "data");
  REQUIRE(f.fs->Fsync(file.ino, false).ok());
  f.Remount();
  FsStatus s = f.fs->GetStatus();
  CHECK(s.log.replayed == 0);
  CHECK(f.MustRead(MustLookup(*f.fs, kRootIno, "f").ino, 0, 10) == "data");
}

TEST_CASE("fsync with nothing to commit writes no log block", "[posix][zil]") {
  FsFixture f(uint64_t{256} << 20, SlowSyncOptions());
  Attr file = f.MustCreate(kRootIno, "f", 0644);
  f.MustWrite(file.ino, 0, "data");
  REQUIRE(f.fs->Fsync(file.ino, false).ok());
  const uint64_t blocks = f.fs->GetStatus().log.blocks;
  REQUIRE(blocks >= 1);
  for (int i = 0; i < 5; i++) REQUIRE(f.fs->Fsync(file.ino, false).ok());
  CHECK(f.fs->GetStatus().log.blocks == blocks);
}

TEST_CASE("A large fsynced write is written once, in its place, and the log names it",
          "[posix][zil]") {
  FsFixture f(uint64_t{256} << 20, SlowSyncOptions());
  Attr file = f.MustCreate(kRootIno, "big", 0644);
  const std::string data = Incompressible(1 << 20, 1);
  f.MustWrite(file.ino, 0, data);  // eight 128 KiB blocks, sixteen records
  REQUIRE(f.fs->Fsync(file.ino, true).ok());
  FsStatus s = f.fs->GetStatus();
  CHECK(s.log.indirect == 16);
  CHECK(s.log.indirect_bytes == data.size());
  CHECK(s.log.bytes < 64 * 1024);  // records, not the data
  const std::string copy = CrashCopy(f, "crashed");

  // Changed again in the same txg, not fsynced: the sync writes the new
  // copy of that block and frees the early one.
  const std::string patch = Incompressible(4096, 2);
  f.MustWrite(file.ino, 4096, patch);
  std::string want = data;
  want.replace(4096, patch.size(), patch);
  f.Remount();
  CHECK(f.MustRead(MustLookup(*f.fs, kRootIno, "big").ino, 0, 2 << 20) == want);
  f.Unmount();
  {
    auto report = CheckPool({f.path}, CheckOptions{});
    REQUIRE(report.ok());
    INFO(report->Summary());
    CHECK(report->ok());  // no block leaked, none counted twice
  }

  // The crash: the fsynced bytes come back from the blocks the log names.
  {
    auto report = CheckPool({copy}, CheckOptions{});
    REQUIRE(report.ok());
    INFO(report->Summary());
    CHECK(report->ok());
    CHECK(report->log_records >= 16);
  }
  for (int mount = 0; mount < 2; mount++) {
    INFO("mount " << mount << " of the crashed copy");
    auto fs = MountCopy(copy, SlowSyncOptions());
    if (mount == 0) CHECK(fs->GetStatus().log.replayed >= 17);
    if (mount == 0) CHECK(fs->GetStatus().log.replayed_indirect == 16);
    Attr big = MustLookup(*fs, kRootIno, "big");
    CHECK(big.size == data.size());
    std::string got;
    REQUIRE(fs->Read(big.ino, 0, 2 << 20, &got).ok());
    CHECK(got == data);
    REQUIRE(fs->Unmount().ok());
  }
  auto report = CheckPool({copy}, CheckOptions{});
  REQUIRE(report.ok());
  INFO(report->Summary());
  CHECK(report->ok());
}

TEST_CASE("zil.indirect_write_bytes = 0 copies every fsynced byte into the log", "[posix][zil]") {
  MountOptions o = SlowSyncOptions();
  o.tunables.zil.indirect_write_bytes = 0;
  FsFixture f(uint64_t{256} << 20, o);
  Attr file = f.MustCreate(kRootIno, "f", 0644);
  const std::string data = Incompressible(256 * 1024, 4);
  f.MustWrite(file.ino, 0, data);
  REQUIRE(f.fs->Fsync(file.ino, true).ok());
  FsStatus s = f.fs->GetStatus();
  CHECK(s.log.indirect == 0);
  CHECK(s.log.bytes >= data.size());
  const std::string copy = CrashCopy(f, "crashed");
  f.Unmount();
  auto fs = MountCopy(copy, o);
  std::string got;
  REQUIRE(fs->Read(MustLookup(*fs, kRootIno, "f").ino, 0, 1 << 20, &got).ok());
  CHECK(got == data);
  REQUIRE(fs->Unmount().ok());
}

TEST_CASE("A write whose block does not verify ends the replay there", "[posix][zil]") {
  FsFixture f(uint64_t{256} << 20, SlowSyncOptions());
  Attr file = f.MustCreate(kRootIno, "f", 0644);
  const std::string data = Incompressible(256 * 1024, 3);
  f.MustWrite(file.ino, 0, data);  // two blocks written early
  REQUIRE(f.fs->Fsync(file.ino, true).ok());
  REQUIRE(f.fs->GetStatus().log.indirect == 4);
  const std::string copy = CrashCopy(f, "crashed");
  f.Unmount();

  // The second block exists only where the commit wrote it: damage it.
  {
    const std::string pool = ReadFile(copy);
    const size_t at = pool.find(data.substr(128 * 1024, 64));
    REQUIRE(at != std::string::npos);
    REQUIRE(pool.find(data.substr(128 * 1024, 64), at + 1) == std::string::npos);
    std::fstream out(copy, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(std::streamoff(at + 100));
    out.put(char(~pool[at + 100]));
  }
  {
    // The check reads the blocks the log names: a warning, not damage (a
    // commit cut short by a crash leaves the same).
    auto report = CheckPool({copy}, CheckOptions{});
    REQUIRE(report.ok());
    INFO(report->Summary());
    CHECK(report->ok());
    REQUIRE(report->warnings.size() == 1);
    CHECK(report->warnings[0].what.find("data block does not verify") != std::string::npos);
  }
  auto fs = MountCopy(copy, SlowSyncOptions());
  FsStatus s = fs->GetStatus();
  bool said = false;
  for (const std::string& note : s.import_notes)
    said = said || note.find("data block does not verify") != std::string::npos;
  CHECK(said);
  // What came before it is there: the file, and its first block.
  Attr got = MustLookup(*fs, kRootIno, "f");
  CHECK(got.size == 128 * 1024);
  std::string bytes;
  REQUIRE(fs->Read(got.ino, 0, 1 << 20, &bytes).ok());
  CHECK(bytes == data.substr(0, 128 * 1024));
  REQUIRE(fs->Unmount().ok());
  auto report = CheckPool({copy}, CheckOptions{});
  REQUIRE(report.ok());
  INFO(report->Summary());
  CHECK(report->ok());
}

}  // namespace poolfs::core::posix::testing
