// A pipe for the daemon's stream tests: both ends close with it (or one
// at a time, to make the other side see its end), and ReadToEnd drains
// the read end.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace poolfs::daemon {

struct TestPipe {
  int r = -1, w = -1;
  TestPipe() {
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    r = fds[0];
    w = fds[1];
  }
  ~TestPipe() {
    CloseRead();
    CloseWrite();
  }
  TestPipe(const TestPipe&) = delete;
  TestPipe& operator=(const TestPipe&) = delete;
  void CloseRead() {
    if (r >= 0) close(r);
    r = -1;
  }
  void CloseWrite() {
    if (w >= 0) close(w);
    w = -1;
  }
};

// Everything until the writers close (or a read error).
inline std::string ReadToEnd(int fd) {
  std::string out;
  char buf[8192];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    out.append(buf, size_t(n));
  }
}

}  // namespace poolfs::daemon
