// The dataset tree: lifecycle (create -p, list order, rename, destroy -r),
// properties (inheritance, sources, validation, persistence), space figures
// (referenced follows the writes, destroy gives the space back, no leak),
// reservations, the offline admin, and the pool directory's tree decoder.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "check_test_util.h"
#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "pool/pool_phys.h"
#include "poolfs/dataset.h"
#include "test_pool.h"
#include "util/byte_units.h"

namespace poolfs::core::pool {
namespace {

using check_test::kFileSize;
using check_test::Pattern;
using check_test::QuietOptions;
using check_test::TempDir;

TEST_CASE("Datasets are created with -p, listed parents first and children by name", "[dataset]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/b", false, {}).ok());
  REQUIRE(t.admin->Create("tank/a/x/y", true, {}).ok());
  REQUIRE(t.admin->Create("tank/a/c", false, {}).ok());
  CHECK(t.Names() ==
        std::vector<std::string>{"tank", "tank/a", "tank/a/c", "tank/a/x", "tank/a/x/y", "tank/b"});
  CHECK(t.Names("tank/a/x") == std::vector<std::string>{"tank/a/x", "tank/a/x/y"});
  CHECK(t.admin->Create("tank/a", true, {}).ok());  // exists: fine with -p
  CHECK(t.admin->Create("tank/a", false, {}).code() == StatusCode::kAlreadyExists);
  CHECK(t.admin->Create("tank/q/r", false, {}).code() == StatusCode::kNotFound);
  CHECK(t.admin->Create("other/a", false, {}).code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Create("tank/a@snap", false, {}).code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Create("tank/../x", false, {}).code() == StatusCode::kInvalidArgument);
  CHECK(t.Info("tank/a").mountpoint == "/a");
  CHECK(t.Info("tank").mountpoint == "/");
  t.Reimport();
  CHECK(t.Names().size() == 6);
  CHECK(t.Info("tank/a/x/y").creation_time > 0);
}

TEST_CASE("Rename moves a dataset and its descendants; bad renames change nothing", "[dataset]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/a/b/c", true, {}).ok());
  REQUIRE(t.admin->Create("tank/z", false, {}).ok());
  REQUIRE(t.admin->Rename("tank/a/b", "tank/z/b2").ok());
  CHECK(t.Names() ==
        std::vector<std::string>{"tank", "tank/a", "tank/z", "tank/z/b2", "tank/z/b2/c"});
  CHECK(t.admin->Rename("tank/z", "tank/z/b2/c/d").code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Rename("tank", "tank/x").code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Rename("tank/a", "tank/z").code() == StatusCode::kAlreadyExists);
  CHECK(t.admin->Rename("tank/a", "tank/nope/a").code() == StatusCode::kNotFound);
  CHECK(t.admin->Rename("tank/nope", "tank/b").code() == StatusCode::kNotFound);
  CHECK(t.admin->Rename("tank/a", "other/a").code() == StatusCode::kInvalidArgument);
  t.Reimport();
  CHECK(t.Names() ==
        std::vector<std::string>{"tank", "tank/a", "tank/z", "tank/z/b2", "tank/z/b2/c"});
}

TEST_CASE("Destroy refuses the root, a parent and a busy dataset; -r takes the subtree",
          "[dataset]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/a/b", true, {}).ok());
  CHECK(t.admin->Destroy("tank", false).code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Destroy("tank", true).code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Destroy("tank/a", false).code() == StatusCode::kNotEmpty);
  CHECK(t.admin->Destroy("tank/nope", false).code() == StatusCode::kNotFound);
  const uint64_t b = *t.pool->DatasetId("tank/a/b");
  t.pool->SetBusyCheck([b](uint64_t id) { return id == b; });
  CHECK(t.admin->Destroy("tank/a", true).code() == StatusCode::kBusy);
  CHECK(t.Names().size() == 3);
  t.pool->SetBusyCheck(nullptr);
  REQUIRE(t.admin->Destroy("tank/a", true).ok());
  CHECK(t.Names() == std::vector<std::string>{"tank"});
  REQUIRE(t.admin->Create("tank/a", false, {}).ok());  // the name is free again
  CHECK(*t.pool->DatasetId("tank/a") > b);             // ids are never reused
  t.Reimport();
  CHECK(t.Names() == std::vector<std::string>{"tank", "tank/a"});
}

