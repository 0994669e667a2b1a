// Filesystem::OpenDatasetView, what `poolfs mount POOL/PATH MNT` serves
// beside a mounted pool: the view shows one dataset's tree at its root over
// the same files as the pool's mount; destroying its dataset or an
// ancestor is Busy while it is open, a rename moves it along; the lookups
// its kernel held are dropped when it goes; a read-only view changes
// nothing; names the pool's mount invalidates reach the view too.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config/config.h"
#include "poolfs/fs.h"
#include "poolfs/pool_admin.h"
#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::TempDir;

// A pool "tank" with tank/home and tank/home/alice, mounted whole.
struct ViewedPool {
  ViewedPool() {
    CreatePoolOptions po;
    po.name = "tank";
    REQUIRE(CreatePool({path}, uint64_t{128} << 20, po).ok());
    MountOptions o;
    o.tunables = config::Tunables{}.core;
    auto mounted = Filesystem::Mount({path}, o);
    REQUIRE(mounted.ok());
    fs = std::move(mounted).value();
    REQUIRE(fs->datasets()->Create("tank/home/alice", /*parents=*/true, {}).ok());
  }
  std::unique_ptr<Filesystem> View(const std::string& dataset, bool read_only = false) {
    DatasetViewOptions vo;
    vo.read_only = read_only;
    vo.where = "/mnt/view";
    auto v = fs->OpenDatasetView(dataset, vo);
    REQUIRE(v.ok());
    return std::move(v).value();
  }
  TempDir dir;
  const std::string path = dir / "t.pool";
  std::unique_ptr<Filesystem> fs;
  const Creds root{};
};

TEST_CASE("a dataset view shows the dataset's tree at its root over the pool mount's files") {
  ViewedPool p;
  auto view = p.View("tank/home");
  auto home = p.fs->Lookup(p.root, kRootIno, "home");
  REQUIRE(home.ok());
  auto f = p.fs->Create(p.root, home->ino, "f", S_IFREG | 0644);
  REQUIRE(f.ok());
  REQUIRE(p.fs->Write(p.root, f->ino, 0, "through the pool").ok());
  // The view's root is the dataset's root: f is there, with f's number.
  auto vf = view->Lookup(p.root, kRootIno, "f");
  REQUIRE(vf.ok());
  CHECK(vf->ino == f->ino);
  std::string got;
  REQUIRE(view->Read(vf->ino, 0, 64, &got).ok());
  CHECK(got == "through the pool");
  // A change through the view is the pool mount's at once.
  auto g = view->Create(p.root, kRootIno, "g", S_IFREG | 0644);
  REQUIRE(g.ok());
  REQUIRE(view->Write(p.root, g->ino, 0, "through the view").ok());
  auto pg = p.fs->Lookup(p.root, home->ino, "g");
  REQUIRE(pg.ok());
  REQUIRE(p.fs->Read(pg->ino, 0, 64, &got).ok());
  CHECK(got == "through the view");
  // The child dataset is a folder of the view's root; the root is its own
  // parent.
  std::vector<std::pair<std::string, uint64_t>> names;
  REQUIRE(view->ReadDir(p.root, kRootIno, 0, false,
                        [&](const DirEntry& e) {
                          names.emplace_back(e.name, e.ino);
                          return true;
                        })
              .ok());
  CHECK(std::find(names.begin(), names.end(), std::pair<std::string, uint64_t>("..", kRootIno)) !=
        names.end());
  CHECK(std::find_if(names.begin(), names.end(),
                     [](const auto& n) { return n.first == "alice"; }) != names.end());
  CHECK(view->GetAttr(kRootIno).ok());
  CHECK(view->GetAttr(kRootIno)->ino == kRootIno);
  auto up = view->Lookup(p.root, kRootIno, "..");
  REQUIRE(up.ok());
  CHECK(up->ino == kRootIno);
  view->Forget(kRootIno, 1);
}

