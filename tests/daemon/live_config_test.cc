// LiveConfig and HandleControlRequest against a fake Filesystem: reloads
// of a good file, a bad file and at-mount changes; `poolfs tune` values and
// their errors; the control requests; reload and tune at once.
#include "daemon/live_config.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "daemon/logging.h"
#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::FakeFilesystem;
using testing::TempDir;
using testing::WriteFile;

TEST_CASE("LiveConfig reload applies changed live tunables at once") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "[txg]\ntimeout_ms = 1000\ndirty_max_bytes = \"256MiB\"\n");
  FakeFilesystem fs;
  LiveConfig live(config::Config(), file, &fs);
  REQUIRE(live.Reload().ok());
  REQUIRE(fs.live_calls().size() == 1);
  CHECK(fs.live_calls()[0].txg.timeout_ms == 1000);
  CHECK(fs.live_calls()[0].txg.dirty_max_bytes == 256ull << 20);
  CHECK(live.Snapshot().values().core.txg.timeout_ms == 1000);
  CHECK(live.Snapshot().origin(*config::FindTunable("txg.timeout_ms")).find("poolfs.toml:2") !=
        std::string::npos);
  CHECK(live.Pending().empty());

  // Reloading the same file changes nothing and does not call SetLive again.
  REQUIRE(live.Reload().ok());
  CHECK(fs.live_calls().size() == 1);

  // A key removed from the file goes back to its default.
  WriteFile(file, "[txg]\ndirty_max_bytes = \"256MiB\"\n");
  REQUIRE(live.Reload().ok());
  REQUIRE(fs.live_calls().size() == 2);
  CHECK(fs.live_calls()[1].txg.timeout_ms == config::Tunables{}.core.txg.timeout_ms);
}

TEST_CASE("LiveConfig reload of a bad file keeps the running values") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "txg.timeout_ms = 1000\n");
  FakeFilesystem fs;
  LiveConfig live(config::Config(), file, &fs);
  REQUIRE(live.Reload().ok());
  const config::Tunables before = live.Snapshot().values();

  WriteFile(file, "txg.timeout_ms = 2000\ntxg.dirty_sync_percent = 400\n");
  const Status st = live.Reload();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("poolfs.toml:2") != std::string::npos);  // file and line
  CHECK(st.message().find("txg.dirty_sync_percent") != std::string::npos);
  CHECK(st.message().find("expected") != std::string::npos);
  CHECK(live.Snapshot().values() == before);  // not even the good line applied
  CHECK(fs.live_calls().size() == 1);

  WriteFile(file, "[txg\n");
  CHECK(live.Reload().code() == StatusCode::kInvalidArgument);
  std::filesystem::remove(file);
  CHECK(live.Reload().code() == StatusCode::kNotFound);
  CHECK(live.Snapshot().values() == before);
}

TEST_CASE("LiveConfig reload leaves at-mount tunables pending") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "alloc.allocators = 4\nfuse.threads = 8\n");
  FakeFilesystem fs;
  LiveConfig live(config::Config(), file, &fs);
  REQUIRE(live.Reload().ok());
  CHECK(fs.live_calls().empty());  // nothing live changed
  CHECK(live.Snapshot().values().core.space.allocators == 0);
  CHECK(live.Snapshot().values().daemon.fuse_threads == 0);
  const std::string pending = live.Pending();
  CHECK(pending.find("alloc.allocators: 0 -> 4 (at the next mount)") != std::string::npos);
  CHECK(pending.find("fuse.threads") != std::string::npos);

  // Back to the defaults in the file: nothing pending any more.
  WriteFile(file, "");
  REQUIRE(live.Reload().ok());
  CHECK(live.Pending().empty());
}

// Search paths under `dir` where no config file exists (yet).
config::ConfigSearchPaths EmptySearch(const TempDir& dir) {
  config::ConfigSearchPaths search;
  search.xdg_config_home = dir / "xdg";
  search.home = dir / "home";
  search.system_file = dir / "etc-poolfs.toml";
  return search;
}

