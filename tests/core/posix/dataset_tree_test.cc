// One mount of a pool's dataset tree: child datasets appear as directories
// of their parent's root, live; inode numbers are unique across datasets
// and stable across remounts; rename and link between datasets give
// CrossDevice; the join cannot be created over, removed or renamed; a
// destroy is refused while a dataset's files are held and frees it
// otherwise; a listing resumes across the joined entries; snapshots read
// under .poolfs/snapshot, read-only and live; clones join the tree, and a
// promote moves snapshots between the snapshot directories.
#include "posix/dataset_tree.h"

#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "posix_fixture.h"

namespace poolfs::core::posix {
namespace {

using testing::FsFixture;
using testing::RootCreds;

Status Create(FsFixture& f, const std::string& name, bool parents = false) {
  return f.fs->datasets()->Create(name, parents, {});
}

// The inode a listing of `dir` gives for "..".
uint64_t DotDot(FsFixture& f, uint64_t dir) {
  uint64_t dotdot = 0;
  REQUIRE(f.fs->ReadDir(RootCreds(), dir, 0, false,
                        [&](const DirEntry& e) {
                          if (e.name == "..") dotdot = e.ino;
                          return true;
                        })
              .ok());
  return dotdot;
}

TEST_CASE("child datasets appear in their parent's root, live and after a remount") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  REQUIRE(Create(f, "pool/home/alice").ok());
  REQUIRE(Create(f, "pool/a/b/c", /*parents=*/true).ok());
  CHECK(f.List(kRootIno) == std::vector<std::string>{"a", "home"});
  const uint64_t home = f.MustLookup(kRootIno, "home");
  CHECK(DatasetTreeFs::SlotOf(home) != 0);
  CHECK(DatasetTreeFs::LocalOf(home) == kRootIno);
  CHECK(f.List(home) == std::vector<std::string>{"alice"});
  const uint64_t alice = f.MustLookup(home, "alice");
  const Attr file = f.MustCreate(alice, "f");
  f.MustWrite(file.ino, 0, "hello");
  const Attr top = f.MustCreate(kRootIno, "f");
  // Unique across datasets: the same object id in two datasets.
  CHECK(DatasetTreeFs::LocalOf(file.ino) == DatasetTreeFs::LocalOf(top.ino));
  CHECK(file.ino != top.ino);
  // ".." of a child's root is its parent's root.
  CHECK(DotDot(f, alice) == home);

  f.Remount();
  CHECK(f.MustLookup(kRootIno, "home") == home);
  CHECK(f.MustLookup(home, "alice") == alice);
  CHECK(f.MustLookup(alice, "f") == file.ino);
  CHECK(f.MustRead(file.ino, 0, 5) == "hello");
  uint64_t c = f.MustLookup(f.MustLookup(f.MustLookup(kRootIno, "a"), "b"), "c");
  CHECK(f.List(c).empty());
}

TEST_CASE("rename and link between datasets give CrossDevice; joins are not files") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const Attr a = f.MustCreate(kRootIno, "a");
  const Attr b = f.MustCreate(home, "b");
  CHECK(f.fs->Rename(RootCreds(), kRootIno, "a", home, "a", 0).code() == StatusCode::kCrossDevice);
  CHECK(f.fs->Rename(RootCreds(), home, "b", kRootIno, "b", 0).code() == StatusCode::kCrossDevice);
  CHECK(f.fs->Link(RootCreds(), a.ino, home, "a2").status().code() == StatusCode::kCrossDevice);
  CHECK(f.fs->Link(RootCreds(), b.ino, home, "b2").ok());  // within one dataset: fine
  CHECK(f.fs->Mkdir(RootCreds(), kRootIno, "home", 0755).status().code() ==
        StatusCode::kAlreadyExists);
  CHECK(f.fs->Create(RootCreds(), kRootIno, "home", 0644).status().code() ==
        StatusCode::kAlreadyExists);
  CHECK(f.fs->Rmdir(RootCreds(), kRootIno, "home").code() == StatusCode::kBusy);
  CHECK(f.fs->Rename(RootCreds(), kRootIno, "home", kRootIno, "h2", 0).code() == StatusCode::kBusy);
  CHECK(f.fs->Rename(RootCreds(), kRootIno, "a", kRootIno, "home", 0).code() == StatusCode::kBusy);
}

