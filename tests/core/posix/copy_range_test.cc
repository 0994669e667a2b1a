// copy_file_range through the filesystem: whole blocks are shared (block
// cloning), the rest copied; the copy reads right at once, before and after
// the sync, across remounts and after a crash between the copy and its sync
// (OpenZFS 2.2.0 served the destination's old blocks in that window), and
// the space comes back when the last file holding a shared block lets go.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

constexpr uint64_t kRecord = 128 * 1024;

MountOptions CloneSlowSync() {
  MountOptions o = FastOptions();
  o.tunables.txg.timeout_ms = 60000;  // no sync but the ones a test makes
  return o;
}


uint64_t MustCopy(FsFixture& f, uint64_t in, uint64_t off_in, uint64_t out, uint64_t off_out,
                  uint64_t len) {
  Result<uint64_t> r = f.fs->CopyFileRange(RootCreds(), in, off_in, out, off_out, len, 0);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

uint64_t MustSeek(FsFixture& f, uint64_t ino, uint64_t off, bool hole) {
  Result<uint64_t> r = f.fs->Seek(ino, off, hole);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

// A 4 MiB + 1000 B file with a hole at [1 MiB, 2 MiB): what `src` holds.
std::string HoledContent() {
  std::string s = Incompressible(4 * (1 << 20) + 1000, 7);
  std::fill(s.begin() + (1 << 20), s.begin() + (2 << 20), '\0');
  return s;
}
void WriteHoled(FsFixture& f, uint64_t ino, const std::string& s) {
  f.MustWrite(ino, 0, s.substr(0, 1 << 20));
  f.MustWrite(ino, 2 << 20, s.substr(2 << 20));
}

// The shared blocks of the holed file: 8 before the hole, 16 and the last
// partial one after it.
constexpr uint64_t kHoledBlocks = 8 + 17;

}  // namespace

TEST_CASE("copy_file_range shares whole blocks, and reads see the copy at once",
          "[posix][clone]") {
  FsFixture f(uint64_t{256} << 20, CloneSlowSync());
  const std::string content = HoledContent();
  const uint64_t src = f.MustCreate(kRootIno, "src").ino;
  WriteHoled(f, src, content);
  f.Remount();  // synced: its blocks can be shared
  const uint64_t before = f.fs->GetStatus().space_allocated;
  const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
  f.MustWrite(dst, 0, Incompressible(300 * 1024, 9));  // old contents, replaced

  REQUIRE(MustCopy(f, src, 0, dst, 0, 64 << 20) == content.size());
  // Before the sync: bytes, holes, size.
  auto check = [&] {
    REQUIRE(f.MustGetAttr(dst).size == content.size());
    REQUIRE(f.MustRead(dst, 0, content.size() + 10) == content);
    REQUIRE(MustSeek(f, dst, 0, true) == uint64_t(1 << 20));
    REQUIRE(MustSeek(f, dst, 1 << 20, false) == uint64_t(2 << 20));
    REQUIRE(MustSeek(f, dst, 2 << 20, true) == content.size());
    REQUIRE(f.MustRead(src, 0, content.size()) == content);
  };
  check();
  f.Remount();
  check();
  FsStatus s = f.fs->GetStatus();
  REQUIRE(s.cloned_blocks == kHoledBlocks);
  REQUIRE(s.clone_saved_bytes >= (kHoledBlocks - 1) * kRecord);  // the last one compresses
  // The copy cost its indirect blocks and dnode, not its 3 MiB of data.
  INFO("allocated before " << before << " after " << s.space_allocated);
  REQUIRE(s.space_allocated < before + (1 << 20));

  // The source goes: the copy keeps the blocks, now referenced once.
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "src").ok());
  f.Remount();
  REQUIRE(f.MustRead(dst, 0, content.size()) == content);
  REQUIRE(f.fs->GetStatus().cloned_blocks == 0);
  const uint64_t with_dst = f.fs->GetStatus().space_allocated;
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "dst").ok());
  f.Remount();
  f.Remount();  // frees are reusable two txgs on
  INFO("with dst " << with_dst << " without " << f.fs->GetStatus().space_allocated);
  REQUIRE(f.fs->GetStatus().space_allocated + 3000000 <= with_dst);  // its 3 MB of data
}

