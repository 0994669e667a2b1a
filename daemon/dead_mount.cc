// Dead poolfs mounts; see dead_mount.h.
#include "dead_mount.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

extern char** environ;

namespace poolfs::daemon {

ProbeResult ProbeMount(const std::string& path, int timeout_ms) {
  const pid_t pid = fork();
  if (pid < 0) return {MountState::kFailed, errno};
  if (pid == 0) {
    struct statfs st;
    _exit(::statfs(path.c_str(), &st) == 0 ? 0 : (errno > 0 && errno < 256 ? errno : 255));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int wstatus = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &wstatus, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return {MountState::kFailed, errno};
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);  // its wait on the mount is killable
      while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      return {MountState::kNoAnswer, 0};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(wstatus)) return {MountState::kFailed, EIO};
  const int err = WEXITSTATUS(wstatus);
  if (err == 0) return {MountState::kAnswers, 0};
  if (err == ENOTCONN) return {MountState::kDead, err};
  return {MountState::kFailed, err};
}

bool IsOwnDeadPoolfsMount(const MountEntry& m) {
  if (m.fstype != kPoolfsFsType) return false;
  const std::optional<uint32_t> owner = FuseMountOwner(m);
  if (!owner || *owner != getuid()) return false;
  return ProbeMount(m.mountpoint).state == MountState::kDead;
}

Status UnmountPath(const std::string& mp, bool lazy) {
  if (geteuid() == 0) {
    if (umount2(mp.c_str(), lazy ? MNT_DETACH : 0) == 0) return Status::Ok();
    if (errno == EBUSY) {
      return Status::Busy(mp +
                          " is busy (a process has a file or its working directory "
                          "there); close them, or use --lazy");
    }
    return Status::IOError("umount " + mp + ": " + std::strerror(errno));
  }
  std::vector<const char*> argv = {"fusermount3", "-u"};
  if (lazy) argv.push_back("-z");
  argv.insert(argv.end(), {"--", mp.c_str(), nullptr});
  // Its message (on stderr) becomes ours: the daemon that unmounts a
  // dataset mount has no terminal.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  pid_t pid;
  const int err = posix_spawnp(&pid, "fusermount3", &actions, nullptr,
                               const_cast<char**>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || said.size() > 4096) break;
    said.append(buf, size_t(n));
  }
  close(fds[0]);
  if (err != 0) return Status::IOError(std::string("running fusermount3: ") + std::strerror(err));
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::Ok();
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (said.find("busy") != std::string::npos) {
    return Status::Busy(mp +
                        " is busy (a process has a file or its working directory "
                        "there); close them, or use --lazy");
  }
  return Status::IOError(std::string("fusermount3 -u ") + (lazy ? "-z " : "") + mp + " failed" +
                         (said.empty() ? "" : ": " + said));
}

Result<std::optional<std::string>> ClearIfDead(const MountEntry& m) {
  if (!IsOwnDeadPoolfsMount(m)) return std::optional<std::string>();
  POOLFS_RETURN_IF_ERROR(UnmountPath(m.mountpoint, /*lazy=*/true));
  return std::optional<std::string>(m.mountpoint + ": the daemon of this poolfs mount of " +
                                    m.source + " is gone; unmounted it lazily (" +
                                    (geteuid() == 0 ? "umount2 MNT_DETACH" : "fusermount3 -u -z") +
                                    ")");
}

Result<std::string> CanonicalParentPath(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return Status::InvalidArgument(path + ": " + ec.message());
  p = p.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "/a/b/" -> "/a/b"
  if (p == p.root_path()) return p.string();
  char buf[PATH_MAX];
  if (realpath(p.parent_path().c_str(), buf) == nullptr)
    return Status::NotFound(path + ": folder " + p.parent_path().string() + ": " +
                            std::strerror(errno));
  return (fs::path(buf) / p.filename()).string();
}

}  // namespace poolfs::daemon
