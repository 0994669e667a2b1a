// ObjectSet and Dnode: object data across txgs, syncs and reopens, against a
// model; sparse objects; frees returning space; changes in the open txg while
// the previous one syncs.
#include "dmu/objset.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "core/dmu/objset_fixture.h"

namespace poolfs::core::dmu {
namespace {

using namespace testing;  // the fixture (objset_fixture.h)

TEST_CASE("ObjectSet reads what it wrote, before and after sync and reopen", "[dmu]") {
  Fixture f;
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  auto id = f.os->Create(tx, ObjectType::kPlain, 4096);
  REQUIRE(id.ok());
  std::string data = Pattern(1, 10000);
  REQUIRE(f.os->Write(tx, *id, 100, data).ok());
  tx.Commit();
  REQUIRE(f.os->Read(*id, 100, 10000).value() == data);
  REQUIRE(f.os->Read(*id, 0, 100).value() == std::string(100, '\0'));
  f.Sync();
  REQUIRE(f.os->Read(*id, 100, 10000).value() == data);
  f.Reopen();
  REQUIRE(f.os->Read(*id, 100, 10000).value() == data);
  auto info = f.os->Stat(*id);
  REQUIRE(info->length == 10100);
  REQUIRE(info->used >= 3 * 4096);
  REQUIRE(f.os->Stat(ObjectId(99)).status().IsNotFound());
}

TEST_CASE("ObjectSet agrees with a model over random changes, syncs and reopens", "[dmu][single-threaded]") {
  // Limit 1: every idle dnode leaves at the next load of its shard, so the
  // dnodes are dropped and loaded again all the time.
  const uint64_t limit = GENERATE(0, 1);
  for (uint64_t seed : {1, 2, 3, 4}) {
    Fixture f;
    if (limit != 0) f.LimitDnodes(limit);
    std::mt19937_64 rng(seed);
    std::map<uint64_t, std::string> model;
    for (int round = 0; round < 60; round++) {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      for (int op = 0; op < 20; op++) {
        int what = int(rng() % 10);
        if (model.empty() || what == 0) {
          uint32_t bs = 512u << (rng() % 6);
          auto id = f.os->Create(tx, ObjectType::kPlain, bs);
          REQUIRE(id.ok());
          model[id->value()] = "";
          continue;
        }
        auto it = model.begin();
        std::advance(it, rng() % model.size());
        ObjectId id(it->first);
        std::string& m = it->second;
        if (what <= 5) {
          uint64_t off = rng() % 70000, len = 1 + rng() % 20000;
          std::string d = Pattern(rng(), len);
          REQUIRE(f.os->Write(tx, id, off, d).ok());
          if (m.size() < off + len) m.resize(off + len, '\0');
          m.replace(off, len, d);
        } else if (what == 6) {
          uint64_t len = rng() % 60000;
          REQUIRE(f.os->Truncate(tx, id, len).ok());
          m.resize(len, '\0');
        } else if (what == 7) {
          uint64_t off = rng() % 60000, len = rng() % 30000;
          REQUIRE(f.os->Punch(tx, id, off, len).ok());
          if (off < m.size())
            std::fill(m.begin() + off, m.begin() + std::min<uint64_t>(m.size(), off + len), '\0');
        } else if (what == 8 && model.size() > 3) {
          REQUIRE(f.os->Free(tx, id).ok());
          model.erase(it);
        } else {
          auto got = f.os->Read(id, 0, 1 << 20);
          REQUIRE(got.ok());
          REQUIRE(*got == m);
        }
      }
      tx.Commit();
      if (round % 3 == 0) f.Sync();
      if (round % 9 == 0) {
        f.Sync();
        f.Reopen();
      }
      for (auto& [id, m] : model) {
        auto got = f.os->Read(ObjectId(id), 0, 1 << 20);
        INFO("seed " << seed << " dnode limit " << limit << " round " << round << " object " << id);
        REQUIRE(got.ok());
        REQUIRE(*got == m);
        REQUIRE(f.os->Stat(ObjectId(id))->length == m.size());
      }
    }
  }
}

TEST_CASE("ObjectSet drops idle dnodes past its limit, never a dirty one", "[dmu][single-threaded]") {
  Fixture f;
  f.LimitDnodes(64);
  constexpr uint64_t kObjects = 3000;
  auto bonus = [](uint64_t id) { return "bonus of " + std::to_string(id); };
  std::vector<ObjectId> ids;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (uint64_t i = 0; i < kObjects; i++) {
      auto id = f.os->Create(tx, ObjectType::kPlain, 4096, util::Compression::kLz4, "");
      REQUIRE(id.ok());
      REQUIRE(f.os->SetBonus(tx, *id, 7, bonus(id->value())).ok());
      REQUIRE(f.os->Write(tx, *id, 0, Pattern(id->value(), 5000)).ok());
      ids.push_back(*id);
    }
    tx.Commit();
  }
  // Every one is dirty in the open txg: none may go.
  CHECK(f.os->cached_dnodes() >= kObjects);
  CHECK(f.os->dnode_evictions() == 0);
  f.Sync();
  // Idle now: loading others drops them, and each loads again intact.
  for (int pass = 0; pass < 2; pass++) {
    for (ObjectId id : ids) {
      auto info = f.os->Stat(id);
      REQUIRE(info.ok());
      CHECK(info->bonus == bonus(id.value()));
      CHECK(info->bonus_type == 7);
      auto got = f.os->Read(id, 0, 1 << 20);
      REQUIRE(got.ok());
      REQUIRE(*got == Pattern(id.value(), 5000));
    }
  }
  CHECK(f.os->dnode_evictions() >= kObjects);
  CHECK(f.os->cached_dnodes() < 64 * 32);
  // Changes to dropped dnodes: dirty again, kept until synced, and durable.
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (size_t i = 0; i < ids.size(); i += 2)
      REQUIRE(f.os->Write(tx, ids[i], 100, "changed").ok());
    tx.Commit();
  }
  for (size_t i = 1; i < ids.size(); i += 2) REQUIRE(f.os->Stat(ids[i]).ok());
  for (size_t i = 0; i < ids.size(); i += 2) {
    auto got = f.os->Read(ids[i], 100, 7);
    REQUIRE(got.ok());
    CHECK(*got == "changed");
  }
  f.Sync();
  f.Reopen();
  for (size_t i = 0; i < ids.size(); i++) {
    std::string want = Pattern(ids[i].value(), 5000);
    if (i % 2 == 0) want.replace(100, 7, "changed");
    auto got = f.os->Read(ids[i], 0, 1 << 20);
    REQUIRE(got.ok());
    REQUIRE(*got == want);
  }
}

