// Operations that abort cleanly: every multi-step operation either
// completes or leaves no change. For each operation, the n-th device read
// after it starts fails, or returns damaged bytes that fail their checksum
// (n = 1, 2, ... until it succeeds without meeting the fault), on a freshly
// imported pool so that its reads reach the device. After each failure the operation either changed
// nothing visible and the pool is online, or the pool is suspended (changes fail with EIO, reads
// work, unmount works); then the pool, imported again, is exactly the state before or after the
// operation, never a mix, and the pool checker finds it consistent.
#include <sys/stat.h>

#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dmu/tx.h"
#include "pool/check.h"
#include "pool/pool.h"
#include "posix_fixture.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/memory_device.h"

namespace poolfs::core::posix::testing {
namespace {

constexpr uint64_t kDevSize = uint64_t{64} << 20;

// Path -> what a file is (type and mode, links, size, a hash of its bytes,
// its xattrs, and which earlier path names the same file): everything but
// timestamps and inode numbers.
using Snapshot = std::map<std::string, std::string>;

Snapshot Snap(Filesystem& fs) {
  Snapshot out;
  std::map<uint64_t, std::string> first_path;
  std::function<void(uint64_t, const std::string&)> walk = [&](uint64_t dir,
                                                               const std::string& path) {
    std::vector<std::pair<std::string, uint64_t>> entries;
    Status listed = fs.ReadDir(RootCreds(), dir, 0, false, [&](const DirEntry& e) {
      if (e.name != "." && e.name != "..") entries.emplace_back(e.name, e.ino);
      return true;
    });
    INFO(path << ": " << listed.ToString());
    REQUIRE(listed.ok());
    for (const auto& [name, ino] : entries) {
      const std::string p = path + "/" + name;
      auto a = fs.GetAttr(ino);
      INFO(p << ": " << a.status().ToString());
      REQUIRE(a.ok());
      std::ostringstream d;
      d << std::oct << a->mode << std::dec << " nlink " << a->nlink << " size " << a->size;
      auto [it, fresh] = first_path.emplace(ino, p);
      if (!fresh) {
        d << " same file as " << it->second;
        out[p] = d.str();
        continue;
      }
      if (S_ISREG(a->mode)) {
        std::string data;
        REQUIRE(fs.Read(ino, 0, a->size, &data).ok());
        d << " data " << std::hash<std::string>{}(data);
      }
      auto names = fs.ListXattr(RootCreds(), ino);
      REQUIRE(names.ok());
      for (const std::string& n : *names) {
        auto v = fs.GetXattr(RootCreds(), ino, n);
        REQUIRE(v.ok());
        d << " " << n << "=" << *v;
      }
      out[p] = d.str();
      if (S_ISDIR(a->mode)) walk(ino, p);
    }
  };
  auto root = fs.GetAttr(kRootIno);
  REQUIRE(root.ok());
  out["/"] = "nlink " + std::to_string(root->nlink) + " size " + std::to_string(root->size);
  walk(kRootIno, "");
  return out;
}

std::string Describe(const Snapshot& s) {
  std::string out;
  for (const auto& [path, what] : s) out += path + ": " + what + "\n";
  return out;
}

// The files the operations work on, by inode number.
struct Files {
  uint64_t a = 0, b = 0, d1 = 0, sub = 0, f1 = 0, f2 = 0, g = 0;
};

// A pool on a memory device seen through a fault-injecting one, mounted
// with PosixFs over a pool imported from the device (a fresh import each
// time: nothing cached). With `small_caches`, the smallest cache and as few
// idle dnodes, inodes and leaves as will do, so that what an operation
// read may be dropped again before it changes anything.
struct Rig {
  const bool small_caches;
  vdev::MemoryDevice mem{kDevSize, "mem"};
  vdev::FaultInjectingDevice dev{&mem};
  pool::Pool* pool = nullptr;  // the mount's
  std::unique_ptr<PosixFs> fs;
  Files files;
  uint64_t fill_ = 0;
  int fills_ = 0;

