// Snapshots: a snapshot keeps its dataset's content as of its txg while the
// dataset changes, across reimports; its figures (used, referenced,
// written) and the dataset's usedbysnapshots follow the deadlists;
// destroying snapshots in any order frees exactly what only they held
// (poolfs check finds no leak and no block freed twice); bad names and
// destroying a dataset that has snapshots are refused; the pool
// directory's snapshot and clone records refuse damage.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "pool/pool_phys.h"
#include "test_pool.h"
#include "util/endian.h"

namespace poolfs::core::pool {
namespace {

using check_test::Pattern;

constexpr uint64_t kRecord = 128 * 1024;

std::string ReadAll(dmu::ObjectSet& os, uint64_t id, uint64_t len) {
  auto r = os.Read(ObjectId(id), 0, len);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

std::string ReadSnapshot(TestPool& t, const std::string& name, uint64_t id, uint64_t len) {
  auto os = t.pool->OpenSnapshot(name);
  INFO(name + ": " + os.status().ToString());
  REQUIRE(os.ok());
  return ReadAll(**os, id, len);
}

std::map<std::string, SnapshotInfo> Snaps(TestPool& t, std::string_view root = "") {
  auto l = t.admin->ListSnapshots(root, true);
  INFO(l.status().ToString());
  REQUIRE(l.ok());
  std::map<std::string, SnapshotInfo> out;
  for (SnapshotInfo& i : *l) out[i.name] = i;
  return out;
}

void RequireHealthy(TestPool& t) {
  CheckReport r = t.Check();
  CHECK(r.problems.empty());
  CHECK(r.problems_omitted == 0);
}

TEST_CASE("A snapshot keeps the dataset as its txg left it, across a reimport", "[snapshot]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const std::string v1 = Pattern(1, 4 * kRecord);
  const uint64_t id = t.Write("tank/d", v1);
  const uint64_t before = t.Info("tank/d").referenced;
  REQUIRE(t.admin->Snapshot({"tank/d@one"}, false).ok());
  // Two of four records change: the snapshot alone holds their old copies.
  const std::string patch = Pattern(2, 2 * kRecord);
  t.Overwrite("tank/d", id, kRecord, patch);
  std::string v2 = v1;
  v2.replace(kRecord, patch.size(), patch);

  CHECK(ReadAll(*t.pool->dataset("tank/d"), id, v1.size()) == v2);
  CHECK(ReadSnapshot(t, "tank/d@one", id, v1.size()) == v1);
  auto snaps = Snaps(t);
  REQUIRE(snaps.count("tank/d@one"));
  const SnapshotInfo one = snaps["tank/d@one"];
  CHECK(one.referenced == before);
  CHECK(one.written == before);  // the first snapshot: everything it holds
  const DatasetInfo d = t.Info("tank/d");
  // What it alone holds: the two old records (compressed or not), and
  // old copies of the tree's blocks above them.
  CHECK(one.used >= 2 * 4096);
  CHECK(d.usedbysnapshots == one.used);
  CHECK(d.used == d.referenced + d.usedbysnapshots);
  CHECK(t.Prop("tank/d", "usedbysnapshots").value == std::to_string(d.usedbysnapshots));

  t.Reimport();
  CHECK(ReadSnapshot(t, "tank/d@one", id, v1.size()) == v1);
  CHECK(ReadAll(*t.pool->dataset("tank/d"), id, v1.size()) == v2);
  snaps = Snaps(t);
  CHECK(snaps["tank/d@one"].used == one.used);
  CHECK(snaps["tank/d@one"].referenced == one.referenced);
  RequireHealthy(t);

  // Destroyed, it gives back exactly what it alone held.
  REQUIRE(t.admin->Destroy("tank/d@one", false).ok());
  CHECK(Snaps(t).empty());
  CHECK(t.Info("tank/d").usedbysnapshots == 0);
  CHECK(ReadAll(*t.pool->dataset("tank/d"), id, v1.size()) == v2);
  RequireHealthy(t);
}

TEST_CASE("Snapshots destroyed in any order free exactly what only they held", "[snapshot]") {
  const uint64_t seed = GENERATE(1, 2, 3, 4);
  std::mt19937_64 rng(seed);
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  constexpr uint64_t kBlocks = 12;
  std::string content = Pattern(seed * 100, kBlocks * kRecord);
  const uint64_t id = t.Write("tank/d", content);
  // Five snapshots, each after rewriting a few random records.
  std::vector<std::string> names;
  std::map<std::string, std::string> kept;
  for (int s = 0; s < 5; s++) {
    const std::string name = "tank/d@s" + std::to_string(s);
    REQUIRE(t.admin->Snapshot({name}, false).ok());
    names.push_back(name);
    kept[name] = content;
    for (int k = 0; k < 3; k++) {
      const uint64_t blk = rng() % kBlocks;
      const std::string patch = Pattern(rng(), kRecord);
      t.Overwrite("tank/d", id, blk * kRecord, patch);
      content.replace(blk * kRecord, kRecord, patch);
    }
  }
  // Each snapshot's `used` is what destroying it frees: the pool's
  // allocated bytes fall by it (checked while the others stay).
  std::shuffle(names.begin(), names.end(), rng);
  for (size_t i = 0; i < names.size(); i++) {
    const std::string& name = names[i];
    const uint64_t used = Snaps(t)[name].used;
    const uint64_t snapshots_before = t.Info("tank/d").usedbysnapshots;
    REQUIRE(t.admin->Destroy(name, false).ok());
    CHECK(t.Info("tank/d").usedbysnapshots + used == snapshots_before);
    kept.erase(name);
    for (const auto& [other, bytes] : kept)
      CHECK(ReadSnapshot(t, other, id, bytes.size()) == bytes);
    CHECK(ReadAll(*t.pool->dataset("tank/d"), id, content.size()) == content);
    if (i == 1 || i + 1 == names.size()) RequireHealthy(t);
  }
  CHECK(t.Info("tank/d").usedbysnapshots == 0);
}

TEST_CASE("Snapshots of several datasets and of a subtree are taken in one txg", "[snapshot]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/a/b", true, {}).ok());
  REQUIRE(t.admin->Create("tank/c", false, {}).ok());
  t.Write("tank/a/b", Pattern(5, 10000));
  REQUIRE(t.admin->Snapshot({"tank/a@x", "tank/c@x"}, true).ok());
  auto snaps = Snaps(t);
  REQUIRE(snaps.size() == 3);
  CHECK(snaps.count("tank/a@x"));
  CHECK(snaps.count("tank/a/b@x"));
  CHECK(snaps.count("tank/c@x"));
  CHECK(snaps["tank/a@x"].txg == snaps["tank/c@x"].txg);
  CHECK(snaps["tank/a/b@x"].txg == snaps["tank/c@x"].txg);
  CHECK(Snaps(t, "tank/c").size() == 1);
  // Renaming the dataset renames its snapshots.
  REQUIRE(t.admin->Rename("tank/c", "tank/e").ok());
  CHECK(Snaps(t).count("tank/e@x"));
  // A dataset with snapshots is not destroyed until they are.
  Status st = t.admin->Destroy("tank/a", true);
  CHECK(st.code() == StatusCode::kNotEmpty);
  CHECK(st.message().find("tank/a@x") != std::string::npos);
  REQUIRE(t.admin->Destroy("tank/a@x", true).ok());
  CHECK(Snaps(t, "tank/a").empty());
  REQUIRE(t.admin->Destroy("tank/a", true).ok());
  RequireHealthy(t);
}

TEST_CASE("Snapshots are renamed within their dataset and destroyed by ranges; written@",
          "[snapshot]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const uint64_t id = t.Write("tank/d", Pattern(1, 4 * kRecord));
  for (const char* n : {"a", "b", "c", "d", "e"}) {
    REQUIRE(t.admin->Snapshot({std::string("tank/d@") + n}, false).ok());
    t.Overwrite("tank/d", id, 0, Pattern(uint64_t(n[0]), kRecord));
  }
  REQUIRE(t.admin->Rename("tank/d@a", "tank/d@first").ok());
  REQUIRE(t.admin->Rename("tank/d@e", "@last").ok());
  CHECK(t.admin->Rename("tank/d@b", "tank@b").code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Rename("tank/d@b", "@c").code() == StatusCode::kAlreadyExists);
  CHECK(t.admin->Rename("tank/d", "tank/x@y").code() == StatusCode::kInvalidArgument);
  auto snaps = Snaps(t);
  CHECK(snaps.count("tank/d@first"));
  CHECK(snaps.count("tank/d@last"));
  // A snapshot's properties; written@SNAP of the dataset: one record
  // rewritten since @last (and the tree blocks above it).
  auto g = t.admin->Get("tank/d@b", {"all"});
  REQUIRE(g.ok());
  std::map<std::string, std::string> props;
  for (const DatasetProperty& p : *g) props[p.name] = p.value;
  CHECK(props["type"] == "snapshot");
  CHECK(props["used"] == std::to_string(snaps["tank/d@b"].used));
  CHECK(props["written"] == std::to_string(snaps["tank/d@b"].written));
  auto w = t.admin->Get("tank/d", {"written@last", "written@first"});
  INFO(w.status().ToString());
  REQUIRE(w.ok());
  const uint64_t since_last = std::stoull((*w)[0].value);
  const uint64_t since_first = std::stoull((*w)[1].value);
  CHECK(since_last >= 4096);
  CHECK(since_last < 2 * kRecord);
  CHECK(since_first >= since_last);
  CHECK(t.admin->Get("tank/d", {"written@nope"}).status().code() == StatusCode::kNotFound);
  // Ranges: b%d, then from the oldest, leaving @last.
  CHECK(t.admin->Destroy("tank/d@d%b", false).code() == StatusCode::kInvalidArgument);
  REQUIRE(t.admin->Destroy("tank/d@b%d", false).ok());
  snaps = Snaps(t);
  CHECK(snaps.size() == 2);
  CHECK(snaps.count("tank/d@first"));
  REQUIRE(t.admin->Destroy("tank/d@%first", false).ok());
  snaps = Snaps(t);
  REQUIRE(snaps.size() == 1);
  CHECK(snaps.count("tank/d@last"));
  RequireHealthy(t);
}

TEST_CASE("Rollback discards every change since the snapshot, and frees what they wrote",
          "[snapshot]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  const std::string v1 = Pattern(1, 6 * kRecord);
  const uint64_t id = t.Write("tank/d", v1);
  const uint64_t other = t.Write("tank/d", Pattern(2, 1000));
  const DatasetInfo at_snapshot = t.Info("tank/d");
  REQUIRE(t.admin->Snapshot({"tank/d@one"}, false).ok());
  // Changes: a record rewritten, an object added, one freed.
  t.Overwrite("tank/d", id, 2 * kRecord, Pattern(3, kRecord));
  const uint64_t added = t.Write("tank/d", Pattern(4, 3 * kRecord));
  {
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(t.pool->dataset("tank/d")->Free(tx, ObjectId(other)).ok());
    tx.Commit();
    REQUIRE(t.pool->WaitSynced().ok());
  }
  REQUIRE(t.admin->Snapshot({"tank/d@two"}, false).ok());
  t.Overwrite("tank/d", id, 0, Pattern(5, kRecord));

  // Not past a later snapshot without -r; not while in use.
  Status st = t.admin->Rollback("tank/d@one", false);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("two") != std::string::npos);
  t.pool->SetBusyCheck([](uint64_t) { return true; });
  CHECK(t.admin->Rollback("tank/d@two", false).code() == StatusCode::kBusy);
  t.pool->SetBusyCheck(nullptr);