TEST_CASE("a dataset created over a directory hides it until it goes") {
  FsFixture f;
  const Attr dir = f.MustMkdir(kRootIno, "data");
  f.MustCreate(dir.ino, "under");
  REQUIRE(Create(f, "pool/data").ok());
  const uint64_t data = f.MustLookup(kRootIno, "data");
  CHECK(data != dir.ino);
  CHECK(f.List(data).empty());
  CHECK(f.List(kRootIno) == std::vector<std::string>{"data"});  // once
  REQUIRE(f.fs->datasets()->Destroy("pool/data", false).ok());
  CHECK(f.MustLookup(kRootIno, "data") == dir.ino);
  CHECK(f.List(dir.ino) == std::vector<std::string>{"under"});
}

TEST_CASE("destroy waits for a dataset's files to be let go, then removes it") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const Attr file = f.MustCreate(home, "f");
  f.MustWrite(file.ino, 0, std::string(100000, 'x'));
  // The create took a lookup reference: the file is held.
  CHECK(f.fs->datasets()->Destroy("pool/home", false).code() == StatusCode::kBusy);
  CHECK(f.fs->GetAttr(file.ino).ok());
  f.fs->Forget(file.ino, 1);
  REQUIRE(f.fs->datasets()->Destroy("pool/home", false).ok());
  CHECK(f.fs->Lookup(RootCreds(), kRootIno, "home").status().code() == StatusCode::kNotFound);
  CHECK(f.fs->GetAttr(home).status().code() == StatusCode::kStale);
  CHECK(f.List(kRootIno).empty());
  f.Remount();
  CHECK(f.List(kRootIno).empty());
}

TEST_CASE("a dataset rename moves its join and keeps its inode numbers") {
  FsFixture f;
  REQUIRE(Create(f, "pool/a").ok());
  REQUIRE(Create(f, "pool/b").ok());
  const uint64_t a = f.MustLookup(kRootIno, "a");
  const Attr file = f.MustCreate(a, "f");
  REQUIRE(f.fs->datasets()->Rename("pool/a", "pool/b/a2").ok());
  CHECK(f.fs->Lookup(RootCreds(), kRootIno, "a").status().code() == StatusCode::kNotFound);
  const uint64_t b = f.MustLookup(kRootIno, "b");
  CHECK(f.MustLookup(b, "a2") == a);
  CHECK(f.MustLookup(a, "f") == file.ino);
}

TEST_CASE("a listing of a root resumes across its child datasets") {
  FsFixture f;
  std::set<std::string> expect;
  for (int i = 0; i < 20; i++) {
    const std::string n = "f" + std::to_string(i);
    f.MustCreate(kRootIno, n);
    expect.insert(n);
  }
  for (int i = 0; i < 5; i++) {
    const std::string n = "d" + std::to_string(i);
    REQUIRE(Create(f, "pool/" + n).ok());
    expect.insert(n);
  }
  // One entry per call, as a full reply buffer makes it.
  std::set<std::string> seen;
  uint64_t cookie = 0;
  for (int calls = 0; calls < 100; calls++) {
    bool got = false;
    REQUIRE(f.fs->ReadDir(RootCreds(), kRootIno, cookie, false,
                          [&](const DirEntry& e) {
                            if (got) return false;
                            got = true;
                            if (e.name != "." && e.name != "..") CHECK(seen.insert(e.name).second);
                            cookie = e.next_cookie;
                            return true;
                          })
                .ok());
    if (!got) break;
  }
  CHECK(seen == expect);
}

