// Receive: what a stream makes on the receiving pool must read exactly as
// the snapshot it was sent from (objects, attributes, data, holes), for a
// full stream and for a chain of incremental ones, on the same pool and
// on another of different ashift, vdevs and compression; a stream that is
// damaged, truncated or for another base leaves the target as it was and
// nothing behind; the pool checks clean after every kind of receive.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../pool/kill_child.h"
#include "../pool/test_pool.h"
#include "send/receive.h"
#include "send/resume_token.h"
#include "stream_fixture.h"

namespace poolfs::core::send::testing {
namespace {

using pool::TestPool;

// The data regions of object `id` (SEEK_DATA / SEEK_HOLE), [start, end).
std::vector<std::pair<uint64_t, uint64_t>> Regions(dmu::ObjectSet& os, uint64_t id,
                                                   uint64_t length) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (uint64_t off = 0; off < length;) {
    auto data = os.Seek(ObjectId(id), off, length, false);
    REQUIRE(data.ok());
    if (*data >= length) break;
    auto hole = os.Seek(ObjectId(id), *data, length, true);
    REQUIRE(hole.ok());
    out.emplace_back(*data, *hole);
    off = *hole;
  }
  return out;
}

// `got` must hold exactly `want`'s objects: ids, types, block sizes,
// lengths, bonuses, data and holes (generations are each pool's own).
void RequireSameObjects(dmu::ObjectSet& want, dmu::ObjectSet& got) {
  const uint64_t end = std::max(want.next_object(), got.next_object());
  for (uint64_t id = 1; id < end; id++) {
    auto w = want.Stat(ObjectId(id));
    auto g = got.Stat(ObjectId(id));
    INFO("object " << id << ": " << w.status().ToString() << " / " << g.status().ToString());
    REQUIRE(w.ok() == g.ok());
    if (!w.ok()) {
      REQUIRE(w.status().code() == StatusCode::kNotFound);
      REQUIRE(g.status().code() == StatusCode::kNotFound);
      continue;
    }
    CHECK(w->type == g->type);
    CHECK(w->block_size == g->block_size);
    CHECK(w->length == g->length);
    CHECK(w->bonus_type == g->bonus_type);
    CHECK(w->bonus == g->bonus);
    const auto regions = Regions(want, id, w->length);
    CHECK(regions == Regions(got, id, g->length));
    for (const auto& [from, to] : regions) {
      auto a = want.Read(ObjectId(id), from, to - from);
      auto b = got.Read(ObjectId(id), from, to - from);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      CHECK(*a == *b);
    }
  }
}

// A pool's view through its admin, with send and receive.
struct Replication {
  explicit Replication(pool::Pool* p) : admin(p, nullptr, Replicator()) {}
  pool::PoolDatasetAdmin admin;