TEST_CASE("ObjectSet holds sparse objects far past 2^40 bytes", "[dmu]") {
  Fixture f;
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  auto id = f.os->Create(tx, ObjectType::kPlain, 128 * 1024);
  const uint64_t far = uint64_t{1} << 50;
  std::string d = Pattern(5, 300);
  REQUIRE(f.os->Write(tx, *id, far, d).ok());
  REQUIRE(f.os->Write(tx, *id, 0, d).ok());
  tx.Commit();
  f.Sync();
  f.Reopen();
  REQUIRE(f.os->Read(*id, far, 300).value() == d);
  REQUIRE(f.os->Read(*id, 0, 300).value() == d);
  REQUIRE(f.os->Read(*id, far / 2, 4096).value() == std::string(4096, '\0'));
  REQUIRE(f.os->Stat(*id)->length == far + 300);
  // Two data blocks and one indirect block per level on each path.
  REQUIRE(f.os->Stat(*id)->used < 64 * 4096);
}

TEST_CASE("ObjectSet frees return space after the defer txgs", "[dmu]") {
  Fixture f;
  uint64_t before = f.space.Stats().allocated;
  ObjectId id;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = *f.os->Create(tx, ObjectType::kPlain, 128 * 1024, util::Compression::kOff);
    REQUIRE(f.os->Write(tx, id, 0, Pattern(9, 4 << 20)).ok());
  }
  f.Sync();
  uint64_t with = f.space.Stats().allocated;
  REQUIRE(with - before >= (4u << 20));
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    REQUIRE(f.os->Free(tx, id).ok());
    REQUIRE(f.os->Read(id, 0, 10).status().IsNotFound());
  }
  f.Sync();
  REQUIRE(f.space.Stats().allocated < with - (4u << 20) + (64u << 10));
  f.Reopen();
  REQUIRE(f.os->Stat(id).status().IsNotFound());
}

