// Lookup and rename against inode number reuse: a name looked up without
// the directory's lock may be removed, its object freed and its number
// handed to a new file elsewhere before the lookup loads the inode. The
// lookup must then answer "no such name", never the new file and never a
// half-created object (Corruption). And a name removed the moment it is
// created: the removal must act on the same in-memory inode as the
// creator's next change, or the link count goes wrong. And an inode loaded
// from disk while another in-memory copy of it changes the file and leaves
// the table: the stale copy must not enter it.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "posix_fixture.h"

namespace poolfs::core::posix::testing {

TEST_CASE("Lookup never returns another file that reused a removed name's inode number",
          "[posix][race]") {
  MountOptions o = FastOptions();
  o.tunables.objects.backfill = BackfillMode::kOn;  // freed ids are handed out again at once
  o.tunables.txg.timeout_ms = 50;                   // and become free soon: syncs are frequent
  FsFixture f(uint64_t{1} << 30, o);
  Attr d1 = f.MustMkdir(kRootIno, "d1", 0777);
  Attr d2 = f.MustMkdir(kRootIno, "d2", 0777);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0}, found{0};
  ThreadErrors errors;
  auto note_error = [&](const Status& st, const char* what) { errors.Note(st, what); };
  // d1/a is always a 0600 file; d2 holds 0644 files only.
  std::thread churn1([&] {
    while (!stop) {
      auto a = f.fs->Create(RootCreds(), d1.ino, "a", 0600);
      if (a.ok()) f.fs->Forget(a->ino, 1);
      (void)f.fs->Unlink(RootCreds(), d1.ino, "a");
    }
  });
  std::thread churn2([&] {
    for (uint64_t i = 0; !stop; i++) {
      const std::string name = "b" + std::to_string(i % 64);
      auto b = f.fs->Create(RootCreds(), d2.ino, name, 0644);
      if (b.ok()) f.fs->Forget(b->ino, 1);
      (void)f.fs->Unlink(RootCreds(), d2.ino, name);
    }
  });
  std::vector<std::thread> lookers;
  for (int t = 0; t < 2; t++) {
    lookers.emplace_back([&, t] {
      while (!stop) {
        if (t == 0) {
          auto r = f.fs->Lookup(RootCreds(), d1.ino, "a");
          if (r.ok()) {
            found++;
            if ((r->mode & 07777) != 0600) wrong++;
            f.fs->Forget(r->ino, 1);
          } else if (!r.status().IsNotFound()) {
            note_error(r.status(), "lookup");
          }
        } else {
          Status st = f.fs->Rename(RootCreds(), d1.ino, "a", d1.ino, "a2", 0);
          if (st.ok()) {
            (void)f.fs->Rename(RootCreds(), d1.ino, "a2", d1.ino, "a", 0);
          } else if (!st.IsNotFound()) {
            note_error(st, "rename");
          }
        }
      }
    });
  }
  // Two seconds: many 50 ms txgs, and so many reused ids. (The txgs sync on
  // their own; an fsync here waited behind the churn for many minutes under
  // ASan on 2 cores, so the run is bounded by time, not by syncs.)
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  churn1.join();
  churn2.join();
  for (auto& t : lookers) t.join();
  INFO("first error: " << errors.first() << "; lookups found " << found.load());
  REQUIRE(errors.count() == 0);
  REQUIRE(wrong.load() == 0);
}