  REQUIRE(t.admin->Rollback("tank/d@one", true).ok());
  auto check_content = [&] {
    dmu::ObjectSet* os = t.pool->dataset("tank/d");
    REQUIRE(os != nullptr);
    CHECK(ReadAll(*os, id, v1.size()) == v1);
    CHECK(ReadAll(*os, other, 1000) == Pattern(2, 1000));
    CHECK(os->Stat(ObjectId(added)).status().code() == StatusCode::kNotFound);
  };
  check_content();
  auto snaps = Snaps(t);
  CHECK(snaps.size() == 1);
  CHECK(snaps.count("tank/d@one"));
  const DatasetInfo now = t.Info("tank/d");
  CHECK(now.referenced == at_snapshot.referenced);
  CHECK(now.usedbysnapshots == 0);
  CHECK(snaps["tank/d@one"].used == 0);
  // The dataset goes on from there.
  t.Overwrite("tank/d", id, kRecord, Pattern(6, kRecord));
  CHECK(t.Info("tank/d").usedbysnapshots > 0);
  RequireHealthy(t);
  t.Overwrite("tank/d", id, kRecord, v1.substr(kRecord, kRecord));
  REQUIRE(t.admin->Rollback("tank/d@one", false).ok());
  t.Reimport();
  check_content();
  REQUIRE(t.admin->Destroy("tank/d@one", false).ok());
  RequireHealthy(t);
}

