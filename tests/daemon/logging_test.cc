// Logging: where the log file goes, what a line holds, the level set up and
// changed live, and clear errors.
#include "daemon/logging.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::ReadFile;
using testing::ScopedEnv;
using testing::TempDir;

// Puts back a plain stderr logger at info after each test.
struct RestoreLogger {
  ~RestoreLogger() { (void)SetupLogging(true, "test", "info"); }
};

TEST_CASE("LogFilePath follows XDG_STATE_HOME and falls back to HOME") {
  {
    ScopedEnv state("XDG_STATE_HOME", "/var/state");
    CHECK(LogFilePath("tank") == "/var/state/poolfs/tank.log");
  }
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv state("XDG_STATE_HOME", std::nullopt);
    CHECK(LogFilePath("tank") == "/home/u/.local/state/poolfs/tank.log");
  }
  ScopedEnv relative("XDG_STATE_HOME", "relative/state");  // not absolute: ignored
  CHECK(LogFilePath("tank") == "/home/u/.local/state/poolfs/tank.log");
}

TEST_CASE("SetupLogging in the background writes the pool's log file at its level") {
  RestoreLogger restore;
  TempDir dir;
  ScopedEnv state("XDG_STATE_HOME", dir / "state");
  REQUIRE(SetupLogging(false, "tank", "info").ok());
  spdlog::info("mounted on /mnt/x");
  spdlog::debug("txg 5 synced");
  SetLogLevel("debug");
  spdlog::debug("txg 6 synced");
  SetLogLevel("no-such-level");  // ignored
  spdlog::debug("txg 7 synced");
  const std::string log = ReadFile(dir / "state/poolfs/tank.log");
  CHECK(log.find("[info] tank: mounted on /mnt/x") != std::string::npos);
  CHECK(log.find("txg 5") == std::string::npos);
  CHECK(log.find("[debug] tank: txg 6 synced") != std::string::npos);
  CHECK(log.find("txg 7 synced") != std::string::npos);
  struct stat st;
  REQUIRE(stat((dir / "state/poolfs").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("SetupLogging appends to an existing log file") {
  RestoreLogger restore;
  TempDir dir;
  ScopedEnv state("XDG_STATE_HOME", dir.path());
  REQUIRE(SetupLogging(false, "p", "info").ok());
  spdlog::info("first mount");
  REQUIRE(SetupLogging(false, "p", "info").ok());
  spdlog::info("second mount");
  const std::string log = ReadFile(dir / "poolfs/p.log");
  CHECK(log.find("first mount") != std::string::npos);
  CHECK(log.find("second mount") != std::string::npos);
}

TEST_CASE("SetupLogging refuses an unknown level and an unusable folder") {
  RestoreLogger restore;
  const Status level = SetupLogging(true, "tank", "loud");
  CHECK(level.code() == StatusCode::kInvalidArgument);
  CHECK(level.message().find("'loud'") != std::string::npos);
  TempDir dir;
  testing::WriteFile(dir / "file", "not a folder");
  ScopedEnv state("XDG_STATE_HOME", dir / "file");
  const Status folder = SetupLogging(false, "tank", "info");
  CHECK(folder.code() == StatusCode::kIOError);
  CHECK(folder.message().find(dir / "file") != std::string::npos);
}

}  // namespace
}  // namespace poolfs::daemon