TEST_CASE("a viewed dataset cannot be destroyed, and a rename moves the view along") {
  ViewedPool p;
  auto view = p.View("tank/home/alice");
  REQUIRE(view->Create(p.root, kRootIno, "f", S_IFREG | 0644).ok());
  const Status busy = p.fs->datasets()->Destroy("tank/home/alice", false);
  CHECK(busy.code() == StatusCode::kBusy);
  CHECK(busy.message().find("tank/home/alice holds the root of the mount on /mnt/view") !=
        std::string::npos);
  CHECK(p.fs->datasets()->Destroy("tank/home", /*recursive=*/true).code() == StatusCode::kBusy);
  REQUIRE(p.fs->datasets()->Rename("tank/home/alice", "tank/alice").ok());
  CHECK(view->Lookup(p.root, kRootIno, "f").ok());
  CHECK(p.fs->datasets()->Destroy("tank/alice", false).code() == StatusCode::kBusy);
  // Once the view is gone, so is the hold, and the lookups its kernel kept.
  REQUIRE(view->Unmount().ok());
  CHECK(p.fs->datasets()->Destroy("tank/alice", false).ok());
  CHECK(p.fs->datasets()->Destroy("tank/home", true).ok());
}

TEST_CASE("the lookups a view's kernel holds go with the view") {
  ViewedPool p;
  auto view = p.View("tank/home");
  // Through the view, files of alice are looked up and never forgotten (a
  // kernel sends no FORGET when its mount goes).
  auto alice = view->Lookup(p.root, kRootIno, "alice");
  REQUIRE(alice.ok());
  REQUIRE(view->Create(p.root, alice->ino, "held", S_IFREG | 0644).ok());
  REQUIRE(view->ReadDir(p.root, alice->ino, 0, true, [](const DirEntry&) { return true; }).ok());
  CHECK(p.fs->datasets()->Destroy("tank/home/alice", false).code() == StatusCode::kBusy);
  REQUIRE(view->Unmount().ok());
  CHECK(p.fs->datasets()->Destroy("tank/home/alice", false).ok());
  // The view answers nothing more.
  CHECK(view->GetAttr(kRootIno).status().code() == StatusCode::kAborted);
}

