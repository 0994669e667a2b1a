// Metadata survives a bad block: a pool of 100 files, damaged with 64 KiB of
// random bytes at each of 20 places spread over what it stores (a fresh copy
// of the pool each time), still mounts; every directory lists whole, and
// every file reads back intact, or fails with IOError when its own data was
// hit. Metadata is stored twice (the MOS three times), so only a file's data
// can be lost to one bad extent; and a scrub then leaves nothing for the
// check to report but the data blocks that had no other copy.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pool/check.h"
#include "posix_fixture.h"
#include "vdev/file_device.h"

namespace poolfs::core::posix::testing {
namespace {

std::string Content(int i) {
  std::mt19937_64 rng(uint64_t(i) * 31 + 7);
  std::string s(size_t(1000 + (i % 10) * 9000 + (i % 3) * 70000), '\0');
  for (char& c : s) c = char('a' + rng() % 26);  // compresses a little
  return s;
}

std::string FileName(int i) { return "d" + std::to_string(i % 4) + "/f" + std::to_string(i); }

// Writes 64 KiB of random bytes at `offset` of the file at `path`.
void Damage(const std::string& path, uint64_t offset, uint64_t seed) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f.good());
  std::mt19937_64 rng(seed);
  std::string junk(64 * 1024, '\0');
  for (char& c : junk) c = char(rng());
  f.seekp(std::streamoff(offset));
  f.write(junk.data(), std::streamsize(junk.size()));
  REQUIRE(f.good());
}

TEST_CASE("One damaged extent loses at most the data it held: metadata has a second copy",
          "[posix][redundancy]") {
  FsFixture f(uint64_t{256} << 20);
  uint64_t dirs[4];
  for (int d = 0; d < 4; d++) dirs[d] = f.MustMkdir(kRootIno, "d" + std::to_string(d)).ino;
  for (int i = 0; i < 100; i++) {
    Attr a = f.MustCreate(dirs[i % 4], "f" + std::to_string(i));
    f.MustWrite(a.ino, 0, Content(i));
  }
  f.Unmount();
  const std::string pristine = f.path + ".pristine";
  std::filesystem::copy_file(f.path, pristine);

  // Where each file's data blocks lie, and the span every block lies in.
  std::map<int, std::vector<space::Dva>> data_of;  // by file number
  uint64_t lo = ~uint64_t{0}, hi = 0;
  {
    auto dev = vdev::FileDevice::Open(pristine, {true, false});
    REQUIRE(dev.ok());
    std::map<uint64_t, int> file_of_object;
    std::vector<pool::CheckedBlock> blocks;
    auto report =
        pool::CheckDevices({dev->get()}, [&](const pool::CheckedBlock& b) { blocks.push_back(b); });
    REQUIRE(report.ok());
    REQUIRE(report->ok());
    // Objects of the files: created in order after the root, master, unlinked
    // set and 4 directories, so the file numbers follow the object ids.
    for (const pool::CheckedBlock& b : blocks) {
      for (int c = 0; c < b.bp.copies(); c++) {
        lo = std::min(lo, b.bp.copy(c).offset);
        hi = std::max(hi, b.bp.copy(c).offset + b.bp.copy(c).size);
      }
      if (!b.mos && b.object_type == dmu::ObjectType::kPlain && b.level == 0 && b.object >= 8)
        for (int c = 0; c < b.bp.copies(); c++) data_of[int(b.object - 8)].push_back(b.bp.copy(c));
    }
    REQUIRE(data_of.size() == 100);
  }

  int hits_on_data = 0;
  for (int k = 0; k < 20; k++) {
    const uint64_t offset = (lo + (hi - lo) * uint64_t(k) / 19) & ~uint64_t{4095};
    std::filesystem::copy_file(pristine, f.path, std::filesystem::copy_options::overwrite_existing);
    Damage(f.path, offset, uint64_t(k));
    INFO("64 KiB of damage at " << offset);
    auto mounted = Filesystem::Mount({f.path}, f.options);
    INFO(mounted.status().ToString());
    REQUIRE(mounted.ok());
    f.fs = std::move(mounted).value();
    for (int d = 0; d < 4; d++) {
      std::vector<std::string> names = f.List(dirs[d]);
      REQUIRE(names.size() == 25);
    }
    for (int i = 0; i < 100; i++) {
      bool hit = false;
      for (const space::Dva& d : data_of[i])
        hit |= d.offset < offset + 64 * 1024 && offset < d.offset + d.size;
      auto a = f.fs->Lookup(RootCreds(), dirs[i % 4], "f" + std::to_string(i));
      INFO(FileName(i) << ": " << a.status().ToString());
      REQUIRE(a.ok());
      std::string got;
      Status st = f.fs->Read(a->ino, 0, 1 << 20, &got);
      if (hit && !st.ok()) {
        REQUIRE(st.IsCorruption());
        hits_on_data++;
      } else {
        INFO(st.ToString());
        REQUIRE(st.ok());
        REQUIRE(got == Content(i));
      }
      f.fs->Forget(a->ino, 1);
    }
    // A scrub rewrites every bad copy that has a good twin: afterwards the
    // check finds nothing but data blocks that had no other copy.
    REQUIRE(f.fs->StartScrub().ok());
    for (int i = 0; i < 3000 && f.fs->GetStatus().scrub.state == ScrubStatus::State::kRunning;
         i++)  // a bound against hanging, not a timing assertion
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const ScrubStatus scrub = f.fs->GetStatus().scrub;
    REQUIRE(scrub.state == ScrubStatus::State::kFinished);
    f.Unmount();
    auto report = CheckPool({f.path});
    REQUIRE(report.ok());
    for (const CheckProblem& p : report->problems) {
      INFO(p.where << ": " << p.what);
      std::smatch m;
      REQUIRE(std::regex_search(p.where, m, std::regex("^dataset '[^']*' object ([0-9]+) L0 ")));
      const int file = std::stoi(m[1]) - 8;
      REQUIRE(file >= 0);
      REQUIRE(file < 100);
      bool hit = false;
      for (const space::Dva& d : data_of[file])
        hit |= d.offset < offset + 64 * 1024 && offset < d.offset + d.size;
      REQUIRE(hit);
    }
    REQUIRE(report->problems.size() == scrub.errors);
  }
  // The 20 places hit data as well as metadata.
  CHECK(hits_on_data > 0);
}

}  // namespace
}  // namespace poolfs::core::posix::testing