// Writers fill a dataset under a quota while txgs sync every few
// milliseconds: what a write asked for counts until the txg it lands in has
// synced, so the quota holds however the writes fall across txgs.
TEST_CASE("A quota is never passed by writes the open txgs still hold") {
  MountOptions o = testing::FastOptions();
  o.tunables.txg.timeout_ms = 5;
  FsFixture f(uint64_t{256} << 20, o);
  REQUIRE(Create(f, "pool/q").ok());
  const uint64_t q = f.MustLookup(kRootIno, "q");
  constexpr uint64_t kQuota = uint64_t{8} << 20;
  REQUIRE(f.fs->datasets()->Set("pool/q", {"quota", std::to_string(kQuota)}).ok());
  std::vector<uint64_t> files;
  for (int t = 0; t < 4; t++) files.push_back(f.MustCreate(q, "w" + std::to_string(t)).ino);
  std::vector<std::thread> writers;
  std::atomic<int> refused{0};
  for (int t = 0; t < 4; t++) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(uint64_t(t) + 1);
      std::string chunk(64 * 1024, '\0');  // incompressible: stored as written
      for (char& c : chunk) c = char(rng());
      for (uint64_t off = 0;; off += chunk.size()) {
        // Now and then a pause, so that the writes fall into many txgs.
        if (off % (1 << 20) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        auto w = f.fs->Write(RootCreds(), files[size_t(t)], off, chunk);
        if (!w.ok()) {
          if (w.status().code() == StatusCode::kQuotaExceeded) refused++;
          return;
        }
      }
    });
  }
  for (std::thread& w : writers) w.join();
  REQUIRE(refused == 4);
  f.Remount();
  auto list = f.fs->datasets()->List("pool/q", false);
  REQUIRE(list.ok());
  INFO("referenced " << list->front().referenced << " of a quota of " << kQuota);
  REQUIRE(list->front().used <= kQuota);
}

// With a txg timeout of a minute nothing syncs unless something waits for
// it, so what each sync mode makes durable shows in the intent log's
// commits (the txgs do not sync).
TEST_CASE("sync=always makes each change durable before it returns, sync=disabled fsync at once") {
  MountOptions o = testing::FastOptions();
  o.tunables.txg.timeout_ms = 60000;
  FsFixture f(uint64_t{256} << 20, o);
  REQUIRE(Create(f, "pool/always").ok());
  REQUIRE(Create(f, "pool/off").ok());
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin->Set("pool/always", {"sync", "always"}).ok());
  REQUIRE(admin->Set("pool/off", {"sync", "disabled"}).ok());
  CHECK(admin->Set("pool/off", {"sync", "sometimes"}).code() == StatusCode::kInvalidArgument);
  const uint64_t always = f.MustLookup(kRootIno, "always");
  const uint64_t off = f.MustLookup(kRootIno, "off");

  // always: a create, a write, a rename are each committed to the log
  // when they return.
  for (int step = 0; step < 3; step++) {
    const uint64_t commits = f.fs->GetStatus().log.commits;
    if (step == 0) f.MustCreate(always, "f");
    if (step == 1) f.MustWrite(f.MustLookup(always, "f"), 0, "durable");
    if (step == 2) REQUIRE(f.fs->Rename(RootCreds(), always, "f", always, "g", 0).ok());
    INFO("step " << step);
    CHECK(f.fs->GetStatus().log.commits > commits);
  }

  // disabled: fsync returns without a commit or a sync; standard (the
  // root): it commits.
  const Attr quick = f.MustCreate(off, "f");
  f.MustWrite(quick.ino, 0, "maybe");
  const FsStatus before = f.fs->GetStatus();
  REQUIRE(f.fs->Fsync(quick.ino, false).ok());
  CHECK(f.fs->GetStatus().log.commits == before.log.commits);
  CHECK(f.fs->GetStatus().last_synced_txg == before.last_synced_txg);
  const Attr normal = f.MustCreate(kRootIno, "f");
  f.MustWrite(normal.ino, 0, "surely");
  const uint64_t commits = f.fs->GetStatus().log.commits;
  REQUIRE(f.fs->Fsync(normal.ino, false).ok());
  CHECK(f.fs->GetStatus().log.commits == commits + 1);
  // Inherited, like the others.
  REQUIRE(Create(f, "pool/off/child").ok());
  auto got = admin->Get("pool/off/child", {"sync"});
  REQUIRE(got.ok());
  REQUIRE(got->size() == 1);
  CHECK(got->front().value == "disabled");
  CHECK(got->front().source == "inherited from pool/off");
}