TEST_CASE("Properties inherit down the tree and say where they come from", "[dataset]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/a/b", true, {}).ok());
  CHECK(t.Prop("tank/a/b", "compression").value == "lz4");
  CHECK(t.Prop("tank/a/b", "compression").source == "default");
  REQUIRE(t.admin->Set("tank/a", {"compression", "zstd-3"}).ok());
  REQUIRE(t.admin->Set("tank/a", {"recordsize", "64K"}).ok());
  REQUIRE(t.admin->Set("tank/a", {"atime", "off"}).ok());
  REQUIRE(t.admin->Set("tank/a", {"readonly", "on"}).ok());
  REQUIRE(t.admin->Set("tank/a", {"copies", "2"}).ok());
  REQUIRE(t.admin->Set("tank/a", {"quota", "1G"}).ok());
  REQUIRE(t.admin->Set("tank/a", {"reservation", "1M"}).ok());
  CHECK(t.Prop("tank/a", "compression").source == "local");
  CHECK(t.Prop("tank/a/b", "compression").value == "zstd-3");
  CHECK(t.Prop("tank/a/b", "compression").source == "inherited from tank/a");
  CHECK(t.Prop("tank/a/b", "recordsize").value == "65536");
  CHECK(t.Prop("tank/a/b", "atime").value == "off");
  CHECK(t.Prop("tank/a/b", "readonly").value == "on");
  CHECK(t.Prop("tank/a/b", "copies").value == "2");
  // quota and reservation apply where set only.
  CHECK(t.Prop("tank/a", "quota").value == "1073741824");
  CHECK(t.Prop("tank/a/b", "quota").value == "none");
  CHECK(t.Prop("tank/a/b", "quota").source == "default");
  CHECK(t.Prop("tank/a/b", "reservation").source == "default");
  CHECK(t.Prop("tank/a/b", "used").source == "-");
  CHECK(t.Prop("tank/a/b", "type").value == "filesystem");
  CHECK(t.Prop("tank/a/b", "name").value == "tank/a/b");
  CHECK(t.Prop("tank/a/b", "mountpoint").value == "/a/b");
  auto all = t.admin->Get("tank/a/b", {"all"});
  REQUIRE(all.ok());
  CHECK(all->size() == Properties().size());

  const uint64_t b = *t.pool->DatasetId("tank/a/b");
  auto eff = t.pool->EffectiveProps(b);
  REQUIRE(eff.ok());
  CHECK(eff->compression == util::Compression::kZstd);
  CHECK(eff->compression_level == 3);
  CHECK(eff->recordsize == 65536);
  CHECK(eff->atime == AtimeMode::kOff);
  CHECK(eff->readonly);
  CHECK(eff->copies == 2);
  CHECK(eff->quota == 0);

  t.Reimport();
  CHECK(t.Prop("tank/a/b", "compression").source == "inherited from tank/a");
  CHECK(t.Prop("tank/a", "quota").value == "1073741824");
  REQUIRE(t.admin->Inherit("tank/a", "compression").ok());
  CHECK(t.Prop("tank/a/b", "compression").source == "default");
  REQUIRE(t.admin->Inherit("tank/a", "quota").ok());
  CHECK(t.Prop("tank/a", "quota").value == "none");
  t.Reimport();
  CHECK(t.Prop("tank/a", "compression").source == "default");
  CHECK(t.Prop("tank/a/b", "recordsize").source == "inherited from tank/a");
}