TEST_CASE("LiveConfig without a config file reloads to the defaults") {
  TempDir dir;
  FakeFilesystem fs;
  auto tuned = config::ApplyAssignment(config::Config(), "txg.timeout_ms=900");
  REQUIRE(tuned.ok());
  LiveConfig live(*tuned, "", &fs, EmptySearch(dir));
  REQUIRE(live.Reload().ok());
  CHECK(live.Snapshot().values().core.txg.timeout_ms == config::Tunables{}.core.txg.timeout_ms);
  CHECK(fs.live_calls().size() == 1);
  CHECK(live.config_path().empty());
}

TEST_CASE("LiveConfig without a config file picks up one created later") {
  TempDir dir;
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "", &fs, EmptySearch(dir));
  std::filesystem::create_directories(dir / "xdg/poolfs");
  WriteFile(dir / "xdg/poolfs/poolfs.toml", "txg.timeout_ms = 1200\n");
  REQUIRE(live.Reload().ok());
  CHECK(live.Snapshot().values().core.txg.timeout_ms == 1200);
  CHECK(live.config_path() == dir / "xdg/poolfs/poolfs.toml");
  // From then on that file is the one reloads read.
  WriteFile(dir / "xdg/poolfs/poolfs.toml", "txg.timeout_ms = 1300\n");
  REQUIRE(live.Reload().ok());
  CHECK(live.Snapshot().values().core.txg.timeout_ms == 1300);
}

TEST_CASE("LiveConfig tune applies a live value at once") {
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "", &fs);
  std::string note = "stale";
  REQUIRE(live.Tune("txg.timeout_ms=1500", &note).ok());
  CHECK(note.empty());
  REQUIRE(fs.live_calls().size() == 1);
  CHECK(fs.live_calls()[0].txg.timeout_ms == 1500);
  CHECK(live.Snapshot().origin(*config::FindTunable("txg.timeout_ms")) == "poolfs tune");
  REQUIRE(live.Tune(" txg.dirty_max_bytes = 64MiB ").ok());
  CHECK(fs.live_calls().back().txg.dirty_max_bytes == 64ull << 20);
  CHECK(fs.live_calls().back().txg.timeout_ms == 1500);  // the earlier tune stays
}

TEST_CASE("LiveConfig tune of an at-mount tunable is accepted as pending") {
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "/etc/poolfs/poolfs.toml", &fs);
  std::string note;
  REQUIRE(live.Tune("alloc.allocators=4", &note).ok());
  CHECK(note.find("alloc.allocators: 0 -> 4 (at the next mount") != std::string::npos);
  CHECK(note.find("/etc/poolfs/poolfs.toml") != std::string::npos);
  CHECK(fs.live_calls().empty());
  CHECK(live.Snapshot().values().core.space.allocators == 0);
  CHECK(live.Pending().find("alloc.allocators") != std::string::npos);
  // A later live tune keeps the pending change and reports only itself.
  REQUIRE(live.Tune("txg.timeout_ms=800", &note).ok());
  CHECK(note.empty());
  CHECK(live.Pending().find("alloc.allocators") != std::string::npos);
}

TEST_CASE("LiveConfig tune of a pending at-mount tunable reports it against the running value") {
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "", &fs);
  std::string note;
  REQUIRE(live.Tune("fuse.threads=4", &note).ok());
  REQUIRE(live.Tune("fuse.threads=6", &note).ok());
  CHECK(note.starts_with("fuse.threads: 0 -> 6 (at the next mount"));
  CHECK(live.Pending() == "fuse.threads: 0 -> 6 (at the next mount)\n");
  // Back to the running value: nothing pending, nothing to note.
  REQUIRE(live.Tune("fuse.threads=0", &note).ok());
  CHECK(note.empty());
  CHECK(live.Pending().empty());
}