  explicit Rig(bool small) : small_caches(small) {
    // Format 1: one copy of every block, so that the one read that fails
    // loses its block (format 2 would read metadata from its other copy,
    // as the zio and pool tests of copies show).
    pool::CreateOptions co{"tank"};
    co.format_version = 1;
    REQUIRE(pool::Pool::CreateOnDevices({&mem}, {"mem"}, co).ok());
    Mount();
    Setup();
    REQUIRE(Unmount().ok());
  }
  ~Rig() {
    if (fs) (void)fs->Unmount();
  }

  void Mount() {
    pool::PoolOptions po;
    po.txg.timeout_ms = 3600 * 1000;  // syncs only when asked
    po.space.allocators = 2;
    if (small_caches) {
      po.arc.max_bytes = 1 << 20;
      po.object_cache_limit = 1;
    }
    auto p = pool::Pool::ImportDevices({&dev}, po);
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    pool = p->get();
    MountOptions mo;
    mo.atime = AtimeMode::kNone;  // reads change nothing
    auto f = PosixFs::Open(std::move(p).value(), mo);
    INFO(f.status().ToString());
    REQUIRE(f.ok());
    fs = std::move(f).value();
  }
  Status Unmount() {
    Status st = fs->Unmount();
    fs.reset();
    pool = nullptr;
    return st;
  }

  uint64_t Make(uint64_t parent, const std::string& name, bool dir) {
    auto r = dir ? fs->Mkdir(RootCreds(), parent, name, 0755)
                 : fs->Create(RootCreds(), parent, name, 0644);
    INFO(name << ": " << r.status().ToString());
    REQUIRE(r.ok());
    return r->ino;
  }
  void Write(uint64_t ino, const std::string& data) {
    auto w = fs->Write(RootCreds(), ino, 0, data);
    REQUIRE(w.ok());
  }
  void Xattr(uint64_t ino, const std::string& name, const std::string& value) {
    REQUIRE(fs->SetXattr(RootCreds(), ino, name, value, 0).ok());
  }

  // Empty files in /fill, one dnode block's worth: the objects made between
  // two calls land in different dnode blocks, so loading each is a read.
  void Fill() {
    if (fill_ == 0) fill_ = Make(kRootIno, "fill", true);
    for (int i = 0; i < 32; i++) Make(fill_, "f" + std::to_string(fills_++), false);
  }

  // /a (a fat directory: one name too long for the micro form) with
  // d1 (empty), sub (holding s1), f1 (300000 bytes, an xattr), f2; /b with
  // g (an xattr); each in a dnode block of its own.
  void Setup() {
    Files& f = files;
    Fill();
    f.a = Make(kRootIno, "a", true);
    Fill();
    f.b = Make(kRootIno, "b", true);
    Fill();
    f.d1 = Make(f.a, "d1", true);
    Fill();
    f.sub = Make(f.a, "sub", true);
    Make(f.sub, "s1", false);
    Fill();
    f.f1 = Make(f.a, "f1", false);
    Fill();
    std::string data(300000, '\0');
    for (size_t i = 0; i < data.size(); i++) data[i] = char('a' + i * 7 % 26);
    Write(f.f1, data);
    Xattr(f.f1, "user.k", "old value");
    f.f2 = Make(f.a, "f2", false);
    Write(f.f2, "f2's bytes");
    Fill();
    f.g = Make(f.b, "g", false);
    Write(f.g, "g's bytes");
    Xattr(f.g, "user.x", "g's xattr");
    Make(f.a, std::string(60, 'L'), false);
  }

  // Drops the cache's blocks: the operation's reads go to the device.
  void EvictCache() { pool->cache()->EvictAll(); }