TEST_CASE("ObjectSet takes changes in the open txg while the previous one syncs", "[dmu]") {
  Fixture f;
  std::vector<ObjectId> ids;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (int i = 0; i < 8; i++) ids.push_back(*f.os->Create(tx, ObjectType::kPlain, 4096));
  }
  for (int round = 0; round < 20; round++) {
    Txg t(f.txgs.open.load());
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      for (auto id : ids) REQUIRE(f.os->Write(tx, id, round * 1000, Pattern(round, 3000)).ok());
    }
    f.txgs.open++;  // t closes; writers move to t+1 while t syncs
    // Catch2's assertions are for the main thread only: the writer counts.
    std::atomic<int> writer_failures{0};
    std::thread writer([&] {
      Tx tx(&f.txgs);
      if (!tx.Assign().ok()) {
        writer_failures++;
        return;
      }
      for (auto id : ids)
        if (!f.os->Write(tx, id, round * 1000 + 500, Pattern(round + 100, 700)).ok())
          writer_failures++;
    });
    for (auto& task : f.os->SyncTasks(t, 2)) REQUIRE(task.fn().ok());
    REQUIRE(f.os->FinishSync(t, 1).ok());
    writer.join();
    REQUIRE(writer_failures.load() == 0);
    f.space.Sync(t, [](const space::Metaslab&) {});
    f.space.SyncDone(t);
    f.os->SyncDone(t);
  }
  f.Sync();
  f.Reopen();
  for (auto id : ids) {
    std::string m;
    for (int round = 0; round < 20; round++) {
      std::string a = Pattern(round, 3000), b = Pattern(round + 100, 700);
      if (m.size() < size_t(round * 1000 + 3000)) m.resize(round * 1000 + 3000, '\0');
      m.replace(round * 1000, 3000, a);
      m.replace(round * 1000 + 500, 700, b);
    }
    REQUIRE(f.os->Read(id, 0, 1 << 20).value() == m);
  }
}

