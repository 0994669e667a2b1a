// ObjectSet::Claim: an object made with a given id and generation (a
// received object keeps its sender's), in every backfill mode: creates never
// get a claimed id, the counts (next_object, live_objects) stay right across
// syncs and a reopen, an id freed in a txg is claimed again in the same txg
// as a new object, and bad claims are refused.
#include "dmu/objset.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "core/dmu/objset_fixture.h"

namespace poolfs::core::dmu {
namespace {

using namespace testing;  // the fixture (objset_fixture.h)

constexpr BackfillMode kClaimModes[] = {BackfillMode::kAuto, BackfillMode::kOn, BackfillMode::kOff,
                                        BackfillMode::kLegacy};

std::string SenderContent(uint64_t id) { return "object " + std::to_string(id) + " of the sender"; }

// Creates `n` objects in `tx`, each id new to `live`, which takes them.
void CreateFresh(ObjectSet& os, Tx& tx, int n, std::set<uint64_t>* live) {
  for (int i = 0; i < n; i++) {
    auto id = os.Create(tx, ObjectType::kPlain);
    INFO(id.status().ToString());
    REQUIRE(id.ok());
    INFO("created id " << id->value());
    REQUIRE(live->insert(id->value()).second);
  }
}

TEST_CASE("Claimed ids, far apart, are never handed to a create, in every backfill mode",
          "[dmu][claim]") {
  for (BackfillMode mode : kClaimModes) {
    INFO("backfill " << BackfillModeName(mode));
    Fixture f;
    f.os->SetBackfill(mode);
    std::set<uint64_t> live;
    // The sender's ids and generations (from its own txgs).
    const std::map<uint64_t, uint64_t> claimed = {{5, 17}, {100, 3}, {1000, 1}, {70000, 123456789}};
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      CreateFresh(*f.os, tx, 4, &live);  // 1..4, and a chunk reserved past them
      for (const auto& [id, gen] : claimed) {
        Status st = f.os->Claim(tx, ObjectId(id), ObjectType::kPlain, 4096, util::Compression::kLz4,
                                Txg(gen));
        INFO("claim " << id << ": " << st.ToString());
        REQUIRE(st.ok());
        REQUIRE(f.os->Write(tx, ObjectId(id), 0, SenderContent(id)).ok());
        live.insert(id);
      }
      // In use: refused, and nothing changes.
      Status again =
          f.os->Claim(tx, ObjectId(100), ObjectType::kPlain, 4096, util::Compression::kLz4, Txg(9));
      CHECK(again.code() == StatusCode::kAlreadyExists);
      CHECK(again.message().find("100") != std::string::npos);
      CHECK(f.os->Claim(tx, ObjectId(2), ObjectType::kPlain, 4096, util::Compression::kLz4, Txg(9))
                .code() == StatusCode::kAlreadyExists);
      CreateFresh(*f.os, tx, 300, &live);
      auto info = f.os->Stat(ObjectId(70000));
      REQUIRE(info.ok());
      CHECK(info->generation == 123456789);
      CHECK(info->block_size == 4096);
      tx.Commit();
    }
    f.Sync();
    // One past the highest id in use (off: the creates came after 70000).
    CHECK(f.os->next_object() == *live.rbegin() + 1);
    CHECK(f.os->next_object() >= 70001);
    CHECK(f.os->live_objects() == live.size());
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      CreateFresh(*f.os, tx, 50, &live);
      tx.Commit();
    }
    f.Sync();
    const uint64_t next = f.os->next_object();
    CHECK(next == *live.rbegin() + 1);
    CHECK(f.os->live_objects() == live.size());

    f.Reopen();
    f.os->SetBackfill(mode);
    CHECK(f.os->next_object() == next);
    CHECK(f.os->live_objects() == live.size());
    for (const auto& [id, gen] : claimed) {
      INFO("object " << id);
      auto info = f.os->Stat(ObjectId(id));
      REQUIRE(info.ok());
      CHECK(info->generation == gen);
      auto data = f.os->Read(ObjectId(id), 0, 100);
      REQUIRE(data.ok());
      CHECK(*data == SenderContent(id));
    }
    // A created object's generation is its txg.
    auto first = f.os->Stat(ObjectId(1));
    REQUIRE(first.ok());
    CHECK(first->generation == 1);
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      CreateFresh(*f.os, tx, 500, &live);
      tx.Commit();
    }
    f.Sync();
    CHECK(f.os->live_objects() == live.size());
  }
}