  Snapshot Reimported() {
    Mount();
    Snapshot s = Snap(*fs);
    Status st = Unmount();
    INFO(st.ToString());
    REQUIRE(st.ok());
    return s;
  }
  void CheckClean() {
    auto r = pool::CheckDevices({&dev});
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    std::string problems;
    for (const CheckProblem& p : r->problems) problems += p.where + ": " + p.what + "\n";
    INFO(problems);
    REQUIRE(r->ok());
  }
};

using Op = std::function<Status(Filesystem&, const Files&)>;

struct Outcome {
  int clean_failures = 0;  // failed with nothing changed, pool online
  int suspensions = 0;     // failed halfway: pool suspended
};

// How the n-th read goes wrong.
enum class ReadFault { kIoError, kDamage };

Outcome EveryReadFails(const Op& op, bool small_caches, ReadFault fault) {
  Outcome outcome;
  auto rig = std::make_unique<Rig>(small_caches);
  rig->Mount();
  const Snapshot before = Snap(*rig->fs);
  REQUIRE(rig->Unmount().ok());
  for (uint64_t n = 1;; n++) {
    REQUIRE(n < 400);
    rig->Mount();
    rig->EvictCache();
    const uint64_t failures = rig->dev.counters().injected_failures;
    if (fault == ReadFault::kIoError) {
      rig->dev.FailNthIo(n, vdev::IoKind::kRead);
    } else {
      rig->dev.DamageNthRead(n);
    }
    const Status st = op(*rig->fs, rig->files);
    const bool hit = rig->dev.counters().injected_failures != failures;
    rig->dev.ClearFaults();
    const std::string state = rig->fs->GetStatus().state;
    INFO("read " << n << " fails: " << st.ToString() << "; state " << state);
    if (st.ok()) {
      REQUIRE(state == "online");
      const Snapshot after = Snap(*rig->fs);
      REQUIRE(after != before);
      REQUIRE(rig->Unmount().ok());
      const Snapshot again = rig->Reimported();
      INFO("after:\n" << Describe(after) << "imported:\n" << Describe(again));
      REQUIRE(again == after);
      rig->CheckClean();
      if (!hit) return outcome;
      // It did without the read that failed: later reads fail from the
      // before-state again.
      rig = std::make_unique<Rig>(small_caches);
      continue;
    }
    REQUIRE(hit);
    if (state == "online") {
      // Failed before its first change: nothing to see.
      const Snapshot now = Snap(*rig->fs);
      INFO("before:\n" << Describe(before) << "now:\n" << Describe(now));
      REQUIRE(now == before);
      REQUIRE(rig->Unmount().ok());
      outcome.clean_failures++;
    } else {
      REQUIRE(state.starts_with("suspended: an operation failed halfway in txg "));
      REQUIRE(st.code() == StatusCode::kIOError);
      REQUIRE(rig->fs->GetAttr(kRootIno).ok());
      REQUIRE(Code(rig->fs->Create(RootCreds(), kRootIno, "probe", 0644)) == StatusCode::kIOError);
      REQUIRE(rig->Unmount().code() == StatusCode::kIOError);
      outcome.suspensions++;
    }
    const Snapshot again = rig->Reimported();
    INFO("before:\n" << Describe(before) << "imported:\n" << Describe(again));
    REQUIRE(again == before);
    rig->CheckClean();
  }
}

// Run one at a time, nothing else evicts what an operation read before its
// first change, and what its steps look up again is held: every read it
// makes comes first, so a failure changes nothing and suspends nothing,
// even with the smallest caches.
void ExpectCleanAborts(const Op& op) {
  for (ReadFault fault : {ReadFault::kIoError, ReadFault::kDamage}) {
    for (bool small_caches : {false, true}) {
      INFO((fault == ReadFault::kIoError ? "read errors, " : "damaged reads, ")
           << (small_caches ? "small caches" : "default caches"));
      const Outcome o = EveryReadFails(op, small_caches, fault);
      CHECK(o.clean_failures > 0);
      CHECK(o.suspensions == 0);
    }
  }
}

TEST_CASE("Rename over an existing file completes or changes nothing under read errors and damage",
          "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.Rename(RootCreds(), f.a, "f1", f.b, "g", 0);
  });
}

