// Parallel dataset sync: each dataset completes on its own (its FinishSync
// runs as soon as its own lists are done), a dataset syncs one list per
// allocator, the serial baseline writes the same contents, and
// txg.sync_threads changes between syncs under load without losing a txg.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "check_test_util.h"
#include "pool/pool.h"
#include "txg/thread_pool_executor.h"
#include "util/mutex.h"
#include "vdev/memory_device.h"

namespace poolfs::core::pool {
namespace {

using check_test::Pattern;

PoolOptions Options(Executor* executor, uint32_t allocators) {
  PoolOptions o;
  o.txg.timeout_ms = 3600 * 1000;  // only WaitSynced (and dirty data) syncs
  o.space.allocators = allocators;
  o.executor = executor;
  return o;
}

bool Eventually(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Runs tasks on the thread that waits, strand by strand queues; when
// `held` is set, every task of that strand waits until the others (and
// whatever they post) have run, and `at_hold` runs in between.
class HoldingExecutor : public Executor {
 public:
  void BeginSync(size_t strands) override {
    strands_ = strands;
    queues_.assign(strands, {});
  }
  void Post(size_t strand, std::function<void()> fn) override {
    if (in_wait_)
      posted_by_tasks_++;
    else
      posted_per_strand_[strand % strands_]++;
    queues_[strand % strands_].push_back(std::move(fn));
  }
  void Wait() override {
    in_wait_ = true;
    auto run_all_but = [&](int skip) {
      for (bool ran = true; ran;) {
        ran = false;
        for (size_t s = 0; s < queues_.size(); s++) {
          if (int(s) == skip || queues_[s].empty()) continue;
          std::function<void()> fn = std::move(queues_[s].front());
          queues_[s].pop_front();
          fn();
          ran = true;
        }
      }
    };
    run_all_but(held);
    if (held >= 0 && at_hold) {
      held_tasks = queues_[size_t(held)].size();
      at_hold();
    }
    run_all_but(-1);
    in_wait_ = false;
  }
  void SetThreads(size_t) override {}
  size_t threads() const override { return 1; }

  int held = -1;
  std::function<void()> at_hold;
  size_t held_tasks = 0;
  std::map<size_t, size_t> posted_per_strand_;  // by the driver (the lists)
  size_t posted_by_tasks_ = 0;                  // by tasks (FinishSyncs)

 private:
  size_t strands_ = 1;
  bool in_wait_ = false;
  std::vector<std::deque<std::function<void()>>> queues_;
};

void WriteObjects(Pool& p, dmu::ObjectSet* os, const std::vector<ObjectId>& ids, uint64_t seed) {
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  for (ObjectId id : ids) REQUIRE(os->Write(tx, id, 0, Pattern(seed + id.value(), 5000)).ok());
  tx.Commit();
}

std::vector<ObjectId> CreateObjects(Pool& p, dmu::ObjectSet* os, size_t n) {
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  std::vector<ObjectId> ids;
  for (size_t i = 0; i < n; i++) ids.push_back(*os->Create(tx, dmu::ObjectType::kPlain));
  tx.Commit();
  return ids;
}

TEST_CASE("Pool sync finishes a dataset while another dataset's lists still wait", "[pool][sync]") {
  vdev::MemoryDevice mem(128 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  HoldingExecutor exec;
  auto p = Pool::ImportDevices({&mem}, Options(&exec, 2));
  REQUIRE(p.ok());
  dmu::ObjectSet* a = *(*p)->CreateDataset("a");
  dmu::ObjectSet* b = *(*p)->CreateDataset("b");
  REQUIRE((*p)->WaitSynced().ok());
  // a: one dirty object (one list, on one strand); b: two (a list on each).
  const std::vector<ObjectId> a_ids = CreateObjects(**p, a, 1);
  const std::vector<ObjectId> b_ids = CreateObjects(**p, b, 2);
  REQUIRE((*p)->WaitSynced().ok());
  int a_early = 0, b_early = 0;
  for (int held : {0, 1}) {
    WriteObjects(**p, a, a_ids, 10 + held);
    WriteObjects(**p, b, b_ids, 20 + held);
    const zio::BlockPtr a_before = a->root(), b_before = b->root();
    exec.held = held;
    bool a_done = false, b_done = false;
    exec.at_hold = [&] {
      a_done = !(a->root().dva == a_before.dva);
      b_done = !(b->root().dva == b_before.dva);
    };
    REQUIRE((*p)->WaitSynced().ok());
    CHECK(exec.held_tasks > 0);
    a_early += a_done;
    b_early += b_done;
    // Both completed by the end of the sync.
    CHECK(!(a->root().dva == a_before.dva));
    CHECK(!(b->root().dva == b_before.dva));
  }
  exec.held = -1;
  // With a's strand running, a wrote its root while b still had a list
  // held back; b, with a list on each strand, never finished early.
  CHECK(a_early == 1);
  CHECK(b_early == 0);
  REQUIRE((*p)->Export().ok());
}

TEST_CASE("Pool sync syncs as many dnode lists per dataset as there are allocators",
          "[pool][sync]") {
  const uint32_t allocators = GENERATE(1u, 3u);
  vdev::MemoryDevice mem(128 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  HoldingExecutor exec;
  auto p = Pool::ImportDevices({&mem}, Options(&exec, allocators));
  REQUIRE(p.ok());
  dmu::ObjectSet* a = *(*p)->CreateDataset("a");
  dmu::ObjectSet* b = *(*p)->CreateDataset("b");
  REQUIRE((*p)->WaitSynced().ok());
  const std::vector<ObjectId> a_ids = CreateObjects(**p, a, 16);
  const std::vector<ObjectId> b_ids = CreateObjects(**p, b, 16);
  REQUIRE((*p)->WaitSynced().ok());
  WriteObjects(**p, a, a_ids, 1);
  WriteObjects(**p, b, b_ids, 2);
  exec.posted_per_strand_.clear();
  exec.posted_by_tasks_ = 0;
  REQUIRE((*p)->WaitSynced().ok());
  // Two datasets: each list strand got one list of each; each dataset's
  // last list posted its FinishSync.
  REQUIRE(exec.posted_per_strand_.size() == allocators);
  for (const auto& [strand, n] : exec.posted_per_strand_) {
    INFO("strand " << strand);
    CHECK(n == 2);
  }
  CHECK(exec.posted_by_tasks_ == 2);
  const PoolSyncStats stats = (*p)->SyncStats();
  REQUIRE(!stats.recent.empty());
  CHECK(stats.recent.back().datasets == 2);
  CHECK(stats.recent.back().strand_busy_ns.size() == allocators);
  REQUIRE((*p)->Export().ok());
}

// Writes the same datasets and objects (small ones and one large enough to
// be written in shares) into a pool, syncing serially or in parallel.
void Workload(Pool& p) {
  for (int d = 0; d < 3; d++) REQUIRE(p.CreateDataset("ds" + std::to_string(d)).ok());
  REQUIRE(p.WaitSynced().ok());
  for (int round = 0; round < 3; round++) {
    for (int d = 0; d < 3; d++) {
      dmu::ObjectSet* os = p.dataset("ds" + std::to_string(d));
      dmu::Tx tx(p.assigner());
      REQUIRE(tx.Assign().ok());
      if (round == 0) {
        for (int i = 0; i < 6; i++) REQUIRE(os->Create(tx, dmu::ObjectType::kPlain).ok());
      }
      for (uint64_t id = 1; id <= 6; id++) {
        const size_t len = id == 1 ? (9 << 20) : 3000 * id;  // object 1: 72 blocks
        REQUIRE(os->Write(tx, ObjectId(id), 0, Pattern(d * 100 + id + round, len)).ok());
      }
      tx.Commit();
    }
    REQUIRE(p.WaitSynced().ok());
  }
}

TEST_CASE("Serial and parallel dataset sync write the same contents", "[pool][sync]") {
  vdev::MemoryDevice serial_mem(256 << 20, "serial"), parallel_mem(256 << 20, "parallel");
  for (auto* mem : {&serial_mem, &parallel_mem})
    REQUIRE(Pool::CreateOnDevices({mem}, {mem->name()}, CreateOptions{"tank"}).ok());
  {
    txg::ThreadPoolExecutor exec(2, 2);
    PoolOptions o = Options(&exec, 2);
    o.serial_dataset_sync = true;
    auto p = Pool::ImportDevices({&serial_mem}, o);
    REQUIRE(p.ok());
    Workload(**p);
    REQUIRE((*p)->Export().ok());
  }
  {
    txg::ThreadPoolExecutor exec(2, 2);
    auto p = Pool::ImportDevices({&parallel_mem}, Options(&exec, 2));
    REQUIRE(p.ok());
    Workload(**p);
    REQUIRE((*p)->Export().ok());
  }
  auto s = Pool::ImportDevices({&serial_mem}, Options(nullptr, 2));
  auto q = Pool::ImportDevices({&parallel_mem}, Options(nullptr, 2));
  REQUIRE(s.ok());
  REQUIRE(q.ok());
  REQUIRE((*s)->datasets() == (*q)->datasets());
  for (int d = 0; d < 3; d++) {
    const std::string name = "ds" + std::to_string(d);
    dmu::ObjectSet* x = (*s)->dataset(name);
    dmu::ObjectSet* y = (*q)->dataset(name);
    REQUIRE(x->live_objects() == y->live_objects());
    for (uint64_t id = 1; id <= 6; id++) {
      INFO(name << " object " << id);
      REQUIRE(x->Read(ObjectId(id), 0, 16 << 20).value() ==
              y->Read(ObjectId(id), 0, 16 << 20).value());
      // Block by block: the same stored bytes (checksums and sizes).
      for (uint64_t blk = 0; blk < (id == 1 ? 72u : 1u); blk++) {
        const zio::BlockPtr bx = *x->BlockPointer(ObjectId(id), blk);
        const zio::BlockPtr by = *y->BlockPointer(ObjectId(id), blk);
        CHECK(bx.checksum == by.checksum);
        CHECK(bx.psize == by.psize);
        CHECK(bx.lsize == by.lsize);
      }
    }
  }
  REQUIRE((*s)->Export().ok());
  REQUIRE((*q)->Export().ok());
}

TEST_CASE("Sync threads change between syncs under load, and every txg syncs",
          "[pool][sync][concurrent]") {
  vdev::MemoryDevice mem(256 << 20, "mem");
  REQUIRE(Pool::CreateOnDevices({&mem}, {"mem"}, CreateOptions{"tank"}).ok());
  txg::ThreadPoolExecutor exec(1, 2);
  PoolOptions o = Options(&exec, 2);
  o.txg.timeout_ms = 20;
  constexpr uint64_t kSlots = 32, kChunk = 64 << 10;
  std::map<std::string, std::pair<ObjectId, uint64_t>> written;  // dataset -> (object, chunks)
  {
    auto p = Pool::ImportDevices({&mem}, o);
    REQUIRE(p.ok());
    Pool& pool = **p;
    std::vector<dmu::ObjectSet*> sets;
    std::vector<ObjectId> ids;
    for (int d = 0; d < 2; d++) {
      sets.push_back(*pool.CreateDataset("w" + std::to_string(d)));
      ids.push_back(CreateObjects(pool, sets.back(), 1)[0]);
    }
    std::atomic<bool> stop{false};
    std::vector<uint64_t> bytes(sets.size(), 0);
    std::vector<std::thread> writers;
    for (size_t w = 0; w < sets.size(); w++) {
      // Writer w overwrites kSlots chunks in turn (chunk k into slot
      // k % kSlots), so the pool never fills; bytes[w] counts the chunks.
      writers.emplace_back([&, w] {
        while (!stop.load()) {
          const uint64_t k = bytes[w];
          const std::string chunk = Pattern(w * 1000000 + k, kChunk);
          dmu::Tx tx(pool.assigner());
          if (!tx.Assign(chunk.size()).ok()) return;
          if (!sets[w]->Write(tx, ids[w], (k % kSlots) * kChunk, chunk).ok()) return;
          tx.Commit();
          bytes[w]++;
        }
      });
    }
    auto syncs_with = [&](uint32_t threads) {
      return Eventually([&] {
        const PoolSyncStats s = pool.SyncStats();
        size_t n = 0;
        for (const SyncRecord& r : s.recent) n += r.threads == threads && r.datasets > 0;
        return n >= 3;
      });
    };
    CHECK(syncs_with(1));
    exec.SetThreads(2);
    CHECK(syncs_with(2));
    CHECK(exec.threads() == 2);
    exec.SetThreads(1);
    // Three more syncs after the change back, all with one thread.
    const uint64_t before = pool.SyncStats().syncs;
    CHECK(Eventually([&] {
      const PoolSyncStats s = pool.SyncStats();
      if (s.syncs < before + 4) return false;
      for (size_t i = s.recent.size() - 3; i < s.recent.size(); i++)
        if (s.recent[i].threads != 1) return false;
      return true;
    }));
    stop = true;
    for (std::thread& t : writers) t.join();
    REQUIRE(pool.WaitSynced().ok());
    REQUIRE(pool.txgs().suspended().ok());
    // Every txg that closed synced, in order.
    const PoolSyncStats s = pool.SyncStats();
    for (size_t i = 1; i < s.recent.size(); i++)
      CHECK(s.recent[i].txg.value() == s.recent[i - 1].txg.value() + 1);
    for (size_t w = 0; w < sets.size(); w++) written[sets[w]->name()] = {ids[w], bytes[w]};
    REQUIRE(pool.Export().ok());
  }
  // Nothing lost: every write is there after a re-import.
  auto p = Pool::ImportDevices({&mem}, Options(nullptr, 2));
  REQUIRE(p.ok());
  for (const auto& [name, obj] : written) {
    INFO(name);
    const auto [id, chunks] = obj;
    const uint64_t w = name.ends_with("w0") ? 0 : 1;  // "tank/w0"
    REQUIRE(chunks > kSlots);
    dmu::ObjectSet* os = (*p)->dataset(name);
    REQUIRE(os != nullptr);
    // Each slot holds the last chunk written into it.
    for (uint64_t k = chunks - kSlots; k < chunks; k++) {
      INFO("chunk " << k);
      REQUIRE(os->Read(id, (k % kSlots) * kChunk, kChunk).value() ==
              Pattern(w * 1000000 + k, kChunk));
    }
  }
  REQUIRE((*p)->Export().ok());
}

}  // namespace
}  // namespace poolfs::core::pool