TEST_CASE("LiveConfig tune refuses bad assignments and changes nothing") {
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "", &fs);
  const Status unknown = live.Tune("txg.timout_ms=5");
  CHECK(unknown.code() == StatusCode::kInvalidArgument);
  CHECK(unknown.message().find("did you mean txg.timeout_ms") != std::string::npos);
  const Status range = live.Tune("txg.timeout_ms=0");
  CHECK(range.code() == StatusCode::kInvalidArgument);
  CHECK(range.message().find("expected") != std::string::npos);
  const Status no_equals = live.Tune("txg.timeout_ms");
  CHECK(no_equals.code() == StatusCode::kInvalidArgument);
  CHECK(no_equals.message().find("KEY=VALUE") != std::string::npos);
  const Status bad_enum = live.Tune("dmu.metadnode_backfill=sometimes");
  CHECK(bad_enum.message().find("legacy") != std::string::npos);  // lists the choices
  CHECK(live.Snapshot().values() == config::Tunables{});
  CHECK(fs.live_calls().empty());
}

TEST_CASE("LiveConfig tune of log.level changes the log level at once") {
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "", &fs);
  REQUIRE(live.Tune("log.level=debug").ok());
  CHECK(spdlog::get_level() == spdlog::level::debug);
  REQUIRE(live.Tune("log.level=warn").ok());
  CHECK(spdlog::get_level() == spdlog::level::warn);
  REQUIRE(live.Tune("log.level=info").ok());
  CHECK(spdlog::get_level() == spdlog::level::info);
}

TEST_CASE("HandleControlRequest serves status tune and reload") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "txg.timeout_ms = 3000\n");
  FakeFilesystem fs;
  LiveConfig live(config::Config(), file, &fs);

  CHECK(HandleControlRequest(live, fs, "reload") == "ok\n");
  CHECK(HandleControlRequest(live, fs, "tune txg.dirty_sync_percent=30") == "ok\n");
  const std::string refused = HandleControlRequest(live, fs, "tune txg.nope=1");
  CHECK(refused.starts_with("error: unknown key txg.nope"));
  CHECK(HandleControlRequest(live, fs, "tune alloc.allocators=2").find("at the next mount") !=
        std::string::npos);
  CHECK(HandleControlRequest(live, fs, "frobnicate").starts_with("error: unknown request"));
  CHECK(HandleControlRequest(live, fs, "ping") == "pong\n");

  const std::string status = HandleControlRequest(live, fs, "status\n");
  CHECK(status.find("pool:             tank") != std::string::npos);
  CHECK(status.find("online (mounted)") != std::string::npos);
  CHECK(status.find("last synced txg:  42") != std::string::npos);
  CHECK(status.find("1.50GiB used") != std::string::npos);
  CHECK(status.find("checksum errors:  0") != std::string::npos);
  CHECK(status.find("datasets:         1: tank") != std::string::npos);
  CHECK(status.find("from " + file) != std::string::npos);
  CHECK(status.find("txg.timeout_ms") != std::string::npos);
  CHECK(status.find("3000ms") != std::string::npos);
  CHECK(status.find("pending, at the next mount:\n  alloc.allocators: 0 -> 2") !=
        std::string::npos);
}

TEST_CASE("SetLive gets the core's tunables of the running values as they are") {
  FakeFilesystem fs;
  LiveConfig live(config::Config(), "", &fs);
  for (const char* a :
       {"txg.timeout_ms=1234", "txg.dirty_max_bytes=64MiB", "txg.dirty_sync_percent=33",
        "txg.delay_min_dirty_percent=70", "txg.delay_scale_ns=1000", "txg.delay_max_ns=2000000",
        "dmu.metadnode_backfill=legacy", "dmu.alloc_chunk=64", "arc.max_bytes=96MiB",
        "arc.cache_whole_reads=true", "alloc.df_max_search=1MiB"}) {
    INFO(a);
    REQUIRE(live.Tune(a).ok());
  }
  REQUIRE(!fs.live_calls().empty());
  const poolfs::CoreTunables sent = fs.live_calls().back();
  CHECK(sent == live.Snapshot().values().core);
  CHECK(sent.txg.timeout_ms == 1234);
  CHECK(sent.txg.dirty_max_bytes == 64ull << 20);
  CHECK(sent.objects.backfill == poolfs::BackfillMode::kLegacy);
  CHECK(sent.objects.chunk == 64);
  CHECK(sent.arc.max_bytes == 96ull << 20);
  CHECK(sent.cache_whole_reads);
  // alloc.df_max_search applies at the next mount: not sent.
  CHECK(sent.space == poolfs::SpaceOptions{});
  CHECK(live.Pending().find("alloc.df_max_search") != std::string::npos);
}