TEST_CASE("readonly, quota and atime apply live to the dataset they are set on") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  REQUIRE(Create(f, "pool/home/alice").ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const uint64_t alice = f.MustLookup(home, "alice");
  const Attr file = f.MustCreate(alice, "f");
  DatasetAdmin* admin = f.fs->datasets();

  REQUIRE(admin->Set("pool/home", {"readonly", "on"}).ok());
  CHECK(f.fs->Create(RootCreds(), home, "x", 0644).status().code() == StatusCode::kReadOnly);
  CHECK(f.fs->Write(RootCreds(), file.ino, 0, "x").status().code() ==
        StatusCode::kReadOnly);                                // inherited by alice
  CHECK(f.fs->Create(RootCreds(), kRootIno, "x", 0644).ok());  // the parent is not
  REQUIRE(admin->Inherit("pool/home", "readonly").ok());
  f.MustWrite(file.ino, 0, "x");

  // A quota on home bounds alice too: EDQUOT, and statfs says so.
  REQUIRE(admin->Set("pool/home", {"quota", "2M"}).ok());
  const std::string mib(1 << 20, 'q');
  Status st = Status::Ok();
  uint64_t off = 0;
  for (int i = 0; i < 8 && st.ok(); i++, off += mib.size())
    st = f.fs->Write(RootCreds(), file.ino, off, mib).status();
  CHECK(st.code() == StatusCode::kQuotaExceeded);
  CHECK(off <= (uint64_t{3} << 20));
  auto fs_alice = f.fs->StatFs(alice);
  REQUIRE(fs_alice.ok());
  CHECK(fs_alice->blocks * fs_alice->block_size <= (uint64_t{2} << 20));
  auto fs_root = f.fs->StatFs(kRootIno);
  REQUIRE(fs_root.ok());
  CHECK(fs_root->blocks * fs_root->block_size > (uint64_t{100} << 20));
  // The root dataset is not bound by it.
  const Attr big = f.MustCreate(kRootIno, "big");
  for (int i = 0; i < 4; i++) f.MustWrite(big.ino, uint64_t(i) << 20, mib);
  REQUIRE(admin->Inherit("pool/home", "quota").ok());
  f.MustWrite(file.ino, off, mib);

  // atime=off: reads leave atime alone.
  REQUIRE(admin->Set("pool/home", {"atime", "off"}).ok());
  const Timespec before = f.MustGetAttr(file.ino).atime;
  SetAttrRequest old;
  old.valid = SetAttrRequest::kAtime;
  old.atime = Timespec{1000, 0};
  REQUIRE(f.fs->SetAttr(RootCreds(), file.ino, old).ok());
  (void)f.MustRead(file.ino, 0, 1);
  CHECK(f.MustGetAttr(file.ino).atime == Timespec{1000, 0});
  REQUIRE(admin->Set("pool/home", {"atime", "on"}).ok());
  (void)f.MustRead(file.ino, 0, 1);
  CHECK(f.MustGetAttr(file.ino).atime != Timespec{1000, 0});
  (void)before;
}