TEST_CASE("Bad snapshot names and missing snapshots are refused, changing nothing", "[snapshot]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  auto code = [](const Status& st) {
    INFO(st.ToString());
    return st.code();
  };
  CHECK(code(t.admin->Snapshot({"tank/d"}, false)) == StatusCode::kInvalidArgument);
  CHECK(code(t.admin->Snapshot({"tank/d@"}, false)) == StatusCode::kInvalidArgument);
  CHECK(code(t.admin->Snapshot({"tank/d@x@y"}, false)) == StatusCode::kInvalidArgument);
  CHECK(code(t.admin->Snapshot({"tank/d@x/y"}, false)) == StatusCode::kInvalidArgument);
  CHECK(code(t.admin->Snapshot({"tank/nope@x"}, false)) == StatusCode::kNotFound);
  CHECK(code(t.admin->Snapshot({"other/d@x"}, false)) == StatusCode::kInvalidArgument);
  CHECK(code(t.admin->Snapshot({"tank/d@a"}, false)) == StatusCode::kAlreadyExists);
  // All or none: the second name fails, the first is not taken.
  CHECK(code(t.admin->Snapshot({"tank@b", "tank/d@a"}, false)) == StatusCode::kAlreadyExists);
  CHECK(code(t.admin->Snapshot({"tank/d@b", "tank/d@c"}, false)) == StatusCode::kInvalidArgument);
  CHECK(code(t.admin->Destroy("tank/d@zz", false)) == StatusCode::kNotFound);
  CHECK(Snaps(t).size() == 1);
  RequireHealthy(t);
}

