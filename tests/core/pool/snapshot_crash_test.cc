// Snapshots keep their content across SIGKILL. A child process writes at
// random into a few objects of a dataset and, between its writes, takes
// snapshots (reading each back at once against its own model of the data),
// destroys some and rolls back to the newest now and then, makes clones of
// its snapshots (each read back against the snapshot, then written to),
// promotes a clone and promotes the dataset back (the snapshots move to
// the clone and back), and destroys clones, telling the parent each
// snapshot's content hash once the snapshot returned, and each destroy and
// rollback before it starts and once it returned. Killed at a random
// moment, the pool imports with every snapshot that returned and was not
// destroyed (or whose destroy was in flight), each reading exactly as it
// did when taken (under the clone's name if the kill fell between the two
// promotes); and CheckPool finds the pool healthy.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check_test_util.h"
#include "kill_child.h"
#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "poolfs/pool_admin.h"

namespace poolfs::core::pool {
namespace {

using check_test::kFileSize;
using check_test::Pattern;
using check_test::TempDir;

constexpr int kObjects = 6;
constexpr uint64_t kObjectBytes = 384 * 1024;

// The objects' content in `os` (ids 1..kObjects, the first objects created),
// hashed: what a snapshot or the dataset reads.
uint64_t HashOf(dmu::ObjectSet& os, std::string* all = nullptr) {
  std::string bytes;
  for (uint64_t id = 1; id <= kObjects; id++) {
    auto r = os.Read(ObjectId(id), 0, kObjectBytes);
    if (!r.ok()) return 0;
    bytes += *r;
    bytes.resize(id * kObjectBytes, '\0');
  }
  if (all != nullptr) *all = bytes;
  return std::hash<std::string>{}(bytes);
}

// The child: runs until killed; lines go to `fd`.
[[noreturn]] void Churn(const std::vector<std::string>& paths, uint64_t seed, int first_snap,
                        int fd) {
  auto say = [fd](const std::string& line) { Say(fd, line); };
  std::unique_ptr<Pool> pool = ImportInChild(paths, 40, fd);
  PoolDatasetAdmin admin(pool.get());
  std::mt19937_64 rng(seed);
  dmu::ObjectSet* os = pool->dataset("tank/d");
  if (os == nullptr) _exit(4);
  // The model: what the dataset holds now (read back after the crash).
  std::string model;
  HashOf(*os, &model);
  std::map<std::string, std::string> kept;  // snapshots this run took, by name
  std::vector<std::string> clones;          // this run's
  for (int i = first_snap;; i++) {
    const int pick = int(rng() % 20);
    if (pick < 11) {
      const uint64_t id = 1 + rng() % kObjects;
      const uint64_t len = 1 + rng() % (64 * 1024);
      const uint64_t off = rng() % (kObjectBytes - len);
      const std::string data = Pattern(rng(), len);
      dmu::Tx tx(pool->assigner());
      if (!tx.Assign(1 << 20).ok()) _exit(5);
      if (!os->Write(tx, ObjectId(id), off, data).ok()) _exit(6);
      tx.Commit();
      model.replace((id - 1) * kObjectBytes + off, len, data);
    } else if (pick < 13) {
      const std::string name = "tank/d@s" + std::to_string(i);
      if (!admin.Snapshot({name}, false).ok()) _exit(7);
      auto snap = pool->OpenSnapshot(name);
      std::string got;
      if (!snap.ok() || HashOf(**snap, &got) == 0 || got != model) {
        say("error snapshot " + name + " does not read as the data was");
        _exit(8);
      }
      kept[name] = model;
      say("snap " + name + " " + std::to_string(std::hash<std::string>{}(got)));
    } else if (pick < 15) {
      auto list = pool->ListSnapshots("tank/d", false);
      if (!list.ok()) _exit(9);
      if (list->empty()) continue;
      const std::string name = (*list)[rng() % list->size()].name;
      auto props = admin.Get(name, {"clones"});
      if (!props.ok()) _exit(14);
      if ((*props)[0].value != "-") continue;  // an origin stays while its clones do
      say("begin destroy " + name);
      if (!admin.Destroy(name, false).ok()) _exit(10);
      kept.erase(name);
      say("done");
    } else if (pick < 17) {
      // A clone of one of this run's snapshots reads as it, then changes.
      if (kept.empty()) continue;
      auto it = kept.begin();
      std::advance(it, rng() % kept.size());
      const std::string name = "tank/c" + std::to_string(i);
      if (!admin.Clone(it->first, name, {}).ok()) _exit(15);
      dmu::ObjectSet* c = pool->dataset(name);
      std::string got;
      if (c == nullptr || HashOf(*c, &got) == 0 || got != it->second) {
        say("error clone " + name + " does not read as " + it->first);
        _exit(16);
      }
      dmu::Tx tx(pool->assigner());
      if (!tx.Assign(1 << 20).ok()) _exit(17);
      if (!c->Write(tx, ObjectId(1 + rng() % kObjects), 0, Pattern(rng(), 8192)).ok()) _exit(18);
      tx.Commit();
      clones.push_back(name);
    } else if (pick == 17) {
      // Promoted, and the dataset promoted back: the snapshots up to the
      // origin go to the clone and return.
      if (clones.empty()) continue;
      const std::string name = clones[rng() % clones.size()];
      if (!admin.Promote(name).ok()) _exit(19);
      if (!admin.Promote("tank/d").ok()) _exit(20);
    } else if (pick == 18) {
      if (clones.empty()) continue;
      const size_t k = rng() % clones.size();
      if (!admin.Destroy(clones[k], false).ok()) _exit(21);
      clones.erase(clones.begin() + ptrdiff_t(k));
    } else {
      auto list = pool->ListSnapshots("tank/d", false);
      if (!list.ok()) _exit(11);
      if (list->empty() || !kept.count(list->back().name)) continue;
      const std::string name = list->back().name;
      say("begin rollback " + name);
      if (!admin.Rollback(name, false).ok()) _exit(12);
      os = pool->dataset("tank/d");
      model = kept[name];
      std::string now;
      if (os == nullptr || HashOf(*os, &now) == 0 || now != model) {
        say("error the dataset does not read as " + name + " after the rollback");
        _exit(13);
      }
      say("done");
    }
  }
}

TEST_CASE("snapshots keep their content across SIGKILL amid writes, destroys and rollbacks",
          "[snapshot]") {
  TempDir dir;
  const std::vector<std::string> paths{dir / "v0"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  {
    auto pool = Pool::Import(paths, check_test::QuietOptions());
    REQUIRE(pool.ok());
    PoolDatasetAdmin admin(pool->get());
    REQUIRE(admin.Create("tank/d", false, {}).ok());
    dmu::ObjectSet* os = (*pool)->dataset("tank/d");
    dmu::Tx tx((*pool)->assigner());
    REQUIRE(tx.Assign().ok());
    for (int i = 0; i < kObjects; i++) {
      auto id = os->Create(tx, dmu::ObjectType::kPlain);
      REQUIRE(id.ok());
      REQUIRE(id->value() == uint64_t(i + 1));
      REQUIRE(os->Write(tx, *id, 0, Pattern(uint64_t(i), kObjectBytes)).ok());
    }
    tx.Commit();
    REQUIRE((*pool)->Export().ok());
  }
  std::map<std::string, uint64_t> expect;  // snapshot -> hash
  std::mt19937_64 rng(11);
  int next_snap = 0;
  for (int cycle = 0; cycle < 6; cycle++) {
    const KilledChild run =
        RunUntilKilled([&](int fd) { Churn(paths, 500 + uint64_t(cycle), next_snap, fd); },
                       std::chrono::milliseconds(300 + rng() % 700));
    const std::string& lines = run.lines;
    INFO("cycle " << cycle << ", the child said:\n" << lines);
    REQUIRE(run.killed);  // it did not stop on its own (an error)
    // What returned is in; a destroy in flight may or may not have been.
    std::set<std::string> maybe_gone;
    std::string in_flight;
    std::istringstream in(lines);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string verb, a, b;
      words >> verb >> a >> b;
      if (verb == "snap") {
        expect[a] = std::stoull(b);
        next_snap = std::max(next_snap, std::stoi(a.substr(a.find("@s") + 2)) + 1);
      } else if (verb == "begin") {
        in_flight = line;
        if (a == "destroy") maybe_gone.insert(b);
      } else if (verb == "done") {
        if (in_flight.starts_with("begin destroy ")) {
          expect.erase(in_flight.substr(14));
          maybe_gone.erase(in_flight.substr(14));
        }
        in_flight.clear();
      }
    }
    next_snap += 1000;  // one taken but not reported has a number of its own
    auto pool = Pool::Import(paths, check_test::QuietOptions());
    INFO(pool.status().ToString());
    REQUIRE(pool.ok());
    // Every snapshot of the pool, by its name after the '@' (a kill
    // between two promotes leaves some under a clone).
    auto listed = (*pool)->ListSnapshots("", true);
    REQUIRE(listed.ok());
    std::map<std::string, std::string> full;
    for (const SnapshotFigures& f : *listed)
      full["tank/d" + f.name.substr(f.name.find('@'))] = f.name;
    std::set<std::string> found;
    for (const auto& [name, at] : full) found.insert(name);
    for (const auto& [name, hash] : expect) {
      if (!found.count(name)) {
        CHECK(maybe_gone.count(name));
        continue;
      }
      auto snap = (*pool)->OpenSnapshot(full.at(name));
      REQUIRE(snap.ok());
      CHECK(HashOf(**snap) == hash);
    }
    // Forget what is gone; a snapshot found but never reported (taken as
    // the child died) is not checked.
    for (auto it = expect.begin(); it != expect.end();)
      it = found.count(it->first) ? std::next(it) : expect.erase(it);
    REQUIRE((*pool)->Export().ok());
    const CheckReport report = check_test::Check(paths);
    INFO(check_test::Listing(report));
    CHECK(report.ok());
  }
}

}  // namespace
}  // namespace poolfs::core::pool