TEST_CASE("a read-only view refuses changes, and a view of what is not there is refused") {
  ViewedPool p;
  auto view = p.View("tank/home", /*read_only=*/true);
  CHECK(view->Create(p.root, kRootIno, "f", S_IFREG | 0644).status().code() ==
        StatusCode::kReadOnly);
  CHECK(view->Open(p.root, kRootIno, O_RDWR).code() == StatusCode::kReadOnly);
  CHECK(view->ReadDir(p.root, kRootIno, 0, false, [](const DirEntry&) { return true; }).ok());
  DatasetViewOptions vo;
  CHECK(p.fs->OpenDatasetView("tank/nowhere", vo).status().code() == StatusCode::kNotFound);
  CHECK(p.fs->OpenDatasetView("other/home", vo).status().code() == StatusCode::kNotFound);
  CHECK(p.fs->OpenDatasetView("tank/../x", vo).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("names the pool's mount invalidates reach a view, in the view's numbers") {
  ViewedPool p;
  auto view = p.View("tank/home");
  std::vector<std::pair<uint64_t, std::string>> seen;
  view->SetEntryInvalidator(
      [&](uint64_t parent, std::string_view name) { seen.emplace_back(parent, name); });
  REQUIRE(p.fs->datasets()->Create("tank/home/bob", false, {}).ok());
  CHECK(std::find(seen.begin(), seen.end(), std::pair<uint64_t, std::string>(kRootIno, "bob")) !=
        seen.end());
  view->SetEntryInvalidator({});
}

// What a mount's kernel was told to forget, recorded from the notifier
// thread.
struct Forgotten {
  void Watch(Filesystem* fs) {
    fs->SetEntryInvalidator([this](uint64_t parent, std::string_view name) {
      std::lock_guard<std::mutex> l(mu);
      names.emplace_back(parent, std::string(name));
    });
    fs->SetInodeInvalidator([this](uint64_t ino) {
      std::lock_guard<std::mutex> l(mu);
      inodes.push_back(ino);
    });
  }
  // Waits (a few seconds at most) until the kernel was told of `ino` or of
  // name `name` in `ino`.
  bool Saw(uint64_t ino, const std::string& name = "") {
    for (int i = 0; i < 500; i++) {
      {
        std::lock_guard<std::mutex> l(mu);
        if (name.empty()
                ? std::find(inodes.begin(), inodes.end(), ino) != inodes.end()
                : std::find(names.begin(), names.end(), std::pair(ino, name)) != names.end())
          return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  bool Quiet() {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard<std::mutex> l(mu);
    return names.empty() && inodes.empty();
  }
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::string>> names;
  std::vector<uint64_t> inodes;
};

TEST_CASE("what one mount changes, the other mount's kernel is told to forget") {
  Forgotten pool_kernel, view_kernel;  // outlive the mounts that call them
  ViewedPool p;
  auto home = p.fs->Lookup(p.root, kRootIno, "home");
  REQUIRE(home.ok());
  auto f = p.fs->Create(p.root, home->ino, "f", S_IFREG | 0644);
  REQUIRE(f.ok());
  auto view = p.View("tank/home");
  pool_kernel.Watch(p.fs.get());
  view_kernel.Watch(view.get());
  SECTION("a change through the view") {
    REQUIRE(view->Write(p.root, f->ino, 0, "new").ok());
    CHECK(pool_kernel.Saw(f->ino));
    REQUIRE(view->Create(p.root, kRootIno, "g", S_IFREG | 0644).ok());
    CHECK(pool_kernel.Saw(home->ino, "g"));  // in the pool mount's numbers
    CHECK(pool_kernel.Saw(home->ino));
    REQUIRE(view->Rename(p.root, kRootIno, "g", kRootIno, "h", 0).ok());
    CHECK(pool_kernel.Saw(home->ino, "h"));
    CHECK(view_kernel.Quiet());  // its own kernel saw the changes go by
  }
  SECTION("a change through the pool's mount") {
    SetAttrRequest req;
    req.valid = SetAttrRequest::kMode;
    req.mode = 0600;
    REQUIRE(p.fs->SetAttr(p.root, f->ino, req).ok());
    CHECK(view_kernel.Saw(f->ino));
    REQUIRE(p.fs->Unlink(p.root, home->ino, "f").ok());
    CHECK(view_kernel.Saw(kRootIno, "f"));  // in the view's numbers
    CHECK(view_kernel.Saw(kRootIno));
    CHECK(pool_kernel.Quiet());
  }
  // Failed changes and reads tell nothing.
  CHECK(view->Create(p.root, kRootIno, "alice", S_IFREG | 0644).status().code() ==
        StatusCode::kAlreadyExists);
  p.fs->SetEntryInvalidator({});
  p.fs->SetInodeInvalidator({});
  view->SetEntryInvalidator({});
  view->SetInodeInvalidator({});
}

TEST_CASE("beside a mount of one dataset, other datasets can be viewed but not the root one") {
  TempDir dir;
  const std::string path = dir / "t.pool";
  CreatePoolOptions po;
  po.name = "tank";
  REQUIRE(CreatePool({path}, uint64_t{128} << 20, po).ok());
  {
    MountOptions o;
    o.tunables = config::Tunables{}.core;
    auto whole = Filesystem::Mount({path}, o);
    REQUIRE(whole.ok());
    REQUIRE((*whole)->datasets()->Create("tank/home/alice", /*parents=*/true, {}).ok());
    REQUIRE((*whole)->datasets()->Create("tank/work", false, {}).ok());
    REQUIRE((*whole)->Unmount().ok());
  }
  MountOptions o;
  o.tunables = config::Tunables{}.core;
  o.dataset = "tank/home";
  auto mounted = Filesystem::Mount({path}, o);
  REQUIRE(mounted.ok());
  std::unique_ptr<Filesystem> fs = std::move(mounted).value();
  const Creds root{};
  DatasetViewOptions vo;
  vo.where = "/mnt/view";
  CHECK(fs->OpenDatasetView("tank", vo).status().code() == StatusCode::kNotSupported);
  auto work = fs->OpenDatasetView("tank/work", vo);
  REQUIRE(work.ok());
  auto f = (*work)->Create(root, kRootIno, "f", S_IFREG | 0644);
  REQUIRE(f.ok());
  CHECK((*work)->GetAttr(kRootIno)->ino == kRootIno);
  // The mount's own root and the view's are each kRootIno in their own
  // numbers, and nothing else is.
  CHECK(f->ino != kRootIno);
  auto alice = fs->Lookup(root, kRootIno, "alice");
  REQUIRE(alice.ok());
  auto home_view = fs->OpenDatasetView("tank/home/alice", vo);
  REQUIRE(home_view.ok());
  auto through_view = (*home_view)->GetAttr(kRootIno);
  REQUIRE(through_view.ok());
  CHECK(through_view->ino == kRootIno);
  REQUIRE((*home_view)->Unmount().ok());
  REQUIRE((*work)->Unmount().ok());
  home_view->reset();
  work->reset();
  REQUIRE(fs->Unmount().ok());
}

}  // namespace
}  // namespace poolfs::daemon
