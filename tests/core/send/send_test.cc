// Send: the streams of real snapshots, read back and replayed onto a model
// of the receiving object set, must give exactly the snapshot's objects;
// an incremental stream, replayed on its base's, exactly the later one, at
// the cost of what changed.
#include <algorithm>
#include <map>
#include <string>

#include "../pool/test_pool.h"
#include "send/send.h"
#include "stream_fixture.h"

namespace poolfs::core::send::testing {
namespace {

using pool::TestPool;

// An object as the stream describes it: its data blocks by index, each
// block_size bytes (absent: a hole, zeros). Sparse, so that objects with
// data gigabytes out cost what they hold.
struct Replayed {
  ObjectInfo info;
  std::map<uint64_t, std::string> blocks;
};
using ReplayedSet = std::map<uint64_t, Replayed>;

// Zeros [from, to) of x (a hole or a shrink).
void Zero(Replayed& x, uint64_t from, uint64_t to) {
  const uint64_t bs = x.info.block_size;
  for (auto it = x.blocks.lower_bound(from / bs); it != x.blocks.end() && it->first * bs < to;) {
    const uint64_t start = it->first * bs;
    const uint64_t a = std::max(from, start), b = std::min(to, start + bs);
    if (a == start && b == start + bs) {
      it = x.blocks.erase(it);
      continue;
    }
    std::fill(it->second.begin() + (a - start), it->second.begin() + (b - start), '\0');
    ++it;
  }
}

// Applies a whole stream to *set as a receiver would; returns its BEGIN.
BeginInfo Replay(const std::string& stream, ReplayedSet* set) {
  StreamReader reader(SourceOf(stream, 4096));
  BeginInfo begin;
  uint64_t open = 0;
  while (true) {
    auto next = reader.Next();
    INFO(next.status().ToString());
    REQUIRE(next.ok());
    if (!next->has_value()) break;
    const Record& r = **next;
    switch (r.type) {
      case RecordType::kBegin: {
        auto b = DecodeBegin(r);
        REQUIRE(b.ok());
        begin = *b;
        break;
      }
      case RecordType::kObject: {
        auto o = DecodeObject(r);
        REQUIRE(o.ok());
        // A new object starts empty; a kept one must be there.
        if (!o->fresh) REQUIRE(set->count(o->object) == 1);
        Replayed& x = (*set)[o->object];
        if (o->fresh) x.blocks.clear();
        // The data of a kept object is as the base left it, up to its new
        // length.
        if (!o->fresh && o->length < x.info.length) Zero(x, o->length, UINT64_MAX);
        x.info = *o;
        open = o->object;
        break;
      }
      case RecordType::kFreeObjects: {
        auto f = DecodeFreeObjects(r);
        REQUIRE(f.ok());
        set->erase(set->lower_bound(f->first), set->lower_bound(f->first + f->count));
        break;
      }
      case RecordType::kWrite: {
        auto w = DecodeWrite(r);
        REQUIRE(w.ok());
        REQUIRE(w->object == open);
        Replayed& x = (*set)[open];
        REQUIRE(w->data.size() == x.info.block_size);
        x.blocks[w->offset / x.info.block_size] = w->data;
        break;
      }
      case RecordType::kFree: {
        auto f = DecodeFree(r);
        REQUIRE(f.ok());
        REQUIRE(f->object == open);
        Zero((*set)[open], f->offset, f->length == kToEnd ? UINT64_MAX : f->offset + f->length);
        break;
      }
      case RecordType::kEnd:
      case RecordType::kPackage: break;
    }
  }
  return begin;
}

// The bytes [from, to) of x.
std::string BytesOf(const Replayed& x, uint64_t from, uint64_t to) {
  std::string out(to - from, '\0');
  const uint64_t bs = x.info.block_size;
  for (auto it = x.blocks.lower_bound(from / bs); it != x.blocks.end() && it->first * bs < to;
       ++it) {
    const uint64_t start = it->first * bs;
    const uint64_t a = std::max(from, start), b = std::min(to, start + bs);
    std::copy(it->second.begin() + (a - start), it->second.begin() + (b - start),
              out.begin() + (a - from));
  }
  return out;
}

// *set must be exactly the objects of snapshot `name`: attributes, the
// bytes of every data region, and zeros (or nothing) everywhere else.
void RequireSame(TestPool& t, const std::string& name, const ReplayedSet& set) {
  auto os = t.pool->OpenSnapshot(name);
  INFO(name << ": " << os.status().ToString());
  REQUIRE(os.ok());
  uint64_t found = 0;
  for (uint64_t id = 1; id < (*os)->next_object(); id++) {
    auto st = (*os)->Stat(ObjectId(id));
    if (!st.ok() && st.status().code() == StatusCode::kNotFound) {
      CHECK(set.count(id) == 0);
      continue;
    }
    INFO("object " << id << ": " << st.status().ToString());
    REQUIRE(st.ok());
    found++;
    auto it = set.find(id);
    REQUIRE(it != set.end());
    const Replayed& x = it->second;
    CHECK(x.info.type == uint8_t(st->type));
    CHECK(x.info.block_size == st->block_size);
    CHECK(x.info.length == st->length);
    CHECK(x.info.generation == st->generation);
    CHECK(x.info.bonus_type == st->bonus_type);
    CHECK(x.info.bonus == st->bonus);
    uint64_t covered = 0;  // replayed blocks inside the snapshot's data
    for (uint64_t off = 0; off < st->length;) {
      auto data = (*os)->Seek(ObjectId(id), off, st->length, false);
      REQUIRE(data.ok());
      if (*data >= st->length) break;
      auto hole = (*os)->Seek(ObjectId(id), *data, st->length, true);
      REQUIRE(hole.ok());
      auto bytes = (*os)->Read(ObjectId(id), *data, *hole - *data);
      REQUIRE(bytes.ok());
      CHECK(BytesOf(x, *data, *hole) == *bytes);
      for (auto b = x.blocks.lower_bound(*data / x.info.block_size);
           b != x.blocks.end() && b->first * x.info.block_size < *hole; ++b)
        covered++;
      off = *hole;
    }
    // What the replay holds outside the snapshot's data reads as zeros.
    if (covered != x.blocks.size())
      for (const auto& [blk, bytes] : x.blocks)
        if (blk * x.info.block_size < st->length) {
          auto read = (*os)->Read(ObjectId(id), blk * x.info.block_size, x.info.block_size);
          REQUIRE(read.ok());
          CHECK(BytesOf(x, blk * x.info.block_size, blk * x.info.block_size + read->size()) ==
                *read);
        }
  }
  CHECK(set.size() == found);
}

// The guids of tank/d's snapshots, by full name.
std::map<std::string, uint64_t> Snaps(TestPool& t) {
  auto l = t.pool->ListSnapshots("tank/d", false);
  REQUIRE(l.ok());
  std::map<std::string, uint64_t> out;
  for (const auto& f : *l) out[f.name] = f.guid;
  return out;
}

struct Sent {
  std::string stream;
  SendStats stats;
};

// The stream of snapshot `to` of tank/d (incremental from `from` when
// given); its estimate must agree with what was written.
Sent SendOf(TestPool& t, const std::string& to, const std::string& from = "") {
  auto point = [&](const std::string& snap) {
    auto os = t.pool->OpenSnapshot("tank/d@" + snap);
    REQUIRE(os.ok());
    auto l = t.pool->ListSnapshots("tank/d", false);
    REQUIRE(l.ok());
    SendPoint p;
    for (const auto& f : *l)
      if (f.name == "tank/d@" + snap) p.txg = f.txg, p.guid = f.guid;
    REQUIRE(p.txg.value() != 0);
    p.root = (*os)->root();
    p.snapshot = snap;
    return p;
  };
  SendRequest r;
  r.zio = t.pool->zio();
  r.dataset = "tank/d";
  r.to = point(to);
  if (!from.empty()) r.from = point(from);
  Sent s;
  StreamWriter w([&s](std::string_view b) {
    s.stream += b;
    return Status::Ok();
  });
  const Status st = Send(r, &w, &s.stats);
  INFO(st.ToString());
  REQUIRE(st.ok());
  CHECK(s.stats.stream_bytes == s.stream.size());
  SendStats estimate;
  REQUIRE(Send(r, nullptr, &estimate).ok());
  CHECK(estimate.records == s.stats.records);
  CHECK(estimate.stream_bytes == s.stats.stream_bytes);
  CHECK(estimate.data_blocks_read == 0);
  return s;
}

// Runs `body` on tank/d in one Tx and syncs it.
void Change(TestPool& t, const std::function<void(dmu::Tx&, dmu::ObjectSet&)>& body) {
  dmu::ObjectSet* os = t.pool->dataset("tank/d");
  REQUIRE(os != nullptr);
  dmu::Tx tx(t.pool->assigner());
  REQUIRE(tx.Assign().ok());
  body(tx, *os);
  tx.Commit();
  REQUIRE(t.pool->WaitSynced().ok());
}

uint64_t Create(dmu::Tx& tx, dmu::ObjectSet& os, uint32_t block_size) {
  auto id = os.Create(tx, dmu::ObjectType::kPlain, block_size);
  REQUIRE(id.ok());
  return id->value();
}

void Put(dmu::Tx& tx, dmu::ObjectSet& os, uint64_t id, uint64_t off, const std::string& data) {
  const Status st = os.Write(tx, ObjectId(id), off, data);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

TEST_CASE("A full stream replays to exactly the snapshot's objects", "[send][traversal]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  uint64_t small = 0, sparse = 0, far = 0;
  Change(t, [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    small = Create(tx, os, 4096);
    Put(tx, os, small, 0, "hello, stream");
    REQUIRE(os.SetBonus(tx, ObjectId(small), 7, std::string(100, 'b')).ok());
    sparse = Create(tx, os, 16384);
    Put(tx, os, sparse, 3 * 16384 + 100, pool::check_test::Pattern(1, 40000));
    far = Create(tx, os, 131072);
    Put(tx, os, far, 0, pool::check_test::Pattern(2, 131072));
    Put(tx, os, far, uint64_t{3} << 30, pool::check_test::Pattern(3, 5000));  // two more levels
  });
  REQUIRE(t.admin->Snapshot({"tank/d@full"}, false).ok());
  const Sent s = SendOf(t, "full");
  ReplayedSet set;
  const BeginInfo b = Replay(s.stream, &set);
  CHECK(b.dataset == "tank/d");
  CHECK(b.snapshot == "full");
  CHECK(b.from_guid == 0);
  RequireSame(t, "tank/d@full", set);
  // Only data goes: the holes of new objects need no record.
  CHECK(s.stats.frees == 0);
  CHECK(s.stats.writes == s.stats.data_blocks_read);
  CHECK(s.stats.write_bytes == 4096 + 3 * 16384 + 2 * 131072);
}

TEST_CASE(
    "An incremental stream replayed on its base gives the later snapshot, sending only "
    "what changed",
    "[send][traversal]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  // The base: many objects of many blocks, and a far sparse one.
  std::vector<uint64_t> ids;
  Change(t, [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    for (int i = 0; i < 40; i++) {
      const uint64_t id = Create(tx, os, 16384);
      Put(tx, os, id, 0, pool::check_test::Pattern(10 + i, 16 * 16384));
      ids.push_back(id);
    }
    const uint64_t id = Create(tx, os, 4096);
    Put(tx, os, id, uint64_t{1} << 32, pool::check_test::Pattern(99, 8192));
    ids.push_back(id);
  });
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  // The changes: an overwritten block, a punched hole, a shrink, a grow,
  // a bonus, freed objects, an id reused by another object, a new object.
  Change(t, [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    Put(tx, os, ids[0], 5 * 16384, pool::check_test::Pattern(50, 16384));
    REQUIRE(os.Punch(tx, ObjectId(ids[1]), 2 * 16384, 3 * 16384).ok());
    REQUIRE(os.Truncate(tx, ObjectId(ids[2]), 3 * 16384 + 7).ok());
    Put(tx, os, ids[3], 40 * 16384, pool::check_test::Pattern(51, 100));
    REQUIRE(os.SetBonus(tx, ObjectId(ids[4]), 3, "bonus").ok());
    REQUIRE(os.Free(tx, ObjectId(ids[5])).ok());
    REQUIRE(os.Free(tx, ObjectId(ids[6])).ok());
    REQUIRE(os.Free(tx, ObjectId(ids[8])).ok());
    REQUIRE(os.Punch(tx, ObjectId(ids.back()), uint64_t{1} << 32, 4096).ok());
  });
  Change(t, [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    os.SetBackfill(dmu::BackfillMode::kOn);
    const uint64_t again = Create(tx, os, 4096);  // may take a freed id
    Put(tx, os, again, 0, "a new object");
  });
  REQUIRE(t.admin->Snapshot({"tank/d@b"}, false).ok());

  const Sent full = SendOf(t, "a");
  ReplayedSet set;
  Replay(full.stream, &set);
  RequireSame(t, "tank/d@a", set);
  const Sent inc = SendOf(t, "b", "a");
  const BeginInfo b = Replay(inc.stream, &set);
  CHECK(b.from == "a");
  CHECK(b.from_guid == Snaps(t).at("tank/d@a"));
  CHECK(b.to_guid == Snaps(t).at("tank/d@b"));
  RequireSame(t, "tank/d@b", set);
  // What changed, not the dataset: 40 x 16 blocks went in the full stream.
  CHECK(full.stats.writes >= 40 * 16);
  CHECK(inc.stats.writes <= 4);
  CHECK(inc.stats.freed_objects >= 2);
  CHECK(inc.stats.frees >= 2);
  CHECK(inc.stats.dnodes.blocks_read < full.stats.dnodes.blocks_read + 8);
}

TEST_CASE("Send refuses a request without a guid or with a base that is not older",
          "[send][traversal]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  SendRequest r;
  r.zio = t.pool->zio();
  r.dataset = "tank/d";
  r.to.snapshot = "a";
  r.to.txg = Txg(5);
  CHECK(Send(r, nullptr, nullptr).code() == StatusCode::kInvalidArgument);  // no guid
  r.to.guid = 1;
  r.from = SendPoint{zio::BlockPtr(), Txg(5), 2, "a"};
  CHECK(Send(r, nullptr, nullptr).code() == StatusCode::kInvalidArgument);  // same txg
}

}  // namespace
}  // namespace poolfs::core::send::testing