TEST_CASE("ObjectSet writes a large object's blocks from every strand at once", "[dmu]") {
  // 300 dirty 4 KiB blocks in one object (the split threshold is 64), plus a
  // truncate in the same txg whose frees must land before the new blocks,
  // and a few small objects; the tasks of each strand run on their own
  // thread, both strands at once.
  Fixture f;
  ObjectId big, small[3];
  std::string model;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    big = *f.os->Create(tx, ObjectType::kPlain, 4096);
    model = Pattern(1, 200 * 4096);
    REQUIRE(f.os->Write(tx, big, 0, model).ok());
    for (auto& id : small) {
      id = *f.os->Create(tx, ObjectType::kPlain, 4096);
      REQUIRE(f.os->Write(tx, id, 0, Pattern(id.value(), 5000)).ok());
    }
  }
  f.Sync();
  for (int round = 0; round < 4; round++) {
    Txg t(f.txgs.open.load());
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      REQUIRE(f.os->Truncate(tx, big, 50 * 4096 + round).ok());
      model.resize(50 * 4096 + round);
      std::string more = Pattern(10 + round, 300 * 4096);
      REQUIRE(f.os->Write(tx, big, 40 * 4096, more).ok());
      model.resize(40 * 4096);
      model += more;
      for (auto& id : small) REQUIRE(f.os->Write(tx, id, 100, Pattern(round, 64)).ok());
    }
    f.txgs.open++;
    std::vector<SyncTask> tasks = f.os->SyncTasks(t, 2);
    size_t per_strand[2] = {0, 0};
    for (const SyncTask& task : tasks) per_strand[task.allocator]++;
    REQUIRE(per_strand[0] >= 2);  // its share of the large object, and its small ones
    REQUIRE(per_strand[1] >= 1);
    std::vector<Status> failures[2];
    std::vector<std::thread> threads;
    for (size_t s = 0; s < 2; s++) {
      threads.emplace_back([&, s] {
        for (SyncTask& task : tasks)
          if (task.allocator == s) {
            Status st = task.fn();
            if (!st.ok()) failures[s].push_back(st);
          }
      });
    }
    for (auto& th : threads) th.join();
    REQUIRE(failures[0].empty());
    REQUIRE(failures[1].empty());
    REQUIRE(f.os->FinishSync(t, 0).ok());
    f.space.Sync(t, [](const space::Metaslab&) {});
    f.space.SyncDone(t);
    f.os->SyncDone(t);
    REQUIRE(f.os->Read(big, 0, 2 << 20).value() == model);
  }
  f.Reopen();
  REQUIRE(f.os->Read(big, 0, 2 << 20).value() == model);
  auto info = f.os->Stat(big);
  REQUIRE(info->length == model.size());
  REQUIRE(info->used >= model.size());
  REQUIRE(info->used < model.size() + 40 * 4096);  // the freed blocks are not counted
}

TEST_CASE("ObjectSet writes a large object's blocks to the device in runs of 1 MiB", "[dmu]") {
  // 4 MiB of 128 KiB blocks, below the split threshold: one strand writes
  // them, from one allocator, whose extents come out adjacent on a fresh
  // device.
  Fixture f;
  const std::string data = Pattern(7, 4 << 20);
  ObjectId id;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = *f.os->Create(tx, ObjectType::kPlain, 128 * 1024);
    REQUIRE(f.os->Write(tx, id, 0, data).ok());
  }
  f.Sync();
  CHECK(f.counting.full_runs == 4);
  // And read back from it in runs of 1 MiB (no cache here: every read
  // goes to the device), as a whole or from an odd offset.
  REQUIRE(f.os->Read(id, 0, data.size()).value() == data);
  CHECK(f.counting.full_reads == 4);
  f.Reopen();
  REQUIRE(f.os->Read(id, 0, data.size()).value() == data);
  CHECK(f.counting.full_reads == 8);
  REQUIRE(f.os->Read(id, 1000, 2 << 20).value() == data.substr(1000, 2 << 20));
  CHECK(f.counting.full_reads == 10);
}

