// Dataset changes survive SIGKILL. A child process creates, renames and
// destroys datasets, takes and destroys snapshots through the admin (which
// returns once the change is durable) and writes into the datasets, telling
// the parent each change before it starts and once it returned; killed at a
// random moment, the pool imports with every change that returned and at
// most the one in flight, and CheckPool finds it healthy: no block of a
// destroyed dataset or snapshot leaked, none of a live one lost, every
// deadlist block held by a snapshot.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "check_test_util.h"
#include "kill_child.h"
#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "poolfs/pool_admin.h"

namespace poolfs::core::pool {
namespace {

using check_test::kFileSize;
using check_test::TempDir;

using Names = std::set<std::string>;

// One change, as a line: "create NAME", "rename FROM TO", "destroy NAME",
// "snapshot NAME@SNAP", "unsnap NAME@SNAP" (destroys the snapshot).
struct Change {
  std::string verb, a, b;
};

Change Parse(const std::string& line) {
  std::istringstream in(line);
  Change c;
  in >> c.verb >> c.a >> c.b;
  return c;
}

// `names` (datasets and snapshots) after `c` (destroy and rename take the
// descendants and snapshots along).
Names Apply(Names names, const Change& c) {
  auto under = [](const std::string& n, const std::string& root) {
    return n == root || n.starts_with(root + "/") || n.starts_with(root + "@");
  };
  if (c.verb == "snapshot") {
    names.insert(c.a);
    return names;
  }
  if (c.verb == "unsnap") {
    names.erase(c.a);
    return names;
  }
  Names out;
  for (const std::string& n : names) {
    if (c.verb == "destroy" && under(n, c.a)) continue;
    if (c.verb == "rename" && under(n, c.a)) {
      out.insert(c.b + n.substr(c.a.size()));
      continue;
    }
    out.insert(n);
  }
  if (c.verb == "create") out.insert(c.a);
  return out;
}

// The child: random changes until killed. Lines go to `fd`.
[[noreturn]] void Churn(const std::vector<std::string>& paths, Names names, uint64_t seed, int fd) {
  auto say = [fd](const std::string& line) { Say(fd, line); };
  std::unique_ptr<Pool> pool = ImportInChild(paths, 50, fd);
  PoolDatasetAdmin admin(pool.get());
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0;; i++) {
    std::vector<std::string> all, snaps;  // datasets ("tank" first), snapshots
    for (const std::string& n : names)
      (n.find('@') == std::string::npos ? all : snaps).push_back(n);
    std::vector<std::string> children(all.begin() + 1, all.end());  // all but "tank"
    // Those with no snapshot in their subtree: a dataset with snapshots is
    // not destroyed.
    std::vector<std::string> bare;
    for (const std::string& d : children) {
      bool held = false;
      for (const std::string& sn : snaps)
        held |= sn.starts_with(d + "@") || sn.starts_with(d + "/");
      if (!held) bare.push_back(d);
    }
    const std::string unique = std::to_string(seed % 1000) + "x" + std::to_string(i);
    const int pick = int(rng() % 12);
    Change c;
    if (pick < 4 || children.empty()) {
      c = {"create", all[rng() % all.size()] + "/c" + unique, ""};
    } else if (pick < 6) {
      c = {"rename", children[rng() % children.size()], "tank/r" + unique};
    } else if (pick < 7 && !bare.empty()) {
      c = {"destroy", bare[rng() % bare.size()], ""};
    } else if (pick < 9) {
      c = {"snapshot", all[rng() % all.size()] + "@s" + unique, ""};
    } else if (pick < 10 && !snaps.empty()) {
      c = {"unsnap", snaps[rng() % snaps.size()], ""};
    } else {
      // Data in a dataset, so that destroys have blocks to free.
      dmu::ObjectSet* os = pool->dataset(all[rng() % all.size()]);
      if (os == nullptr) _exit(4);
      dmu::Tx tx(pool->assigner());
      if (!tx.Assign(1 << 20).ok()) _exit(5);
      auto obj = os->Create(tx, dmu::ObjectType::kPlain);
      if (!obj.ok()) _exit(6);
      if (!os->Write(tx, *obj, 0, std::string(256 << 10, char('a' + i % 26))).ok()) _exit(7);
      tx.Commit();
      continue;
    }
    say("begin " + c.verb + " " + c.a + " " + c.b);
    Status st = c.verb == "create"     ? admin.Create(c.a, false, {})
                : c.verb == "rename"   ? admin.Rename(c.a, c.b)
                : c.verb == "snapshot" ? admin.Snapshot({c.a}, false)
                                       : admin.Destroy(c.a, true);
    if (!st.ok()) {
      say("error " + c.verb + " " + c.a + ": " + st.ToString());
      _exit(8);
    }
    names = Apply(names, c);
    say("done");
  }
}

TEST_CASE("dataset and snapshot changes survive SIGKILL at random moments") {
  TempDir dir;
  const std::vector<std::string> paths{dir / "v0"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  Names expect{"tank"};
  std::mt19937_64 rng(7);
  for (int cycle = 0; cycle < 8; cycle++) {
    const KilledChild run =
        RunUntilKilled([&](int fd) { Churn(paths, expect, 1000 + uint64_t(cycle), fd); },
                       std::chrono::milliseconds(100 + rng() % 400));
    const std::string& lines = run.lines;
    INFO("cycle " << cycle << ", the child said:\n" << lines);
    REQUIRE(run.killed);  // it did not stop on its own (an error)
    // What returned is in; the one in flight may or may not be.
    std::optional<Change> in_flight;
    std::istringstream in(lines);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("begin ")) {
        in_flight = Parse(line.substr(6));
      } else if (line == "done") {
        REQUIRE(in_flight.has_value());
        expect = Apply(expect, *in_flight);
        in_flight.reset();
      }
    }
    auto pool = Pool::Import(paths, check_test::QuietOptions());
    INFO(pool.status().ToString());
    REQUIRE(pool.ok());
    const std::vector<std::string> listed = (*pool)->datasets();
    Names found(listed.begin(), listed.end());
    auto snapshots = (*pool)->ListSnapshots("", true);
    REQUIRE(snapshots.ok());
    for (const SnapshotFigures& f : *snapshots) found.insert(f.name);
    if (in_flight.has_value() && found != expect) {
      CHECK(found == Apply(expect, *in_flight));
    } else {
      CHECK(found == expect);
    }
    expect = found;
    REQUIRE((*pool)->Export().ok());
    const CheckReport report = check_test::Check(paths);
    INFO(check_test::Listing(report));
    CHECK(report.ok());
  }
}

}  // namespace
}  // namespace poolfs::core::pool