TEST_CASE("copy_file_range copies what cannot be shared", "[posix][clone]") {
  FsFixture f(uint64_t{256} << 20, CloneSlowSync());
  const std::string content = Incompressible(1 << 20, 11);
  const uint64_t src = f.MustCreate(kRootIno, "src").ino;
  f.MustWrite(src, 0, content);

  SECTION("blocks changed since the last sync") {
    const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
    REQUIRE(MustCopy(f, src, 0, dst, 0, content.size()) == content.size());
    REQUIRE(f.MustRead(dst, 0, content.size()) == content);
    f.Remount();
    REQUIRE(f.MustRead(dst, 0, content.size()) == content);
    REQUIRE(f.fs->GetStatus().cloned_blocks == 0);
  }
  SECTION("offsets that lie differently in their blocks") {
    f.Remount();
    const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
    REQUIRE(MustCopy(f, src, 0, dst, 1, content.size()) == content.size());
    REQUIRE(f.MustRead(dst, 1, content.size()) == content);
    REQUIRE(f.MustRead(dst, 0, 1) == std::string(1, '\0'));
    f.Remount();
    REQUIRE(f.fs->GetStatus().cloned_blocks == 0);
  }
  SECTION("partial blocks at the edges, whole ones shared between them") {
    f.Remount();
    const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
    const uint64_t off = 1000, len = content.size() - 3000;
    REQUIRE(MustCopy(f, src, off, dst, off, len) == len);
    REQUIRE(f.MustRead(dst, off, len) == content.substr(off, len));
    REQUIRE(f.MustRead(dst, 0, off) == std::string(off, '\0'));
    f.Remount();
    REQUIRE(f.MustRead(dst, off, len) == content.substr(off, len));
    REQUIRE(f.fs->GetStatus().cloned_blocks == 6);  // blocks 1..6 of 0..7
  }
  SECTION("a range past the source's end is cut there") {
    f.Remount();
    const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
    REQUIRE(MustCopy(f, src, content.size() - 10, dst, 0, 100) == 10);
    REQUIRE(MustCopy(f, src, content.size(), dst, 0, 100) == 0);
    REQUIRE(f.MustGetAttr(dst).size == 10);
  }
}

TEST_CASE("copy_file_range refuses flags and overlapping ranges of one file", "[posix][clone]") {
  FsFixture f;
  const uint64_t a = f.MustCreate(kRootIno, "a").ino;
  f.MustWrite(a, 0, Incompressible(4 * kRecord, 3));
  REQUIRE(Code(f.fs->CopyFileRange(RootCreds(), a, 0, a, kRecord, 2 * kRecord, 0)) ==
          StatusCode::kInvalidArgument);
  REQUIRE(Code(f.fs->CopyFileRange(RootCreds(), a, 0, a, 0, 10, 1)) ==
          StatusCode::kInvalidArgument);
  const uint64_t d = f.MustMkdir(kRootIno, "d").ino;
  REQUIRE(!f.fs->CopyFileRange(RootCreds(), a, 0, d, 0, 10, 0).ok());
  // Within one file, apart: fine.
  f.Remount();
  REQUIRE(MustCopy(f, a, 0, a, 4 * kRecord, 2 * kRecord) == 2 * kRecord);
  REQUIRE(f.MustRead(a, 4 * kRecord, 2 * kRecord) == f.MustRead(a, 0, 2 * kRecord));
  f.Remount();
  REQUIRE(f.fs->GetStatus().cloned_blocks == 2);
  REQUIRE(f.MustRead(a, 4 * kRecord, 2 * kRecord) == f.MustRead(a, 0, 2 * kRecord));
}