TEST_CASE("a mount of one dataset shows its tree at the root") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  REQUIRE(Create(f, "pool/home/alice").ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  f.MustCreate(home, "in-home");
  f.MustCreate(kRootIno, "in-root");
  f.Unmount();
  f.options.dataset = "pool/home";
  f.Mount();
  CHECK(f.List(kRootIno) == std::vector<std::string>{"alice", "in-home"});
  const uint64_t alice = f.MustLookup(kRootIno, "alice");
  CHECK(DotDot(f, kRootIno) == kRootIno);  // the mount's root is its own parent
  CHECK(f.MustGetAttr(kRootIno).ino == kRootIno);
  f.MustCreate(alice, "x");
  CHECK(f.fs->datasets()->Destroy("pool/home", true).code() == StatusCode::kBusy);
  f.Unmount();
  f.options.dataset = "pool/nope";
  auto r = Filesystem::Mount({f.path}, f.options);
  CHECK(r.status().code() == StatusCode::kNotFound);
  f.options.dataset.clear();
  f.Mount();
}

TEST_CASE("a reservation is held back from every other dataset") {
  FsFixture f(uint64_t{128} << 20);
  REQUIRE(Create(f, "pool/db").ok());
  REQUIRE(Create(f, "pool/other").ok());
  const uint64_t other = f.MustLookup(kRootIno, "other");
  const uint64_t db = f.MustLookup(kRootIno, "db");
  auto before = f.fs->StatFs(other);
  REQUIRE(before.ok());
  const uint64_t free_bytes = before->blocks_available * before->block_size;
  // Nearly all the free space, for db alone.
  const uint64_t reserve = free_bytes - (uint64_t{8} << 20);
  REQUIRE(f.fs->datasets()->Set("pool/db", {"reservation", std::to_string(reserve)}).ok());
  const std::string mib(1 << 20, 'r');
  const Attr a = f.MustCreate(other, "a");
  Status st = Status::Ok();
  uint64_t off = 0;
  for (int i = 0; i < 64 && st.ok(); i++, off += mib.size())
    st = f.fs->Write(RootCreds(), a.ino, off, mib).status();
  CHECK(st.code() == StatusCode::kNoSpace);
  CHECK(off <= (uint64_t{16} << 20));
  // db itself may use its reservation.
  const Attr b = f.MustCreate(db, "b");
  for (int i = 0; i < 16; i++) f.MustWrite(b.ino, uint64_t(i) << 20, mib);
  REQUIRE(f.fs->datasets()->Inherit("pool/db", "reservation").ok());
}

}  // namespace
}  // namespace poolfs::core::posix

namespace poolfs::core::posix {
namespace {

TEST_CASE("snapshots read under .poolfs/snapshot, read-only, appearing and going live") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const Attr file = f.MustCreate(home, "f");
  f.MustWrite(file.ino, 0, "before");
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin->Snapshot({"pool/home@one"}, false).ok());
  f.MustWrite(file.ino, 0, "after!");