// Directory records for the decoder tests: a dataset (no root yet) and a
// snapshot of dataset `ds` taken in `txg`.
DatasetEntry DirDataset(uint64_t id, uint64_t parent, std::string name) {
  DatasetEntry e;
  e.id = id;
  e.parent = parent;
  e.created = Txg(1);
  e.root = zio::MakeHole(zio::BlockType::kObjset, 0, 0, Txg(0));
  e.name = std::move(name);
  return e;
}
SnapshotEntry DirSnapshot(uint64_t id, uint64_t ds, uint64_t txg, std::string name) {
  SnapshotEntry e;
  e.id = id;
  e.dataset = ds;
  e.txg = Txg(txg);
  e.creation_time = 1700000000;
  e.referenced = 1 << 20;
  e.root.type = zio::BlockType::kObjset;
  e.root.birth = Txg(txg);
  e.root.lsize = e.root.psize = 4096;
  e.root.dva = {0, 0x400000 + id * 0x1000, 4096};
  e.root.fill = 1;
  e.name = std::move(name);
  e.guid = 0x5eed0000 + id;
  return e;
}

// Checks that directory `bad` (encoded as format 2) is refused saying `why`.
void Refused(const PoolDirectory& bad, std::string_view why) {
  auto r = DecodePoolDirectory(EncodePoolDirectory(bad, zio::BpFormat::kV2), zio::BpFormat::kV2);
  INFO(r.status().ToString());
  CHECK(r.status().code() == StatusCode::kCorruption);
  CHECK(r.status().message().find(why) != std::string::npos);
}

