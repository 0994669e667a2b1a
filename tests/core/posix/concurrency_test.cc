// PosixFs under concurrent calls: threads create, write, link, rename,
// unlink, rmdir, look up and forget in a few shared directories; afterwards
// the tree is consistent (link counts, entries, ".."), survives a remount,
// and the pool checks clean offline (nothing leaked, nothing doubly freed).
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {
namespace {

TEST_CASE("Concurrent mixed operations leave a consistent tree and a clean pool",
          "[posix][concurrency]") {
  MountOptions o = FastOptions();
  o.tunables.txg.timeout_ms = 20;  // many txgs during the run
  FsFixture f(uint64_t{256} << 20, o);
  std::vector<uint64_t> dirs;
  for (int i = 0; i < 4; i++) dirs.push_back(f.MustMkdir(kRootIno, "d" + std::to_string(i)).ino);
  constexpr int kThreads = 8;
  constexpr int kOps = 1500;
  std::atomic<int> unexpected{0};
  std::mutex err_mu;
  std::string first_error;
  auto note = [&](const Status& st, const char* op) {
    static const StatusCode ok_codes[] = {
        StatusCode::kOk,           StatusCode::kNotFound,      StatusCode::kAlreadyExists,
        StatusCode::kNotEmpty,     StatusCode::kStale,         StatusCode::kInvalidArgument,
        StatusCode::kIsADirectory, StatusCode::kNotADirectory, StatusCode::kNotPermitted};
    for (StatusCode c : ok_codes)
      if (st.code() == c) return;
    unexpected++;
    std::lock_guard<std::mutex> l(err_mu);
    if (first_error.empty()) first_error = std::string(op) + ": " + st.ToString();
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t * 7919 + 1);
      const Creds c = RootCreds();
      for (int i = 0; i < kOps; i++) {
        uint64_t d = dirs[rng() % dirs.size()];
        uint64_t d2 = dirs[rng() % dirs.size()];
        std::string n = "n" + std::to_string(rng() % 40);
        std::string n2 = "n" + std::to_string(rng() % 40);
        switch (rng() % 10) {
          case 0:
          case 1: {
            auto r = f.fs->Create(c, d, n, 0644);
            note(r.status(), "create");
            if (r.ok()) {
              auto w = f.fs->Write(c, r->ino, 0, std::string(100 + rng() % 5000, 'w'));
              note(w.status(), "write");
              f.fs->Forget(r->ino, 1);
            }
            break;
          }
          case 2: {
            auto r = f.fs->Mkdir(c, d, n, 0755);
            note(r.status(), "mkdir");
            if (r.ok()) f.fs->Forget(r->ino, 1);
            break;
          }
          case 3: note(f.fs->Unlink(c, d, n), "unlink"); break;
          case 4: note(f.fs->Rmdir(c, d, n), "rmdir"); break;
          case 5:
          case 6:
            note(f.fs->Rename(c, d, n, d2, n2, rng() % 3 == 0 ? uint32_t(kRenameExchange) : 0u),
                 "rename");
            break;
          case 7: {
            auto l = f.fs->Lookup(c, d, n);
            note(l.status(), "lookup");
            if (l.ok()) {
              if (!S_ISDIR(l->mode)) {
                auto k = f.fs->Link(c, l->ino, d2, n2);
                note(k.status(), "link");
                if (k.ok()) f.fs->Forget(k->ino, 1);
              }
              f.fs->Forget(l->ino, 1);
            }
            break;
          }
          case 8: {
            auto l = f.fs->Lookup(c, d, n);
            note(l.status(), "lookup");
            if (l.ok()) {
              std::string out;
              if (S_ISREG(l->mode)) note(f.fs->Read(l->ino, 0, 10000, &out), "read");
              if (S_ISDIR(l->mode))
                note(f.fs->ReadDir(c, l->ino, 0, true,
                                   [&](const DirEntry& e) {
                                     if (e.name != "." && e.name != "..") f.fs->Forget(e.ino, 1);
                                     return true;
                                   }),
                     "readdir");
              f.fs->Forget(l->ino, 1);
            }
            break;
          }
          case 9:
            note(f.fs->ReadDir(c, d, 0, false, [](const DirEntry&) { return true; }), "readdir");
            break;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  INFO(first_error);
  REQUIRE(unexpected.load() == 0);

  // Consistency: every entry resolves, directories count their subdirectories,
  // regular files' link counts equal the names that point at them.
  auto check = [&] {
    std::map<uint64_t, uint32_t> names_of;
    std::function<void(uint64_t, uint64_t)> walk = [&](uint64_t dir, uint64_t parent) {
      uint32_t subdirs = 0;
      std::vector<DirEntry> entries;
      REQUIRE(f.fs->ReadDir(RootCreds(), dir, 0, false,
                            [&](const DirEntry& e) {
                              entries.push_back(e);
                              return true;
                            })
                  .ok());
      REQUIRE(entries.size() >= 2);
      REQUIRE(entries[1].ino == parent);
      for (size_t i = 2; i < entries.size(); i++) {
        const DirEntry& e = entries[i];
        Attr a = f.MustGetAttr(e.ino);
        REQUIRE((a.mode & S_IFMT) == e.type);
        if (S_ISDIR(a.mode)) {
          subdirs++;
          walk(e.ino, dir);
        } else {
          names_of[e.ino]++;
        }
      }
      Attr self = f.MustGetAttr(dir);
      REQUIRE(self.nlink == 2 + subdirs);
      REQUIRE(self.size == entries.size());
    };
    walk(kRootIno, kRootIno);
    for (auto [ino, n] : names_of) REQUIRE(f.MustGetAttr(ino).nlink == n);
    return names_of.size();
  };
  size_t files = check();
  REQUIRE(f.fs->GetStatus().unlinked_pending == 0);
  f.Remount();
  REQUIRE(check() == files);
  f.Unmount();
  auto report = CheckPool({f.path});
  INFO(report.status().ToString());
  REQUIRE(report.ok());
  std::string problems = report->Summary();
  for (auto& p : report->problems) problems += "\n" + p.where + ": " + p.what;
  INFO(problems);
  REQUIRE(report->ok());
}

}  // namespace
}  // namespace poolfs::core::posix::testing