  // Hidden from the listing, found by name.
  CHECK(f.List(home) == std::vector<std::string>{"f"});
  const uint64_t ctl = f.MustLookup(home, ".poolfs");
  const uint64_t dir = f.MustLookup(ctl, "snapshot");
  CHECK(f.List(ctl) == std::vector<std::string>{"snapshot"});
  CHECK(f.List(dir) == std::vector<std::string>{"one"});
  const uint64_t one = f.MustLookup(dir, "one");
  CHECK(DatasetTreeFs::SlotOf(one) != DatasetTreeFs::SlotOf(home));
  const uint64_t old_file = f.MustLookup(one, "f");
  CHECK(f.MustRead(old_file, 0, 6) == "before");
  CHECK(f.MustRead(file.ino, 0, 6) == "after!");
  CHECK(f.MustLookup(one, "..") == dir);
  CHECK(f.MustLookup(dir, "..") == ctl);
  CHECK(f.MustLookup(ctl, "..") == home);
  // Nothing there takes a change.
  CHECK(f.fs->Write(RootCreds(), old_file, 0, "x").status().code() == StatusCode::kReadOnly);
  CHECK(f.fs->Create(RootCreds(), one, "new", 0644).status().code() == StatusCode::kReadOnly);
  CHECK(f.fs->Create(RootCreds(), dir, "new", 0644).status().code() == StatusCode::kReadOnly);
  CHECK(f.fs->Mkdir(RootCreds(), ctl, "x", 0755).status().code() == StatusCode::kReadOnly);
  CHECK(f.fs->Create(RootCreds(), home, ".poolfs", 0644).status().code() ==
        StatusCode::kAlreadyExists);
  // A new snapshot is there at once; one held is not destroyed, one let go
  // is, and goes from the listing.
  REQUIRE(admin->Snapshot({"pool/home@two"}, false).ok());
  CHECK(f.List(dir) == std::vector<std::string>{"one", "two"});
  CHECK(admin->Destroy("pool/home@one", false).code() == StatusCode::kBusy);
  f.fs->Forget(old_file, 1);
  f.fs->Forget(one, 1);
  REQUIRE(admin->Destroy("pool/home@one", false).ok());
  CHECK(f.List(dir) == std::vector<std::string>{"two"});
  CHECK(f.fs->Lookup(RootCreds(), dir, "one").status().code() == StatusCode::kNotFound);
  // A rename shows at once; the snapshot stays open under its new name.
  const uint64_t two = f.MustLookup(dir, "two");
  REQUIRE(admin->Rename("pool/home@two", "@deux").ok());
  CHECK(f.List(dir) == std::vector<std::string>{"deux"});
  CHECK(f.MustLookup(dir, "deux") == two);
  CHECK(f.fs->Lookup(RootCreds(), dir, "two").status().code() == StatusCode::kNotFound);
  // snapdir=visible lists it.
  REQUIRE(admin->Set("pool/home", {"snapdir", "visible"}).ok());
  CHECK(f.List(home) == std::vector<std::string>{".poolfs", "f"});
}

TEST_CASE("a clone appears as a dataset of the mount; promote moves the snapshots it takes") {
  FsFixture f;
  REQUIRE(Create(f, "pool/home").ok());
  const uint64_t home = f.MustLookup(kRootIno, "home");
  const Attr file = f.MustCreate(home, "f");
  f.MustWrite(file.ino, 0, "origin");
  DatasetAdmin* admin = f.fs->datasets();
  REQUIRE(admin->Snapshot({"pool/home@one"}, false).ok());
  REQUIRE(admin->Snapshot({"pool/home@two"}, false).ok());
  REQUIRE(admin->Clone("pool/home@one", "pool/work", {}).ok());
  // The clone is a dataset of the mount at once, with the snapshot's files.
  const uint64_t work = f.MustLookup(kRootIno, "work");
  CHECK(DatasetTreeFs::SlotOf(work) != DatasetTreeFs::SlotOf(home));
  const uint64_t copy = f.MustLookup(work, "f");
  CHECK(f.MustRead(copy, 0, 6) == "origin");
  f.MustWrite(copy, 0, "clone!");
  CHECK(f.MustRead(copy, 0, 6) == "clone!");
  CHECK(f.MustRead(file.ino, 0, 6) == "origin");
  CHECK(admin->Destroy("pool/home@one", false).code() == StatusCode::kNotEmpty);
  // A moved snapshot held open under the old dataset keeps the promote
  // back; let go, it moves, and shows under the clone.
  const uint64_t dir = f.MustLookup(f.MustLookup(home, ".poolfs"), "snapshot");
  const uint64_t one = f.MustLookup(dir, "one");
  CHECK(admin->Promote("pool/work").code() == StatusCode::kBusy);
  f.fs->Forget(one, 1);
  REQUIRE(admin->Promote("pool/work").ok());
  CHECK(f.List(dir) == std::vector<std::string>{"two"});
  const uint64_t work_dir = f.MustLookup(f.MustLookup(work, ".poolfs"), "snapshot");
  CHECK(f.List(work_dir) == std::vector<std::string>{"one"});
  CHECK(f.MustRead(f.MustLookup(f.MustLookup(work_dir, "one"), "f"), 0, 6) == "origin");
  auto origin = admin->Get("pool/home", {"origin"});
  REQUIRE(origin.ok());
  CHECK((*origin)[0].value == "pool/work@one");
}

}  // namespace
}  // namespace poolfs::core::posix