TEST_CASE("a copy onto blocks that already share the source's counts them once",
          "[posix][clone]") {
  FsFixture f(uint64_t{256} << 20, CloneSlowSync());
  const std::string content = Incompressible(4 * kRecord, 41);
  const uint64_t src = f.MustCreate(kRootIno, "src").ino;
  f.MustWrite(src, 0, content);
  f.Remount();
  const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
  REQUIRE(MustCopy(f, src, 0, dst, 0, content.size()) == content.size());
  f.Remount();
  const FsStatus once = f.fs->GetStatus();
  REQUIRE(once.cloned_blocks == 4);
  // Again, onto itself: each block of dst already names the extent.
  REQUIRE(MustCopy(f, src, 0, dst, 0, content.size()) == content.size());
  f.Remount();
  REQUIRE(f.fs->GetStatus().cloned_blocks == 4);
  REQUIRE(f.fs->GetStatus().clone_saved_bytes == once.clone_saved_bytes);
  REQUIRE(f.MustRead(dst, 0, content.size()) == content);
  // dst copied back onto src: src's blocks are dst's already.
  REQUIRE(MustCopy(f, dst, 0, src, 0, content.size()) == content.size());
  f.Remount();
  REQUIRE(f.fs->GetStatus().clone_saved_bytes == once.clone_saved_bytes);
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "src").ok());
  REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "dst").ok());
  f.Remount();
  REQUIRE(f.fs->GetStatus().cloned_blocks == 0);
}

TEST_CASE("changes of a copy before its sync drop its shared blocks", "[posix][clone]") {
  FsFixture f(uint64_t{256} << 20, CloneSlowSync());
  const std::string content = Incompressible(8 * kRecord, 5);
  const uint64_t src = f.MustCreate(kRootIno, "src").ino;
  f.MustWrite(src, 0, content);
  f.Remount();
  const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
  REQUIRE(MustCopy(f, src, 0, dst, 0, content.size()) == content.size());
  std::string expect = content;
  SECTION("a write into a shared block, and the source overwritten") {
    f.MustWrite(dst, 10, "written after the copy");
    expect.replace(10, 22, "written after the copy");
    f.MustWrite(src, 0, Incompressible(2 * kRecord, 99));  // the source moves on
    REQUIRE(f.MustRead(dst, 0, expect.size()) == expect);
    f.Remount();
    REQUIRE(f.MustRead(dst, 0, expect.size()) == expect);
    REQUIRE(f.fs->GetStatus().cloned_blocks == 6);  // 2..7: 0 rewritten in the copy, 1 in the source
  }
  SECTION("a truncate, then a punch") {
    SetAttrRequest req;
    req.valid = SetAttrRequest::kSize;
    req.size = 3 * kRecord;
    REQUIRE(f.fs->SetAttr(RootCreds(), dst, req).ok());
    REQUIRE(f.fs->Fallocate(RootCreds(), dst, kFallocPunchHole | kFallocKeepSize, 0, kRecord)
                .ok());
    expect = std::string(kRecord, '\0') + content.substr(kRecord, 2 * kRecord);
    REQUIRE(f.MustRead(dst, 0, 8 * kRecord) == expect);
    f.Remount();
    REQUIRE(f.MustRead(dst, 0, 8 * kRecord) == expect);
    REQUIRE(f.fs->GetStatus().cloned_blocks == 2);
  }
  SECTION("the copy removed") {
    REQUIRE(f.fs->Unlink(RootCreds(), kRootIno, "dst").ok());
    f.Remount();
    REQUIRE(f.fs->GetStatus().cloned_blocks == 0);
    REQUIRE(f.MustRead(src, 0, content.size()) == content);
  }
}

