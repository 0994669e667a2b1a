// Zap blocks shared with the dmu (dmu/shared_block.h): changes made in the
// open txg while the previous txg syncs must not reach what that txg
// writes, and changes within one txg, made in place in its dirty copies,
// must all reach it. Each round below changes the zap in txg t, closes t,
// changes it again from another thread (txg t+1) while t syncs, then opens
// the object set as t wrote it and compares the zap with a model of t.
// Under TSan (scripts/test.sh) this also checks that the sync never reads
// a block while the zap writes it.
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "zap/leaf_cache.h"
#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;
using testing::MixedName;

using Model = std::map<std::string, Value>;

// `n` random adds, removes and updates on z in tx, mirrored in m. Returns
// what went wrong ("" when nothing did): it also runs on a second thread,
// where Catch's assertions may not be used.
std::string Change(Zap& z, dmu::Tx& tx, Model& m, std::mt19937_64& rng, int n) {
  for (int i = 0; i < n; i++) {
    const int op = int(rng() % 10);
    if (op < 6 || m.empty()) {
      std::string name = MixedName(rng);
      Value v{rng(), rng()};
      Status s = z.Add(tx, name, v);
      if (m.count(name)) {
        if (s.code() != StatusCode::kAlreadyExists) return "add of a present name: " + s.ToString();
      } else {
        if (!s.ok()) return "add: " + s.ToString();
        m[name] = v;
      }
      continue;
    }
    auto it = m.begin();
    std::advance(it, rng() % m.size());
    if (op < 8) {
      Status s = z.Remove(tx, it->first);
      if (!s.ok()) return "remove: " + s.ToString();
      m.erase(it);
    } else {
      Value v{rng(), rng()};
      Status s = z.Update(tx, it->first, v);
      if (!s.ok()) return "update: " + s.ToString();
      it->second = v;
    }
  }
  return "";
}

void ExpectZap(const Zap& z, const Model& m) {
  REQUIRE(z.Count() == m.size());
  auto all = z.Iterate(0, m.size() + 1);
  INFO(all.status().ToString());
  REQUIRE(all.ok());
  REQUIRE(all->size() == m.size());
  for (const Entry& e : *all) {
    auto it = m.find(e.name);
    REQUIRE(it != m.end());
    REQUIRE(e.value == it->second);
  }
}

TEST_CASE("Zap changes made while the previous txg syncs stay out of it", "[zap]") {
  const uint64_t cache_leaves = GENERATE(0, 100000);
  LeafCache cache(cache_leaves ? cache_leaves : 1);
  ZapOptions o;
  o.block_size = 4096;  // splits come early
  if (cache_leaves) o.leaf_cache = &cache;
  Fixture f;
  auto z = f.NewZap(dmu::ObjectType::kZap, o);
  std::mt19937_64 rng(17);
  Model live;
  for (int round = 0; round < 25; round++) {
    const Txg t(f.txgs.open.load());
    {
      auto tx = f.NewTx();
      REQUIRE(Change(*z, *tx, live, rng, 40) == "");
    }
    const Model at_t = live;
    f.txgs.open++;  // t closes: the writer's changes go to t+1 while t syncs
    std::string writer_error;
    std::thread writer([&] {
      dmu::Tx tx(&f.txgs);
      Status s = tx.Assign();
      writer_error = s.ok() ? Change(*z, tx, live, rng, 40) : s.ToString();
    });
    std::vector<Status> synced;
    for (auto& task : f.os->SyncTasks(t, 2)) synced.push_back(task.fn());
    auto root = f.os->FinishSync(t, 0);
    writer.join();
    REQUIRE(writer_error == "");
    for (const Status& s : synced) REQUIRE(s.ok());
    REQUIRE(root.ok());
    f.space.Sync(t, [](const space::Metaslab&) {});
    f.space.SyncDone(t);
    f.os->SyncDone(t);
    // The zap as t wrote it, read from the device.
    auto as_written = dmu::ObjectSet::Open(&f.zio, *root, "test");
    REQUIRE(as_written.ok());
    auto zt = Zap::Open(as_written->get(), z->id());
    INFO(zt.status().ToString());
    REQUIRE(zt.ok());
    ExpectZap(**zt, at_t);
    ExpectZap(*z, live);
  }
  REQUIRE_FALSE(z->Shape().micro);
}

}  // namespace
}  // namespace poolfs::core::zap
