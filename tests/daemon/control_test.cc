// ControlServer and ControlCall: a round trip, the clear error when no
// daemon serves a mountpoint, one server per mountpoint, stale sockets, and
// refusal of another uid (when the tests run as root: fork + setuid).
#include "daemon/control.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

// A runtime folder and a mountpoint folder of the test's own.
struct ControlFixture {
  TempDir dir;
  ScopedEnv runtime{"XDG_RUNTIME_DIR", dir.path()};
  std::string mnt = dir / "mnt";
  ControlFixture() { std::filesystem::create_directory(mnt); }
};

TEST_CASE("ControlCall gets the handler's reply to its request") {
  ControlFixture f;
  std::atomic<int> calls{0};
  auto server = ControlServer::Start(f.mnt, [&calls](std::string_view request) {
    calls++;
    return "you said: " + std::string(request);
  });
  REQUIRE(server.ok());
  const std::string path = (*server)->socket_path();
  CHECK(path.starts_with(f.dir.path() + "/poolfs/mnt-"));
  struct stat st;
  REQUIRE(stat((f.dir.path() + "/poolfs").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  auto reply = ControlCall(f.mnt, "status");
  REQUIRE(reply.ok());
  CHECK(*reply == "you said: status");
  // The same mountpoint spelt differently reaches the same server.
  auto again = ControlCall(f.dir.path() + "/./mnt/", "tune txg.timeout_ms=5");
  REQUIRE(again.ok());
  CHECK(*again == "you said: tune txg.timeout_ms=5");
  // A large request comes through whole.
  auto big = ControlCall(f.mnt, std::string(60000, 'x'));
  REQUIRE(big.ok());
  CHECK(big->size() == 60000 + 10);
  CHECK(calls.load() == 3);
}

TEST_CASE("ControlCall says no daemon serves a mountpoint without a server") {
  ControlFixture f;
  auto reply = ControlCall(f.mnt, "status");
  REQUIRE_FALSE(reply.ok());
  CHECK(reply.status().code() == StatusCode::kNotFound);
  CHECK(reply.status().message() == "no poolfs daemon serves " + f.mnt);
  // And after a server has gone, its socket is gone too.
  {
    auto server = ControlServer::Start(f.mnt, [](std::string_view) { return std::string("x"); });
    REQUIRE(server.ok());
    REQUIRE(ControlCall(f.mnt, "status").ok());
  }
  CHECK(ControlCall(f.mnt, "status").status().code() == StatusCode::kNotFound);
  auto missing_parent = ControlCall(f.dir / "no/such/mnt", "status");
  CHECK(missing_parent.status().code() == StatusCode::kNotFound);
}

TEST_CASE("ControlServer answers an empty request without calling the handler") {
  ControlFixture f;
  std::atomic<int> calls{0};
  auto server = ControlServer::Start(f.mnt, [&calls](std::string_view) {
    calls++;
    return std::string("reply");
  });
  REQUIRE(server.ok());
  auto probe = ControlCall(f.mnt, "");
  REQUIRE(probe.ok());
  CHECK(probe->empty());
  CHECK(calls.load() == 0);
}

TEST_CASE("ControlServer refuses a second server for one mountpoint") {
  ControlFixture f;
  auto first = ControlServer::Start(f.mnt, [](std::string_view) { return std::string("one"); });
  REQUIRE(first.ok());
  auto second = ControlServer::Start(f.mnt, [](std::string_view) { return std::string("two"); });
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kBusy);
  CHECK(second.status().message().find("already serves " + f.mnt) != std::string::npos);
  CHECK(*ControlCall(f.mnt, "x") == "one");
  // Another mountpoint has its own socket.
  const std::string other = f.dir / "other";
  std::filesystem::create_directory(other);
  auto third = ControlServer::Start(other, [](std::string_view) { return std::string("three"); });
  REQUIRE(third.ok());
  CHECK((*third)->socket_path() != (*first)->socket_path());
  CHECK(*ControlCall(other, "x") == "three");
}

TEST_CASE("ControlServer replaces the stale socket of a dead daemon") {
  ControlFixture f;
  auto path = ControlSocketPath(f.mnt);
  REQUIRE(path.ok());
  std::filesystem::create_directory(f.dir / "poolfs");
  chmod((f.dir / "poolfs").c_str(), 0700);
  {  // a socket bound and never served: what a killed daemon leaves
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path->c_str(), sizeof addr.sun_path - 1);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    close(fd);
  }
  CHECK(ControlCall(f.mnt, "status").status().code() == StatusCode::kNotFound);
  auto server = ControlServer::Start(f.mnt, [](std::string_view) { return std::string("new"); });
  REQUIRE(server.ok());
  CHECK(*ControlCall(f.mnt, "x") == "new");
}

// Runs ControlCall(mnt, "status") in a child process as uid/gid 65534
// (nobody); returns the child's exit code: 0 when refused with
// PermissionDenied, 1 for another failure, 2 when it got an answer.
int CallAsNobody(const std::string& mnt) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto reply = ControlCall(mnt, "status");
    _exit(reply.ok() ? 2 : reply.status().code() == StatusCode::kPermissionDenied ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST_CASE("ControlServer refuses a client of another uid") {
  if (geteuid() != 0) {
    WARN("not root: cannot switch to another uid to test the refusal");
    return;
  }
  ControlFixture f;
  chmod(f.dir.path().c_str(), 0755);  // the child must reach the mountpoint's parent
  std::atomic<int> calls{0};
  auto server = ControlServer::Start(f.mnt, [&calls](std::string_view) {
    calls++;
    return std::string("secret");
  });
  REQUIRE(server.ok());
  // The folder's mode keeps the other uid out.
  CHECK(CallAsNobody(f.mnt) == 0);
  // With the folder and socket opened up, SO_PEERCRED still refuses it.
  chmod((f.dir.path() + "/poolfs").c_str(), 0755);
  chmod((*server)->socket_path().c_str(), 0777);
  CHECK(CallAsNobody(f.mnt) == 0);
  CHECK(calls.load() == 0);
  // Root (our uid) is served.
  CHECK(*ControlCall(f.mnt, "status") == "secret");
}

}  // namespace
}  // namespace poolfs::daemon
