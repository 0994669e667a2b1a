// Scrub: reads every copy of every block while the pool stays imported and
// in use, rewrites each bad copy from a good one, counts the blocks none of
// whose copies verifies, resumes from its bookmark after an export, and
// never mistakes a block freed meanwhile for damage.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "check_test_util.h"
#include "pool/check.h"
#include "pool/pool.h"
#include "vdev/file_device.h"

namespace poolfs::core::pool {
namespace {

using check_test::kFileSize;
using check_test::Pattern;
using check_test::TempDir;

PoolOptions ScrubOptions() {
  PoolOptions o;
  o.txg.timeout_ms = 50;
  o.space.allocators = 2;
  return o;
}

std::unique_ptr<Pool> ImportPool(const std::vector<std::string>& paths) {
  auto p = Pool::Import(paths, ScrubOptions());
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return std::move(p).value();
}

// Writes `n` objects of `bytes` each to dataset `name`, one Tx each.
std::vector<ObjectId> Fill(Pool& p, std::string_view name, int n, size_t bytes, uint64_t seed) {
  std::vector<ObjectId> ids;
  dmu::ObjectSet* os = p.dataset(name);
  REQUIRE(os != nullptr);
  for (int i = 0; i < n; i++) {
    dmu::Tx tx(p.assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain, 16384);
    REQUIRE(id.ok());
    REQUIRE(os->Write(tx, *id, 0, Pattern(seed + uint64_t(i), bytes)).ok());
    tx.Commit();
    ids.push_back(*id);
  }
  REQUIRE(p.WaitSynced().ok());
  return ids;
}

// Every block of the exported pool, by the checker's walk.
std::vector<CheckedBlock> Blocks(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<vdev::FileDevice>> files;
  std::vector<vdev::BlockDevice*> devs;
  for (const std::string& path : paths) {
    auto f = vdev::FileDevice::Open(path, {true, false});
    REQUIRE(f.ok());
    devs.push_back(f->get());
    files.push_back(std::move(f).value());
  }
  std::vector<CheckedBlock> out;
  REQUIRE(CheckDevices(devs, [&](const CheckedBlock& b) { out.push_back(b); }).ok());
  return out;
}

// Flips a byte of copy `copy` of `bp` in the pool's files.
void DamageCopy(const std::vector<std::string>& paths, const zio::BlockPtr& bp, int copy) {
  const space::Dva& d = bp.copy(copy);
  auto f = vdev::FileDevice::Open(paths[d.vdev], {false, false});
  REQUIRE(f.ok());
  char c;
  REQUIRE((*f)->Read(d.offset + 7, &c, 1).ok());
  c ^= 0x21;
  REQUIRE((*f)->Write(d.offset + 7, &c, 1).ok());
  REQUIRE((*f)->Flush().ok());
}

ScrubPhys WaitScrubEnds(Pool& p) {
  for (int i = 0; i < 6000; i++) {  // a bound against hanging, not a timing assertion
    ScrubPhys s = p.ScrubStatus();
    if (s.state != ScrubPhys::State::kRunning) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("the scrub did not end");
  return {};
}

CheckReport CheckFiles(const std::vector<std::string>& paths) {
  auto r = CheckPool(paths);
  REQUIRE(r.ok());
  return std::move(r).value();
}

std::string Listing(const CheckReport& r) {
  std::string s = r.Summary();
  for (const auto& p : r.problems) s += "\nproblem: " + p.where + ": " + p.what;
  return s;
}

TEST_CASE("A scrub repairs every bad copy that has a good twin, and names what has none",
          "[pool][scrub]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  std::vector<ObjectId> two, one;
  {
    auto p = ImportPool(paths);
    REQUIRE(p->CreateDataset("tank/two", {{"copies", "2"}}, false).ok());
    two = Fill(*p, "tank/two", 20, 100000, 1);
    one = Fill(*p, "tank", 20, 100000, 100);
    REQUIRE(p->Export().ok());
  }
  // One copy of some blocks of every kind damaged; of one single-copy data
  // block, its only copy.
  int damaged = 0;
  const CheckedBlock* lost = nullptr;
  std::vector<CheckedBlock> blocks = Blocks(paths);
  std::map<std::string, int> kinds;
  for (const CheckedBlock& b : blocks) {
    const std::string kind = (b.mos ? "mos " : b.dataset + " ") + std::to_string(b.level) +
                             (b.object == 0 ? " dnodes" : "");
    if (b.bp.copies() >= 2 && kinds[kind]++ < 2) {
      DamageCopy(paths, b.bp, int(b.bp.copy(1).offset % 2));  // copy 0 or 1
      damaged++;
    }
    if (!lost && !b.mos && b.dataset == "tank" && b.object == one[3].value() && b.level == 0)
      lost = &b;
  }
  REQUIRE(damaged >= 6);
  REQUIRE(lost != nullptr);
  REQUIRE(lost->bp.copies() == 1);
  DamageCopy(paths, lost->bp, 0);
  {
    auto p = ImportPool(paths);
    REQUIRE(p->ScrubStatus().state == ScrubPhys::State::kNone);
    REQUIRE(p->StartScrub().ok());
    REQUIRE(p->StartScrub().code() == StatusCode::kAlreadyExists);
    const ScrubPhys s = WaitScrubEnds(*p);
    INFO("examined " << s.examined << " blocks " << s.blocks << " repaired " << s.repaired);
    REQUIRE(s.state == ScrubPhys::State::kFinished);
    // Reads of the import itself may have healed some (the MOS, the dnodes
    // it opened): every damaged copy is repaired by one or the other.
    REQUIRE(s.repaired + p->Stats().repairs >= uint64_t(damaged));
    REQUIRE(s.errors == 1);
    REQUIRE(s.error_list.size() == 1);
    REQUIRE(s.error_list[0].object == lost->object);
    REQUIRE(s.error_list[0].blkid == lost->blkid);
    REQUIRE(s.blocks >= blocks.size());
    REQUIRE(p->Export().ok());
  }
  // The check finds only the lost block; the scrub's record stays.
  CheckReport r = CheckFiles(paths);
  INFO(Listing(r));
  REQUIRE(r.problems.size() == 1);
  REQUIRE(r.problems[0].where.find("object " + std::to_string(lost->object)) != std::string::npos);
  auto p = ImportPool(paths);
  const ScrubPhys again = p->ScrubStatus();
  REQUIRE(again.state == ScrubPhys::State::kFinished);
  REQUIRE(again.errors == 1);
  REQUIRE(again.end_time >= again.start_time);
  REQUIRE(p->StopScrub().code() == StatusCode::kNotFound);
  REQUIRE(p->Export().ok());
}

TEST_CASE("A scrub stopped or exported midway keeps its bookmark and resumes from it",
          "[pool][scrub]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0"};
  REQUIRE(Pool::Create(paths, uint64_t{1} << 30, CreateOptions{"tank"}).ok());
  uint64_t full_blocks = 0;
  {
    auto p = ImportPool(paths);
    Fill(*p, "tank", 40, 5 << 20, 1);  // 200 MiB: several rounds of 64 MiB
    REQUIRE(p->StartScrub().ok());
    full_blocks = WaitScrubEnds(*p).blocks;
    REQUIRE(p->StartScrub().ok());
    for (int i = 0; i < 6000 && p->scrub_rounds() < 1; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(p->Export().ok());  // while it runs
  }
  ScrubPhys mid;
  {
    auto p = ImportPool(paths);
    mid = p->ScrubStatus();
    if (mid.state == ScrubPhys::State::kRunning) {
      INFO("bookmark: objset " << mid.objset << " object " << mid.object << " block " << mid.blkid);
      REQUIRE(mid.blocks > 0);
      REQUIRE(mid.blocks < full_blocks);
    }
    const ScrubPhys done = WaitScrubEnds(*p);
    REQUIRE(done.state == ScrubPhys::State::kFinished);
    REQUIRE(done.errors == 0);
    // Resumed, not restarted: about one walk's blocks in all (the path to
    // the bookmark is read again, not counted; the few MOS blocks that the
    // syncs of the export and import rewrote are newer than the scrub and
    // not verified).
    REQUIRE(done.blocks + 16 >= full_blocks);
    REQUIRE(done.blocks <= full_blocks + 8);
    // Stop: the state says so and keeps what it found.
    REQUIRE(p->StartScrub().ok());
    REQUIRE(p->StopScrub().ok());
    REQUIRE(p->ScrubStatus().state == ScrubPhys::State::kStopped);
    REQUIRE(p->Export().ok());
  }
}

TEST_CASE("A scrub while the pool changes finds no damage that is not there", "[pool][scrub]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  auto p = ImportPool(paths);
  std::vector<ObjectId> ids = Fill(*p, "tank", 30, 200000, 1);
  // Writers rewrite, free and create objects while scrubs run: freed space
  // must not be handed out while a round reads the tree that held it.
  std::atomic<bool> stop{false};
  // Catch2's assertions are not thread-safe: the writer keeps its first
  // failure and the main thread asserts on it after the join.
  std::string churn_error;
  std::thread churn([&] {
    std::mt19937_64 rng(3);
    dmu::ObjectSet* os = p->root_dataset();
    auto fail = [&](std::string_view what, const Status& st) {
      churn_error = std::string(what) + ": " + st.ToString();
      stop = true;
    };
    while (!stop) {
      dmu::Tx tx(p->assigner());
      if (Status st = tx.Assign(); !st.ok()) return fail("assign", st);
      const size_t k = rng() % ids.size();
      if (rng() % 3 == 0) {
        if (Status st = os->Free(tx, ids[k]); !st.ok()) return fail("free", st);
        auto id = os->Create(tx, dmu::ObjectType::kPlain, 16384);
        if (!id.ok()) return fail("create", id.status());
        ids[k] = *id;
      }
      if (Status st = os->Write(tx, ids[k], 0, Pattern(rng(), 200000)); !st.ok())
        return fail("write", st);
      tx.Commit();
    }
  });
  struct JoinOnExit {
    std::atomic<bool>& stop;
    std::thread& t;
    ~JoinOnExit() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join_on_exit{stop, churn};
  uint64_t scrubs = 0;
  for (; scrubs < 5; scrubs++) {
    REQUIRE(p->StartScrub().ok());
    const ScrubPhys s = WaitScrubEnds(*p);
    INFO("scrub " << scrubs << ": " << s.blocks << " blocks");
    REQUIRE(s.state == ScrubPhys::State::kFinished);
    REQUIRE(s.errors == 0);
    REQUIRE(s.repaired == 0);
  }
  stop = true;
  churn.join();
  INFO(churn_error);
  REQUIRE(churn_error.empty());
  REQUIRE(p->Export().ok());
  CheckReport r = CheckFiles(paths);
  INFO(Listing(r));
  REQUIRE(r.ok());
}

}  // namespace
}  // namespace poolfs::core::pool
