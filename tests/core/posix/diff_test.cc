// DatasetAdmin::Diff (posix/diff.h): the exact changes between a snapshot
// and a later snapshot or the dataset, through a mount and offline, its
// refusals, and that it reads only what changed.
#include "posix/diff.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pool/pool.h"
#include "posix_fixture.h"
#include "zap/zap.h"

namespace poolfs::core::posix {
namespace {

using testing::FsFixture;
using testing::RootCreds;

// "M /a", "+ /b", "R /c -> /d": as `poolfs diff` prints them.
std::vector<std::string> Lines(const std::vector<DiffEntry>& entries) {
  std::vector<std::string> out;
  for (const DiffEntry& e : entries) {
    std::string line = std::string(1, char(e.type)) + " " + e.path;
    if (e.type == DiffEntry::Type::kRenamed) line += " -> " + e.new_path;
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> MustDiff(DatasetAdmin* admin, std::string_view from, std::string_view to) {
  auto r = admin->Diff(from, to);
  INFO(std::string(from) << " .. " << std::string(to) << ": " << r.status().ToString());
  REQUIRE(r.ok());
  return Lines(*r);
}

void MustSnapshot(DatasetAdmin* admin, const std::string& name) {
  Status st = admin->Snapshot({name}, false);
  INFO(name << ": " << st.ToString());
  REQUIRE(st.ok());
}

TEST_CASE("diff lists the files created, removed, renamed and modified since a snapshot") {
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  const uint64_t d1 = f.MustMkdir(kRootIno, "d1").ino;
  const uint64_t d2 = f.MustMkdir(kRootIno, "d2").ino;
  std::map<std::string, uint64_t> ino;
  for (const char* name : {"keep", "mod", "chm", "gone", "same", "across", "linked", "xattr"}) {
    ino[name] = f.MustCreate(d1, name).ino;
    f.MustWrite(ino[name], 0, std::string("data of ") + name);
  }
  MustSnapshot(admin, "pool@a");
  CHECK(MustDiff(admin, "pool@a", "pool").empty());
  CHECK(MustDiff(admin, "pool@a", "pool@a").empty());

  const uint64_t d3 = f.MustMkdir(kRootIno, "d3").ino;
  f.MustCreate(d3, "inner");
  f.MustCreate(d2, "new");
  REQUIRE(f.fs->Unlink(RootCreds(), d1, "gone").ok());
  REQUIRE(f.fs->Rename(RootCreds(), d1, "same", d1, "same2", 0).ok());
  REQUIRE(f.fs->Rename(RootCreds(), d1, "across", d2, "moved", 0).ok());
  f.MustWrite(ino["mod"], 3, "more");
  f.Chmod(ino["chm"], 0600);
  REQUIRE(f.fs->Link(RootCreds(), ino["linked"], d2, "hard").ok());
  REQUIRE(f.fs->SetXattr(RootCreds(), ino["xattr"], "user.note", "v", 0).ok());
  f.MustRead(ino["keep"], 0, 4);  // atime alone is no change
  // clang-format off
  const std::vector<std::string> expected = {
      "M /",
      "M /d1",
      "R /d1/across -> /d2/moved",
      "M /d1/chm",
      "- /d1/gone",
      "M /d1/linked",
      "M /d1/mod",
      "R /d1/same -> /d1/same2",
      "M /d1/xattr",
      "M /d2",
      "+ /d2/new",
      "+ /d3",
      "+ /d3/inner",
  };
  // clang-format on
  CHECK(MustDiff(admin, "pool@a", "pool") == expected);
  MustSnapshot(admin, "pool@b");
  CHECK(MustDiff(admin, "pool@a", "pool@b") == expected);
  CHECK(MustDiff(admin, "pool@b", "pool").empty());

  // From b on: a directory removed with its file, a file replaced by
  // another of the same name, a renamed directory (its files unlisted).
  REQUIRE(f.fs->Unlink(RootCreds(), d3, "inner").ok());
  REQUIRE(f.fs->Rmdir(RootCreds(), kRootIno, "d3").ok());
  REQUIRE(f.fs->Unlink(RootCreds(), d1, "keep").ok());
  f.MustCreate(d1, "keep");
  REQUIRE(f.fs->Rename(RootCreds(), kRootIno, "d2", kRootIno, "d2b", 0).ok());
  CHECK(MustDiff(admin, "pool@b", "pool") == std::vector<std::string>{
                                                 "M /",
                                                 "M /d1",
                                                 "+ /d1/keep",
                                                 "- /d1/keep",
                                                 "R /d2 -> /d2b",
                                                 "- /d3",
                                                 "- /d3/inner",
                                             });
  // Both snapshots stay as they were.
  CHECK(MustDiff(admin, "pool@a", "pool@b") == expected);

  // Offline, over the pool's file.
  f.Unmount();
  auto off = OfflinePool::Open({f.path});
  INFO(off.status().ToString());
  REQUIRE(off.ok());
  CHECK(MustDiff(&(*off)->datasets(), "pool@a", "pool@b") == expected);
  CHECK(MustDiff(&(*off)->datasets(), "pool@b", "pool@b").empty());
  REQUIRE((*off)->Close().ok());
}

TEST_CASE("diff of a child dataset names paths from its own root") {
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin->Create("pool/home", false, {}).ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const uint64_t dir = f.MustMkdir(home, "docs").ino;
  const uint64_t file = f.MustCreate(dir, "letter").ino;
  MustSnapshot(admin, "pool/home@monday");
  f.MustWrite(file, 0, "dear");
  f.MustCreate(kRootIno, "elsewhere");  // another dataset: not in the diff
  CHECK(MustDiff(admin, "pool/home@monday", "pool/home") ==
        std::vector<std::string>{"M /docs/letter"});
  CHECK(MustDiff(admin, "home@monday", "home") == std::vector<std::string>{"M /docs/letter"});
}

TEST_CASE("diff refuses bad names, two datasets, a later snapshot first and missing ones") {
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin->Create("pool/other", false, {}).ok());
  MustSnapshot(admin, "pool@a");
  f.MustCreate(kRootIno, "x");
  MustSnapshot(admin, "pool@b");
  MustSnapshot(admin, "pool/other@a");
  auto code = [&](std::string_view from, std::string_view to) {
    auto r = admin->Diff(from, to);
    INFO(std::string(from) << " .. " << std::string(to) << ": " << r.status().ToString());
    CHECK(!r.status().message().empty());
    return r.status().code();
  };
  CHECK(code("pool", "pool") == StatusCode::kInvalidArgument);  // from is no snapshot
  CHECK(code("pool@", "pool") == StatusCode::kInvalidArgument);
  CHECK(code("pool@a", "pool@b@c") == StatusCode::kInvalidArgument);
  CHECK(code("pool@a", "pool/other") == StatusCode::kInvalidArgument);
  CHECK(code("pool@a", "pool/other@a") == StatusCode::kInvalidArgument);
  CHECK(code("pool@b", "pool@a") == StatusCode::kInvalidArgument);
  CHECK(code("pool@none", "pool") == StatusCode::kNotFound);
  CHECK(code("pool@a", "pool@none") == StatusCode::kNotFound);
  CHECK(code("pool/nothing@a", "pool/nothing") == StatusCode::kNotFound);
  auto r = admin->Diff("pool@b", "pool@a");
  CHECK(r.status().message().find("older") != std::string::npos);
}

TEST_CASE("diff compares a clone with its origin, or an earlier snapshot of the origin's dataset") {
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin->Create("pool/src", false, {}).ok());
  const uint64_t src = f.MustLookup(kRootIno, "src");
  f.MustCreate(src, "kept");
  MustSnapshot(admin, "pool/src@a");
  f.MustCreate(src, "later");
  MustSnapshot(admin, "pool/src@b");
  REQUIRE(admin->Clone("pool/src@b", "pool/cl", {}).ok());
  const uint64_t cl = f.MustLookup(kRootIno, "cl");
  f.MustCreate(cl, "mine");
  CHECK(MustDiff(admin, "pool/src@b", "pool/cl") == std::vector<std::string>{"M /", "+ /mine"});
  CHECK(MustDiff(admin, "pool/src@a", "pool/cl") ==
        std::vector<std::string>{"M /", "+ /later", "+ /mine"});
  MustSnapshot(admin, "pool/cl@c");
  CHECK(MustDiff(admin, "pool/src@b", "pool/cl@c") == std::vector<std::string>{"M /", "+ /mine"});
  // After a promote the roles swap: src is the clone of cl@b.
  REQUIRE(admin->Promote("pool/cl").ok());
  CHECK(MustDiff(admin, "pool/cl@a", "pool/src") == std::vector<std::string>{"M /", "+ /later"});
  // Not along the origins: refused.
  REQUIRE(admin->Create("pool/other", false, {}).ok());
  CHECK(admin->Diff("pool/cl@b", "pool/other").status().code() == StatusCode::kInvalidArgument);
  REQUIRE(admin->Clone("pool/cl@a", "pool/early", {}).ok());
  CHECK(admin->Diff("pool/cl@b", "pool/early").status().code() == StatusCode::kInvalidArgument);
}

// The pool of `f`'s file, imported here (the mount is gone).
std::unique_ptr<pool::Pool> MustImport(FsFixture& f) {
  f.Unmount();
  auto p = pool::Pool::Import({f.path}, pool::PoolOptions{});
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return std::move(*p);
}

TEST_CASE("diff finds a file its parent no longer holds, and refuses a damaged znode") {
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  const uint64_t d1 = f.MustMkdir(kRootIno, "d1").ino;
  const uint64_t d2 = f.MustMkdir(kRootIno, "d2").ino;
  const uint64_t file = f.MustCreate(d1, "orig").ino;
  const uint64_t other = f.MustCreate(d1, "other").ino;
  MustSnapshot(admin, "pool@a");
  // Its only name left is in d2, while its parent stays d1 (a link does
  // not move it).
  REQUIRE(f.fs->Link(RootCreds(), file, d2, "alias").ok());
  REQUIRE(f.fs->Unlink(RootCreds(), d1, "orig").ok());
  std::unique_ptr<pool::Pool> pool = MustImport(f);
  DiffStats st;
  auto r = DiffDatasets(*pool, "pool@a", "pool", &st);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(Lines(*r) == std::vector<std::string>{"M /d1", "R /d1/orig -> /d2/alias", "M /d2"});
  CHECK(st.full_walk);

  // A directory entry naming a plain file as a directory, met by that
  // walk: Corruption naming the object.
  dmu::ObjectSet* os = pool->root_dataset();
  REQUIRE(os != nullptr);
  auto root = zap::Zap::Open(os, ObjectId(kRootIno));
  REQUIRE(root.ok());
  auto change_root = [&](bool add) {
    dmu::Tx tx(pool->assigner());
    REQUIRE(tx.Assign().ok());
    if (add)
      REQUIRE((*root)->Add(tx, "fake", zap::Value{other, S_IFDIR}).ok());
    else
      REQUIRE((*root)->Remove(tx, "fake").ok());
    tx.Commit();
  };
  change_root(true);
  r = DiffDatasets(*pool, "pool@a", "pool");
  CHECK(r.status().code() == StatusCode::kCorruption);
  CHECK(r.status().message().find("object " + std::to_string(other) + " is named as a directory") !=
        std::string::npos);
  change_root(false);

  // A znode that does not decode: Corruption naming the object.
  {
    dmu::Tx tx(pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(os->SetBonus(tx, ObjectId(other), kZnodeBonus, std::string(kZnodeSize, '\x7f')).ok());
    tx.Commit();
  }
  r = DiffDatasets(*pool, "pool@a", "pool");
  CHECK(r.status().code() == StatusCode::kCorruption);
  CHECK(r.status().message().find("object " + std::to_string(other)) != std::string::npos);
  REQUIRE(pool->Export().ok());
}

TEST_CASE("diff of a large tree reads only the blocks that changed", "[single-threaded]") {
  constexpr int kDirs = 100, kFiles = 200;  // 20,000 files
  FsFixture f;
  DatasetAdmin* admin = f.fs->datasets();
  MustSnapshot(admin, "pool@empty");
  uint64_t target = 0;
  for (int d = 0; d < kDirs; d++) {
    const uint64_t dir = f.MustMkdir(kRootIno, "d" + std::to_string(d)).ino;
    for (int i = 0; i < kFiles; i++) {
      const uint64_t file = f.MustCreate(dir, "f" + std::to_string(i)).ino;
      if (d == 42 && i == 117) target = file;
    }
  }
  MustSnapshot(admin, "pool@full");
  f.MustWrite(target, 0, "one change");
  std::unique_ptr<pool::Pool> imported = MustImport(f);
  pool::Pool& pool = *imported;
  const uint64_t reads_before = pool.SyncStats().blocks_read;
  DiffStats st;
  auto r = DiffDatasets(pool, "pool@full", "pool", &st);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(Lines(*r) == std::vector<std::string>{"M /d42/f117"});
  // 20,000 dnodes fill 626 dnode blocks: a walk of them all is no diff.
  CHECK(st.objects == 1);
  CHECK(st.dnodes.dnode_blocks == 1);
  CHECK(st.dnodes.blocks_read <= 8);  // two roots, a few indirect blocks, the dnode blocks
  CHECK(st.directories_listed == 2);  // d42 and the root, for the path
  CHECK_FALSE(st.full_walk);
  // Everything the pool read for it (the cache is cold after the import):
  // the dnode walk, the dnodes and directory it named, a sync.
  CHECK(pool.SyncStats().blocks_read - reads_before < 64);

  // The same counters see a diff that does cover the whole tree.
  DiffStats all;
  auto everything = DiffDatasets(pool, "pool@empty", "pool@full", &all);
  INFO(everything.status().ToString());
  REQUIRE(everything.ok());
  CHECK(everything->size() == 1 + kDirs + kDirs * kFiles);  // "M /" and every name
  CHECK(all.dnodes.dnode_blocks >= (kDirs * kFiles) / 32);
  REQUIRE(pool.Export().ok());
}

}  // namespace
}  // namespace poolfs::core::posix