TEST_CASE("The pool directory's snapshot records round-trip and refuse damage", "[snapshot]") {
  PoolDirectory d;
  d.next_dataset_id = 10;
  d.datasets.push_back(DirDataset(1, 0, "tank"));
  d.snapshots.push_back(DirSnapshot(2, 1, 5, "a"));
  d.snapshots.push_back(DirSnapshot(3, 1, 9, "b"));
  d.snapshots[1].deadlist[0] = DeadBucket{8192, {{20, 2}}};
  d.head_deadlists[1][0] = DeadBucket{4096, {{21, 1}}};
  d.head_deadlists[1][5] = DeadBucket{4096, {{22, 1}, {23, 3}}};
  for (zio::BpFormat format : {zio::BpFormat::kV1, zio::BpFormat::kV2}) {
    auto back = DecodePoolDirectory(EncodePoolDirectory(d, format), format);
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(back->snapshots == d.snapshots);
    CHECK(back->head_deadlists == d.head_deadlists);
  }
  PoolDirectory bad = d;
  bad.snapshots[1].txg = Txg(5);
  Refused(bad, "not after");
  bad = d;
  bad.snapshots[1].dataset = 7;
  Refused(bad, "does not list");
  bad = d;
  bad.snapshots[1].id = 2;
  Refused(bad, "taken");
  bad = d;
  bad.snapshots[1].name = "a";
  Refused(bad, "repeats");
  bad = d;
  bad.head_deadlists[1][6] = DeadBucket{1, {{24, 1}}};
  Refused(bad, "neither 0 nor");
  bad = d;
  bad.head_deadlists[1][0].objects[0].object = 20;
  Refused(bad, "not a MOS object of its own");
  bad = d;
  bad.head_deadlists[1][0].objects.clear();
  Refused(bad, "is empty");
  bad = d;
  bad.snapshots.clear();
  Refused(bad, "has no snapshots");
}

TEST_CASE("The pool directory keeps snapshot guids, refuses 0 and repeats, reads version 7",
          "[snapshot][guid]") {
  PoolDirectory d;
  d.next_dataset_id = 10;
  d.datasets = {DirDataset(1, 0, "tank"), DirDataset(2, 1, "d")};
  d.snapshots = {DirSnapshot(3, 1, 5, "a"), DirSnapshot(4, 1, 9, "b"), DirSnapshot(5, 2, 9, "b")};
  d.snapshots[0].guid = ~uint64_t{0};
  d.snapshots[2].guid = d.snapshots[1].guid;  // two datasets may share one
  for (zio::BpFormat format : {zio::BpFormat::kV1, zio::BpFormat::kV2}) {
    const std::string bytes = EncodePoolDirectory(d, format);
    CHECK(util::GetLE32(reinterpret_cast<const uint8_t*>(bytes.data()) + 8) ==
          kPoolDirectoryVersion);
    auto back = DecodePoolDirectory(bytes, format);
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(back->snapshots == d.snapshots);
    // Version 7 has no guids: 8 bytes less per snapshot, read as guid 0.
    const std::string old = EncodePoolDirectory(d, format, 7);
    CHECK(old.size() == bytes.size() - 8 * d.snapshots.size());
    CHECK(util::GetLE32(reinterpret_cast<const uint8_t*>(old.data()) + 8) == 7);
    auto read = DecodePoolDirectory(old, format);
    INFO(read.status().ToString());
    REQUIRE(read.ok());
    for (size_t i = 0; i < d.snapshots.size(); i++) {
      CHECK(read->snapshots[i].guid == 0);
      SnapshotEntry e = read->snapshots[i];
      e.guid = d.snapshots[i].guid;
      CHECK(e == d.snapshots[i]);
    }
  }
  PoolDirectory bad = d;
  bad.snapshots[1].guid = 0;
  Refused(bad, "snapshot 1 ('@b') of dataset 1 has guid 0");
  bad = d;
  bad.snapshots[1].guid = bad.snapshots[0].guid;
  Refused(bad,
          "snapshot 1 ('@b') of dataset 1 has guid 18446744073709551615, as snapshot '@a' of "
          "that dataset has");
}

