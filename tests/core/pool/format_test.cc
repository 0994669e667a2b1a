// On-disk formats and copies at the pool level: a pool keeps the format it
// was created with (format 1 pools from older builds still import and take
// changes, one copy per block; copies above 1 are refused there), and in a
// format 2 pool every block has the copies its kind calls for: data the
// dataset's copies property (live), metadata one more, the MOS three.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "check_test_util.h"
#include "pool/check.h"
#include "pool/pool.h"
#include "vdev/file_device.h"
#include "vdev/label.h"

namespace poolfs::core::pool {
namespace {

using check_test::kFileSize;
using check_test::Pattern;
using check_test::QuietOptions;
using check_test::TempDir;

std::unique_ptr<Pool> Import(const std::vector<std::string>& paths) {
  auto p = Pool::Import(paths, QuietOptions());
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return std::move(p).value();
}

// Writes `data` to a new object of dataset `name` and syncs; returns its id.
ObjectId WriteObject(Pool& p, std::string_view name, const std::string& data) {
  dmu::ObjectSet* os = p.dataset(name);
  REQUIRE(os != nullptr);
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  auto id = os->Create(tx, dmu::ObjectType::kPlain, 4096);
  REQUIRE(id.ok());
  REQUIRE(os->Write(tx, *id, 0, data).ok());
  tx.Commit();
  REQUIRE(p.WaitSynced().ok());
  return *id;
}

// Every block the checker walks, by dataset ("" for the MOS), and the
// report.
std::vector<CheckedBlock> Blocks(const std::vector<std::string>& paths, CheckReport* report) {
  std::vector<std::unique_ptr<vdev::FileDevice>> files;
  std::vector<vdev::BlockDevice*> devs;
  for (const std::string& path : paths) {
    auto f = vdev::FileDevice::Open(path, {true, false});
    REQUIRE(f.ok());
    devs.push_back(f->get());
    files.push_back(std::move(f).value());
  }
  std::vector<CheckedBlock> out;
  auto r = CheckDevices(devs, [&](const CheckedBlock& b) { out.push_back(b); });
  REQUIRE(r.ok());
  *report = std::move(r).value();
  return out;
}

TEST_CASE("A format 1 pool keeps its format, one copy per block, and refuses more copies",
          "[pool][format]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  CreateOptions co{"old"};
  co.format_version = 1;
  REQUIRE(Pool::Create(paths, kFileSize, co).ok());
  ObjectId id;
  {
    auto p = Import(paths);
    id = WriteObject(*p, "old", Pattern(1, 300000));
    REQUIRE(p->CreateDataset("old/child", {}, false).ok());
    auto refused = p->SetProperty("old", "copies", "2");
    REQUIRE(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(refused.status().message(), Catch::Contains("format 1"));
    refused = p->CreateDataset("old/more", {{"copies", "3"}}, false);
    REQUIRE(refused.status().code() == StatusCode::kInvalidArgument);
    REQUIRE(p->SetProperty("old", "copies", "1").ok());
    REQUIRE(p->Export().ok());
  }
  auto p = Import(paths);
  REQUIRE(p->root_dataset()->Read(id, 0, 1 << 20).value() == Pattern(1, 300000));
  REQUIRE(p->Export().ok());
  // Its labels and every uberblock still say format 1; every block has one copy.
  for (const std::string& path : paths) {
    auto f = vdev::FileDevice::Open(path, {true, false});
    REQUIRE(f.ok());
    auto info = vdev::ReadLabels(**f);
    REQUIRE(info.ok());
    REQUIRE(info->header.version == 1);
    for (const auto& u : info->uberblocks) REQUIRE(u.ub.version == 1);
  }
  CheckReport report;
  for (const CheckedBlock& b : Blocks(paths, &report)) REQUIRE(b.bp.copies() == 1);
  INFO(report.Summary());
  REQUIRE(report.ok());
}

TEST_CASE("Blocks get the copies their kind calls for, and copies applies live", "[pool][format]") {
  TempDir dir;
  std::vector<std::string> paths = {dir / "v0", dir / "v1"};
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  ObjectId two, three;
  {
    auto p = Import(paths);
    REQUIRE(p->CreateDataset("tank/two", {{"copies", "2"}}, false).ok());
    REQUIRE(p->CreateDataset("tank/two/below", {}, false).ok());  // inherits 2
    WriteObject(*p, "tank", Pattern(1, 200000));
    two = WriteObject(*p, "tank/two/below", Pattern(2, 200000));
    REQUIRE(p->SetProperty("tank", "copies", "3").ok());  // blocks written from now on
    three = WriteObject(*p, "tank", Pattern(3, 200000));
    REQUIRE(p->Export().ok());
  }
  CheckReport report;
  std::map<std::string, int> seen;
  for (const CheckedBlock& b : Blocks(paths, &report)) {
    INFO(b.dataset << " object " << b.object << " L" << int(b.level) << ": " << b.bp.ToString());
    int want;
    if (b.mos) {
      want = 3;
    } else if (b.object_type == dmu::ObjectType::kPlain && b.level == 0) {
      want = b.dataset == "tank/two/below" ? 2 : b.object == three.value() ? 3 : 1;
      seen[b.dataset + (b.object == three.value() ? "+" : "")]++;
    } else {
      // Metadata: one more than the data's copies when it was written.
      REQUIRE(b.bp.copies() >= 2);
      continue;
    }
    REQUIRE(b.bp.copies() == want);
  }
  REQUIRE(seen["tank"] > 0);
  REQUIRE(seen["tank+"] > 0);
  REQUIRE(seen["tank/two/below"] > 0);
  INFO(report.Summary());
  REQUIRE(report.ok());
  // The space figures count every copy.
  auto p = Import(paths);
  auto figures = p->ListDatasets("tank", true);
  REQUIRE(figures.ok());
  for (const DatasetFigures& f : *figures)
    if (f.name == "tank/two/below") REQUIRE(f.referenced >= 2 * 200000);
  REQUIRE(p->dataset("tank/two/below")->Read(two, 0, 1 << 20).value() == Pattern(2, 200000));
  REQUIRE(p->Export().ok());
}

}  // namespace
}  // namespace poolfs::core::pool