  std::string Send(const std::string& snapshot, const std::string& from = "") {
    SendOptions o;
    o.snapshot = snapshot;
    o.from = from;
    return SendWith(o);
  }
  // The whole stream `o` asks for; its estimate must agree.
  std::string SendWith(const SendOptions& o) {
    std::string out;
    auto r = admin.Send(o, [&out](std::string_view b) {
      out += b;
      return Status::Ok();
    });
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    CHECK(r->bytes == out.size());
    auto estimate = admin.Send(o, nullptr);
    REQUIRE(estimate.ok());
    CHECK(estimate->bytes == out.size());
    return out;
  }
  Result<ReceiveSummary> Receive(const std::string& stream, const std::string& target,
                                 bool force = false, size_t chunk = 65536) {
    ReceiveOptions o;
    o.target = target;
    o.force = force;
    return admin.Receive(o, SourceOf(stream, chunk));
  }
  void MustReceive(const std::string& stream, const std::string& target, bool force = false) {
    auto r = Receive(stream, target, force);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
  }
};

void RequireSameSnapshot(pool::Pool& a, const std::string& want, pool::Pool& b,
                         const std::string& got) {
  INFO(want << " against " << got);
  auto w = a.OpenSnapshot(want);
  auto g = b.OpenSnapshot(got);
  REQUIRE(w.ok());
  REQUIRE(g.ok());
  RequireSameObjects(**w, **g);
}

uint64_t GuidOf(TestPool& t, const std::string& snapshot) {
  const std::string ds = snapshot.substr(0, snapshot.find('@'));
  auto l = t.pool->ListSnapshots(ds, false);
  REQUIRE(l.ok());
  for (const auto& f : *l)
    if (f.name == snapshot) return f.guid;
  FAIL("no snapshot " << snapshot);
  return 0;
}

// Runs `body` on `dataset` in one Tx and syncs it.
void Change(pool::Pool& p, const std::string& dataset,
            const std::function<void(dmu::Tx&, dmu::ObjectSet&)>& body) {
  dmu::ObjectSet* os = p.dataset(dataset);
  REQUIRE(os != nullptr);
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  body(tx, *os);
  tx.Commit();
  REQUIRE(p.WaitSynced().ok());
}

void Ok(const Status& st) {
  INFO(st.ToString());
  REQUIRE(st.ok());
}

// Random changes of every kind a stream carries: new objects (ids reused
// with backfill on), overwrites, holes punched, shrinks, grows, bonuses,
// block size changes of one-block objects, frees.
void Churn(pool::Pool& p, const std::string& dataset, std::mt19937_64& rng, int changes) {
  // Each draw in a statement of its own: the order of a call's arguments
  // is the compiler's, and the workload must be the same under gcc and
  // clang.
  auto draw = [&rng](uint64_t n) { return rng() % n; };
  Change(p, dataset, [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    os.SetBackfill(dmu::BackfillMode::kOn);
    std::vector<uint64_t> live;
    for (uint64_t id = 1; id < os.next_object(); id++)
      if (os.Stat(ObjectId(id)).ok()) live.push_back(id);
    for (int i = 0; i < changes; i++) {
      const uint64_t kind = live.empty() ? 0 : draw(8);
      const uint64_t id = live.empty() ? 0 : live[draw(live.size())];
      auto info = id ? os.Stat(ObjectId(id)) : Result<dmu::ObjectInfo>(dmu::ObjectInfo{});
      REQUIRE(info.ok());
      const uint64_t bs = info->block_size;
      const uint64_t a = draw(1u << 30), b = draw(1u << 30), c = rng(), d = draw(1u << 30);
      switch (kind) {
        case 0: {
          const uint32_t sizes[] = {512, 4096, 16384, 131072};
          auto made = os.Create(tx, dmu::ObjectType::kPlain, sizes[a % 4]);
          REQUIRE(made.ok());
          const uint32_t size = os.Stat(*made)->block_size;
          Ok(os.Write(tx, *made, (b % 8) * size + d % 100,
                      pool::check_test::Pattern(c, 1 + d % (3 * size))));
          live.push_back(made->value());
          break;
        }
        case 1:
        case 2:
          Ok(os.Write(tx, ObjectId(id), (a % 12) * bs + b % 50,
                      pool::check_test::Pattern(c, 1 + d % (2 * bs))));
          break;
        case 3: Ok(os.Punch(tx, ObjectId(id), (a % 6) * bs, (1 + b % 3) * bs)); break;
        case 4: Ok(os.Truncate(tx, ObjectId(id), info->length / (2 + a % 3))); break;
        case 5: Ok(os.Truncate(tx, ObjectId(id), info->length + a % (20 * bs))); break;
        case 6:
          Ok(os.SetBonus(tx, ObjectId(id), uint8_t(a % 5), pool::check_test::Pattern(c, b % 200)));
          break;
        case 7:
          if (info->length <= 512) {
            Ok(os.SetBlockSize(tx, ObjectId(id), a % 2 ? 512 : 1024));
          } else {
            Ok(os.Free(tx, ObjectId(id)));
            live.erase(std::find(live.begin(), live.end(), id));
          }
          break;
      }
    }
  });
}

// `n` new objects of 64 KiB in `dataset`: a stream of some size, whatever
// the churn drew.
void Fill(pool::Pool& p, const std::string& dataset, int n, uint64_t seed) {
  Change(p, dataset, [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    for (int i = 0; i < n; i++) {
      auto id = os.Create(tx, dmu::ObjectType::kPlain, 16384);
      REQUIRE(id.ok());
      Ok(os.Write(tx, *id, 0, pool::check_test::Pattern(seed + i, 65536)));
    }
  });
}

TEST_CASE("A full stream received gives the snapshot, its guid, and a clean pool",
          "[send][receive]") {
  TestPool t;
  Replication rep(t.pool.get());
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::mt19937_64 rng(1);
  Churn(*t.pool, "tank/d", rng, 60);
  Change(*t.pool, "tank/d", [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    auto far = os.Create(tx, dmu::ObjectType::kPlain, 4096);
    REQUIRE(far.ok());
    Ok(os.Write(tx, *far, uint64_t{1} << 30, "far away"));  // holes below new indirects
  });
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  const std::string stream = rep.Send("tank/d@a");
  auto got = rep.Receive(stream, "tank/r");
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  CHECK(got->snapshot == "tank/r@a");
  CHECK_FALSE(got->incremental);
  CHECK(got->bytes == stream.size());
  RequireSameSnapshot(*t.pool, "tank/d@a", *t.pool, "tank/r@a");
  CHECK(GuidOf(t, "tank/r@a") == GuidOf(t, "tank/d@a"));
  // The head is the snapshot, and the only new name is the target's.
  auto head = t.pool->OpenSyncedDataset("tank/r");
  REQUIRE(head.ok());
  RequireSameSnapshot(*t.pool, "tank/d@a", *t.pool, "tank/r@a");
  CHECK(t.Names() == std::vector<std::string>{"tank", "tank/d", "tank/r"});
  const CheckReport report = t.Check();
  CHECK(report.ok());
  CHECK(report.datasets == 3);
  // Again into a name that exists: refused, naming it.
  Replication again(t.pool.get());
  auto twice = again.Receive(stream, "tank/r");
  CHECK(twice.status().code() == StatusCode::kAlreadyExists);
  CHECK_THAT(twice.status().message(), Catch::Contains("'tank/r' exists"));
  auto orphan = again.Receive(stream, "tank/none/r");
  CHECK(orphan.status().code() == StatusCode::kNotFound);
}

TEST_CASE("A chain of ten incremental streams gives each snapshot in turn, on another pool",
          "[send][receive]") {
  TestPool t;
  Replication rep(t.pool.get());
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  // The receiver: ashift 9, two vdevs, no compression.
  pool::check_test::TempDir dir;
  const std::vector<std::string> paths = {dir / "b0", dir / "b1"};
  REQUIRE(pool::Pool::Create(paths, pool::check_test::kFileSize, pool::CreateOptions{"backup", 9})
              .ok());
  auto imported = pool::Pool::Import(paths, pool::check_test::QuietOptions());
  REQUIRE(imported.ok());
  std::unique_ptr<pool::Pool> backup = std::move(*imported);
  Replication brep(backup.get());
  REQUIRE(brep.admin.Set("backup", {"compression", "off"}).ok());

  std::mt19937_64 rng(7);
  std::string prev;
  for (int i = 1; i <= 10; i++) {
    Churn(*t.pool, "tank/d", rng, 25);
    const std::string snap = "tank/d@s" + std::to_string(i);
    REQUIRE(t.admin->Snapshot({snap}, false).ok());
    const std::string stream = rep.Send(snap, prev);
    auto got = brep.Receive(stream, "backup/d");
    INFO(snap << ": " << got.status().ToString());
    REQUIRE(got.ok());
    CHECK(got->incremental == (i > 1));
    RequireSameSnapshot(*t.pool, snap, *backup, "backup/d@s" + std::to_string(i));
    prev = "@s" + std::to_string(i);
  }
  auto head = backup->OpenSyncedDataset("backup/d");
  REQUIRE(head.ok());
  auto last = t.pool->OpenSnapshot("tank/d@s10");
  REQUIRE(last.ok());
  RequireSameObjects(**last, **head);
  // Space and deadlists are whole: check, then destroy snapshots out of
  // order and check again.
  auto check = [&] {
    REQUIRE(backup->Export().ok());
    backup.reset();
    auto r = CheckPool(paths);
    REQUIRE(r.ok());
    for (const CheckProblem& p : r->problems) UNSCOPED_INFO(p.where + ": " + p.what);
    CHECK(r->ok());
    auto again = pool::Pool::Import(paths, pool::check_test::QuietOptions());
    REQUIRE(again.ok());
    backup = std::move(*again);
  };
  check();
  {
    pool::PoolDatasetAdmin admin(backup.get());
    for (int i : {5, 1, 9, 2, 10})
      REQUIRE(admin.Destroy("backup/d@s" + std::to_string(i), false).ok());
    REQUIRE(admin.Create("backup/x", false, {}).ok());
  }
  check();
  auto later = backup->OpenSnapshot("backup/d@s7");
  REQUIRE(later.ok());
  auto want = t.pool->OpenSnapshot("tank/d@s7");
  REQUIRE(want.ok());
  RequireSameObjects(**want, **later);
  REQUIRE(backup->Export().ok());
}

TEST_CASE("An incremental stream needs its base as the target's newest snapshot, unchanged",
          "[send][receive]") {
  TestPool t;
  Replication rep(t.pool.get());
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::mt19937_64 rng(3);
  Churn(*t.pool, "tank/d", rng, 20);
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  Churn(*t.pool, "tank/d", rng, 20);
  REQUIRE(t.admin->Snapshot({"tank/d@b"}, false).ok());
  Churn(*t.pool, "tank/d", rng, 20);
  REQUIRE(t.admin->Snapshot({"tank/d@c"}, false).ok());
  rep.MustReceive(rep.Send("tank/d@a"), "tank/r");
  const std::string bc = rep.Send("tank/d@c", "@b");
  const std::string ab = rep.Send("tank/d@b", "@a");

  // Another base: refused, naming the guid.
  auto wrong = rep.Receive(bc, "tank/r");
  CHECK(wrong.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(wrong.status().message(), Catch::Contains("has no snapshot with the base's guid"));
  // A target changed since its snapshot: refused without force.
  const uint64_t scribble = t.Write("tank/r", "local change");
  auto changed = rep.Receive(ab, "tank/r");
  CHECK(changed.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(changed.status().message(), Catch::Contains("has changed since its snapshot"));
  // With force the change goes, and the stream applies.
  rep.MustReceive(ab, "tank/r", /*force=*/true);
  RequireSameSnapshot(*t.pool, "tank/d@b", *t.pool, "tank/r@b");
  auto head = t.pool->OpenSyncedDataset("tank/r");
  REQUIRE(head.ok());
  auto b = t.pool->OpenSnapshot("tank/d@b");
  REQUIRE(b.ok());
  RequireSameObjects(**b, **head);
  (void)scribble;
  // A base that is no longer the newest: refused.
  REQUIRE(t.admin->Snapshot({"tank/r@local"}, false).ok());
  auto stale = rep.Receive(bc, "tank/r");
  CHECK(stale.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(stale.status().message(), Catch::Contains("not the newest snapshot"));
  REQUIRE(t.admin->Destroy("tank/r@local", false).ok());
  rep.MustReceive(bc, "tank/r");
  RequireSameSnapshot(*t.pool, "tank/d@c", *t.pool, "tank/r@c");
  CHECK(t.Check().ok());
}

TEST_CASE("An object whose block size changed since the base arrives whole",
          "[send][receive]") {
  TestPool t;
  Replication rep(t.pool.get());
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  uint64_t id = 0;
  Change(*t.pool, "tank/d", [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    auto made = os.Create(tx, dmu::ObjectType::kPlain, 512);
    REQUIRE(made.ok());
    id = made->value();
    Ok(os.Write(tx, *made, 0, pool::check_test::Pattern(1, 1340)));  // three blocks
  });
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  Change(*t.pool, "tank/d", [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    Ok(os.Truncate(tx, ObjectId(id), 100));
    Ok(os.SetBlockSize(tx, ObjectId(id), 1024));
    Ok(os.Write(tx, ObjectId(id), 100, pool::check_test::Pattern(2, 1240)));
  });
  REQUIRE(t.admin->Snapshot({"tank/d@b"}, false).ok());
  rep.MustReceive(rep.Send("tank/d@a"), "tank/r");
  rep.MustReceive(rep.Send("tank/d@b", "@a"), "tank/r");
  RequireSameSnapshot(*t.pool, "tank/d@b", *t.pool, "tank/r@b");
  CHECK(t.Check().ok());
}

// What a target looks like from outside: its snapshots and its head.
struct Shape {
  std::vector<std::pair<std::string, uint64_t>> snaps;
  uint64_t referenced = 0;
  std::vector<std::string> names;
  bool operator==(const Shape&) const = default;
};
Shape ShapeOf(TestPool& t, const std::string& target) {
  Shape s;
  auto l = t.pool->ListSnapshots(target, false);
  REQUIRE(l.ok());
  for (const auto& f : *l) s.snaps.emplace_back(f.name, f.guid);
  s.referenced = t.Info(target).referenced;
  s.names = t.Names();
  return s;
}

TEST_CASE("A damaged or truncated stream is refused and leaves the target as it was",
          "[send][receive][damage]") {
  TestPool t;
  Replication rep(t.pool.get());
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::mt19937_64 rng(5);
  Churn(*t.pool, "tank/d", rng, 30);
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  Churn(*t.pool, "tank/d", rng, 30);
  Fill(*t.pool, "tank/d", 4, 500);
  REQUIRE(t.admin->Snapshot({"tank/d@b"}, false).ok());
  rep.MustReceive(rep.Send("tank/d@a"), "tank/r");
  const std::string full = rep.Send("tank/d@b");
  const std::string inc = rep.Send("tank/d@b", "@a");
  const Shape before = ShapeOf(t, "tank/r");

  auto records = ReadAll(inc);
  REQUIRE(records.ok());
  REQUIRE(records->size() > 4);
  // Every class of byte: a header's magic, type, flags, fields, checksums;
  // a payload's first and last byte; END's fields. Each record's.
  std::vector<size_t> at;
  size_t off = 0;
  for (const Record& r : *records) {
    for (size_t b : {size_t{0}, size_t{4}, size_t{6}, size_t{17}, size_t{24}, size_t{40},
                     size_t{88}, size_t{104}, size_t{120}, kHeaderSize - 1})
      at.push_back(off + b);
    if (!r.payload.empty()) {
      at.push_back(off + kHeaderSize);
      at.push_back(off + kHeaderSize + r.payload.size() - 1);
    }
    off += kHeaderSize + r.payload.size();
  }
  REQUIRE(off == inc.size());
  for (size_t pos : at) {
    std::string bad = inc;
    bad[pos] ^= 0x10;
    auto got = rep.Receive(bad, "tank/r");
    INFO("byte " << pos);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kCorruption);
    CHECK_THAT(got.status().message(), Catch::Contains("record"));
    REQUIRE(ShapeOf(t, "tank/r") == before);
  }
  // Truncated anywhere (at record boundaries and inside them), or with
  // bytes after END.
  for (size_t len : {size_t{0}, size_t{1}, kHeaderSize, kHeaderSize + 1, inc.size() / 3,
                     inc.size() / 2, inc.size() - kHeaderSize, inc.size() - 1}) {
    auto got = rep.Receive(inc.substr(0, len), "tank/r");
    INFO("length " << len);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kCorruption);
    REQUIRE(ShapeOf(t, "tank/r") == before);
  }
  auto trailing = rep.Receive(inc + "x", "tank/r");
  CHECK(trailing.status().code() == StatusCode::kCorruption);
  // A full stream cut short makes nothing.
  auto cut = rep.Receive(full.substr(0, full.size() / 2), "tank/s");
  CHECK(cut.status().code() == StatusCode::kCorruption);
  REQUIRE(ShapeOf(t, "tank/r") == before);
  // The source's own error passes through.
  ReceiveOptions o;
  o.target = "tank/r";
  size_t fed = 0;
  auto failing = rep.admin.Receive(o, [&](std::span<char> buf) -> Result<size_t> {
    if (fed >= inc.size() / 2) return Status::IOError("the pipe broke");
    const size_t n = std::min(buf.size(), inc.size() / 2 - fed);
    std::memcpy(buf.data(), inc.data() + fed, n);
    fed += n;
    return n;
  });
  CHECK(failing.status().code() == StatusCode::kIOError);
  REQUIRE(ShapeOf(t, "tank/r") == before);
  // Nothing is left behind: the pool holds what it held.
  const CheckReport report = t.Check();
  CHECK(report.ok());
  CHECK(report.datasets == 3);
  // And the good stream still applies.
  Replication after(t.pool.get());
  after.MustReceive(inc, "tank/r");
  RequireSameSnapshot(*t.pool, "tank/d@b", *t.pool, "tank/r@b");
}

TEST_CASE("An import destroys the dataset of a receive that did not finish", "[send][receive]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  t.Write("tank/d", pool::check_test::Pattern(1, 100000));
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  for (const std::string base : {"", "tank/d@a"}) {
    auto begun = t.pool->BeginReceive(base, "tank/d");
    REQUIRE(begun.ok());
    Change(*t.pool, "tank", [&](dmu::Tx& tx, dmu::ObjectSet&) {
      auto id = begun->second.os->Create(tx, dmu::ObjectType::kPlain);
      REQUIRE(id.ok());
      Ok(begun->second.os->Write(tx, *id, 0, pool::check_test::Pattern(2, 300000)));
    });
    REQUIRE(t.pool->WaitSynced().ok());
    CHECK(t.Names() == std::vector<std::string>{"tank", "tank/d"});
    t.Reimport();
    bool noted = false;
    for (const std::string& n : t.pool->import_notes())
      noted |= n.find("a receive that did not finish") != std::string::npos;
    CHECK(noted);
    REQUIRE(t.pool->WaitSynced().ok());
    const CheckReport report = t.Check();
    CHECK(report.ok());
    CHECK(report.datasets == 2);
  }
}

}  // namespace
}  // namespace poolfs::core::send::testing