TEST_CASE("Bad property names and values are refused, naming them, and change nothing",
          "[dataset]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/a", false, {}).ok());
  struct Bad {
    std::string name, value, says;
  };
  for (const Bad& bad : std::vector<Bad>{{"compression", "gzip", "compression"},
                                         {"compression", "zstd-20", "zstd-1..zstd-19"},
                                         {"compression", "zstd-0", "zstd-1..zstd-19"},
                                         {"compression", "zstd-1x", "zstd-1..zstd-19"},
                                         // long enough to overflow a naive parse
                                         {"compression", "zstd-99999999999", "zstd-1..zstd-19"},
                                         {"recordsize", "3K", "power of two"},
                                         {"recordsize", "2M", "power of two"},
                                         {"recordsize", "12KB", "unknown unit"},
                                         {"atime", "yes", "relatime"},
                                         {"readonly", "1", "on, off"},
                                         {"copies", "4", "1, 2, 3"},
                                         {"sync", "sometimes", "standard, always, disabled"},
                                         {"snapdir", "shown", "hidden, visible"},
                                         {"quota", "-1", "quota"},
                                         {"quota", "lots", "quota"},
                                         {"used", "1", "read-only"},
                                         {"mountpoint", "/x", "read-only"},
                                         {"colour", "red", "unknown property"}}) {
    INFO(bad.name << "=" << bad.value);
    Status st = t.admin->Set("tank/a", {bad.name, bad.value});
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(st.message(), Catch::Contains(bad.says));
    CHECK(t.admin->Create("tank/n", false, {{bad.name, bad.value}}).code() ==
          StatusCode::kInvalidArgument);
  }
  CHECK(t.Names() == std::vector<std::string>{"tank", "tank/a"});
  CHECK(t.Prop("tank/a", "compression").source == "default");
  CHECK(t.admin->Get("tank/a", {"colour"}).status().code() == StatusCode::kInvalidArgument);
  CHECK(t.admin->Inherit("tank/a", "used").code() == StatusCode::kInvalidArgument);
  // Created with properties: all or nothing.
  REQUIRE(t.admin->Create("tank/p", false, {{"compression", "off"}, {"quota", "1.5G"}}).ok());
  CHECK(t.Prop("tank/p", "compression").source == "local");
  CHECK(t.Prop("tank/p", "quota").value == std::to_string(uint64_t{3} << 29));
}

TEST_CASE("Byte counts take binary units and fractions", "[dataset]") {
  CHECK(*util::ParseBytes("4096") == 4096);
  CHECK(*util::ParseBytes("128K") == 131072);
  CHECK(*util::ParseBytes("128KiB") == 131072);
  CHECK(*util::ParseBytes("1.5G") == (uint64_t{3} << 29));
  CHECK(*util::ParseBytes("2 m") == (uint64_t{2} << 20));
  CHECK(*util::ParseBytes("15E") == (uint64_t{15} << 60));
  CHECK(!util::ParseBytes("16E").ok());
  CHECK(!util::ParseBytes("17E").ok());
  CHECK(!util::ParseBytes("1KB").ok());
  CHECK(!util::ParseBytes("1.5").ok());
  CHECK(!util::ParseBytes("").ok());
  CHECK(!util::ParseBytes("K").ok());
  CHECK(util::FormatBytes(131072) == "128K");
  CHECK(util::FormatBytes(1000) == "1000");
  CHECK(util::FormatBytes(uint64_t{3} << 29) == "1.50G");
}

TEST_CASE("Property watchers hear of changes to a dataset and its descendants", "[dataset]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/a/b", true, {}).ok());
  std::map<uint64_t, DatasetProps> seen;
  const uint64_t h =
      t.pool->WatchProperties([&](uint64_t id, const DatasetProps& p) { seen[id] = p; });
  REQUIRE(t.admin->Set("tank/a", {"recordsize", "16K"}).ok());
  const uint64_t a = *t.pool->DatasetId("tank/a"), b = *t.pool->DatasetId("tank/a/b");
  REQUIRE(seen.count(a));
  REQUIRE(seen.count(b));
  CHECK(seen[b].recordsize == 16384);
  seen.clear();
  REQUIRE(t.admin->Set("tank/a", {"quota", "1G"}).ok());  // not inherited: a alone
  CHECK(seen.count(a) == 1);
  CHECK(seen.count(b) == 0);
  t.pool->UnwatchProperties(h);
  seen.clear();
  REQUIRE(t.admin->Set("tank/a", {"atime", "on"}).ok());
  CHECK(seen.empty());
}

TEST_CASE("Referenced follows a dataset's writes; destroy gives the space back with no leak",
          "[dataset][space]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/d", false, {{"compression", "off"}}).ok());
  const DatasetInfo before = t.Info("tank/d");
  const uint64_t free_before = t.pool->Stats().space.free;
  constexpr size_t kBytes = 8 << 20;
  // Compression is per object in the dmu; random bytes do not compress anyway.
  t.Write("tank/d", Pattern(7, kBytes));
  const DatasetInfo after = t.Info("tank/d");
  INFO("referenced " << before.referenced << " -> " << after.referenced);
  CHECK(after.referenced >= before.referenced + kBytes);
  CHECK(after.referenced <= before.referenced + kBytes + (1 << 20));  // plus its metadata
  CHECK(after.objects == before.objects + 1);
  CHECK(after.compressratio == Approx(1.0).epsilon(0.05));
  // used of the root counts its child's.
  CHECK(t.Info("tank").used >= t.Info("tank").referenced + after.used);
  {
    CheckReport r = t.Check();
    CHECK(r.ok());
  }
  // The totals persist in the root block.
  CHECK(t.Info("tank/d").referenced == after.referenced);
  REQUIRE(t.admin->Destroy("tank/d", false).ok());
  // Frees become allocatable two txgs later.
  for (int i = 0; i < 3; i++) {
    t.Write("tank", "x");
  }
  CheckReport r = t.Check();
  CHECK(r.ok());
  const uint64_t free_after = t.pool->Stats().space.free;
  CHECK(free_after + (1 << 20) >= free_before);
}

