// Snapshot guids: each snapshot gets a random nonzero guid, distinct within
// its dataset, that survives export and import, a rename and a promote;
// TakeSnapshots keeps a given guid and creation time and refuses a guid the
// dataset has. (The version 7 directory's import and the decoder's
// refusals, which need the pool edited under its checksums, are in
// check_surgery_test.cc.)
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "test_pool.h"

namespace poolfs::core::pool {
namespace {

// Every snapshot of the pool by full name, with its info.
std::map<std::string, SnapshotInfo> SnapInfos(TestPool& t) {
  auto l = t.admin->ListSnapshots("", true);
  INFO(l.status().ToString());
  REQUIRE(l.ok());
  std::map<std::string, SnapshotInfo> out;
  for (SnapshotInfo& i : *l) out[i.name] = i;
  return out;
}

std::map<std::string, uint64_t> GuidsByName(TestPool& t) {
  std::map<std::string, uint64_t> out;
  for (const auto& [name, info] : SnapInfos(t)) out[name] = info.guid;
  return out;
}

// Takes `requests` and waits for their txg.
Status TakeSynced(TestPool& t, const std::vector<SnapshotRequest>& requests) {
  Result<Txg> txg = t.pool->TakeSnapshots(requests);
  if (!txg.ok()) return txg.status();
  return t.pool->WaitSynced(*txg);
}

void RequireSound(TestPool& t) {
  CheckReport r = t.Check();
  CHECK(r.problems.empty());
  CHECK(r.problems_omitted == 0);
}

TEST_CASE("Snapshots get nonzero guids, distinct in their dataset, kept across a reimport",
          "[snapshot][guid]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  t.Write("tank/d", check_test::Pattern(1, 10000));
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  REQUIRE(t.admin->Snapshot({"tank/d@b"}, false).ok());
  REQUIRE(t.admin->Snapshot({"tank@r"}, true).ok());  // tank@r and tank/d@r
  const std::map<std::string, uint64_t> guids = GuidsByName(t);
  REQUIRE(guids.size() == 4);
  std::set<uint64_t> distinct;
  for (const auto& [name, guid] : guids) {
    INFO(name);
    CHECK(guid != 0);
    distinct.insert(guid);
    // `get guid`: the decimal number, read-only.
    const DatasetProperty p = t.Prop(name, "guid");
    CHECK(p.value == std::to_string(guid));
    CHECK(p.source == "-");
  }
  // Distinct within tank/d by rule; across datasets by chance (2^-64).
  CHECK(distinct.size() == 4);
  // `get all` of a snapshot lists it.
  auto all = t.admin->Get("tank/d@a", {"all"});
  REQUIRE(all.ok());
  bool listed = false;
  for (const DatasetProperty& p : *all) listed |= p.name == "guid";
  CHECK(listed);
  CHECK_FALSE(t.pool->SetProperty("tank/d@a", "guid", "5").ok());

  t.Reimport();
  CHECK(GuidsByName(t) == guids);
  RequireSound(t);
  CHECK(GuidsByName(t) == guids);
}

TEST_CASE("TakeSnapshots keeps a given guid and creation time; a guid its dataset has is refused",
          "[snapshot][guid]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  t.Write("tank/d", check_test::Pattern(2, 10000));
  const uint64_t kGuid = 0xfedcba9876543210ull;
  REQUIRE(TakeSynced(t, {{"tank/d@x", kGuid, 1600000000}}).ok());
  // Creation time and guid chosen when not given.
  REQUIRE(TakeSynced(t, {{"tank/d@y"}}).ok());
  auto snaps = SnapInfos(t);
  CHECK(snaps["tank/d@x"].guid == kGuid);
  CHECK(snaps["tank/d@x"].creation_time == 1600000000);
  CHECK(snaps["tank/d@y"].guid != 0);
  CHECK(snaps["tank/d@y"].guid != kGuid);
  CHECK(snaps["tank/d@y"].creation_time > 1600000000);
  CHECK(t.Prop("tank/d@x", "creation").value == "1600000000");

  // The same guid in the same dataset: refused, and all or nothing.
  Status st = TakeSynced(t, {{"tank@z"}, {"tank/d@z", kGuid}});
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find(std::to_string(kGuid)) != std::string::npos);
  CHECK(st.message().find("tank/d@x") != std::string::npos);
  CHECK(SnapInfos(t).size() == 2);
  // Another dataset may have it.
  REQUIRE(TakeSynced(t, {{"tank@x", kGuid}}).ok());
  CHECK(SnapInfos(t)["tank@x"].guid == kGuid);
  // Snapshot's own refusals hold too.
  CHECK(TakeSynced(t, {{"tank/d@x", 7}}).code() == StatusCode::kAlreadyExists);
  CHECK(TakeSynced(t, {{"tank/d@bad/name", 7}}).code() == StatusCode::kInvalidArgument);
  CHECK(TakeSynced(t, {}).code() == StatusCode::kInvalidArgument);

