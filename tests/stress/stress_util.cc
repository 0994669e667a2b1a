#include "stress/stress_util.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace poolfs::stress {
namespace {

char g_alarm_message[512];

void OnAlarm(int) {
  ssize_t n = ::write(2, g_alarm_message, std::strlen(g_alarm_message));
  (void)n;
  _exit(1);
}

}  // namespace

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  std::string bytes;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status st = Errno("read " + path);
      ::close(fd);
      return st;
    }
    if (n == 0) break;
    bytes.append(buf, size_t(n));
  }
  ::close(fd);
  return bytes;
}

Result<int> OpenRecordLog(const std::string& path, bool truncate) {
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) return Errno("open " + path);
  return fd;
}

Status AppendRecord(int fd, const uint8_t* record, size_t size, const std::string& what) {
  ssize_t n;
  do {
    n = ::write(fd, record, size);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Errno("append to the " + what);
  if (size_t(n) != size) return Status::IOError("short append to the " + what);
  return Status::Ok();
}

void ArmCycleWatchdog(unsigned seconds, uint64_t cycle, const char* mode, uint64_t cycle_seed,
                      uint64_t run_seed, const std::string& dir) {
  struct sigaction sa {};
  sa.sa_handler = OnAlarm;
  sigaction(SIGALRM, &sa, nullptr);
  std::snprintf(g_alarm_message, sizeof g_alarm_message,
                "poolfs-stress: FAILED: cycle %llu (%s, cycle seed %llu) of run seed %llu "
                "hung for %u s; pool kept in %s\n",
                static_cast<unsigned long long>(cycle), mode,
                static_cast<unsigned long long>(cycle_seed),
                static_cast<unsigned long long>(run_seed), seconds, dir.c_str());
  alarm(seconds);
}

void DisarmCycleWatchdog() { alarm(0); }

}  // namespace poolfs::stress
