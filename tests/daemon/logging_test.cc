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

// The file name LogFilePath gives `pool_file`, without its folder.
std::string LogFileName(const std::string& pool_file) {
  const std::string path = LogFilePath(pool_file);
  return path.substr(path.rfind('/') + 1);
}

TEST_CASE("LogFilePath follows XDG_STATE_HOME and falls back to HOME") {
  const std::string name = LogFileName("/home/u/tank.pool");
  {
    ScopedEnv state("XDG_STATE_HOME", "/var/state");
    CHECK(LogFilePath("/home/u/tank.pool") == "/var/state/poolfs/" + name);
  }
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv state("XDG_STATE_HOME", std::nullopt);
    CHECK(LogFilePath("/home/u/tank.pool") == "/home/u/.local/state/poolfs/" + name);
  }
  ScopedEnv relative("XDG_STATE_HOME", "relative/state");  // not absolute: ignored
  CHECK(LogFilePath("/home/u/tank.pool") == "/home/u/.local/state/poolfs/" + name);
}

TEST_CASE("two pool files of one name in different folders log to files of their own") {
  ScopedEnv state("XDG_STATE_HOME", "/var/state");
  const std::string a = LogFileName("/home/u/a/tank.pool");
  const std::string b = LogFileName("/home/u/b/tank.pool");
  CHECK(a != b);
  // The stem, a dash, 8 hex digits: the file still says whose log it is.
  for (const std::string& name : {a, b}) {
    CHECK(name.size() == std::string("tank-12345678.log").size());
    CHECK(name.starts_with("tank-"));
    CHECK(name.ends_with(".log"));
    CHECK(name.substr(5, 8).find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  CHECK(LogFileName("/home/u/a/tank.pool") == a);  // the same pool, the same log
  CHECK(LogName("/home/u/a/tank.pool") == "tank");
  CHECK(LogName("/") == "pool");
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
  const std::string log = ReadFile(LogFilePath("tank"));
  CHECK(LogFilePath("tank").starts_with(dir / "state/poolfs/tank-"));
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
  const std::string log = ReadFile(LogFilePath("p"));
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