TEST_CASE("ObjectSet reads of one object go on beside its writes and syncs", "[dmu]") {
  // Every block holds one 8-byte tag (block id, version) over and over;
  // readers check that each block they get is whole and the right one
  // while the main thread rewrites blocks and syncs.
  constexpr uint64_t kBlocks = 24, kBlock = 16 * 1024;
  auto block = [&](uint64_t b, uint64_t version) {
    const uint64_t tag = b << 32 | version;
    std::string s(kBlock, '\0');
    for (uint64_t at = 0; at < kBlock; at += 8) std::memcpy(s.data() + at, &tag, 8);
    return s;
  };
  Fixture f;
  ObjectId id;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = *f.os->Create(tx, ObjectType::kPlain, kBlock);
    for (uint64_t b = 0; b < kBlocks; b++)
      REQUIRE(f.os->Write(tx, id, b * kBlock, block(b, 0)).ok());
  }
  f.Sync();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0}, bad{0}, failed{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; r++) {
    readers.emplace_back([&, r] {
      while (!done.load()) {
        const uint64_t first = uint64_t(r) * 5 % kBlocks;  // each from its own block on
        Result<std::string> got = f.os->Read(id, first * kBlock, (kBlocks - first) * kBlock);
        if (!got.ok() || got->size() != (kBlocks - first) * kBlock) {
          failed++;
          continue;
        }
        for (uint64_t b = first; b < kBlocks; b++) {
          const char* p = got->data() + (b - first) * kBlock;
          uint64_t tag;
          std::memcpy(&tag, p, 8);
          if (tag >> 32 != b || std::string_view(p, kBlock) != block(b, tag & 0xffffffff)) bad++;
        }
        reads++;
      }
    });
  }
  for (uint64_t v = 1; v <= 300; v++) {
    {
      Tx tx(&f.txgs);
      REQUIRE(tx.Assign().ok());
      const uint64_t b = v * 7 % kBlocks;
      REQUIRE(f.os->Write(tx, id, b * kBlock, block(b, v)).ok());
    }
    if (v % 10 == 0) f.Sync();
  }
  while (reads.load() < 20) std::this_thread::yield();  // some reads beside the writes
  done = true;
  for (auto& t : readers) t.join();
  CHECK(failed == 0);
  CHECK(bad == 0);
}

TEST_CASE("ObjectSet import rebuilds the same free object ids from the fill counts", "[dmu]") {
  Fixture f;
  f.os->SetBackfill(BackfillMode::kOff);
  std::vector<ObjectId> ids;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (int i = 0; i < 3000; i++) ids.push_back(*f.os->Create(tx, ObjectType::kPlain, 4096));
  }
  f.Sync();
  std::mt19937_64 rng(5);
  std::set<uint64_t> freed;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    // Whole dnode blocks (ids 64..127), scattered ids, and the last ones.
    for (uint64_t id = 64; id < 128; id++) freed.insert(id);
    for (int i = 0; i < 300; i++) freed.insert(ids[rng() % ids.size()].value());
    for (uint64_t id = 2990; id <= 3000; id++) freed.insert(id);
    for (uint64_t id : freed) REQUIRE(f.os->Free(tx, ObjectId(id)).ok());
  }
  f.Sync();
  f.Sync();
  const ObjectAllocStats before = f.os->AllocStats();
  f.Reopen();
  const ObjectAllocStats after = f.os->AllocStats();
  REQUIRE(after.live == 3000 - freed.size());
  REQUIRE(after.live == before.live);
  REQUIRE(after.high_water == 2990);  // one past the highest live id
  REQUIRE(after.free_below_high_water == 2989 - after.live);
  REQUIRE(after.dnode_blocks_in_use == before.dnode_blocks_in_use);
  // Every freed id below the high-water mark is reused before any new one.
  f.os->SetBackfill(BackfillMode::kOn);
  std::set<uint64_t> reused;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (size_t i = 0; i < after.free_below_high_water; i++)
      reused.insert(f.os->Create(tx, ObjectType::kPlain, 4096)->value());
  }
  std::set<uint64_t> expect;
  for (uint64_t id : freed)
    if (id < 2990) expect.insert(id);
  REQUIRE(reused == expect);
}

TEST_CASE("ObjectSet legacy allocation fails holds on unsynced dnodes and stays correct", "[dmu]") {
  // The pathology: with nothing synced, the search at each span boundary
  // restarts at the first sparse block by synced fill (block 0) and walks
  // through every dnode created since, one failed hold each.
  Fixture f;
  f.os->SetBackfill(BackfillMode::kLegacy);
  std::set<uint64_t> ids;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (int i = 0; i < 20000; i++) {
      auto id = f.os->Create(tx, ObjectType::kPlain, 4096);
      REQUIRE(id.ok());
      REQUIRE(ids.insert(id->value()).second);
    }
  }
  ObjectAllocStats st = f.os->AllocStats();
  REQUIRE(st.failed_holds >= 8000);
  REQUIRE(st.live == 20000);
  REQUIRE(*ids.rbegin() == 20000);  // dense: it only ever found the next free id
  f.Sync();
  // Once synced, the fills show the blocks full: no failed holds.
  const uint64_t failed = st.failed_holds;
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    for (int i = 0; i < 100; i++)
      REQUIRE(ids.insert(f.os->Create(tx, ObjectType::kPlain)->value()).second);
  }
  REQUIRE(f.os->AllocStats().failed_holds == failed);
  f.Sync();
  f.Reopen();
  REQUIRE(f.os->AllocStats().live == 20100);
  for (uint64_t id : {uint64_t(1), uint64_t(8192), uint64_t(20100)})
    REQUIRE(f.os->Stat(ObjectId(id)).ok());
}

