// Zap readdir cookies: an iteration interleaved with adds and removes (and
// the leaf splits, table doublings and micro -> fat upgrade they cause)
// returns every entry present throughout exactly once and nothing twice.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "zap/zap.h"
#include "zap_fixture.h"

#include <catch2/catch.hpp>

namespace poolfs::core::zap {
namespace {

using testing::Fixture;
using testing::MixedName;

// A set of names with O(1) random removal.
class NameSet {
 public:
  bool Insert(const std::string& n) {
    if (!pos_.emplace(n, names_.size()).second) return false;
    names_.push_back(n);
    return true;
  }
  bool Contains(const std::string& n) const { return pos_.count(n) != 0; }
  size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }
  // Removes and returns the i-th name.
  std::string TakeAt(size_t i) {
    std::string n = names_[i];
    names_[i] = names_.back();
    pos_[names_[i]] = i;
    names_.pop_back();
    pos_.erase(n);
    return n;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, size_t> pos_;
};

struct Scenario {
  uint32_t block_size;
  int initial;        // entries before the iteration starts
  int adds_per_step;  // adds between two Iterate calls
  int removes_per_step;
  bool short_names;  // 1..20 bytes (micro-sized) rather than MixedName's up to 255
  enum Expect { kAnything, kUpgrade, kTableGrowth } expect;
  int grow_steps = 1 << 30;  // adds stop after this many steps
};

void RunIteration(const Scenario& sc, uint64_t seed) {
  INFO("block size " << sc.block_size << " initial " << sc.initial << " adds " << sc.adds_per_step
                     << " removes " << sc.removes_per_step << " seed " << seed);
  Fixture f;
  std::mt19937_64 rng(seed);
  ZapOptions o;
  o.block_size = sc.block_size;
  o.salt = 0x9e3779b97f4a7c15ull * seed;  // fixed: the shape expectations hold for this hash
  auto z = f.NewZap(dmu::ObjectType::kDirectory, o);
  const ObjectId id = z->id();
  auto new_name = [&] {
    return sc.short_names ? testing::RandomName(rng, 1 + rng() % 20) : MixedName(rng);
  };
  NameSet present;
  {
    auto tx = f.NewTx();
    while (int(present.size()) < sc.initial) {
      std::string n = new_name();
      if (present.Insert(n)) REQUIRE(z->Add(*tx, n, Value{1, 0}).ok());
    }
  }
  std::set<std::string> stable(present.names().begin(), present.names().end());
  const ZapShape before = z->Shape();
  std::map<std::string, int> returned;
  uint64_t cookie = 0;
  int step = 0;
  for (;; step++) {
    const size_t n = 1 + rng() % std::clamp(sc.initial / 8, 2, 40);
    auto r = z->Iterate(cookie, n);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    for (const Entry& e : *r) {
      REQUIRE(e.cookie > cookie);
      REQUIRE(present.Contains(e.name));  // listed while present
      returned[e.name]++;
      cookie = e.cookie;
    }
    if (r->size() < n) break;
    // Change the zap between calls: add new names, remove some (stable ones
    // too, which then no longer count as present throughout).
    auto tx = f.NewTx();
    for (int i = 0; i < (step < sc.grow_steps ? sc.adds_per_step : 0); i++) {
      std::string name = new_name();
      if (present.Insert(name)) REQUIRE(z->Add(*tx, name, Value{2, 0}).ok());
    }
    for (int i = 0; i < sc.removes_per_step && !present.empty(); i++) {
      std::string gone = present.TakeAt(rng() % present.size());
      REQUIRE(z->Remove(*tx, gone).ok());
      stable.erase(gone);
    }
    tx->Commit();
    if (step % 9 == 4) f.Sync();
    if (step % 23 == 11) {
      f.Reopen();  // cookies outlive the Zap and the object set in memory
      z = f.OpenZap(id);
    }
  }
  for (const auto& [name, times] : returned) REQUIRE(times == 1);
  for (const std::string& name : stable) {
    INFO(name);
    REQUIRE(returned.count(name) == 1);
  }
  REQUIRE(step > 3);
  // The changes this scenario is about happened while the iteration ran.
  const ZapShape after = z->Shape();
  INFO("steps " << step << " depth " << int(before.depth) << " -> " << int(after.depth) << " leaves "
                << before.leaves << " -> " << after.leaves << " external " << before.external_table
                << " -> " << after.external_table);
  if (sc.expect == Scenario::kUpgrade) REQUIRE((before.micro && !after.micro));
  if (sc.expect == Scenario::kTableGrowth) {
    REQUIRE(after.depth > before.depth);
    REQUIRE(after.leaves > 2 * before.leaves);
    REQUIRE((!before.external_table && after.external_table));
  }
}

TEST_CASE("Zap iteration returns each entry present throughout exactly once, across changes",
          "[zap][single-threaded]") {
  using S = Scenario;
  const Scenario scenarios[] = {
      {16384, 30, 3, 1, true, S::kAnything},             // micro, slow growth
      {16384, 200, 8, 2, true, S::kUpgrade},             // micro -> fat during the iteration
      {4096, 40, 4, 1, true, S::kUpgrade},               // the same with 4 KiB blocks
      {4096, 100, 300, 10, false, S::kTableGrowth, 60},  // splits, doublings, the table moves out
      {4096, 2000, 20, 20, false, S::kAnything},         // fat from the start, churn
      {8192, 3000, 60, 5, false, S::kAnything},          // splits in bigger leaves
      {16384, 500, 0, 30, false, S::kAnything},          // removals only
  };
  uint64_t seed = 1;
  for (const Scenario& sc : scenarios)
    for (int i = 0; i < 3; i++) RunIteration(sc, seed++);
}

TEST_CASE("Zap cookies resume at the same place in a reopened zap", "[zap]") {
  Fixture f;
  ZapOptions o;
  o.block_size = 4096;
  auto z = f.NewZap(dmu::ObjectType::kZap, o);
  std::mt19937_64 rng(3);
  {
    auto tx = f.NewTx();
    for (int i = 0; i < 3000; i++)
      REQUIRE(
          z->Add(*tx, testing::RandomName(rng, 1 + rng() % 40) + "/" + std::to_string(i), {}).ok());
  }
  auto all = z->Iterate(0, 10000).value();
  REQUIRE(all.size() == 3000);
  const ObjectId id = z->id();
  f.Reopen();
  z = f.OpenZap(id);
  for (size_t i : {size_t{0}, size_t{1}, size_t{777}, size_t{2998}}) {
    auto rest = z->Iterate(all[i].cookie, 10000).value();
    REQUIRE(rest.size() == 3000 - i - 1);
    REQUIRE(rest.front().name == all[i + 1].name);
  }
  REQUIRE(z->Iterate(all.back().cookie, 10).value().empty());
  REQUIRE(z->Iterate(kKeyLimit, 10).value().empty());
  REQUIRE(z->Iterate(~uint64_t{0}, 10).value().empty());
  REQUIRE(all.back().cookie <= kKeyLimit);
}

}  // namespace
}  // namespace poolfs::core::zap
