// Gang blocks through the whole pool: objects whose blocks are stored in
// pieces sync, free, export, check clean (every piece referenced once, space
// maps agreeing), re-import and read back; a damaged gang header is named by
// the check.
#include "check_test_util.h"

namespace poolfs::core::pool::check_test {
namespace {

struct GangPool {
  std::map<uint64_t, std::string> objects;  // id -> contents, in dataset 'a'
};

// A pool on one file where every block above 8 KiB is a gang block, after
// creates, overwrites, truncates and frees over several txgs.
GangPool MakeGangPool(const std::vector<std::string>& paths) {
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  PoolOptions o = QuietOptions();
  o.force_gang_above = 8192;
  auto imported = Pool::Import(paths, o);
  REQUIRE(imported.ok());
  Pool& p = **imported;
  REQUIRE(p.CreateDataset("a").ok());
  REQUIRE(p.WaitSynced().ok());
  GangPool g;
  dmu::ObjectSet* a = p.dataset("a");
  {
    dmu::Tx tx(p.assigner());
    REQUIRE(tx.Assign().ok());
    for (uint64_t seed = 1; seed <= 6; seed++) {
      const std::string data = Pattern(seed, 5000 + seed * 90000);
      auto id = a->Create(tx, dmu::ObjectType::kPlain);
      REQUIRE(id.ok());
      REQUIRE(a->Write(tx, *id, 0, data).ok());
      g.objects[id->value()] = data;
    }
    tx.Commit();
  }
  REQUIRE(p.WaitSynced().ok());
  for (int round = 0; round < 3; round++) {
    dmu::Tx tx(p.assigner());
    REQUIRE(tx.Assign().ok());
    auto it = std::next(g.objects.begin(), round);
    const std::string patch = Pattern(100 + round, 70000);
    REQUIRE(a->Write(tx, ObjectId(it->first), 1000, patch).ok());
    if (it->second.size() < 1000 + patch.size()) it->second.resize(1000 + patch.size(), '\0');
    it->second.replace(1000, patch.size(), patch);
    auto last = std::prev(g.objects.end());
    if (round == 1) {
      REQUIRE(a->Free(tx, ObjectId(last->first)).ok());
      g.objects.erase(last);
    } else {
      REQUIRE(a->Truncate(tx, ObjectId(last->first), 150000).ok());
      last->second.resize(150000);
    }
    tx.Commit();
  }
  REQUIRE(p.WaitSynced().ok());
  REQUIRE(p.WaitSynced().ok());
  REQUIRE(p.Export().ok());
  return g;
}

TEST_CASE("A pool of gang blocks checks clean and reads back after re-import", "[check][gang]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0"};
  const GangPool g = MakeGangPool(paths);

  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE(r.ok());
  REQUIRE(r.bytes_referenced == r.bytes_allocated_by_maps);
  size_t gangs = 0;
  for (const CheckedBlock& b : Blocks(paths)) gangs += b.bp.IsGang();
  REQUIRE(gangs > 10);

  // Read back without forcing anything.
  auto imported = Pool::Import(paths, QuietOptions());
  REQUIRE(imported.ok());
  dmu::ObjectSet* a = (*imported)->dataset("a");
  for (const auto& [id, data] : g.objects) {
    INFO("object " << id);
    auto got = a->Read(ObjectId(id), 0, data.size() + 100);
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  REQUIRE((*imported)->Export().ok());
}

TEST_CASE("Check names a gang block whose header is damaged", "[check][gang]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0"};
  MakeGangPool(paths);
  const std::vector<CheckedBlock> blocks = Blocks(paths);
  const CheckedBlock& b = Find(blocks, [&](const CheckedBlock& c) {
    return c.dataset == "tank/a" && c.bp.IsGang() && c.level == 0;
  });
  FlipBit(paths, b.bp, 40);  // a byte of the header's first child
  CheckReport r = Check(paths);
  INFO(Listing(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(HasProblem(r, "offset " + Hex(b.bp.dva.offset), "gang header"));
}

}  // namespace
}  // namespace poolfs::core::pool::check_test