TEST_CASE("A dataset created, written and destroyed in one txg leaves no trace",
          "[dataset][space]") {
  TestPool t;
  REQUIRE(t.pool->CreateDataset("tank/brief", {}, false).ok());
  dmu::ObjectSet* os = t.pool->dataset("tank/brief");
  REQUIRE(os != nullptr);
  {
    dmu::Tx tx(t.pool->assigner());
    REQUIRE(tx.Assign().ok());
    auto id = os->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    REQUIRE(os->Write(tx, *id, 0, Pattern(3, 300000)).ok());
    tx.Commit();
  }
  auto t_destroy = t.pool->DestroyDataset("tank/brief", false);
  REQUIRE(t_destroy.ok());
  REQUIRE(t.pool->dataset("tank/brief") == nullptr);
  REQUIRE(t.pool->WaitSynced(*t_destroy).ok());
  CHECK(t.Names() == std::vector<std::string>{"tank"});
  CheckReport r = t.Check();
  CHECK(r.ok());
  CHECK(r.datasets == 1);
}

TEST_CASE("Compressible data shows a compression ratio", "[dataset][space]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/c", false, {}).ok());
  t.Write("tank/c", std::string(4 << 20, 'a'));
  const DatasetInfo info = t.Info("tank/c");
  CHECK(info.compressratio > 4.0);
  CHECK(info.referenced < (1 << 20));
}

