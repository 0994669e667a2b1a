// The registry of mounted pools: one live entry per name, refused twice
// with the holder named, gone once released, ignored when its process died
// (the lock, not the file, decides), and pool names resolved to mount points.
#include "daemon/pool_registry.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

TEST_CASE("a registered pool is found by name until its registration goes") {
  TempDir runtime;
  ScopedEnv env("XDG_RUNTIME_DIR", runtime.path());
  auto reg = PoolRegistration::Register("tank", "/mnt/tank");
  REQUIRE(reg.ok());
  auto found = FindRegisteredPool("tank");
  REQUIRE(found.ok());
  REQUIRE(found->has_value());
  CHECK((*found)->name == "tank");
  CHECK((*found)->mountpoint == "/mnt/tank");
  CHECK((*found)->pid == getpid());
  auto other = FindRegisteredPool("other");
  REQUIRE(other.ok());
  CHECK_FALSE(other->has_value());
  auto resolved = ResolveMountTarget("tank");
  REQUIRE(resolved.ok());
  CHECK(*resolved == "/mnt/tank");
  CHECK(*ResolveMountTarget("./tank") == "./tank");  // a path is a path
  CHECK(*ResolveMountTarget("other") == "other");    // not a mounted pool: a path
  reg->reset();
  found = FindRegisteredPool("tank");
  REQUIRE(found.ok());
  CHECK_FALSE(found->has_value());
  CHECK(std::filesystem::is_empty(runtime.path() + "/poolfs"));
}

TEST_CASE("a second mount of a pool name is refused with the first one named") {
  TempDir runtime;
  ScopedEnv env("XDG_RUNTIME_DIR", runtime.path());
  auto first = PoolRegistration::Register("tank", "/mnt/a");
  REQUIRE(first.ok());
  // Another process: flock is per open file, so the child's open sees
  // ours held.
  const pid_t child = fork();
  if (child == 0) {
    auto second = PoolRegistration::Register("tank", "/mnt/b");
    const bool refused = !second.ok() && second.status().code() == StatusCode::kBusy &&
                         second.status().message().find("/mnt/a") != std::string::npos &&
                         second.status().holder_pid() == getppid();
    auto other = PoolRegistration::Register("pool2", "/mnt/c");
    _exit(refused && other.ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The child's pool2 went with it: its lock died with the process.
  auto list = ListRegisteredPools();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].name == "tank");
}

TEST_CASE("an entry left by a process that died counts as absent and is taken over") {
  TempDir runtime;
  ScopedEnv env("XDG_RUNTIME_DIR", runtime.path());
  const pid_t child = fork();
  if (child == 0) {
    auto reg = PoolRegistration::Register("tank", "/mnt/dead");
    if (!reg.ok()) _exit(1);
    reg->release();  // leak it: the file stays, as after SIGKILL
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE_FALSE(std::filesystem::is_empty(runtime.path() + "/poolfs"));
  auto found = FindRegisteredPool("tank");
  REQUIRE(found.ok());
  CHECK_FALSE(found->has_value());
  // What it said is still there to read, marked dead; the name resolves
  // to it only while a dead poolfs mount is there (none is).
  auto last = FindLastRegistration("tank");
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->mountpoint == "/mnt/dead");
  CHECK_FALSE((*last)->live);
  CHECK(*ResolveMountTarget("tank") == "tank");
  auto reg = PoolRegistration::Register("tank", "/mnt/new");
  REQUIRE(reg.ok());
  CHECK((*FindRegisteredPool("tank"))->mountpoint == "/mnt/new");
}

TEST_CASE("a pool name the registry cannot hold is refused") {
  TempDir runtime;
  ScopedEnv env("XDG_RUNTIME_DIR", runtime.path());
  CHECK(PoolRegistration::Register("", "/mnt").status().code() == StatusCode::kInvalidArgument);
  CHECK(PoolRegistration::Register("a/b", "/mnt").status().code() == StatusCode::kInvalidArgument);
  CHECK(PoolRegistration::Register("a", "/mnt\nx").status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace poolfs::daemon
