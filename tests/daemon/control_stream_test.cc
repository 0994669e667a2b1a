// The control socket's stream requests (control.h): a file descriptor
// carried to the stream handler with the request, the pipe's end before the
// reply, the control thread free while a stream runs, refusals (no stream
// handler, another uid), and the destructor waiting for a running stream.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "daemon/control.h"
#include "daemon/stream_io.h"
#include "test_env.h"
#include "test_pipe.h"

namespace poolfs::daemon {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

struct StreamFixture {
  TempDir dir;
  ScopedEnv runtime{"XDG_RUNTIME_DIR", dir.path()};
  std::string mnt = dir / "mnt";
  StreamFixture() { std::filesystem::create_directory(mnt); }
};

std::string EchoRequest(std::string_view request) { return "plain: " + std::string(request); }

TEST_CASE("A stream request carries its pipe end to the stream handler") {
  StreamFixture f;
  auto server = ControlServer::Start(f.mnt, EchoRequest, [](std::string_view request, int fd) {
    // A send: the handler writes the stream, then replies.
    std::string payload(300000, 'x');  // more than a pipe holds at once
    Status st = WriteAll(fd, payload, "the pipe");
    return std::string(request) + (st.ok() ? " ok" : " " + st.message());
  });
  REQUIRE(server.ok());
  TestPipe p;
  auto pending = ControlCallWithFd(f.mnt, "send {}", p.w);
  REQUIRE(pending.ok());
  p.CloseWrite();  // the daemon's copy is the only write end now
  const std::string got = ReadToEnd(p.r);
  CHECK(got == std::string(300000, 'x'));
  auto reply = pending->Wait();
  REQUIRE(reply.ok());
  CHECK(*reply == "send {} ok");
  // A request without a descriptor still goes to the ordinary handler.
  CHECK(*ControlCall(f.mnt, "status") == "plain: status");
}

TEST_CASE("A receive's stream request reads what the client writes, to its end") {
  StreamFixture f;
  auto server = ControlServer::Start(f.mnt, EchoRequest, [](std::string_view, int fd) {
    std::string got;
    char buf[1000];
    for (;;) {
      auto n = ReadSome(fd, buf, "the pipe");
      if (!n.ok()) return "error " + n.status().message();
      if (*n == 0) break;
      got.append(buf, *n);
    }
    return "received " + std::to_string(got.size());
  });
  REQUIRE(server.ok());
  TestPipe p;
  auto pending = ControlCallWithFd(f.mnt, "receive {}", p.r);
  REQUIRE(pending.ok());
  p.CloseRead();
  REQUIRE(WriteAll(p.w, std::string(200000, 'y'), "the pipe").ok());
  p.CloseWrite();
  auto reply = pending->Wait();
  REQUIRE(reply.ok());
  CHECK(*reply == "received 200000");
}

TEST_CASE("The control socket answers other requests while a stream runs") {
  StreamFixture f;
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  auto server = ControlServer::Start(f.mnt, EchoRequest, [&](std::string_view, int) {
    started = true;
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return std::string("stream done");
  });
  REQUIRE(server.ok());
  TestPipe p;
  auto pending = ControlCallWithFd(f.mnt, "send {}", p.w);
  REQUIRE(pending.ok());
  p.CloseWrite();
  while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // The stream still runs: status is answered meanwhile.
  auto status = ControlCall(f.mnt, "status");
  REQUIRE(status.ok());
  CHECK(*status == "plain: status");
  release = true;
  CHECK(ReadToEnd(p.r).empty());
  CHECK(*pending->Wait() == "stream done");
}

TEST_CASE("A server without a stream handler refuses a descriptor and closes it") {
  StreamFixture f;
  std::atomic<int> calls{0};
  auto server = ControlServer::Start(f.mnt, [&calls](std::string_view) {
    calls++;
    return std::string("no");
  });
  REQUIRE(server.ok());
  TestPipe p;
  auto pending = ControlCallWithFd(f.mnt, "send {}", p.w);
  REQUIRE(pending.ok());
  p.CloseWrite();
  CHECK(ReadToEnd(p.r).empty());  // the server's copy was closed
  auto reply = pending->Wait();
  REQUIRE(reply.ok());
  CHECK(reply->starts_with("error: this mount takes no stream"));
  CHECK(calls.load() == 0);
}

TEST_CASE("ControlCallWithFd says no daemon serves a mountpoint without a server") {
  StreamFixture f;
  TestPipe p;
  auto pending = ControlCallWithFd(f.mnt, "send {}", p.w);
  REQUIRE_FALSE(pending.ok());
  CHECK(pending.status().code() == StatusCode::kNotFound);
}

TEST_CASE("The ControlServer's destructor waits for a stream the owner cancelled") {
  StreamFixture f;
  StreamCancel cancel;
  std::atomic<bool> started{false};
  std::string handler_saw;
  auto server = ControlServer::Start(f.mnt, EchoRequest, [&](std::string_view, int fd) {
    started = true;
    // Writes until the pipe is full and nobody reads: only the cancel ends it.
    Status st;
    const std::string chunk(65536, 'z');
    while (st.ok()) st = WriteAll(fd, chunk, "the pipe", &cancel);
    handler_saw = st.ToString();
    return std::string("cancelled");
  });
  REQUIRE(server.ok());
  TestPipe p;
  auto pending = ControlCallWithFd(f.mnt, "send {}", p.w);
  REQUIRE(pending.ok());
  p.CloseWrite();
  while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  cancel.Cancel("the pool was unmounted");
  server->reset();  // joins the stream's thread
  CHECK(handler_saw.find("the pool was unmounted") != std::string::npos);
  auto reply = pending->Wait();
  REQUIRE(reply.ok());
  CHECK(*reply == "cancelled");
}

TEST_CASE("A stream request of another uid is refused before the handler runs") {
  if (geteuid() != 0) {
    WARN("not root: cannot switch to another uid to test the refusal");
    return;
  }
  StreamFixture f;
  chmod(f.dir.path().c_str(), 0755);
  std::atomic<int> calls{0};
  auto server = ControlServer::Start(f.mnt, EchoRequest, [&calls](std::string_view, int) {
    calls++;
    return std::string("secret");
  });
  REQUIRE(server.ok());
  chmod((f.dir.path() + "/poolfs").c_str(), 0755);
  chmod((*server)->socket_path().c_str(), 0777);
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    int fds[2];
    if (pipe(fds) != 0) _exit(4);
    auto pending = ControlCallWithFd(f.mnt, "send {}", fds[1]);
    if (!pending.ok()) _exit(pending.status().code() == StatusCode::kPermissionDenied ? 0 : 1);
    auto reply = pending->Wait();
    _exit(reply.ok() ? 2 : reply.status().code() == StatusCode::kPermissionDenied ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(calls.load() == 0);
}

}  // namespace
}  // namespace poolfs::daemon