TEST_CASE("An object freed and claimed again in one txg is a new object of its own generation",
          "[dmu][claim]") {
  for (BackfillMode mode : kClaimModes) {
    INFO("backfill " << BackfillModeName(mode));
    Fixture f;
    f.os->SetBackfill(mode);
    ObjectId id;
    const std::string old_data(3 * 131072 + 100, 'o');
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      REQUIRE(f.os->Create(tx, ObjectType::kPlain).ok());
      id = f.os->Create(tx, ObjectType::kPlain).value();
      REQUIRE(f.os->Write(tx, id, 0, old_data).ok());
      tx.Commit();
    }
    f.Sync();
    const uint64_t live = f.os->live_objects();
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      REQUIRE(f.os->Free(tx, id).ok());
      REQUIRE(f.os->Claim(tx, id, ObjectType::kPlain, 8192, util::Compression::kOff, Txg(999),
                          "bonus", 7)
                  .ok());
      REQUIRE(f.os->Write(tx, id, 0, "new").ok());
      auto info = f.os->Stat(id);
      REQUIRE(info.ok());
      CHECK(info->generation == 999);
      CHECK(info->length == 3);
      CHECK(info->bonus == "bonus");
      // Freed and claimed: not free, not to be created.
      std::set<uint64_t> created = {1, id.value()};
      CreateFresh(*f.os, tx, 40, &created);
      tx.Commit();
    }
    f.Sync();
    CHECK(f.os->live_objects() == live + 40);
    auto check = [&] {
      auto info = f.os->Stat(id);
      REQUIRE(info.ok());
      CHECK(info->generation == 999);
      CHECK(info->block_size == 8192);
      CHECK(info->length == 3);
      CHECK(info->bonus_type == 7);
      // The old object's blocks are gone: the new one has one small block.
      CHECK(info->used < 131072);
      auto data = f.os->Read(id, 0, old_data.size());
      REQUIRE(data.ok());
      CHECK(*data == "new");
    };
    check();
    f.Reopen();
    f.os->SetBackfill(mode);
    check();
    CHECK(f.os->live_objects() == live + 40);
  }
}

TEST_CASE("Claim refuses bad ids, types and sizes, and an id freed in a later txg",
          "[dmu][claim]") {
  Fixture f;
  ObjectId victim;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    victim = f.os->Create(tx, ObjectType::kPlain).value();
    auto claim = [&](uint64_t id, ObjectType type, uint32_t block_size) {
      return f.os->Claim(tx, ObjectId(id), type, block_size, util::Compression::kLz4, Txg(1));
    };
    CHECK(claim(0, ObjectType::kPlain, 4096).code() == StatusCode::kInvalidArgument);
    CHECK(claim(kMaxObjectId + 1, ObjectType::kPlain, 4096).code() == StatusCode::kInvalidArgument);
    CHECK(claim(uint64_t{1} << 50, ObjectType::kPlain, 4096).code() ==
          StatusCode::kInvalidArgument);
    CHECK(claim(7, ObjectType::kNone, 4096).code() == StatusCode::kInvalidArgument);
    CHECK(claim(7, ObjectType::kMetadnode, 4096).code() == StatusCode::kInvalidArgument);
    CHECK(claim(7, ObjectType::kPlain, 1000).code() == StatusCode::kInvalidArgument);
    CHECK(claim(7, ObjectType::kPlain, 2 << 20).code() == StatusCode::kInvalidArgument);
    CHECK(f.os->Claim(tx, ObjectId(7), ObjectType::kPlain, 4096, util::Compression::kLz4, Txg(1),
                      std::string(f.os->max_bonus() + 1, 'b'))
              .code() == StatusCode::kInvalidArgument);
    // None of them took the id.
    CHECK(claim(7, ObjectType::kPlain, 4096).ok());
    CHECK(claim(kMaxObjectId, ObjectType::kPlain, 4096).ok());
    tx.Commit();
  }
  f.Sync();
  CHECK(f.os->next_object() == kMaxObjectId + 1);
  CHECK(f.os->live_objects() == 3);
  // A Tx still holding txg 2 while txg 3 frees the victim: txg 2 cannot
  // claim it (the object exists until txg 3).
  Tx old_tx(&f.txgs);
  REQUIRE(old_tx.Assign().ok());
  f.txgs.open++;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Free(tx, victim).ok());
    tx.Commit();
  }
  Status st =
      f.os->Claim(old_tx, victim, ObjectType::kPlain, 4096, util::Compression::kLz4, Txg(1));
  CHECK(st.code() == StatusCode::kBusy);
  CHECK(st.message().find("freed in txg 3") != std::string::npos);
  old_tx.Commit();
  // Txgs 2 and 3 in order (Fixture::Sync syncs the open one).
  for (uint64_t t : {2, 3}) {
    for (auto& task : f.os->SyncTasks(Txg(t), 2)) REQUIRE(task.fn().ok());
    REQUIRE(f.os->FinishSync(Txg(t), 0).ok());
    f.space.Sync(Txg(t), [](const space::Metaslab&) {});
    f.space.SyncDone(Txg(t));
    f.os->SyncDone(Txg(t));
  }
  f.txgs.open = 4;
  CHECK(f.os->live_objects() == 2);
  f.Reopen();
  CHECK(f.os->next_object() == kMaxObjectId + 1);
  CHECK(f.os->live_objects() == 2);
}

}  // namespace
}  // namespace poolfs::core::dmu