TEST_CASE("Reads of synced blocks go through the cache, across a reopen", "[dmu][arc]") {
  Fixture f;
  arc::Arc cache({.max_bytes = 16 << 20, .evict_thread = false});
  f.os->UseCache(&cache);
  const std::string data = Pattern(7, 4 * 128 * 1024);
  const ObjectId id = WriteSynced(f, data);
  REQUIRE(f.os->Read(id, 0, data.size()).value() == data);
  arc::ArcStats first = cache.Stats();
  CHECK(first.misses >= 4);
  CHECK(first.cached_bytes >= data.size());
  REQUIRE(f.os->Read(id, 0, data.size()).value() == data);
  arc::ArcStats second = cache.Stats();
  CHECK(second.hits - first.hits == 4);
  CHECK(second.misses == first.misses);
  // A reopened set reads the same blocks under the same names.
  f.Reopen();
  f.os->UseCache(&cache);
  REQUIRE(f.os->Read(id, 0, data.size()).value() == data);
  CHECK(cache.Stats().hits - second.hits >= 4);
}

TEST_CASE("A read that keeps only partial blocks leaves blocks it returns whole uncached",
          "[dmu][arc]") {
  Fixture f;
  arc::Arc cache({.max_bytes = 16 << 20, .evict_thread = false});
  f.os->UseCache(&cache);
  // Three whole 128 KiB blocks and a last one holding 1000 bytes.
  const std::string data = Pattern(9, 3 * 128 * 1024 + 1000);
  const ObjectId id = WriteSynced(f, data);
  f.Reopen();  // nothing of the object in memory
  f.os->UseCache(&cache);
  const uint64_t before = cache.Stats().cached_bytes;
  // Whole blocks (the last one up to the object's end): none cached (the
  // dnode's and the tree's small blocks are).
  REQUIRE(f.os->Read(id, 0, data.size(), ReadCaching::kPartial).value() == data);
  arc::ArcStats st = cache.Stats();
  CHECK(st.cached_bytes < before + 128 * 1024);
  CHECK(st.read_once == 4);
  // A read of part of block 1 caches it; a whole read then finds it there.
  REQUIRE(f.os->Read(id, 200000, 100, ReadCaching::kPartial).value() == data.substr(200000, 100));
  CHECK(cache.Stats().cached_bytes == st.cached_bytes + 128 * 1024);
  REQUIRE(f.os->Read(id, 128 * 1024, 128 * 1024, ReadCaching::kPartial).value() ==
          data.substr(128 * 1024, 128 * 1024));
  CHECK(cache.Stats().read_once == 4);
  // kAll caches what it reads.
  REQUIRE(f.os->Read(id, 0, data.size()).value() == data);
  CHECK(cache.Stats().cached_bytes >= before + 3 * 128 * 1024);
}

