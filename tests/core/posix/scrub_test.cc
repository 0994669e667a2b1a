// The pool's scrub through a mount: a file whose only copy of a block is
// damaged is listed by its path (in the root dataset and in a child
// dataset of the tree), a damaged copy with a good twin is repaired and is
// no error, and starting and stopping say when a scrub runs or does not.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pool/check.h"
#include "posix_fixture.h"
#include "vdev/file_device.h"

namespace poolfs::core::posix::testing {
namespace {

std::string Noise(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = char(rng());  // incompressible: stored as written
  return s;
}

// Every block of the (unmounted) pool file, by the checker's walk.
std::vector<pool::CheckedBlock> PoolBlocks(const std::string& path) {
  auto dev = vdev::FileDevice::Open(path, {true, false});
  REQUIRE(dev.ok());
  std::vector<pool::CheckedBlock> blocks;
  auto report =
      pool::CheckDevices({dev->get()}, [&](const pool::CheckedBlock& b) { blocks.push_back(b); });
  REQUIRE(report.ok());
  REQUIRE(report->ok());
  return blocks;
}

// The first level-0 block of object `object` of dataset `dataset`.
const pool::CheckedBlock* DataBlock(const std::vector<pool::CheckedBlock>& blocks,
                                    const std::string& dataset, uint64_t object) {
  for (const pool::CheckedBlock& b : blocks)
    if (!b.mos && b.dataset == dataset && b.object == object && b.level == 0) return &b;
  return nullptr;
}

// Flips a byte of copy `copy` of `bp` in the pool file.
void DamageCopy(const std::string& path, const zio::BlockPtr& bp, int copy) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f.good());
  const std::streamoff at = std::streamoff(bp.copy(copy).offset + 7);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = char(c ^ 0x21);
  f.seekp(at);
  f.write(&c, 1);
  REQUIRE(f.good());
}

