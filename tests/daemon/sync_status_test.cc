// What a user tuning sync sees: `poolfs tune txg.sync_threads=N` and SIGHUP
// resize the sync executor through LiveConfig (applied by the executor at
// the next txg boundary); `poolfs status` shows the last syncs; `poolfs
// iostat`'s counters round-trip and difference into lines.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "daemon/asio_executor.h"
#include "daemon/live_config.h"
#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::FakeFilesystem;
using testing::TempDir;
using testing::WriteFile;

// The whitespace-separated fields of `line`.
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// The fields of the line of `text` whose first field is `first`.
std::vector<std::string> LineStarting(const std::string& text, const std::string& first) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    std::vector<std::string> f = Fields(l);
    if (!f.empty() && f[0] == first) return f;
  }
  return {};
}

poolfs::FsStatus StatusWithSyncs() {
  poolfs::FsStatus s;
  s.pool = "tank";
  s.state = "online";
  s.syncs = 7;
  s.last_synced_txg = 17;
  for (uint64_t t = 11; t <= 17; t++) {
    s.recent_syncs.push_back({.txg = t,
                              .duration_ns = t * 1000000,
                              .dirty_bytes = 64 << 20,
                              .bytes_written = uint64_t{32} << 20,
                              .blocks_written = 256,
                              .threads = t < 15 ? 1u : 2u,
                              .datasets = 3,
                              .strand_busy_ns = {4000000, 5000000}});
  }
  s.sync_ns_total = 98000000;
  s.bytes_written = uint64_t{224} << 20;
  s.blocks_written = 1792;
  s.bytes_read = 4096;
  s.blocks_read = 1;
  s.objects_allocated = 40;
  s.objects_freed = 4;
  return s;
}

TEST_CASE("poolfs tune txg.sync_threads resizes the sync executor at the next sync") {
  FakeFilesystem fs;
  AsioExecutor exec(1, 2);
  LiveConfig live(config::Config(), "", &fs);
  live.UseExecutor(&exec);
  std::string note;
  REQUIRE(live.Tune("txg.sync_threads=2", &note).ok());
  CHECK(note.empty());  // live: nothing pending
  CHECK(live.Pending().empty());
  CHECK(live.Snapshot().values().daemon.sync_threads == 2);
  CHECK(exec.threads() == 1);  // not in the middle of anything: at the next boundary
  exec.BeginSync(2);
  CHECK(exec.threads() == 2);
  exec.Wait();
  REQUIRE(live.Tune("txg.sync_threads=1").ok());
  exec.BeginSync(2);
  CHECK(exec.threads() == 1);
  // 0: one per strand, from the pool's allocator count.
  REQUIRE(live.Tune("txg.sync_threads=0").ok());
  exec.BeginSync(3);
  CHECK(exec.threads() == 3);
  CHECK(exec.strands() == 3);
  exec.Wait();
}

TEST_CASE("A reload with a new txg.sync_threads resizes the executor") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "[txg]\nsync_threads = 2\n");
  FakeFilesystem fs;
  AsioExecutor exec(1, 2);
  LiveConfig live(config::Config(), file, &fs);
  live.UseExecutor(&exec);
  REQUIRE(live.Reload().ok());
  exec.BeginSync(2);
  CHECK(exec.threads() == 2);
  exec.Wait();
}

TEST_CASE("poolfs status shows the last five syncs") {
  const std::string text = RenderStatus(StatusWithSyncs(), config::Config(), "");
  INFO(text);
  const size_t at = text.find("recent syncs (newest last):\n");
  REQUIRE(at != std::string::npos);
  CHECK(text.find("busy per strand", at) != std::string::npos);
  const std::string syncs = text.substr(at);
  CHECK(LineStarting(syncs, "12").empty());  // only the last 5
  CHECK(LineStarting(syncs, "13") == std::vector<std::string>{"13", "13.0ms", "64.0MiB", "32.0MiB",
                                                              "256", "2462", "1", "4.0ms",
                                                              "5.0ms"});
  CHECK(LineStarting(syncs, "17").size() == 9);
  CHECK(LineStarting(syncs, "17")[6] == "2");  // threads in effect
}

TEST_CASE("poolfs iostat counters round-trip and difference into a line") {
  const poolfs::FsStatus s = StatusWithSyncs();
  auto cur = ParseIostatCounters(RenderIostatCounters(s));
  REQUIRE(cur.ok());
  CHECK(cur->syncs == 7);
  CHECK(cur->bytes_written == uint64_t{224} << 20);
  CHECK(cur->creates == 40);
  CHECK(cur->removes == 4);
  REQUIRE(cur->recent.size() == 7);
  // Since the mount: every sync; the longest took 17 ms.
  const std::string all = IostatLine(IostatSample(), *cur);
  CHECK(Fields(all) == std::vector<std::string>{"7", "224MiB", "1792", "4.00KiB", "1", "40", "4",
                                                "14.0ms", "17.0ms"});
  // An interval in which txgs 16 and 17 synced.
  IostatSample prev = *cur;
  prev.syncs = 5;
  prev.sync_ns = 98000000 - 33000000;
  prev.bytes_written = uint64_t{160} << 20;
  prev.blocks_written = 1280;
  prev.bytes_read = 4096;
  prev.blocks_read = 1;
  prev.creates = 30;
  prev.removes = 4;
  prev.last_synced_txg = 15;
  CHECK(Fields(IostatLine(prev, *cur)) ==
        std::vector<std::string>{"2", "64.0MiB", "512", "0B", "0", "10", "0", "16.5ms", "17.0ms"});
  // A quiet interval.
  CHECK(Fields(IostatLine(*cur, *cur)) ==
        std::vector<std::string>{"0", "0B", "0", "0B", "0", "0", "0", "-", "-"});
  CHECK(Fields(IostatHeader()).size() == Fields(all).size());
  CHECK(IostatHeader().find("sync-max") != std::string::npos);
  CHECK(!ParseIostatCounters("status text").ok());
}

}  // namespace
}  // namespace poolfs::daemon
