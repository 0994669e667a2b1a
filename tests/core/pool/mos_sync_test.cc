// The MOS sync's passes: they converge in a handful on any pool state, and
// the blocks they defer to the next txg are neither lost nor leaked.
#include "core/pool/check_test_util.h"

namespace poolfs::core::pool::check_test {
namespace {

// A txg's MOS sync writes the changed space maps, whose blocks were born in
// earlier txgs and so are written anew, freeing the old copies, each in
// whatever metaslab an earlier import allocated it from. Many short
// imports of a large pool scatter those copies over its ~200 metaslabs;
// a free then changing a further metaslab's map in each pass would chain
// through them (the pool this reproduces suspended at its first sync with
// "the MOS sync did not converge").
TEST_CASE("The MOS sync converges in a few passes across many imports of a large pool",
          "[pool][mos]") {
  TempDir dir;
  const std::string path = dir / "big.pool";
  REQUIRE(Pool::Create({path}, uint64_t{8} << 30, CreateOptions{"big"}).ok());
  std::mt19937_64 rng(11);
  std::map<uint64_t, std::string> objects;  // what each live object holds
  uint32_t most = 0;
  bool checked_deferred = false;
  for (int cycle = 0; cycle < 150; cycle++) {
    auto p = Pool::Import({path}, QuietOptions());
    INFO("cycle " << cycle << ": " << p.status().ToString());
    REQUIRE(p.ok());
    dmu::ObjectSet* os = (*p)->root_dataset();
    {
      dmu::Tx tx((*p)->assigner());
      REQUIRE(tx.Assign().ok());
      for (int i = 0; i < 3; i++) {
        auto id = os->Create(tx, dmu::ObjectType::kPlain);
        REQUIRE(id.ok());
        std::string data = Pattern(rng(), 1 + rng() % 20000);
        REQUIRE(os->Write(tx, *id, 0, data).ok());
        objects[id->value()] = std::move(data);
      }
      while (objects.size() > 40) {
        auto victim = std::next(objects.begin(), ptrdiff_t(rng() % objects.size()));
        REQUIRE(os->Free(tx, ObjectId(victim->first)).ok());
        objects.erase(victim);
      }
      tx.Commit();
    }
    REQUIRE((*p)->WaitSynced().ok());
    REQUIRE((*p)->Export().ok());
    const PoolStats s = (*p)->Stats();
    most = std::max(most, s.mos_passes_max);
    INFO("cycle " << cycle << ": the MOS sync took " << s.mos_passes_max << " passes");
    REQUIRE(s.mos_passes_max <= 6);
    // The first export that leaves deferred frees listed: the check counts
    // them as referenced, not leaked, and the next import frees them.
    if (s.deferred_frees > 0 && !checked_deferred) {
      const CheckReport r = Check({path});
      INFO(Listing(r));
      REQUIRE(r.ok());
      REQUIRE(r.deferred_frees == s.deferred_frees);
      checked_deferred = true;
    }
  }
  INFO("at most " << most << " passes");
  REQUIRE(checked_deferred);
  const CheckReport report = Check({path});
  INFO(Listing(report));
  REQUIRE(report.ok());
  auto p = Pool::Import({path}, QuietOptions());
  REQUIRE(p.ok());
  for (const auto& [id, data] : objects)
    REQUIRE((*p)->root_dataset()->Read(ObjectId(id), 0, data.size()).value() == data);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Check's trial sync reports its passes and writes nothing", "[check][mos]") {
  TempDir dir;
  const std::string path = dir / "p.pool";
  REQUIRE(Pool::Create({path}, kFileSize, CreateOptions{"p"}).ok());
  const std::string hash = FileHash(path);
  const CheckReport r = Check({path});
  INFO(Listing(r));
  REQUIRE(r.ok());
  CHECK(r.trial_sync_txg == r.txg + 1);
  CHECK(r.trial_sync_passes >= 2);
  CHECK(r.trial_sync_passes <= 6);
  CHECK(r.Summary().find("trial sync of txg " + std::to_string(r.txg + 1) + ": converged in") !=
        std::string::npos);
  CHECK(FileHash(path) == hash);
}

}  // namespace
}  // namespace poolfs::core::pool::check_test
