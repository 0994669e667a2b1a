// The pool registry; see pool_registry.h.
#include "pool_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "control.h"
#include "dead_mount.h"
#include "mount_table.h"

namespace poolfs::daemon {
namespace {

// A hash of the name: file names stay short whatever the pool's name.
std::string EntryPath(const std::string& pool) {
  char name[48];
  std::snprintf(name, sizeof name, "/pool-%016llx.reg",
                static_cast<unsigned long long>(StableHash(pool)));
  return ControlDir() + name;
}

Result<std::string> ReadAll(int fd, const std::string& path) {
  std::string out;
  char buf[4096];
  off_t off = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError("cannot read " + path + ": " + ErrnoText(errno));
    }
    if (n == 0) return out;
    out.append(buf, size_t(n));
    off += n;
    if (out.size() > 64 * 1024) return Status::Corruption(path + " is not a registry entry");
  }
}

// Three lines: name, mount point, pid; nullopt when not (yet) complete.
std::optional<RegisteredPool> ParseEntry(const std::string& text) {
  RegisteredPool p;
  size_t a = text.find('\n');
  if (a == std::string::npos) return std::nullopt;
  size_t b = text.find('\n', a + 1);
  if (b == std::string::npos) return std::nullopt;
  size_t c = text.find('\n', b + 1);
  if (c == std::string::npos) return std::nullopt;
  p.name = text.substr(0, a);
  p.mountpoint = text.substr(a + 1, b - a - 1);
  const std::string pid = text.substr(b + 1, c - b - 1);
  if (p.name.empty() || p.mountpoint.empty() || pid.empty() ||
      !std::all_of(pid.begin(), pid.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::nullopt;
  p.pid = std::stoll(pid);
  return p;
}

// The live entry at `path`, or nullopt (absent, or left by a dead daemon;
// with `dead_too`, such an entry with `live` false).
Result<std::optional<RegisteredPool>> ReadEntry(const std::string& path, bool dead_too = false) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<RegisteredPool>();
    return Status::IOError("cannot open " + path + ": " + ErrnoText(errno));
  }
  // A daemon writes its entry just after it takes the lock: give it a
  // moment when the lock is held but the lines are not there yet.
  for (int attempt = 0;; attempt++) {
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {  // nobody holds it: stale
      std::optional<RegisteredPool> dead;
      if (dead_too) {
        Result<std::string> text = ReadAll(fd, path);
        if (text.ok()) dead = ParseEntry(*text);
        if (dead) dead->live = false;
      }
      ::close(fd);
      return dead;
    }
    if (errno != EWOULDBLOCK) {
      const int err = errno;
      ::close(fd);
      return Status::IOError("cannot lock " + path + ": " + ErrnoText(err));
    }
    Result<std::string> text = ReadAll(fd, path);
    if (!text.ok()) {
      ::close(fd);
      return text.status();
    }
    if (std::optional<RegisteredPool> p = ParseEntry(*text)) {
      ::close(fd);
      return p;
    }
    if (attempt == 50) {
      ::close(fd);
      return Status::Corruption("registry entry " + path +
                                " is locked by a live process but does not name a pool");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

Result<std::unique_ptr<PoolRegistration>> PoolRegistration::Register(
    const std::string& pool, const std::string& mountpoint) {
  if (pool.empty() || pool.find_first_of("\n/") != std::string::npos ||
      mountpoint.find('\n') != std::string::npos)
    return Status::InvalidArgument("cannot register pool '" + pool + "' at " + mountpoint);
  POOLFS_RETURN_IF_ERROR(EnsureControlDir());
  const std::string path = EntryPath(pool);
  // The file may be removed by the daemon that held it between our open
  // and our lock: then the lock is on a file nobody else can find. Check
  // that the path still leads to the file we locked, and retry if not.
  for (int attempt = 0; attempt < 16; attempt++) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::IOError("cannot create " + path + ": " + ErrnoText(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        return Status::IOError("cannot lock " + path + ": " + ErrnoText(err));
      }
      ::close(fd);
      Result<std::optional<RegisteredPool>> holder = ReadEntry(path);
      if (!holder.ok()) return holder.status();
      if (!holder->has_value()) continue;  // it just went away: try again
      const RegisteredPool& h = **holder;
      return Status::Busy("pool '" + pool + "' is already mounted at " + h.mountpoint + " (pid " +
                              std::to_string(h.pid) +
                              "); unmount it first, or give this pool another name",
                          h.pid);
    }
    struct stat by_fd, by_path;
    if (::fstat(fd, &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0 ||
        by_fd.st_ino != by_path.st_ino || by_fd.st_dev != by_path.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string text = pool + "\n" + mountpoint + "\n" + std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      const int err = errno;
      ::unlink(path.c_str());
      ::close(fd);
      return Status::IOError("cannot write " + path + ": " + ErrnoText(err));
    }
    return std::unique_ptr<PoolRegistration>(new PoolRegistration(path, fd));
  }
  return Status::IOError("cannot register pool '" + pool + "': " + path +
                         " keeps changing under us");
}

PoolRegistration::~PoolRegistration() {
  // Unlinked while still locked: a registration racing us either locks the
  // old file (and sees it unlinked, so retries) or creates a new one.
  ::unlink(path_.c_str());
  ::close(fd_);
}

Result<std::optional<RegisteredPool>> FindRegisteredPool(const std::string& pool) {
  POOLFS_ASSIGN_OR_RETURN(std::optional<RegisteredPool> p, ReadEntry(EntryPath(pool)));
  if (p.has_value() && p->name != pool) return std::optional<RegisteredPool>();  // hash collision
  return p;
}

Result<std::optional<RegisteredPool>> FindLastRegistration(const std::string& pool) {
  POOLFS_ASSIGN_OR_RETURN(std::optional<RegisteredPool> p,
                          ReadEntry(EntryPath(pool), /*dead_too=*/true));
  if (p.has_value() && p->name != pool) return std::optional<RegisteredPool>();  // hash collision
  return p;
}

Result<std::vector<RegisteredPool>> ListRegisteredPools() {
  std::vector<RegisteredPool> out;
  const std::string dir = ControlDir();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return out;
    return Status::IOError("cannot list " + dir + ": " + ErrnoText(errno));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.starts_with("pool-") && n.ends_with(".reg")) names.push_back(n);
  }
  ::closedir(d);
  for (const std::string& n : names) {
    Result<std::optional<RegisteredPool>> p = ReadEntry(dir + "/" + n);
    if (!p.ok()) return p.status();
    if (p->has_value()) out.push_back(std::move(**p));
  }
  std::sort(out.begin(), out.end(),
            [](const RegisteredPool& a, const RegisteredPool& b) { return a.name < b.name; });
  return out;
}

Result<std::string> ResolveMountTarget(const std::string& target) {
  if (target.empty() || target == "." || target == ".." || target.find('/') != std::string::npos)
    return target;
  POOLFS_ASSIGN_OR_RETURN(std::optional<RegisteredPool> p, FindLastRegistration(target));
  if (!p.has_value()) return target;
  if (p->live) return p->mountpoint;
  // A daemon that died: its name still leads to its mount while that is
  // there, dead (so that `poolfs status` and `unmount` of the name reach it).
  POOLFS_ASSIGN_OR_RETURN(std::optional<MountEntry> m, FindMountAt(p->mountpoint));
  if (m && m->fstype == kPoolfsFsType && ProbeMount(p->mountpoint).state == MountState::kDead)
    return p->mountpoint;
  return target;
}

}  // namespace poolfs::daemon