TEST_CASE("Version 9 directories hold a receive's hidden dataset, and only where it may be",
          "[snapshot][receive]") {
  auto decode = [](const PoolDirectory& d, uint32_t version = kPoolDirectoryVersion) {
    return DecodePoolDirectory(EncodePoolDirectory(d, zio::BpFormat::kV2, version),
                               zio::BpFormat::kV2);
  };
  PoolDirectory d;
  d.next_dataset_id = 10;
  d.datasets = {DirDataset(1, 0, "tank"), DirDataset(2, 1, "d"), DirDataset(7, 1, "%recv-7")};
  d.snapshots = {DirSnapshot(3, 2, 5, "a")};
  auto good = decode(d);
  INFO(good.status().ToString());
  REQUIRE(good.ok());
  CHECK(good->datasets == d.datasets);
  // Before version 9 the name is just bad.
  auto old = decode(d, 8);
  CHECK(old.status().code() == StatusCode::kCorruption);
  CHECK_THAT(old.status().message(), Catch::Contains("contains '%'"));
  struct Bad {
    std::function<void(PoolDirectory&)> change;
    const char* says;
  };
  const Bad bad[] = {
      {[](PoolDirectory& x) { x.datasets[2].name = "%recv-8"; }, "the only hidden name"},
      {[](PoolDirectory& x) { x.datasets[2].parent = 2; }, "not a child of the root dataset"},
      {[](PoolDirectory& x) { x.datasets.push_back(DirDataset(8, 7, "below")); },
       "is a child of hidden dataset"},
      {[](PoolDirectory& x) { x.snapshots.push_back(DirSnapshot(9, 7, 6, "s")); },
       "belongs to hidden dataset"},
  };
  for (const Bad& b : bad) {
    PoolDirectory x = d;
    b.change(x);
    auto r = decode(x);
    INFO(b.says);
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK_THAT(r.status().message(), Catch::Contains(b.says));
  }
}

TEST_CASE("The pool directory keeps clones' origins and refuses bad ones", "[snapshot][clone]") {
  PoolDirectory d;
  d.next_dataset_id = 10;
  d.datasets = {DirDataset(1, 0, "tank"), DirDataset(2, 1, "d"), DirDataset(3, 1, "c")};
  d.snapshots = {DirSnapshot(4, 2, 5, "s"), DirSnapshot(5, 3, 9, "c1")};
  d.datasets[2].origin = 4;
  // The clone's buckets: 0 (its origin's blocks) and the origin's txg.
  d.snapshots[1].deadlist[0] = DeadBucket{4096, {{20, 1}}};
  d.head_deadlists[3][5] = DeadBucket{4096, {{21, 1}}};
  d.head_deadlists[3][9] = DeadBucket{4096, {{22, 1}}};
  auto back = DecodePoolDirectory(EncodePoolDirectory(d, zio::BpFormat::kV2), zio::BpFormat::kV2);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(back->datasets == d.datasets);
  CHECK(back->snapshots == d.snapshots);
  CHECK(back->head_deadlists == d.head_deadlists);

  PoolDirectory bad = d;
  bad.datasets[2].origin = 7;
  Refused(bad, "which is no snapshot");
  bad = d;
  bad.datasets[2].origin = 5;
  Refused(bad, "a snapshot of its own");
  bad = d;
  bad.datasets[1].origin = 5;  // d a clone of c's snapshot, c of d's
  Refused(bad, "a clone of a clone of itself");
  bad = d;
  bad.snapshots[1].txg = Txg(4);
  Refused(bad, "not after its dataset's origin");
  bad = d;
  bad.datasets[2].origin = 0;  // key 5 is no snapshot of c's
  Refused(bad, "neither 0 nor");
  bad = d;
  bad.snapshots.pop_back();  // a clone may keep a head deadlist without snapshots
  bad.head_deadlists[3].erase(9);
  CHECK(DecodePoolDirectory(EncodePoolDirectory(bad, zio::BpFormat::kV2), zio::BpFormat::kV2).ok());
}

}  // namespace
}  // namespace poolfs::core::pool
