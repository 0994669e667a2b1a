// Crash tests' child process: RunUntilKilled forks, runs `body(fd)` in the
// child, which reports what it does as lines on fd (Say) until the parent
// kills it with SIGKILL after `after`, and returns every line it wrote.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pool/pool.h"

namespace poolfs::core::pool {

// Writes `line` and a newline to fd, from the child; a failed write ends it.
inline void Say(int fd, const std::string& line) {
  const std::string l = line + "\n";
  if (write(fd, l.data(), l.size()) != ssize_t(l.size())) _exit(3);
}

struct KilledChild {
  std::string lines;    // everything the child wrote
  bool killed = false;  // it ran until the kill (it did not stop on its own: an error)
};

// `body` never returns in a healthy run; if it does, the child exits 0 and
// `killed` is false.
inline KilledChild RunUntilKilled(const std::function<void(int fd)>& body,
                                  std::chrono::milliseconds after) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(fds[0]);
    body(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::this_thread::sleep_for(after);
  kill(child, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  KilledChild out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.lines.append(buf, size_t(n));
  close(fds[0]);
  out.killed = WIFSIGNALED(status);
  return out;
}

// The child's pool: imported with txgs of `timeout_ms`; on failure it says
// why and exits 2.
inline std::unique_ptr<Pool> ImportInChild(const std::vector<std::string>& paths,
                                           uint32_t timeout_ms, int fd) {
  PoolOptions o;
  o.txg.timeout_ms = timeout_ms;
  o.space.allocators = 2;
  auto pool = Pool::Import(paths, o);
  if (!pool.ok()) {
    Say(fd, "error " + pool.status().ToString());
    _exit(2);
  }
  return std::move(pool).value();
}

}  // namespace poolfs::core::pool
