// Sys: the syscalls a parity scenario makes, run inside one directory and
// recorded as text, so that the same scenario run on two filesystems can be
// compared line by line.
//
// Every call is made relative to the scenario's directory (the *at family,
// with that directory's fd), and appends one line to the log:
//   "mkdir(d, 0755) = 0"          success
//   "open(f, O_RDONLY) = fd"      an fd (its number is not compared)
//   "read(f#3, 10) = 10 bytes h=..." data (length and a hash)
//   "rmdir(d) = -1 ENOTEMPTY"     failure, with errno's name
// Calls that read state (Stat, ReadDir, ListXattr, StatFs, ...) record only
// what POSIX defines and every filesystem must agree on; what legitimately
// differs between filesystems (inode numbers, st_blocks, st_blksize, st_dev,
// directory sizes, statfs figures, readdir order, absolute timestamps set by
// the clock) is left out or turned into a relation, each with a comment at the
// place that does it.
//
// Thread safety: none; one scenario runs in one thread.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace poolfs::e2e {

// A 64-bit FNV-1a hash of `data`, printed in hex: enough to tell contents apart.
std::string HashHex(const std::string& data);

// The identity a scenario may switch to for one step (see Sys::AsOther).
struct OtherUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups
  bool available = false;     // false: AsOther records "skipped" on both sides
};

class Sys {
 public:
  // `dirfd` is the scenario's directory (not owned); `log` receives the lines.
  Sys(int dirfd, std::vector<std::string>* log, const OtherUser& other);

  // The scenario's directory, for steps that make raw syscalls and record
  // only a relation (with Note).
  int DirFd() const { return dirfd_; }

  // Records a free-form line (a relation the scenario computed).
  void Note(const std::string& line);

  // Who runs the scenario, so that scenarios can compute expected ids.
  static bool IsRoot();
  // The caller's first supplementary group that is not its primary group,
  // or its primary group when it has none (root, who may use any group:
  // 4242).
  static gid_t OtherGroupOfCaller();

  // A supplementary group of the other user that is not its primary group
  // (0 when there is no other user): for group-permission steps.
  gid_t OtherUsersGroup() const;

  // Files and directories. Each returns the syscall's result (-1 on error).
  int Open(const std::string& path, int flags, mode_t mode = 0);
  int Close(int fd);
  int Mkdir(const std::string& path, mode_t mode);
  int Rmdir(const std::string& path);
  int Unlink(const std::string& path);
  int Mknod(const std::string& path, mode_t mode, dev_t dev);
  int Symlink(const std::string& target, const std::string& path);
  int Readlink(const std::string& path);
  int Link(const std::string& from, const std::string& to);
  int Rename(const std::string& from, const std::string& to, unsigned flags = 0);
  int Chmod(const std::string& path, mode_t mode);
  int Chown(const std::string& path, uid_t uid, gid_t gid, bool follow = true);
  int Truncate(const std::string& path, off_t size);
  // utimensat; `times` may hold UTIME_NOW / UTIME_OMIT.
  int Utimens(const std::string& path, const struct timespec times[2], bool follow = true);
  int Access(const std::string& path, int mask);

  // Open files (fds from Open).
  int Write(int fd, const std::string& data);
  int Pwrite(int fd, const std::string& data, off_t off);
  int Read(int fd, size_t len);
  int Pread(int fd, size_t len, off_t off);
  off_t Lseek(int fd, off_t off, int whence);
  int Ftruncate(int fd, off_t size);
  int Fallocate(int fd, int mode, off_t off, off_t len);
  int Fsync(int fd);
  int Fdatasync(int fd);
  int Fchmod(int fd, mode_t mode);
  // Maps [off, off + data.size()) of `path` shared and read-write, copies
  // `data` in, msyncs (unless `sync` is false), calls `while_mapped` (if
  // any: without msync the pages are still dirty in the kernel then; FUSE
  // writes them back at the unmap) and unmaps (the file must be that long
  // already).
  int MmapWrite(const std::string& path, const std::string& data, off_t off, bool sync = true,
                const std::function<void()>& while_mapped = {});
  int Fstat(int fd);

  // State.
  // Records type, permission bits, nlink, uid, gid, size (not for
  // directories), rdev (devices).
  int Stat(const std::string& path, bool follow = true);
  // Remembers the path's atime/mtime/ctime under `label` (records only
  // whether the stat worked), then waits 20 ms so that a later change gets a
  // later timestamp even on a filesystem with a coarse (jiffy) clock.
  int MarkTimes(const std::string& path, const std::string& label);
  // Records, for each of atime/mtime/ctime, whether it is "same", "later" or
  // "earlier" than at MarkTimes(label).
  int TimesSince(const std::string& path, const std::string& label);
  // Records atime and mtime exactly (seconds and nanoseconds): for times a
  // scenario set itself. ctime cannot be set, so it is not recorded.
  int ExactTimes(const std::string& path, bool follow = true);
  // Records the sorted entries (name, d_type) of a directory, and whether
  // every d_ino matches the entry's st_ino (readdir order is the
  // filesystem's own business, so it is not compared).
  int ReadDir(const std::string& path);
  // Records what statfs must say on any filesystem: name_max, and that the
  // figures are consistent (free <= total, available <= free, total > 0).
  // The figures themselves differ between filesystems.
  int StatFs(const std::string& path);
  // f_bfree of the filesystem, for scenarios that compare figures over time
  // on the same filesystem (not recorded).
  long long FreeBlocks(const std::string& path);

  // Extended attributes; `follow` false uses the l*xattr calls.
  int SetXattr(const std::string& path, const std::string& name, const std::string& value,
               int flags, bool follow = true);
  // Records the value (or its hash when long); `size` 0 asks for the size.
  int GetXattr(const std::string& path, const std::string& name, size_t size = 65536,
               bool follow = true);
  // Records the sorted names; `size` 0 asks for the size.
  int ListXattr(const std::string& path, size_t size = 65536, bool follow = true);
  int RemoveXattr(const std::string& path, const std::string& name, bool follow = true);

  // Runs `step` in a child process as the other user (when available and
  // the caller is root; otherwise records "skipped"), with a Sys on the same
  // directory whose lines join this log.
  void AsOther(const std::string& what, const std::function<void(Sys&)>& step);

 private:
  // Appends "call = result" (result from ret/errno) and returns ret.
  long Record(const std::string& call, long ret, int err, bool fd_result = false);
  std::string FdName(int fd) const;

  int dirfd_;
  std::vector<std::string>* log_;
  OtherUser other_;
  std::map<int, std::string> fd_names_;  // fd -> the path it was opened as
  std::map<std::string, struct stat> marks_;
};

}  // namespace poolfs::e2e