namespace poolfs::core::send::testing {
namespace {

TEST_CASE("Resume tokens round-trip, and any change or cut is refused", "[send][resume]") {
  ResumeToken t;
  t.to_guid = 0x1234567890abcdefull;
  t.from_guid = 42;
  t.object = 77;
  t.bytes = 1 << 20;
  t.dataset = "tank/home";
  t.snapshot = "monday";
  t.from = "sunday";
  const std::string text = EncodeResumeToken(t);
  CHECK(text.starts_with("1-"));
  auto back = DecodeResumeToken(text);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(*back == t);
  for (size_t i = 0; i < text.size(); i++) {
    for (char c : {'0', 'f', 'x', '-'}) {
      if (text[i] == c) continue;
      std::string bad = text;
      bad[i] = c;
      INFO("position " << i << " to " << c);
      CHECK(DecodeResumeToken(bad).status().code() == StatusCode::kInvalidArgument);
    }
    CHECK_FALSE(DecodeResumeToken(text.substr(0, i)).ok());
  }
  CHECK_FALSE(DecodeResumeToken(text + "0").ok());
  ResumeToken bad = t;
  bad.from.clear();  // a base guid without its name
  CHECK_THAT(DecodeResumeToken(EncodeResumeToken(bad)).status().message(), Catch::Contains("base"));
  bad = t;
  bad.object = 0;
  CHECK_THAT(DecodeResumeToken(EncodeResumeToken(bad)).status().message(),
             Catch::Contains("resume object is 0"));
}

std::string TokenOf(TestPool& t, const std::string& target) {
  auto g = t.pool->GetProperties(target, {"receive_resume_token"});
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  REQUIRE(g->size() == 1);
  return (*g)[0].value;
}

// A source that gives `stream` up to `stop` bytes, then fails.
StreamSource Failing(const std::string& stream, size_t stop) {
  auto fed = std::make_shared<size_t>(0);
  return [&stream, stop, fed](std::span<char> buf) -> Result<size_t> {
    if (*fed >= stop) return Status::IOError("the connection dropped");
    const size_t n = std::min({buf.size(), stop - *fed, size_t{65536}});
    std::memcpy(buf.data(), stream.data() + *fed, n);
    *fed += n;
    return n;
  };
}

TEST_CASE("An interrupted receive -s resumes from its token, full and incremental",
          "[send][resume]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::mt19937_64 rng(11);
  Churn(*t.pool, "tank/d", rng, 80);
  Fill(*t.pool, "tank/d", 12, 600);
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  Churn(*t.pool, "tank/d", rng, 80);
  Fill(*t.pool, "tank/d", 12, 700);
  REQUIRE(t.admin->Snapshot({"tank/d@b"}, false).ok());
  std::string full, inc;
  {
    Replication rep(t.pool.get());
    full = rep.Send("tank/d@a");
    inc = rep.Send("tank/d@b", "@a");
  }
  for (const bool incremental : {false, true}) {
    const std::string& stream = incremental ? inc : full;
    const std::string snap = incremental ? "tank/d@b" : "tank/d@a";
    INFO((incremental ? "incremental" : "full"));
    Replication rep(t.pool.get());
    ReceiveOptions o;
    o.target = "tank/r";
    o.resumable = true;
    auto cut = rep.admin.Receive(o, Failing(stream, stream.size() * 2 / 3));
    CHECK(cut.status().code() == StatusCode::kIOError);
    CHECK_THAT(cut.status().message(), Catch::Contains("what arrived is kept"));
    std::string token = TokenOf(t, "tank/r");
    REQUIRE(token != "-");
    // It survives an import; other streams are refused meanwhile.
    t.Reimport();
    Replication again(t.pool.get());
    CHECK(TokenOf(t, "tank/r") == token);
    auto other = again.Receive(stream, "tank/r");
    CHECK(other.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(other.status().message(), Catch::Contains("interrupted receive into it is kept"));
    // Resumed, and cut again: it keeps going from the later point.
    SendOptions so;
    so.resume_token = token;
    std::string rest = again.SendWith(so);
    CHECK(rest.size() < stream.size());
    auto cut2 = again.admin.Receive(o, Failing(rest, rest.size() / 2));
    CHECK(cut2.status().code() == StatusCode::kIOError);
    const std::string token2 = TokenOf(t, "tank/r");
    CHECK(token2 != token);
    // A stream that resumes elsewhere is refused.
    auto moved = DecodeResumeToken(token2);
    REQUIRE(moved.ok());
    moved->object++;
    so.resume_token = EncodeResumeToken(*moved);
    const std::string elsewhere = again.SendWith(so);
    auto wrong = again.admin.Receive(o, SourceOf(elsewhere));
    CHECK(wrong.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(wrong.status().message(), Catch::Contains("the stream resumes"));
    CHECK(TokenOf(t, "tank/r") == token2);
    so.resume_token = token2;
    rest = again.SendWith(so);
    auto done = again.admin.Receive(o, SourceOf(rest, 4096));
    INFO(done.status().ToString());
    REQUIRE(done.ok());
    CHECK(TokenOf(t, "tank/r") == "-");
    RequireSameSnapshot(*t.pool, snap, *t.pool, snap == "tank/d@a" ? "tank/r@a" : "tank/r@b");
    const CheckReport report = t.Check();
    CHECK(report.ok());
    CHECK(report.datasets == 3);
  }
  // -A discards what an interrupted receive kept.
  Replication rep(t.pool.get());
  Churn(*t.pool, "tank/d", rng, 40);
  REQUIRE(t.admin->Snapshot({"tank/d@c"}, false).ok());
  const std::string c = rep.Send("tank/d@c", "@b");
  ReceiveOptions o;
  o.target = "tank/r";
  o.resumable = true;
  CHECK_FALSE(rep.admin.Receive(o, Failing(c, c.size() / 2)).ok());
  CHECK(TokenOf(t, "tank/r") != "-");
  // The kept receive holds its base, and says how to let it go.
  const Status held = t.admin->Destroy("tank/r@b", false);
  CHECK(held.code() == StatusCode::kNotEmpty);
  CHECK_THAT(held.message(), Catch::Contains("poolfs receive -A tank/r"));
  o.abort = true;
  REQUIRE(rep.admin.Receive(o, SourceOf("")).ok());
  CHECK(TokenOf(t, "tank/r") == "-");
  CHECK(rep.admin.Receive(o, SourceOf("")).status().code() == StatusCode::kNotFound);
  rep.MustReceive(c, "tank/r");
  RequireSameSnapshot(*t.pool, "tank/d@c", *t.pool, "tank/r@c");
  CHECK(t.Check().ok());
}

}  // namespace
}  // namespace poolfs::core::send::testing

namespace poolfs::core::send::testing {
namespace {

TEST_CASE("A receive -s killed outright resumes from the state it kept last",
          "[send][resume][crash]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  std::mt19937_64 rng(13);
  for (int i = 0; i < 4; i++) Churn(*t.pool, "tank/d", rng, 100);
  Change(*t.pool, "tank/d", [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    for (int i = 0; i < 6; i++) {
      auto id = os.Create(tx, dmu::ObjectType::kPlain, 131072);
      REQUIRE(id.ok());
      Ok(os.Write(tx, *id, 0, pool::check_test::Pattern(100 + i, 1 << 20)));
    }
  });
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  std::string stream;
  {
    Replication rep(t.pool.get());
    stream = rep.Send("tank/d@a");
  }
  REQUIRE(stream.size() > (6u << 20));
  t.admin.reset();
  REQUIRE(t.pool->Export().ok());
  t.pool.reset();
  // The child receives with its state kept every 64 KiB, and stalls for
  // good at two thirds of the stream: the kill finds it there.
  const pool::KilledChild child = pool::RunUntilKilled(
      [&](int fd) {
        std::unique_ptr<pool::Pool> p = pool::ImportInChild(t.paths, 100, fd);
        pool::PoolDatasetAdmin::Replicator small = Replicator();
        small.receive = [](pool::Pool& pl, const ReceiveOptions& o, const StreamSource& s,
                           const pool::PoolDatasetAdmin::Finisher& f) {
          return Receive(pl, o, s, f, 64 << 10);
        };
        pool::PoolDatasetAdmin admin(p.get(), nullptr, small);
        ReceiveOptions o;
        o.target = "tank/r";
        o.resumable = true;
        size_t fed = 0;
        auto r = admin.Receive(o, [&](std::span<char> buf) -> Result<size_t> {
          if (fed >= stream.size() * 2 / 3) {
            pool::Say(fd, "stalled");
            for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
          }
          const size_t n = std::min({buf.size(), stream.size() * 2 / 3 - fed, size_t{16384}});
          std::memcpy(buf.data(), stream.data() + fed, n);
          fed += n;
          return n;
        });
        pool::Say(fd, "returned " + r.status().ToString());
      },
      std::chrono::milliseconds(3000));
  INFO(child.lines);
  REQUIRE(child.killed);
  CHECK_THAT(child.lines, Catch::Contains("stalled"));
  t.Import();
  const std::string token = TokenOf(t, "tank/r");
  REQUIRE(token != "-");
  auto decoded = DecodeResumeToken(token);
  REQUIRE(decoded.ok());
  CHECK(decoded->object > 1);
  CHECK(decoded->bytes > 0);
  Replication rep(t.pool.get());
  SendOptions so;
  so.resume_token = token;
  const std::string rest = rep.SendWith(so);
  CHECK(rest.size() < stream.size());
  ReceiveOptions o;
  o.target = "tank/r";
  o.resumable = true;
  auto done = rep.admin.Receive(o, SourceOf(rest));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  RequireSameSnapshot(*t.pool, "tank/d@a", *t.pool, "tank/r@a");
  CHECK(t.Check().ok());
}

}  // namespace
}  // namespace poolfs::core::send::testing

namespace poolfs::core::send::testing {
namespace {

TEST_CASE("send -c carries blocks as stored, and the receiver stores them its own way",
          "[send][receive][compressed]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {}).ok());
  REQUIRE(t.admin->Set("tank/d", {"compression", "zstd"}).ok());
  // Compressible blocks, incompressible ones, and a small one.
  Change(*t.pool, "tank/d", [&](dmu::Tx& tx, dmu::ObjectSet& os) {
    auto a = os.Create(tx, dmu::ObjectType::kPlain, 131072, util::Compression::kZstd);
    REQUIRE(a.ok());
    Ok(os.Write(tx, *a, 0, std::string(8 * 131072, 'z')));
    auto b = os.Create(tx, dmu::ObjectType::kPlain, 131072, util::Compression::kZstd);
    REQUIRE(b.ok());
    std::mt19937_64 rng(3);
    std::string noise(4 * 131072, '\0');
    for (char& c : noise) c = char(rng());
    Ok(os.Write(tx, *b, 0, noise));
    auto c = os.Create(tx, dmu::ObjectType::kPlain, 4096, util::Compression::kLz4);
    REQUIRE(c.ok());
    Ok(os.Write(tx, *c, 0, pool::check_test::Pattern(5, 3000) + std::string(1096, 'x')));
  });
  REQUIRE(t.admin->Snapshot({"tank/d@a"}, false).ok());
  Replication rep(t.pool.get());
  const std::string plain = rep.Send("tank/d@a");
  SendOptions o;
  o.snapshot = "tank/d@a";
  o.compressed = true;
  const std::string packed = rep.SendWith(o);
  // The compressible object's eight blocks shrink to almost nothing.
  CHECK(packed.size() + 7 * 131072 < plain.size());
  auto records = ReadAll(packed);
  REQUIRE(records.ok());
  size_t compressed = 0;
  for (const Record& r : *records)
    if (r.type == RecordType::kWrite && r.f[3] != kCompressOff) compressed++;
  CHECK(compressed >= 8);
  // Received into a dataset without compression: the same objects.
  REQUIRE(t.admin->Create("tank/plain", false, {{"compression", "off"}}).ok());
  rep.MustReceive(packed, "tank/plain/r");
  RequireSameSnapshot(*t.pool, "tank/d@a", *t.pool, "tank/plain/r@a");
  // Stored uncompressed there, as that dataset says, where the sender's
  // block is compressed.
  auto sender = t.pool->OpenSnapshot("tank/d@a");
  auto received = t.pool->OpenSnapshot("tank/plain/r@a");
  REQUIRE(sender.ok());
  REQUIRE(received.ok());
  for (uint64_t id = 1; id < (*sender)->next_object(); id++) {
    auto st = (*sender)->Stat(ObjectId(id));
    if (!st.ok() || st->block_size != 131072) continue;
    auto was = (*sender)->BlockPointer(ObjectId(id), 0);
    auto is = (*received)->BlockPointer(ObjectId(id), 0);
    REQUIRE(was.ok());
    REQUIRE(is.ok());
    CHECK(is->compression == util::Compression::kOff);
    CHECK(is->psize == 131072);
    if (was->psize < 131072) CHECK(was->compression == util::Compression::kZstd);
  }
  CHECK(t.Check().ok());
}

}  // namespace
}  // namespace poolfs::core::send::testing

namespace poolfs::core::send::testing {
namespace {

// A compound stream's records, and where each of its streams begins.
Result<std::pair<std::vector<Record>, std::vector<uint64_t>>> ReadAllPackage(
    const std::string& bytes) {
  StreamReader reader(SourceOf(bytes), ReaderOptions{.packages = true});
  std::pair<std::vector<Record>, std::vector<uint64_t>> out;
  for (;;) {
    const uint64_t at = reader.bytes();
    auto r = reader.Next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) return out;
    if ((**r).type == RecordType::kBegin) out.second.push_back(at);
    out.first.push_back(std::move(**r));
  }
}

// Every snapshot of `from` and its descendants (by path below it) equals
// the same-named one below `to`.
void RequireSameTree(pool::Pool& a, const std::string& from, pool::Pool& b, const std::string& to) {
  auto snaps = a.ListSnapshots(from, true);
  REQUIRE(snaps.ok());
  size_t n = 0;
  for (const auto& f : *snaps) {
    const std::string mirror = to + f.name.substr(from.size());
    RequireSameSnapshot(a, f.name, b, mirror);
    n++;
  }
  auto mirrored = b.ListSnapshots(to, true);
  REQUIRE(mirrored.ok());
  CHECK(mirrored->size() == n);
}

TEST_CASE("send -R carries a dataset tree with its snapshots and properties, full and incremental",
          "[send][receive][package]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {{"compression", "zstd"}}).ok());
  REQUIRE(t.admin->Create("tank/d/a", false, {{"recordsize", "16K"}}).ok());
  REQUIRE(t.admin->Create("tank/d/a/b", false, {{"quota", "64M"}, {"atime", "off"}}).ok());
  std::mt19937_64 rng(21);
  auto churn_all = [&] {
    for (const char* d : {"tank/d", "tank/d/a", "tank/d/a/b"}) Churn(*t.pool, d, rng, 12);
  };
  churn_all();
  REQUIRE(t.admin->Snapshot({"tank/d@1"}, true).ok());
  churn_all();
  REQUIRE(t.admin->Create("tank/d/late", false, {}).ok());
  Churn(*t.pool, "tank/d/late", rng, 10);
  REQUIRE(t.admin->Snapshot({"tank/d@2"}, true).ok());
  churn_all();
  REQUIRE(t.admin->Snapshot({"tank/d@3"}, true).ok());

  // The receiver: another pool.
  pool::check_test::TempDir dir;
  const std::vector<std::string> paths = {dir / "b0"};
  REQUIRE(
      pool::Pool::Create(paths, pool::check_test::kFileSize, pool::CreateOptions{"backup"}).ok());
  auto imported = pool::Pool::Import(paths, pool::check_test::QuietOptions());
  REQUIRE(imported.ok());
  std::unique_ptr<pool::Pool> backup = std::move(*imported);
  Replication rep(t.pool.get());
  Replication brep(backup.get());

  SendOptions o;
  o.snapshot = "tank/d@3";
  o.recursive = true;
  const std::string package = rep.SendWith(o);
  auto records = ReadAll(package);  // a reader of one stream refuses it
  CHECK(records.status().code() == StatusCode::kCorruption);
  CHECK_THAT(records.status().message(), Catch::Contains("compound stream"));
  auto got = brep.Receive(package, "backup/copy");
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  CHECK(got->bytes == package.size());
  CHECK(got->snapshot == "backup/copy@3");
  RequireSameTree(*t.pool, "tank/d", *backup, "backup/copy");
  auto props = brep.admin.Get("backup/copy/a/b", {"quota", "atime", "compression"});
  REQUIRE(props.ok());
  CHECK((*props)[0].value == std::to_string(64 << 20));
  CHECK((*props)[0].source == "local");
  CHECK((*props)[1].value == "off");
  CHECK((*props)[2].value == "zstd");
  CHECK((*props)[2].source == "inherited from backup/copy");

  // Incremental: on from @3, a dataset new since then in full.
  churn_all();
  REQUIRE(t.admin->Create("tank/d/a/new", false, {{"copies", "2"}}).ok());
  Churn(*t.pool, "tank/d/a/new", rng, 5);
  REQUIRE(t.admin->Snapshot({"tank/d@4"}, true).ok());
  o.snapshot = "tank/d@4";
  o.from = "@3";
  const std::string inc = rep.SendWith(o);
  CHECK(inc.size() < package.size());
  REQUIRE(brep.Receive(inc, "backup/copy").ok());
  RequireSameTree(*t.pool, "tank/d", *backup, "backup/copy");
  CHECK(brep.admin.Get("backup/copy/a/new", {"copies"})->at(0).value == "2");

  // Damage anywhere in the PACKAGE record is refused before anything.
  churn_all();
  REQUIRE(t.admin->Snapshot({"tank/d@5"}, true).ok());
  o.snapshot = "tank/d@5";
  o.from = "@4";
  const std::string five = rep.SendWith(o);
  auto before = backup->ListSnapshots("backup/copy", true);
  REQUIRE(before.ok());
  for (size_t pos : {size_t{4}, size_t{24}, size_t{32}, size_t{100}, kHeaderSize + 3}) {
    std::string bad = five;
    bad[pos] ^= 0x01;
    auto r = brep.Receive(bad, "backup/copy");
    INFO("byte " << pos);
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK(backup->ListSnapshots("backup/copy", true)->size() == before->size());
  }
  // Cut after its first stream: that stream is in, the rest is not, and
  // the package says so.
  auto all = ReadAllPackage(five);
  REQUIRE(all.ok());
  auto cut = brep.Receive(five.substr(0, all->second[1]), "backup/copy");
  CHECK(cut.status().code() == StatusCode::kCorruption);
  CHECK_THAT(cut.status().message(), Catch::Contains("the 1 before it are received"));
  CHECK(backup->ListSnapshots("backup/copy", true)->size() == before->size() + 1);
  REQUIRE(backup->Export().ok());
}

}  // namespace
}  // namespace poolfs::core::send::testing