// Starts a scrub and waits for it to end; its state then.
ScrubStatus Scrub(Filesystem& fs) {
  Status st = fs.StartScrub();
  INFO(st.ToString());
  REQUIRE(st.ok());
  for (int i = 0; i < 6000; i++) {  // a bound against hanging, not a timing assertion
    ScrubStatus s = fs.GetStatus().scrub;
    if (s.state != ScrubStatus::State::kRunning) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("the scrub did not end");
  return {};
}

std::vector<std::string> Wheres(const ScrubStatus& s) {
  std::vector<std::string> out;
  for (const ScrubStatus::Error& e : s.error_list) out.push_back(e.where);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("A scrub lists by its path each file whose only copy of a block is damaged",
          "[posix][scrub]") {
  FsFixture f;
  REQUIRE(f.fs->datasets()->Create("pool/ds", false, {}).ok());
  CHECK(f.fs->GetStatus().scrub.state == ScrubStatus::State::kNone);
  CHECK(f.fs->StopScrub().code() == StatusCode::kNotFound);

  const uint64_t d1 = f.MustMkdir(kRootIno, "d1").ino;
  const uint64_t d2 = f.MustMkdir(d1, "d2").ino;
  const Attr victim = f.MustCreate(d2, "victim");
  f.MustWrite(victim.ino, 0, Noise(1, 300000));
  const Attr intact = f.MustCreate(d1, "intact");
  f.MustWrite(intact.ino, 0, Noise(2, 300000));
  // A second name elsewhere: either is a right answer.
  auto link = f.fs->Link(RootCreds(), victim.ino, kRootIno, "also-victim");
  REQUIRE(link.ok());
  const uint64_t ds = f.fs->Lookup(RootCreds(), kRootIno, "ds")->ino;
  const uint64_t sub = f.MustMkdir(ds, "sub").ino;
  const Attr other = f.MustCreate(sub, "other");
  f.MustWrite(other.ino, 0, Noise(3, 300000));
  f.Unmount();

  const std::vector<pool::CheckedBlock> blocks = PoolBlocks(f.path);
  const pool::CheckedBlock* a = DataBlock(blocks, "pool", victim.ino);
  const pool::CheckedBlock* b = DataBlock(blocks, "pool/ds", DatasetTreeFs::LocalOf(other.ino));
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(a->bp.copies() == 1);
  REQUIRE(b->bp.copies() == 1);
  DamageCopy(f.path, a->bp, 0);
  DamageCopy(f.path, b->bp, 0);

  f.Mount();
  const ScrubStatus s = Scrub(*f.fs);
  INFO("examined " << s.examined << " of " << s.total << ", " << s.blocks << " blocks");
  CHECK(s.state == ScrubStatus::State::kFinished);
  CHECK(s.start_time > 0);
  CHECK(s.end_time >= s.start_time);
  CHECK(s.examined > 0);
  CHECK(s.blocks > 0);
  CHECK(s.errors == 2);
  const std::vector<std::string> where = Wheres(s);
  REQUIRE(where.size() == 2);
  CHECK((where[0] == "pool/ds:/sub/other"));
  CHECK((where[1] == "pool:/d1/d2/victim" || where[1] == "pool:/also-victim"));
  // Nothing runs now: stopping says so.
  CHECK(f.fs->StopScrub().code() == StatusCode::kNotFound);

  // The pool keeps what the scrub found.
  f.Remount();
  const ScrubStatus again = f.fs->GetStatus().scrub;
  CHECK(again.state == ScrubStatus::State::kFinished);
  CHECK(again.errors == 2);
  CHECK(Wheres(again) == where);
}

TEST_CASE("A scrub repairs a damaged copy that has a good twin, and counts no error",
          "[posix][scrub]") {
  FsFixture f;
  REQUIRE(f.fs->datasets()->Create("pool/two", false, {{"copies", "2"}}).ok());
  const uint64_t two = f.fs->Lookup(RootCreds(), kRootIno, "two")->ino;
  const Attr file = f.MustCreate(two, "file");
  const std::string content = Noise(4, 300000);
  f.MustWrite(file.ino, 0, content);
  f.Unmount();

  const std::vector<pool::CheckedBlock> blocks = PoolBlocks(f.path);
  const pool::CheckedBlock* b = DataBlock(blocks, "pool/two", DatasetTreeFs::LocalOf(file.ino));
  REQUIRE(b != nullptr);
  REQUIRE(b->bp.copies() == 2);
  DamageCopy(f.path, b->bp, 1);

  f.Mount();
  const ScrubStatus s = Scrub(*f.fs);
  CHECK(s.state == ScrubStatus::State::kFinished);
  CHECK(s.repaired >= 1);
  CHECK(s.errors == 0);
  CHECK(s.error_list.empty());
  f.Unmount();
  PoolBlocks(f.path);  // it requires a healthy pool: both copies verify again
  f.Mount();
  CHECK(f.MustRead(file.ino, 0, content.size()) == content);
}

TEST_CASE("A scrub can be stopped, and a second one is refused while one runs", "[posix][scrub]") {
  FsFixture f(uint64_t{512} << 20);
  const Attr big = f.MustCreate(kRootIno, "big");
  for (int i = 0; i < 96; i++) f.MustWrite(big.ino, uint64_t(i) << 20, Noise(uint64_t(i), 1 << 20));
  f.Remount();  // written out, and out of the cache
  REQUIRE(f.fs->StartScrub().ok());
  const ScrubStatus running = f.fs->GetStatus().scrub;
  // 96 MiB take two rounds of at most 64 MiB with a pause between them:
  // still running unless this thread was kept waiting meanwhile.
  if (running.state == ScrubStatus::State::kRunning) {
    CHECK(f.fs->StartScrub().code() == StatusCode::kAlreadyExists);
    REQUIRE(f.fs->StopScrub().ok());
    const ScrubStatus stopped = f.fs->GetStatus().scrub;
    CHECK(stopped.state == ScrubStatus::State::kStopped);
    CHECK(stopped.end_time >= stopped.start_time);
  }
  CHECK(f.fs->StopScrub().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