TEST_CASE("A live change the Filesystem refuses changes nothing and says why") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "txg.timeout_ms = 2000\n");
  FakeFilesystem fs;
  LiveConfig live(config::Config(), file, &fs);
  fs.RefuseLive(Status::InvalidArgument("the mount says no"));
  const Status tuned = live.Tune("txg.timeout_ms=1000");
  CHECK(tuned.code() == StatusCode::kInvalidArgument);
  CHECK(tuned.message().find("the mount says no") != std::string::npos);
  CHECK(live.Snapshot().values() == config::Tunables{});
  CHECK(live.Pending().empty());
  CHECK(HandleControlRequest(live, fs, "tune txg.timeout_ms=1000") == "error: the mount says no\n");
  CHECK(HandleControlRequest(live, fs, "reload") == "error: the mount says no\n");
  CHECK(live.Snapshot().values() == config::Tunables{});
  CHECK(fs.live_calls().empty());
  // Accepted again: the same reload goes through.
  fs.RefuseLive(Status::Ok());
  REQUIRE(live.Reload().ok());
  CHECK(live.Snapshot().values().core.txg.timeout_ms == 2000);
  REQUIRE(fs.live_calls().size() == 1);
  CHECK(fs.live_calls()[0].txg.timeout_ms == 2000);
}

TEST_CASE("FormatBytesHuman keeps three significant digits") {
  CHECK(FormatBytesHuman(0) == "0B");
  CHECK(FormatBytesHuman(1023) == "1023B");
  CHECK(FormatBytesHuman(1536) == "1.50KiB");
  CHECK(FormatBytesHuman(20ull << 30) == "20.0GiB");
  CHECK(FormatBytesHuman(300ull << 20) == "300MiB");
  CHECK(FormatBytesHuman(~0ull) == "16.0EiB");
}

TEST_CASE("LiveConfig survives reloads and tunes from two threads at once") {
  TempDir dir;
  const std::string file = dir / "poolfs.toml";
  WriteFile(file, "txg.timeout_ms = 1000\nalloc.allocators = 2\n");
  FakeFilesystem fs;
  LiveConfig live(config::Config(), file, &fs);
  spdlog::set_level(spdlog::level::warn);  // keep the output short
  // Catch's assertions are not thread-safe: the threads count failures.
  std::atomic<int> failures{0};
  std::thread reloader([&] {
    for (int i = 0; i < 200; i++)
      if (!live.Reload().ok()) failures++;
  });
  std::thread tuner([&] {
    for (int i = 0; i < 200; i++) {
      if (!live.Tune("txg.timeout_ms=" + std::to_string(2000 + i)).ok()) failures++;
      if (HandleControlRequest(live, fs, "status").find("tank") == std::string::npos) failures++;
    }
  });
  reloader.join();
  tuner.join();
  CHECK(failures.load() == 0);
  spdlog::set_level(spdlog::level::info);
  // Whichever came last, the value is one of the two sources' and the
  // at-mount change is pending.
  const uint64_t timeout = live.Snapshot().values().core.txg.timeout_ms;
  CHECK((timeout == 1000 || (timeout >= 2000 && timeout < 2200)));
  CHECK(live.Pending().find("alloc.allocators") != std::string::npos);
}

}  // namespace
}  // namespace poolfs::daemon