TEST_CASE(
    "Rename of a directory to another parent completes or changes nothing under read errors and "
    "damage",
    "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.Rename(RootCreds(), f.a, "sub", f.b, "sub2", 0);
  });
}

TEST_CASE("Rename exchange completes or changes nothing under read errors and damage", "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.Rename(RootCreds(), f.a, "f2", f.b, "g", kRenameExchange);
  });
}

TEST_CASE("Link completes or changes nothing under read errors and damage", "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.Link(RootCreds(), f.f2, f.b, "f2link").status();
  });
}

TEST_CASE("Unlink of a file's last name completes or changes nothing under read errors and damage",
          "[posix]") {
  ExpectCleanAborts(
      [](Filesystem& fs, const Files& f) { return fs.Unlink(RootCreds(), f.a, "f1"); });
}

TEST_CASE("Create completes or changes nothing under read errors and damage", "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.Create(RootCreds(), f.a, "new", 0644).status();
  });
}

TEST_CASE("Mkdir completes or changes nothing under read errors and damage", "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.Mkdir(RootCreds(), f.a, "newdir", 0755).status();
  });
}

TEST_CASE("Rmdir completes or changes nothing under read errors and damage", "[posix]") {
  ExpectCleanAborts(
      [](Filesystem& fs, const Files& f) { return fs.Rmdir(RootCreds(), f.a, "d1"); });
}

TEST_CASE("Setxattr completes or changes nothing under read errors and damage", "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    return fs.SetXattr(RootCreds(), f.f1, "user.k", "a new value, longer than the old one", 0);
  });
}

TEST_CASE("Truncate into a block completes or changes nothing under read errors and damage",
          "[posix]") {
  ExpectCleanAborts([](Filesystem& fs, const Files& f) {
    SetAttrRequest req;
    req.valid = SetAttrRequest::kSize;
    req.size = 100000;
    return fs.SetAttr(RootCreds(), f.f1, req).status();
  });
}

TEST_CASE(
    "A change abandoned halfway suspends the mount, and the next import sees the state "
    "before it",
    "[posix]") {
  Rig rig(false);
  rig.Mount();
  const Snapshot before = Snap(*rig.fs);
  // A change that commits into the open txg, then another Tx of that txg
  // that fails after its first change: the whole txg is lost with it.
  const uint64_t made = rig.Make(rig.files.b, "in-the-lost-txg", false);
  Txg txg;
  {
    dmu::Tx tx(rig.pool->assigner());
    REQUIRE(tx.Assign().ok());
    txg = tx.txg();
    REQUIRE(rig.pool->root_dataset()->Create(tx, dmu::ObjectType::kPlain).ok());
    Status st = tx.Abandon(Status::Corruption("the second step failed"));
    REQUIRE(st.code() == StatusCode::kIOError);
  }
  const std::string state = rig.fs->GetStatus().state;
  INFO(state);
  REQUIRE(state == "suspended: an operation failed halfway in txg " + std::to_string(txg.value()) +
                       ": Corruption: the second step failed");
  // Reads go on, from memory and from the disk.
  REQUIRE(rig.fs->GetAttr(made).ok());
  std::string data;
  REQUIRE(rig.fs->Read(rig.files.f1, 0, 300000, &data).ok());
  REQUIRE(data.size() == 300000);
  // Changes and waits for the disk fail with EIO, saying why.
  auto refused = rig.fs->Mkdir(RootCreds(), kRootIno, "later", 0755);
  REQUIRE(Code(refused) == StatusCode::kIOError);
  REQUIRE(refused.status().message().find("an operation failed halfway") != std::string::npos);
  REQUIRE(rig.fs->Fsync(made, false).code() == StatusCode::kIOError);
  // Unmount works, without syncing the abandoned txg.
  REQUIRE(rig.Unmount().code() == StatusCode::kIOError);
  REQUIRE(rig.Reimported() == before);
  rig.CheckClean();
}

}  // namespace
}  // namespace poolfs::core::posix::testing