TEST_CASE("ReadInto fills just the caller's bytes, whole blocks on disk straight from it",
          "[dmu][arc]") {
  Fixture f;
  arc::Arc cache({.max_bytes = 16 << 20, .evict_thread = false});
  constexpr uint64_t kBlock = 128 * 1024;
  // Block 0 raw on disk, 1 dirty in memory (below), 2 compressed on disk,
  // 3 a hole, 4 raw on disk and 1000 bytes long.
  std::string data = Pattern(3, 4 * kBlock + 1000);
  for (uint64_t i = 0; i < kBlock; i++) data[2 * kBlock + i] = char('a' + i % 7);
  std::fill(data.begin() + 3 * kBlock, data.begin() + 4 * kBlock, '\0');
  const ObjectId id = WriteSynced(f, data);
  f.Reopen();  // nothing of the object in memory
  f.os->UseCache(&cache);
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  const std::string dirty = Pattern(4, kBlock);
  REQUIRE(f.os->Write(tx, id, kBlock, dirty).ok());
  tx.Commit();
  data.replace(kBlock, kBlock, dirty);

  const uint64_t cached_before = cache.Stats().cached_bytes;
  const uint64_t once_before = cache.Stats().read_once;
  constexpr size_t kPad = 64;
  struct Case {
    uint64_t off, len;
  };
  for (const Case& c : std::initializer_list<Case>{{0, data.size()},
                                                   {0, 10 * kBlock},
                                                   {kBlock, 3 * kBlock},
                                                   {100, 2 * kBlock},
                                                   {2 * kBlock + 5, kBlock - 10},
                                                   {4 * kBlock, kBlock},
                                                   {data.size() - 1, 1},
                                                   {data.size(), 4096}}) {
    for (ReadCaching caching : {ReadCaching::kPartial, ReadCaching::kAll}) {
      INFO("off " << c.off << " len " << c.len << " caching " << int(caching));
      std::string buf(c.len + 2 * kPad, 'S');
      auto n = f.os->ReadInto(id, c.off, std::span<char>(buf.data() + kPad, c.len), caching);
      REQUIRE(n.ok());
      const uint64_t want = std::min<uint64_t>(c.len, data.size() - std::min(c.off, data.size()));
      REQUIRE(*n == want);
      CHECK(buf.compare(kPad, want, data, std::min(c.off, data.size()), want) == 0);
      // Not a byte outside what was read.
      CHECK(buf.find_first_not_of('S', kPad + want) == std::string::npos);
      CHECK(buf.find_first_not_of('S') == (want == 0 ? std::string::npos : kPad));
    }
    // kPartial first: its whole blocks stayed out of the cache.
    if (c.off == 0 && c.len == data.size()) {
      // Blocks 0 and 2 read into the buffer, block 4 (short) held outside.
      CHECK(cache.Stats().read_once == once_before + 3);
      CHECK(cache.Stats().cached_bytes > cached_before);  // kAll's
    }
  }
}

TEST_CASE("A block rewritten in place by a later pass of its txg is not served from the cache",
          "[dmu][arc]") {
  // The MOS syncs in passes: a block written in pass 1 and dirtied again in
  // the same txg is rewritten where it is, with the same birth txg, so its
  // cache name does not change while its bytes do.
  Fixture f;
  arc::Arc cache({.max_bytes = 16 << 20, .evict_thread = false});
  f.os->UseCache(&cache);
  const std::string a = Pattern(1, 4096), b = Pattern(2, 4096);
  Txg t(f.txgs.open.load());
  f.txgs.open++;
  Tx tx = Tx::ForSync(t);
  ObjectId id = f.os->Create(tx, ObjectType::kPlain, 4096, util::Compression::kOff).value();
  REQUIRE(f.os->Write(tx, id, 0, a).ok());
  auto pass = [&] {
    for (auto& task : f.os->SyncTasks(t, 2)) REQUIRE(task.fn().ok());
    REQUIRE(f.os->FinishSync(t, 0).ok());
  };
  pass();
  REQUIRE(f.os->Read(id, 0, 4096).value() == a);  // now cached
  zio::BlockPtr before = f.os->BlockPointer(id, 0).value();
  Tx again = Tx::ForSync(t);
  REQUIRE(f.os->Write(again, id, 0, b).ok());
  pass();
  zio::BlockPtr after = f.os->BlockPointer(id, 0).value();
  REQUIRE(after.dva == before.dva);  // the same place and name
  REQUIRE(after.birth == before.birth);
  CHECK(f.os->Read(id, 0, 4096).value() == b);
  f.space.Sync(t, [](const space::Metaslab&) {});
  f.space.SyncDone(t);
  f.os->SyncDone(t);
}

