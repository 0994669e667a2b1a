// The per-user registry of mounted pools: which pool name is mounted where,
// so that `poolfs dataset`, `status`, `tune` and `unmount` take a pool's
// name instead of its mount point, and so that a user cannot mount two
// pools of the same name at once.
//
// Each mount's daemon keeps one file, ControlDir()/pool-<hash of the
// name>.reg (control.h: the user's own 0700 folder, so the registry is per
// user), holding three lines: the pool's name, the canonical mount point,
// the daemon's pid. The daemon holds an exclusive flock on it for as long
// as it serves the mount, and removes it when it stops; a file whose lock
// nobody holds was left by a daemon that died, and counts as absent (the
// next registration of that name takes it over). The lock, not the pid, is
// the truth: it cannot outlive its process, and pids are reused.
//
// Thread safety: free functions are reentrant; a PoolRegistration is owned
// by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "poolfs/status.h"

namespace poolfs::daemon {

struct RegisteredPool {
  std::string name;
  std::string mountpoint;
  int64_t pid = 0;
  // False for an entry whose daemon died (nobody holds its lock): only
  // FindLastRegistration returns those.
  bool live = true;
};

class PoolRegistration {
 public:
  // Registers `pool` as mounted at `mountpoint` by this process. Busy
  // "pool 'tank' is already mounted at /home/a/tank (pid 123)" when a live
  // daemon of this user has a pool of that name (Status::holder_pid is its
  // pid); IOError naming the file when the registry cannot be written.
  static Result<std::unique_ptr<PoolRegistration>> Register(const std::string& pool,
                                                            const std::string& mountpoint);
  // Removes the entry (the mount is gone).
  ~PoolRegistration();
  PoolRegistration(const PoolRegistration&) = delete;
  PoolRegistration& operator=(const PoolRegistration&) = delete;

  const std::string& path() const { return path_; }

 private:
  PoolRegistration(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

// The live registration of `pool`, or nullopt. IOError when the registry
// cannot be read.
Result<std::optional<RegisteredPool>> FindRegisteredPool(const std::string& pool);

// The entry of `pool` even when its daemon died (then `live` is false: the
// file a dead daemon left, which blocks nothing), or nullopt. IOError when
// the registry cannot be read.
Result<std::optional<RegisteredPool>> FindLastRegistration(const std::string& pool);

// Every live registration of this user, by name.
Result<std::vector<RegisteredPool>> ListRegisteredPools();

// What a command's TARGET names: the mount point of the registered pool
// `target` when it is a pool name (no '/', not "." or ".."; a live
// registration exists, or the entry of a daemon that died whose poolfs
// mount is still there, dead: dead_mount.h), else `target` itself, a mount
// point.
Result<std::string> ResolveMountTarget(const std::string& target);

}  // namespace poolfs::daemon
