// Clones: a clone starts as its snapshot and shares its blocks; it and its
// origin then change apart; the origin cannot be destroyed while the
// clone exists; a clone's own snapshots work as any dataset's; destroying
// a clone frees only what it wrote; promote swaps the roles so that the
// old dataset can be destroyed. Every step leaves a pool `poolfs check`
// finds healthy (no block leaked, none freed while held, every deadlist
// block held), and the figures add up. (The directory's clone records:
// snapshot_test.cc.)
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "test_pool.h"

namespace poolfs::core::pool {
namespace {

using check_test::Pattern;

constexpr uint64_t kRecord = 128 * 1024;

StatusCode Code(const Status& st) { return st.code(); }

std::string Read(dmu::ObjectSet& os, uint64_t id, uint64_t len) {
  auto r = os.Read(ObjectId(id), 0, len);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

std::string ReadDataset(TestPool& t, const std::string& name, uint64_t id, uint64_t len) {
  dmu::ObjectSet* os = t.pool->dataset(name);
  INFO(name);
  REQUIRE(os != nullptr);
  return Read(*os, id, len);
}

std::string ReadSnapshot(TestPool& t, const std::string& name, uint64_t id, uint64_t len) {
  auto os = t.pool->OpenSnapshot(name);
  INFO(name + ": " + os.status().ToString());
  REQUIRE(os.ok());
  return Read(**os, id, len);
}

std::vector<std::string> SnapNames(TestPool& t, std::string_view dataset) {
  auto l = t.admin->ListSnapshots(dataset, false);
  INFO(l.status().ToString());
  REQUIRE(l.ok());
  std::vector<std::string> out;
  for (const SnapshotInfo& s : *l) out.push_back(s.name);
  return out;
}

void RequireHealthy(TestPool& t) {
  CheckReport r = t.Check();
  CHECK(r.problems.empty());
  CHECK(r.problems_omitted == 0);
}

// The space the pool has allocated, once the frees of the last txgs are
// reusable.
uint64_t Allocated(TestPool& t) {
  for (int i = 0; i < 3; i++) REQUIRE(t.pool->SyncOnce().ok());
  return t.pool->Stats().space.allocated;
}

TEST_CASE("A clone starts as its snapshot, shares its blocks and changes apart from it",
          "[clone]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const std::string v1 = Pattern(1, 6 * kRecord);
  const uint64_t id = t.Write("tank/d", v1);
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  const uint64_t before = Allocated(t);
  REQUIRE(t.admin->Clone("tank/d@s", "tank/c", {{"compression", "off"}}).ok());
  // Nothing written: it costs a directory record.
  CHECK(Allocated(t) - before < 64 * 1024);
  CHECK(ReadDataset(t, "tank/c", id, v1.size()) == v1);
  DatasetInfo c = t.Info("tank/c");
  CHECK(c.origin == "tank/d@s");
  CHECK(c.referenced == t.Info("tank/d").referenced);
  CHECK(c.usedbydataset == 0);
  CHECK(c.used == 0);
  CHECK(t.Prop("tank/c", "origin").value == "tank/d@s");
  CHECK(t.Prop("tank/c", "compression").value == "off");
  CHECK(t.Prop("tank/d", "origin").value == "-");
  CHECK(t.Prop("tank/d@s", "clones").value == "tank/c");

  // Each side changes on its own.
  const std::string pc = Pattern(2, kRecord), pd = Pattern(3, 2 * kRecord);
  t.Overwrite("tank/c", id, 0, pc);
  t.Overwrite("tank/d", id, 2 * kRecord, pd);
  std::string vc = v1, vd = v1;
  vc.replace(0, pc.size(), pc);
  vd.replace(2 * kRecord, pd.size(), pd);
  CHECK(ReadDataset(t, "tank/c", id, v1.size()) == vc);
  CHECK(ReadDataset(t, "tank/d", id, v1.size()) == vd);
  CHECK(ReadSnapshot(t, "tank/d@s", id, v1.size()) == v1);
  c = t.Info("tank/c");
  // What it wrote is its own: one record (uncompressed) and the tree's
  // new copies above it.
  CHECK(c.usedbydataset >= kRecord);
  CHECK(c.usedbydataset < 2 * kRecord);
  CHECK(c.usedbysnapshots == 0);
  CHECK(c.used == c.usedbydataset);

  // The origin stays while the clone exists; so does a later snapshot
  // rolled back past.
  Status st = t.admin->Destroy("tank/d@s", false);
  CHECK(Code(st) == StatusCode::kNotEmpty);
  CHECK(st.message().find("tank/c") != std::string::npos);
  CHECK(Code(t.admin->Destroy("tank/d", true)) == StatusCode::kNotEmpty);
  REQUIRE(t.admin->Create("tank/d0", false, {}).ok());
  CHECK(Code(t.admin->Clone("tank/d@s", "tank/c", {})) == StatusCode::kAlreadyExists);
  CHECK(Code(t.admin->Clone("tank/d@nope", "tank/e", {})) == StatusCode::kNotFound);
  CHECK(Code(t.admin->Clone("tank/d@s", "tank/no/e", {})) == StatusCode::kNotFound);
  CHECK(Code(t.admin->Clone("tank/d@s", "tank/e", {{"bogus", "1"}})) ==
        StatusCode::kInvalidArgument);
  CHECK(Code(t.admin->Promote("tank/d")) == StatusCode::kInvalidArgument);

  t.Reimport();
  CHECK(ReadDataset(t, "tank/c", id, v1.size()) == vc);
  CHECK(ReadDataset(t, "tank/d", id, v1.size()) == vd);
  CHECK(ReadSnapshot(t, "tank/d@s", id, v1.size()) == v1);
  CHECK(t.Info("tank/c").usedbydataset == c.usedbydataset);
  CHECK(t.Info("tank/c").origin == "tank/d@s");
  RequireHealthy(t);

  // Destroying the clone gives back what it wrote, and frees the origin.
  const uint64_t with = t.Info("tank").used;
  REQUIRE(t.admin->Destroy("tank/c", false).ok());
  CHECK(with - t.Info("tank").used == c.used);
  CHECK(ReadSnapshot(t, "tank/d@s", id, v1.size()) == v1);
  RequireHealthy(t);
  REQUIRE(t.admin->Destroy("tank/d@s", false).ok());
  RequireHealthy(t);
}

TEST_CASE("An origin is busy until the destroy of its clone has synced", "[clone]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t id = t.Write("tank/d", Pattern(1, 6 * kRecord));
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  REQUIRE(t.admin->Clone("tank/d@s", "tank/c", {}).ok());
  t.Overwrite("tank/c", id, 0, Pattern(2, kRecord));
  // The pool's own calls do not wait for their txg: the clone's destroy
  // and then its origin's land in one txg, whose sync frees the clone's
  // blocks up to its origin's txg, and so needs the origin.
  auto gone = t.pool->DestroyDataset("tank/c", false);
  REQUIRE(gone.ok());
  auto busy = t.pool->DestroySnapshot("tank/d@s", false);
  CHECK(Code(busy.status()) == StatusCode::kBusy);
  REQUIRE(t.pool->WaitSynced(*gone).ok());
  REQUIRE(t.pool->DestroySnapshot("tank/d@s", false).ok());
  REQUIRE(t.pool->WaitSynced().ok());
  CHECK(SnapNames(t, "tank/d").empty());
  RequireHealthy(t);
}

TEST_CASE("A clone's snapshots, rollback and destroy count from its origin", "[clone]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::string v = Pattern(10, 8 * kRecord);
  const uint64_t id = t.Write("tank/d", v);
  REQUIRE(t.admin->Snapshot({"tank/d@s"}, false).ok());
  REQUIRE(t.admin->Clone("tank/d@s", "tank/c", {}).ok());
  std::map<std::string, std::string> kept = {{"tank/d@s", v}};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3; i++) {
    for (int k = 0; k < 2; k++) {
      const uint64_t blk = rng() % 8;
      const std::string p = Pattern(rng(), kRecord);
      t.Overwrite("tank/c", id, blk * kRecord, p);
      v.replace(blk * kRecord, kRecord, p);
    }
    const std::string name = "tank/c@c" + std::to_string(i);
    REQUIRE(t.admin->Snapshot({name}, false).ok());
    kept[name] = v;
  }
  // The clone's figures: its snapshots hold what it alone wrote and then
  // dropped; the origin's blocks it dropped are the origin's.
  DatasetInfo c = t.Info("tank/c");
  uint64_t snaps_used = 0;
  for (const auto& [name, info] : [&] {
         std::map<std::string, SnapshotInfo> m;
         auto l = t.admin->ListSnapshots("tank/c", false);
         REQUIRE(l.ok());
         for (const SnapshotInfo& s : *l) m[s.name] = s;
         return m;
       }())
    snaps_used += info.used;
  CHECK(c.usedbysnapshots >= snaps_used);
  CHECK(c.used == c.usedbydataset + c.usedbysnapshots);
  RequireHealthy(t);

  // Destroying the clone's first snapshot frees what only it held.
  const uint64_t before = t.Info("tank/c").usedbysnapshots;
  auto l = t.admin->ListSnapshots("tank/c", false);
  REQUIRE(l.ok());
  const uint64_t first_used = (*l)[0].used;
  CHECK(first_used > 0);
  REQUIRE(t.admin->Destroy("tank/c@c0", false).ok());
  CHECK(before - t.Info("tank/c").usedbysnapshots == first_used);
  kept.erase("tank/c@c0");
  for (const auto& [name, content] : kept)
    CHECK(ReadSnapshot(t, name, id, content.size()) == content);
  RequireHealthy(t);

  // Rolled back to its newest snapshot, then written again.
  t.Overwrite("tank/c", id, 0, Pattern(99, kRecord));
  REQUIRE(t.admin->Rollback("tank/c@c2", false).ok());
  CHECK(ReadDataset(t, "tank/c", id, v.size()) == kept["tank/c@c2"]);
  RequireHealthy(t);

  // A clone with snapshots is destroyed with them.
  CHECK(Code(t.admin->Destroy("tank/c", false)) == StatusCode::kNotEmpty);
  REQUIRE(t.admin->Destroy("tank/c@%", false).ok());
  REQUIRE(t.admin->Destroy("tank/c", false).ok());
  CHECK(ReadSnapshot(t, "tank/d@s", id, v.size()) == kept["tank/d@s"]);
  RequireHealthy(t);
}

TEST_CASE("Promote makes a clone the owner of its origin, and the old dataset a clone",
          "[clone]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::string v = Pattern(20, 8 * kRecord);
  const uint64_t id = t.Write("tank/d", v);
  std::map<std::string, std::string> kept;
  std::mt19937_64 rng(11);
  auto change = [&](const std::string& dataset, std::string* content) {
    for (int k = 0; k < 2; k++) {
      const uint64_t blk = rng() % 8;
      const std::string p = Pattern(rng(), kRecord);
      t.Overwrite(dataset, id, blk * kRecord, p);
      content->replace(blk * kRecord, kRecord, p);
    }
  };
  for (const char* s : {"s1", "s2", "s3"}) {
    REQUIRE(t.admin->Snapshot({std::string("tank/d@") + s}, false).ok());
    kept[std::string("tank/d@") + s] = v;
    change("tank/d", &v);
  }
  std::string vd = v;
  std::string vc = kept["tank/d@s2"];
  REQUIRE(t.admin->Clone("tank/d@s2", "tank/c", {}).ok());
  change("tank/c", &vc);
  REQUIRE(t.admin->Snapshot({"tank/c@c1"}, false).ok());
  kept["tank/c@c1"] = vc;
  change("tank/c", &vc);
  change("tank/d", &vd);
  // A snapshot to move may not clash with one of the clone's.
  REQUIRE(t.admin->Snapshot({"tank/c@s1"}, false).ok());
  Status st = t.admin->Promote("tank/c");
  CHECK(Code(st) == StatusCode::kAlreadyExists);
  CHECK(st.message().find("tank/d@s1") != std::string::npos);
  REQUIRE(t.admin->Destroy("tank/c@s1", false).ok());
  const uint64_t total = t.Info("tank").used;
  REQUIRE(t.admin->Promote("tank/c").ok());

  CHECK(SnapNames(t, "tank/c") ==
        std::vector<std::string>{"tank/c@s1", "tank/c@s2", "tank/c@c1"});
  CHECK(SnapNames(t, "tank/d") == std::vector<std::string>{"tank/d@s3"});
  CHECK(t.Info("tank/c").origin.empty());
  CHECK(t.Info("tank/d").origin == "tank/c@s2");
  CHECK(t.Prop("tank/c@s2", "clones").value == "tank/d");
  // The pool's space does not move; only who is charged for it.
  CHECK(t.Info("tank").used == total);
  auto read_all = [&] {
    CHECK(ReadDataset(t, "tank/c", id, v.size()) == vc);
    CHECK(ReadDataset(t, "tank/d", id, v.size()) == vd);
    for (const auto& [name, content] : kept) {
      std::string now = name;
      if (name == "tank/d@s1" || name == "tank/d@s2") now = "tank/c" + name.substr(6);
      CHECK(ReadSnapshot(t, now, id, content.size()) == content);
    }
  };
  read_all();
  RequireHealthy(t);
  t.Reimport();
  read_all();
  CHECK(t.Info("tank/d").origin == "tank/c@s2");

  // The old dataset is an ordinary clone now: it goes with its snapshot,
  // and what it alone wrote goes with it.
  REQUIRE(t.admin->Destroy("tank/d@s3", false).ok());
  REQUIRE(t.admin->Destroy("tank/d", false).ok());
  kept.erase("tank/d@s3");
  CHECK(ReadDataset(t, "tank/c", id, v.size()) == vc);
  RequireHealthy(t);
  // And the moved snapshots are the clone's to destroy.
  REQUIRE(t.admin->Destroy("tank/c@s1%s2", false).ok());
  CHECK(SnapNames(t, "tank/c") == std::vector<std::string>{"tank/c@c1"});
  CHECK(ReadSnapshot(t, "tank/c@c1", id, v.size()) == kept["tank/c@c1"]);
  RequireHealthy(t);
}

TEST_CASE("Clones of clones, promoted and destroyed in random orders, keep every snapshot",
          "[clone]") {
  const uint64_t seed = GENERATE(1, 2, 3);
  std::mt19937_64 rng(seed);
  TestPool t;
  REQUIRE(t.admin->Create("tank/a", false, {}).ok());
  constexpr uint64_t kBlocks = 6;
  std::map<std::string, std::string> heads = {{"tank/a", Pattern(seed, kBlocks * kRecord)}};
  const uint64_t id = t.Write("tank/a", heads["tank/a"]);
  // Every snapshot by its id: its content; and its current name.
  std::map<uint64_t, std::string> content;
  auto pick = [&](const auto& m) {
    auto it = m.begin();
    std::advance(it, rng() % m.size());
    return it->first;
  };
  auto snapshots = [&] {
    std::map<uint64_t, std::string> names;
    auto l = t.admin->ListSnapshots("", true);
    REQUIRE(l.ok());
    for (const SnapshotInfo& s : *l) names[s.id] = s.name;
    return names;
  };
  int next = 0;
  for (int step = 0; step < 24; step++) {
    const std::string ds = pick(heads);
    const int op = int(rng() % 6);
    if (op <= 1) {  // write
      const uint64_t blk = rng() % kBlocks;
      const std::string p = Pattern(rng(), kRecord);
      t.Overwrite(ds, id, blk * kRecord, p);
      heads[ds].replace(blk * kRecord, kRecord, p);
    } else if (op == 2) {  // snapshot
      const std::string name = ds + "@n" + std::to_string(next++);
      REQUIRE(t.admin->Snapshot({name}, false).ok());
      for (const auto& [sid, sname] : snapshots())
        if (sname == name) content[sid] = heads[ds];
    } else if (op == 3 && !content.empty()) {  // clone
      const uint64_t sid = pick(content);
      const std::string name = "tank/k" + std::to_string(next++);
      REQUIRE(t.admin->Clone(snapshots().at(sid), name, {}).ok());
      heads[name] = content[sid];
    } else if (op == 4) {  // promote, when it is a clone
      const std::string origin = t.Info(ds).origin;
      if (origin.empty()) continue;
      Status st = t.admin->Promote(ds);
      INFO(st.ToString());
      CHECK((st.ok() || st.code() == StatusCode::kAlreadyExists));
    } else if (!content.empty()) {  // destroy a snapshot (refused for an origin)
      const uint64_t sid = pick(content);
      Status st = t.admin->Destroy(snapshots().at(sid), false);
      INFO(st.ToString());
      CHECK((st.ok() || st.code() == StatusCode::kNotEmpty));
      if (st.ok()) content.erase(sid);
    }
    for (const auto& [name, data] : heads) CHECK(ReadDataset(t, name, id, data.size()) == data);
    const std::map<uint64_t, std::string> names = snapshots();
    for (const auto& [sid, data] : content)
      CHECK(ReadSnapshot(t, names.at(sid), id, data.size()) == data);
    // Each block is charged to one dataset: the pool's allocated bytes are
    // the datasets' and the MOS's (a few blocks per object here).
    const uint64_t allocated = Allocated(t), used = t.Info("tank").used;
    CHECK(used <= allocated);
    CHECK(allocated - used < 1024 * 1024);
  }
  RequireHealthy(t);
  t.Reimport();
  for (const auto& [name, data] : heads) CHECK(ReadDataset(t, name, id, data.size()) == data);
  // Everything goes, clones first where they are origins' clones.
  for (int round = 0; round < 20 && !heads.empty(); round++) {
    for (auto it = heads.begin(); it != heads.end();) {
      for (const std::string& s : SnapNames(t, it->first)) (void)t.admin->Destroy(s, false);
      if (t.admin->Destroy(it->first, false).ok())
        it = heads.erase(it);
      else
        ++it;
    }
  }
  CHECK(heads.empty());
  RequireHealthy(t);
}

}  // namespace
}  // namespace poolfs::core::pool
