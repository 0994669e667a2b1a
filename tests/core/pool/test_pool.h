// TestPool: a pool "tank" on one temp file with a PoolDatasetAdmin, for the
// dataset and snapshot tests: write, list, get, check and reimport.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "poolfs/dataset.h"

namespace poolfs::core::pool {

struct TestPool {
  check_test::TempDir dir;
  std::vector<std::string> paths{dir / "v0"};
  std::unique_ptr<Pool> pool;
  std::unique_ptr<PoolDatasetAdmin> admin;

  TestPool() {
    REQUIRE(Pool::Create(paths, check_test::kFileSize, CreateOptions{"tank"}).ok());
    Import();
  }
  void Import() {
    auto p = Pool::Import(paths, check_test::QuietOptions());
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    pool = std::move(p).value();
    admin = std::make_unique<PoolDatasetAdmin>(pool.get());
  }
  void Reimport() {
    admin.reset();
    REQUIRE(pool->Export().ok());
    pool.reset();
    Import();
  }
  std::vector<std::string> Names(std::string_view root = "") {
    auto l = admin->List(root, true);
    REQUIRE(l.ok());
    std::vector<std::string> out;
    for (const DatasetInfo& i : *l) out.push_back(i.name);
    return out;
  }
  DatasetInfo Info(std::string_view name) {
    auto l = admin->List(name, false);
    INFO(l.status().ToString());
    REQUIRE(l.ok());
    REQUIRE(l->size() == 1);
    return (*l)[0];
  }
  DatasetProperty Prop(std::string_view name, const std::string& prop) {
    auto g = admin->Get(name, {prop});
    INFO(g.status().ToString());
    REQUIRE(g.ok());
    REQUIRE(g->size() == 1);
    return (*g)[0];
  }
  // A new object of `dataset` holding `data`, synced; returns its id.
  uint64_t Write(std::string_view dataset, const std::string& data) {
    dmu::ObjectSet* os = pool->dataset(dataset);
    REQUIRE(os != nullptr);
    dmu::Tx tx(pool->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    REQUIRE(os->Write(tx, *id, 0, data).ok());
    tx.Commit();
    REQUIRE(pool->WaitSynced().ok());
    return id->value();
  }
  // Writes `data` at `off` of object `id` of `dataset`, synced.
  void Overwrite(std::string_view dataset, uint64_t id, uint64_t off, const std::string& data) {
    dmu::ObjectSet* os = pool->dataset(dataset);
    REQUIRE(os != nullptr);
    dmu::Tx tx(pool->assigner());
    REQUIRE(tx.Assign().ok());
    REQUIRE(os->Write(tx, ObjectId(id), off, data).ok());
    tx.Commit();
    REQUIRE(pool->WaitSynced().ok());
  }
  CheckReport Check() {
    admin.reset();
    REQUIRE(pool->Export().ok());
    pool.reset();
    auto r = CheckPool(paths);
    REQUIRE(r.ok());
    for (const CheckProblem& p : r->problems) UNSCOPED_INFO(p.where + ": " + p.what);
    Import();
    return *r;
  }
};

}  // namespace poolfs::core::pool