TEST_CASE("copy_file_range shares blocks between datasets, and out of a snapshot",
          "[posix][clone]") {
  FsFixture f(uint64_t{256} << 20, CloneSlowSync());
  auto admin = [&f] { return f.fs->datasets(); };  // a remount makes a new one
  REQUIRE(admin()->Create("pool/home", false, {}).ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const std::string content = Incompressible(8 * kRecord, 31);
  const uint64_t src = f.MustCreate(kRootIno, "src").ino;
  f.MustWrite(src, 0, content);
  f.Remount();
  const uint64_t copy = f.MustCreate(home, "copy").ino;
  REQUIRE(MustCopy(f, src, 0, copy, 0, content.size()) == content.size());
  REQUIRE(f.MustRead(copy, 0, content.size()) == content);
  f.Remount();
  REQUIRE(f.MustRead(copy, 0, content.size()) == content);
  REQUIRE(f.fs->GetStatus().cloned_blocks == 8);

  // The source changes after a snapshot; the snapshot's file is copied
  // back, sharing the blocks that the snapshot and the first copy hold.
  REQUIRE(admin()->Snapshot({"pool@s"}, false).ok());
  f.MustWrite(src, 0, Incompressible(8 * kRecord, 32));
  f.Remount();
  const uint64_t snap = f.MustLookup(f.MustLookup(f.MustLookup(kRootIno, ".poolfs"), "snapshot"), "s");
  const uint64_t old = f.MustLookup(snap, "src");
  const uint64_t restored = f.MustCreate(kRootIno, "restored").ino;
  REQUIRE(MustCopy(f, old, 0, restored, 0, content.size()) == content.size());
  REQUIRE(f.MustRead(restored, 0, content.size()) == content);
  // A snapshot takes no copy.
  REQUIRE(Code(f.fs->CopyFileRange(RootCreds(), src, 0, old, 0, 10, 0)) == StatusCode::kReadOnly);
  f.Remount();
  REQUIRE(f.MustRead(restored, 0, content.size()) == content);
  REQUIRE(f.fs->GetStatus().cloned_blocks == 8);
  // The snapshot goes: its blocks stay, held by the two copies.
  REQUIRE(admin()->Destroy("pool@s", false).ok());
  f.Remount();
  REQUIRE(f.fs->GetStatus().cloned_blocks == 8);
  REQUIRE(f.fs->Unlink(RootCreds(), home, "copy").ok());
  f.Remount();
  REQUIRE(f.fs->GetStatus().cloned_blocks == 0);
  REQUIRE(f.MustRead(restored, 0, content.size()) == content);
}

TEST_CASE("a crash between a copy and its sync", "[posix][clone]") {
  FsFixture f(uint64_t{256} << 20, CloneSlowSync());
  const std::string content = Incompressible(6 * kRecord, 21);
  const std::string old = Incompressible(2 * kRecord, 22);
  const uint64_t src = f.MustCreate(kRootIno, "src").ino;
  f.MustWrite(src, 0, content);
  const uint64_t dst = f.MustCreate(kRootIno, "dst").ino;
  f.MustWrite(dst, 0, old);
  f.Remount();
  REQUIRE(MustCopy(f, src, 0, dst, 0, content.size()) == content.size());
  const bool fsynced = GENERATE(false, true);
  if (fsynced) REQUIRE(f.fs->Fsync(dst, false).ok());
  // The pool file as SIGKILL would leave it (no sync since the copy).
  const std::string crashed = f.dir + "/crashed";
  std::filesystem::copy_file(f.path, crashed);
  f.Unmount();
  f.path = crashed;
  f.Mount();
  INFO("fsynced " << fsynced);
  REQUIRE(f.MustRead(dst, 0, 8 * kRecord) == (fsynced ? content : old));
  REQUIRE(f.MustRead(src, 0, 8 * kRecord) == content);
  f.Remount();
  REQUIRE(f.MustRead(dst, 0, 8 * kRecord) == (fsynced ? content : old));
}

}  // namespace poolfs::core::posix::testing