TEST_CASE("A name removed while its file is being created leaves a consistent link count",
          "[posix][race]") {
  FsFixture f(uint64_t{256} << 20, FastOptions());
  Attr d = f.MustMkdir(kRootIno, "d", 0777);
  std::atomic<bool> stop{false};
  ThreadErrors errors;
  auto note_error = [&](const Status& st, const char* what) { errors.Note(st, what); };
  // The creator makes d/f, links it as d/g through its inode number and
  // drops both; the remover unlinks d/f as soon as it appears, so its
  // unlink loads the inode while the create is finishing. Every unlink of
  // d/g that finds it removes it, so a link that finds d/g left over means
  // the unlink could not load its file: an entry naming a freed object.
  std::thread creator([&] {
    while (!stop) {
      auto a = f.fs->Create(RootCreds(), d.ino, "f", 0644);
      if (!a.ok()) {
        if (a.status().code() != StatusCode::kAlreadyExists) note_error(a.status(), "create");
        continue;
      }
      auto l = f.fs->Link(RootCreds(), a->ino, d.ino, "g");
      if (l.ok()) {
        f.fs->Forget(l->ino, 1);
      } else if (!l.status().IsNotFound()) {
        note_error(l.status(), "link");
      }
      f.fs->Forget(a->ino, 1);
      if (Status st = f.fs->Unlink(RootCreds(), d.ino, "g"); !st.ok() && !st.IsNotFound())
        note_error(st, "unlink g");
    }
  });
  std::thread remover([&] {
    while (!stop) {
      if (Status st = f.fs->Unlink(RootCreds(), d.ino, "f"); !st.ok() && !st.IsNotFound())
        note_error(st, "unlink f");
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  creator.join();
  remover.join();
  INFO("first error: " << errors.first());
  REQUIRE(errors.count() == 0);
  // Whatever names are left resolve to files whose link count is theirs,
  // before and after a remount (which frees the unlinked set).
  auto check = [&] {
    std::map<uint64_t, uint32_t> names_of;
    for (const char* n : {"f", "g"}) {
      auto r = f.fs->Lookup(RootCreds(), d.ino, n);
      if (!r.ok()) {
        REQUIRE(r.status().IsNotFound());
        continue;
      }
      names_of[r->ino]++;
      f.fs->Forget(r->ino, 1);
    }
    for (auto [ino, n] : names_of) REQUIRE(f.MustGetAttr(ino).nlink == n);
  };
  check();
  f.Remount();
  check();
}

// A reader loads a directory's inode (GetAttr of an inode not in memory)
// while a writer loads it too, makes or removes a subdirectory, and lets it
// go (the kernel forgets it, so it leaves the table). Had the reader's
// load, made before the change, entered the table after that, its link
// count and its handle of the entries would be old: the writer's next
// rmdir would miss the subdirectory, or find one already freed.
TEST_CASE("A stale load of a directory never brings back old entries", "[posix][race]") {
  FsFixture f(uint64_t{256} << 20, FastOptions());
  Attr d = f.MustMkdir(kRootIno, "d", 0777);
  f.fs->Forget(d.ino, 1);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> rounds{0};
  ThreadErrors errors;
  auto note_error = [&](const Status& st, const char* what) {
    errors.Note(st, what);
    stop = true;
  };
  std::thread reader([&] {
    while (!stop) {
      if (auto r = f.fs->GetAttr(d.ino); !r.ok()) note_error(r.status(), "getattr");
    }
  });
  std::thread writer([&] {
    while (!stop) {
      auto s = f.fs->Mkdir(RootCreds(), d.ino, "s", 0755);
      if (!s.ok()) {
        note_error(s.status(), "mkdir");
        break;
      }
      f.fs->Forget(s->ino, 1);
      // Looked up and forgotten: the directory's Inode leaves the table.
      auto l = f.fs->Lookup(RootCreds(), kRootIno, "d");
      if (!l.ok()) {
        note_error(l.status(), "lookup");
        break;
      }
      f.fs->Forget(l->ino, 1);
      if (Status st = f.fs->Rmdir(RootCreds(), d.ino, "s"); !st.ok()) note_error(st, "rmdir");
      rounds++;
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  reader.join();
  writer.join();
  INFO("first error: " << errors.first() << "; rounds " << rounds.load());
  REQUIRE(errors.count() == 0);
  CHECK(f.MustGetAttr(d.ino).nlink == 2);
}

}  // namespace poolfs::core::posix::testing