TEST_CASE("A shared block is its txg's dirty copy, edited in place until the txg closes", "[dmu]") {
  Fixture f;
  const std::string a = Pattern(1, 4096), b = Pattern(2, 4096);
  ObjectId id;
  ObjectSet::DnodeRef d;
  SharedBlock blk(a);
  const Txg t(f.txgs.open.load());
  {
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    id = f.os->Create(tx, ObjectType::kPlain, 4096).value();
    d = f.os->Hold(id).value();
    REQUIRE(f.os->PutBlock(tx, *d, 2, blk).ok());
    REQUIRE(blk.txg() == t.value());
    REQUIRE(f.os->Stat(id)->length == 3 * 4096);  // the length covers the block
    // The same txg: the very buffer, changed where it is, with no second put.
    const char* before = blk.data();
    std::string& bytes = blk.Edit(t);
    REQUIRE(bytes.data() == before);
    bytes.replace(0, 100, std::string(100, 'x'));
    REQUIRE(f.os->Read(id, 2 * 4096, 4096).value() == blk.bytes());
    // Refused: a block of another size, a free object.
    SharedBlock small(std::string(512, 'y'));
    REQUIRE(f.os->PutBlock(tx, *d, 0, small).code() == StatusCode::kInvalidArgument);
    REQUIRE(small.txg() == 0);
  }
  const std::string at_t = blk.bytes();
  f.txgs.open++;  // t closes
  {
    // The next txg gets a copy of its own: t's dirty copy stays as t left it.
    Tx tx(&f.txgs);
    REQUIRE(tx.Assign().ok());
    const char* before = blk.data();
    std::string& bytes = blk.Edit(Txg(t.value() + 1));
    REQUIRE(bytes.data() != before);
    REQUIRE(blk.txg() == 0);
    bytes = b;
    REQUIRE(f.os->PutBlock(tx, *d, 2, blk).ok());
    // A write by anyone else to a shared block takes a buffer of its own.
    REQUIRE(f.os->Write(tx, *d, 2 * 4096, std::string(10, 'z')).ok());
    REQUIRE(blk.bytes() == b);
    REQUIRE(f.os->Read(id, 2 * 4096, 10).value() == std::string(10, 'z'));
  }
  for (auto& task : f.os->SyncTasks(t, 2)) REQUIRE(task.fn().ok());
  auto root = f.os->FinishSync(t, 0);
  REQUIRE(root.ok());
  f.space.Sync(t, [](const space::Metaslab&) {});
  f.space.SyncDone(t);
  f.os->SyncDone(t);
  auto as_written = ObjectSet::Open(&f.zio, *root, "test");
  REQUIRE(as_written.ok());
  REQUIRE((*as_written)->Read(id, 2 * 4096, 4096).value() == at_t);
  REQUIRE((*as_written)->Read(id, 0, 4096).value() == std::string(4096, '\0'));
  d.reset();
  f.Sync();
  f.Reopen();
  REQUIRE(f.os->Read(id, 2 * 4096, 4096).value() == std::string(10, 'z') + b.substr(10));
  // A free object refuses.
  Tx tx(&f.txgs);
  REQUIRE(tx.Assign().ok());
  ObjectSet::DnodeRef held = f.os->Hold(id).value();
  REQUIRE(f.os->Free(tx, id).ok());
  SharedBlock late(a);
  REQUIRE(f.os->PutBlock(tx, *held, 0, late).IsNotFound());
}

}  // namespace
}  // namespace poolfs::core::dmu
