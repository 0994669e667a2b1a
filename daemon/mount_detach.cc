#include "mount_detach.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "command.h"

namespace poolfs::daemon {
namespace {

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: nobody to tell
    done += size_t(n);
  }
}

void RedirectToDevNull(int target) {
  const int fd = open("/dev/null", O_RDWR);
  if (fd < 0) return;
  dup2(fd, target);
  if (fd != target) close(fd);
}

}  // namespace

StartupReport::~StartupReport() {
  if (fd_ >= 0) close(fd_);
}

std::optional<int> StartupReport::Detach() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::cerr << "poolfs mount: pipe: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "poolfs mount: fork: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  if (pid == 0) {  // the daemon
    close(fds[0]);
    fd_ = fds[1];
    setsid();
    if (chdir("/") != 0) {
    }
    RedirectToDevNull(STDIN_FILENO);
    return std::nullopt;
  }
  close(fds[1]);
  // The caller blocked the signals for the daemon's sake; the parent may be
  // interrupted while it waits (the daemon, in its own session, goes on).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
  std::string report;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, size_t(n));
  }
  close(fds[0]);
  if (report.starts_with("ok\n")) {
    if (report.size() > 3) std::cerr << "poolfs mount: " << report.substr(3) << "\n";
    return kExitOk;
  }
  // The daemon failed: reap it so no zombie stays behind our exit.
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const size_t nl = report.find('\n');
  if (report.empty() || nl == std::string::npos) {
    std::cerr << "poolfs mount: the daemon (pid " << pid << ") exited before the mount was up"
              << (WIFSIGNALED(wstatus)
                      ? " (killed by signal " + std::to_string(WTERMSIG(wstatus)) + ")"
                      : "")
              << "; see its log" << (log_path_.empty() ? "" : ", " + log_path_) << "\n";
    return kExitFailure;
  }
  std::cerr << "poolfs mount: " << report.substr(nl + 1) << "\n";
  return std::atoi(report.substr(0, nl).c_str());
}

void StartupReport::Succeeded(const std::string& note) {
  if (done_) return;
  done_ = true;
  if (fd_ < 0) return;
  WriteAll(fd_, "ok\n" + note);
  close(fd_);
  fd_ = -1;
  RedirectToDevNull(STDOUT_FILENO);
  RedirectToDevNull(STDERR_FILENO);
}

void StartupReport::Failed(int exit_code, const std::string& message) {
  if (done_) return;
  done_ = true;
  if (fd_ < 0) {
    std::cerr << "poolfs mount: " << message << "\n";
    return;
  }
  WriteAll(fd_, std::to_string(exit_code) + "\n" + message);
  close(fd_);
  fd_ = -1;
}

}  // namespace poolfs::daemon
