// CheckPool (poolfs/pool_admin.h): the pool check of CheckDevices
// (pool/check.h) with the files opened read-only under a shared lock, and
// the intent log the checked txg names read and verified.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "pool/check.h"
#include "poolfs/pool_admin.h"
#include "vdev/file_device.h"
#include "zil/intent_log.h"

namespace poolfs {
namespace {

using core::vdev::ErrnoText;

// A read-only descriptor holding a shared flock: imports (which take an
// exclusive one) are refused while a check runs, other checks are not.
class SharedLock {
 public:
  SharedLock() = default;
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;
  ~SharedLock() {
    if (fd_ >= 0) close(fd_);
  }

  // Busy "<path> is in use by another process (pid N)" when an exclusive
  // lock is held.
  Status Take(const std::string& path) {
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return Status::IOError("cannot open " + path + ": " + ErrnoText(errno));
    while (flock(fd_, LOCK_SH | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK)
        return Status::IOError("cannot lock " + path + ": " + ErrnoText(errno));
      struct stat st;
      int pid = fstat(fd_, &st) == 0 ? core::vdev::FindFlockHolder(st.st_dev, st.st_ino) : 0;
      std::string who = pid == 0          ? "pid unknown"
                        : pid == getpid() ? "pid " + std::to_string(pid) + ", this process"
                                          : "pid " + std::to_string(pid);
      return Status::Busy(
          path + " is in use by another process (" + who + "): export the pool before checking it",
          pid);
    }
    return Status::Ok();
  }

 private:
  int fd_ = -1;
};

}  // namespace

Result<CheckReport> CheckPool(const std::vector<std::string>& paths, const CheckOptions& options) {
  if (paths.empty()) return Status::InvalidArgument("no vdev files given");
  std::vector<std::unique_ptr<core::vdev::FileDevice>> files;
  std::vector<std::unique_ptr<SharedLock>> locks;
  std::vector<core::vdev::BlockDevice*> devs;
  for (const std::string& path : paths) {
    POOLFS_ASSIGN_OR_RETURN(auto f, core::vdev::FileDevice::Open(path, {true, false}));
    locks.push_back(std::make_unique<SharedLock>());
    POOLFS_RETURN_IF_ERROR(locks.back()->Take(path));
    devs.push_back(f.get());
    files.push_back(std::move(f));
  }
  return core::pool::CheckDevices(
      devs, nullptr, options,
      [](const core::pool::LogState& state, uint64_t pool_guid,
         const core::pool::LogAreaRead& read,
         const core::pool::LogBlockRead& read_block) -> Result<core::pool::LogSummary> {
        POOLFS_ASSIGN_OR_RETURN(core::zil::LogChain chain,
                                core::zil::ReadLogChain(state, pool_guid, read));
        core::zil::ReadIndirectWrites(&chain, read_block);
        return core::pool::LogSummary{chain.blocks, chain.records.size(), chain.damage,
                                      chain.unwritten};
      });
}

}  // namespace poolfs