  t.Reimport();
  snaps = SnapInfos(t);
  CHECK(snaps["tank/d@x"].guid == kGuid);
  CHECK(snaps["tank/d@x"].creation_time == 1600000000);
  CHECK(snaps["tank@x"].guid == kGuid);
  // Once its snapshot is destroyed, a guid is free again in the dataset.
  REQUIRE(t.admin->Destroy("tank/d@x", false).ok());
  REQUIRE(TakeSynced(t, {{"tank/d@again", kGuid}}).ok());
  CHECK(SnapInfos(t)["tank/d@again"].guid == kGuid);
  RequireSound(t);
}

TEST_CASE("A rename and a promote keep snapshot guids; a clash of guids stops a promote",
          "[snapshot][guid][clone]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  t.Write("tank/d", check_test::Pattern(3, 10000));
  REQUIRE(t.admin->Snapshot({"tank/d@s1"}, false).ok());
  REQUIRE(t.admin->Snapshot({"tank/d@s2"}, false).ok());
  REQUIRE(t.admin->Snapshot({"tank/d@s3"}, false).ok());
  const std::map<std::string, uint64_t> before = GuidsByName(t);

  REQUIRE(t.admin->Rename("tank/d@s1", "tank/d@first").ok());
  CHECK(GuidsByName(t)["tank/d@first"] == before.at("tank/d@s1"));

  REQUIRE(t.admin->Clone("tank/d@s2", "tank/c", {}).ok());
  t.Write("tank/c", check_test::Pattern(4, 5000));
  // A snapshot of the clone with the guid of one that would move to it.
  REQUIRE(TakeSynced(t, {{"tank/c@dup", before.at("tank/d@s1")}}).ok());
  Status st = t.admin->Promote("tank/c");
  CHECK(st.code() == StatusCode::kAlreadyExists);
  CHECK(st.message().find("guid") != std::string::npos);
  CHECK(st.message().find("tank/c@dup") != std::string::npos);
  REQUIRE(t.admin->Destroy("tank/c@dup", false).ok());
  REQUIRE(TakeSynced(t, {{"tank/c@own"}}).ok());
  const uint64_t own = GuidsByName(t)["tank/c@own"];
  REQUIRE(t.admin->Promote("tank/c").ok());

  std::map<std::string, uint64_t> after = GuidsByName(t);
  CHECK(after == std::map<std::string, uint64_t>{{"tank/c@first", before.at("tank/d@s1")},
                                                 {"tank/c@s2", before.at("tank/d@s2")},
                                                 {"tank/c@own", own},
                                                 {"tank/d@s3", before.at("tank/d@s3")}});
  // The clone's origin is the same snapshot, by guid as by name.
  CHECK(t.Info("tank/d").origin == "tank/c@s2");
  t.Reimport();
  CHECK(GuidsByName(t) == after);
  RequireSound(t);
}

}  // namespace
}  // namespace poolfs::core::pool