TEST_CASE("A reservation reduces the others' available space and is refused when too big",
          "[dataset][space]") {
  TestPool t;
  REQUIRE(t.admin->Create("tank/r", false, {}).ok());
  REQUIRE(t.admin->Create("tank/o", false, {}).ok());
  const uint64_t avail = t.Info("tank/o").available;
  REQUIRE(t.admin->Set("tank/r", {"reservation", "16M"}).ok());
  const DatasetInfo r = t.Info("tank/r"), o = t.Info("tank/o");
  CHECK(r.used >= (16u << 20));
  CHECK(o.available + (15u << 20) <= avail);
  CHECK(r.available + (1u << 20) >= avail);  // its own reservation stays available to it
  CHECK(t.Info("tank").used >= (16u << 20));
  CHECK(t.admin->Set("tank/o", {"reservation", "1T"}).code() == StatusCode::kNoSpace);
  CHECK(t.Prop("tank/o", "reservation").value == "none");
  // A quota caps available; one below used is refused.
  REQUIRE(t.admin->Set("tank/o", {"quota", "4M"}).ok());
  CHECK(t.Info("tank/o").available <= (4u << 20));
  REQUIRE(t.admin->Set("tank/r", {"quota", "1G"}).ok());
  CHECK(t.admin->Set("tank/r", {"quota", "1M"}).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("OfflinePool administers datasets over the files and exports on Close", "[dataset]") {
  TempDir dir;
  const std::vector<std::string> paths{dir / "v0"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  {
    auto off = OfflinePool::Open(paths);
    INFO(off.status().ToString());
    REQUIRE(off.ok());
    CHECK((*off)->name() == "tank");
    REQUIRE((*off)->datasets().Create("tank/a/b", true, {{"atime", "on"}}).ok());
    CHECK(OfflinePool::Open(paths).status().code() == StatusCode::kBusy);
    REQUIRE((*off)->Close().ok());
    REQUIRE((*off)->Close().ok());
  }
  auto off = OfflinePool::Open(paths);
  REQUIRE(off.ok());
  auto l = (*off)->datasets().List("", true);
  REQUIRE(l.ok());
  REQUIRE(l->size() == 3);
  CHECK((*l)[2].name == "tank/a/b");
  auto g = (*off)->datasets().Get("tank/a/b", {"atime"});
  REQUIRE(g.ok());
  CHECK((*g)[0].value == "on");
  CHECK((*g)[0].source == "local");
}

TEST_CASE("ValidateDatasetPath says what is wrong with a name", "[dataset]") {
  CHECK(ValidateDatasetPath("tank").ok());
  CHECK(ValidateDatasetPath("tank/home/alice").ok());
  CHECK(ValidateDatasetPath("").code() == StatusCode::kInvalidArgument);
  CHECK(ValidateDatasetPath("tank//a").code() == StatusCode::kInvalidArgument);
  CHECK(ValidateDatasetPath("tank/a/").code() == StatusCode::kInvalidArgument);
  CHECK_THAT(ValidateDatasetPath("tank/a%b").message(), Catch::Contains("'%'"));
  CHECK_THAT(ValidateDatasetPath("tank/..").message(), Catch::Contains(".."));
  CHECK(ValidateDatasetPath("tank/" + std::string(256, 'x')).code() ==
        StatusCode::kInvalidArgument);
  std::string longname = "tank";
  while (longname.size() <= 1024) longname += "/" + std::string(100, 'y');
  CHECK(ValidateDatasetPath(longname).code() == StatusCode::kInvalidArgument);
}

// The pool directory's tree, round trip and damage.
PoolDirectory SampleDirectory() {
  PoolDirectory d;
  d.next_dataset_id = 5;
  auto entry = [](uint64_t id, uint64_t parent, std::string name) {
    DatasetEntry e;
    e.id = id;
    e.parent = parent;
    e.created = Txg(id);
    e.creation_time = 1700000000 + int64_t(id);
    e.name = std::move(name);
    return e;
  };
  d.datasets.push_back(entry(1, 0, "tank"));
  d.datasets.push_back(entry(2, 1, "home"));
  d.datasets.push_back(entry(3, 2, "alice"));
  d.datasets.push_back(entry(4, 1, "alice"));  // the same name under another parent
  d.datasets[1].props = {{"compression", "zstd-3"}, {"quota", "1073741824"}};
  return d;
}

TEST_CASE("The pool directory's dataset tree round-trips", "[dataset][phys]") {
  const PoolDirectory d = SampleDirectory();
  for (zio::BpFormat format : {zio::BpFormat::kV1, zio::BpFormat::kV2}) {
    auto back = DecodePoolDirectory(EncodePoolDirectory(d, format), format);
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(back->datasets == d.datasets);
    CHECK(back->next_dataset_id == d.next_dataset_id);
  }
}

TEST_CASE("The pool directory decoder refuses a damaged dataset tree, saying what",
          "[dataset][phys]") {
  auto refused = [](PoolDirectory d, const std::string& says) {
    auto r = DecodePoolDirectory(EncodePoolDirectory(d, zio::BpFormat::kV2), zio::BpFormat::kV2);
    INFO(says);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK_THAT(r.status().message(), Catch::Contains(says));
  };
  PoolDirectory d = SampleDirectory();
  d.datasets[2].parent = 9;
  refused(d, "unknown parent 9");
  d = SampleDirectory();
  d.datasets[1].parent = 9;  // home's parent unknown, met first as alice's ancestor
  std::swap(d.datasets[1], d.datasets[2]);
  refused(d, "unknown parent 9");
  d = SampleDirectory();
  d.datasets[1].parent = 3;  // home under alice under home
  refused(d, "cycle");
  d = SampleDirectory();
  d.datasets[2].parent = 2;
  d.datasets[2].name = "home";
  d.datasets[3].parent = 2;
  d.datasets[3].name = "home";
  refused(d, "repeats a name");
  d = SampleDirectory();
  d.datasets[2].parent = 0;
  refused(d, "exactly one root");
  d = SampleDirectory();
  d.datasets[1].props["compression"] = "gzip";
  refused(d, "compression");
  d = SampleDirectory();
  d.datasets[1].props["compression"] = std::string("zstd-3\x05\0\0\0\0\0\xe2\xff\0\0", 16);
  refused(d, "compression");
  d = SampleDirectory();
  d.datasets[1].props["recordsize"] = "128K";  // not the stored form
  refused(d, "stored form");
  d = SampleDirectory();
  d.datasets[1].props["used"] = "1";
  refused(d, "not a settable property");
  d = SampleDirectory();
  d.datasets[1].name = "a@b";
  refused(d, "bad name");
  // Truncated anywhere: refused, never a crash.
  const std::string bytes = EncodePoolDirectory(SampleDirectory(), zio::BpFormat::kV2);
  for (size_t n = 0; n < bytes.size(); n++)
    CHECK(!DecodePoolDirectory(std::string_view(bytes).substr(0, n), zio::BpFormat::kV2).ok());
}

}  // namespace
}  // namespace poolfs::core::pool
