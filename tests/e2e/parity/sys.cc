#include "parity/sys.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace poolfs::e2e {
namespace {

std::string Quote(const std::string& s) {
  if (s.size() > 40) return "<" + std::to_string(s.size()) + " bytes>";
  return s;
}

std::string Octal(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0%o", v);
  return buf;
}

std::string OpenFlags(int flags) {
  std::string s;
  switch (flags & O_ACCMODE) {
    case O_RDONLY: s = "O_RDONLY"; break;
    case O_WRONLY: s = "O_WRONLY"; break;
    default: s = "O_RDWR"; break;
  }
  const std::pair<int, const char*> names[] = {
      {O_CREAT, "O_CREAT"},         {O_EXCL, "O_EXCL"},
      {O_TRUNC, "O_TRUNC"},         {O_APPEND, "O_APPEND"},
      {O_DIRECTORY, "O_DIRECTORY"}, {O_NOFOLLOW, "O_NOFOLLOW"},
      {O_NONBLOCK, "O_NONBLOCK"},   {O_PATH, "O_PATH"}};
  for (const auto& [bit, name] : names) {
    if (flags & bit) s += std::string("|") + name;
  }
  return s;
}

// What a data read shows: short printable data itself, else length and hash.
std::string DataText(const std::string& data) {
  bool printable = data.size() <= 32 && std::all_of(data.begin(), data.end(),
                                                    [](char c) { return c >= 0x20 && c < 0x7f; });
  if (printable) return std::to_string(data.size()) + " bytes \"" + data + "\"";
  return std::to_string(data.size()) + " bytes h=" + HashHex(data);
}

std::string TypeName(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "reg";
    case S_IFDIR: return "dir";
    case S_IFLNK: return "lnk";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "sock";
    case S_IFCHR: return "chr";
    case S_IFBLK: return "blk";
  }
  return "type?";
}

// What stat(2) shows that every filesystem must agree on. Left out, each for
// a reason: st_ino and st_dev (numbers each filesystem picks; poolfs's own
// stability is checked across remounts by the snapshot instead), st_blocks
// (allocation: tmpfs counts pages, poolfs counts compressed blocks as of the
// last sync), st_blksize (the preferred I/O size: the page size on tmpfs,
// the record size on poolfs), and the times (compared as relations by
// MarkTimes/TimesSince, or exactly by ExactTimes after a scenario set them).
std::string StatText(const struct stat& st) {
  std::string s = TypeName(st.st_mode) + " " + Octal(st.st_mode & 07777) +
                  " nlink=" + std::to_string(st.st_nlink) + " uid=" + std::to_string(st.st_uid) +
                  " gid=" + std::to_string(st.st_gid);
  // A directory's st_size is the filesystem's own choice (tmpfs: 20 bytes a
  // entry, ext4: blocks, poolfs: entries + 2), so it is not compared.
  if (!S_ISDIR(st.st_mode)) s += " size=" + std::to_string(st.st_size);
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    s += " rdev=" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
  }
  return s;
}

std::string Compare(const struct timespec& now, const struct timespec& then) {
  if (now.tv_sec == then.tv_sec && now.tv_nsec == then.tv_nsec) return "same";
  if (now.tv_sec > then.tv_sec || (now.tv_sec == then.tv_sec && now.tv_nsec > then.tv_nsec)) {
    return "later";
  }
  return "earlier";
}

std::string TimeText(const struct timespec& t) {
  return std::to_string(static_cast<long long>(t.tv_sec)) + "." + std::to_string(t.tv_nsec);
}

}  // namespace

std::string HashHex(const std::string& data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Sys::Sys(int dirfd, std::vector<std::string>* log, const OtherUser& other)
    : dirfd_(dirfd), log_(log), other_(other) {}

void Sys::Note(const std::string& line) { log_->push_back(line); }

bool Sys::IsRoot() { return geteuid() == 0; }

gid_t Sys::OtherGroupOfCaller() {
  gid_t groups[64];
  int n = getgroups(64, groups);
  for (int i = 0; i < n; ++i) {
    if (groups[i] != getegid()) return groups[i];
  }
  // Root may give a file any group: pick one nobody has.
  return geteuid() == 0 ? 4242 : getegid();
}

gid_t Sys::OtherUsersGroup() const {
  for (gid_t g : other_.groups) {
    if (g != other_.gid) return g;
  }
  return 0;
}

long Sys::Record(const std::string& call, long ret, int err, bool fd_result) {
  std::string result;
  if (ret < 0) {
    const char* name = strerrorname_np(err);
    result = "-1 " + std::string(name ? name : std::to_string(err).c_str());
  } else if (fd_result) {
    result = "fd";
  } else {
    result = std::to_string(ret);
  }
  log_->push_back(call + " = " + result);
  return ret;
}

std::string Sys::FdName(int fd) const {
  auto it = fd_names_.find(fd);
  return it == fd_names_.end() ? "fd?" : it->second;
}

int Sys::Open(const std::string& path, int flags, mode_t mode) {
  int fd = ::openat(dirfd_, path.c_str(), flags | O_CLOEXEC, mode);
  int err = errno;
  std::string call = "open(" + path + ", " + OpenFlags(flags);
  if (flags & O_CREAT) call += ", " + Octal(mode);
  Record(call + ")", fd, err, true);
  if (fd >= 0) fd_names_[fd] = path;
  return fd;
}

int Sys::Close(int fd) {
  std::string name = FdName(fd);
  fd_names_.erase(fd);
  int r = ::close(fd);
  return Record("close(" + name + ")", r, errno);
}

int Sys::Mkdir(const std::string& path, mode_t mode) {
  int r = ::mkdirat(dirfd_, path.c_str(), mode);
  return Record("mkdir(" + path + ", " + Octal(mode) + ")", r, errno);
}

int Sys::Rmdir(const std::string& path) {
  int r = ::unlinkat(dirfd_, path.c_str(), AT_REMOVEDIR);
  return Record("rmdir(" + path + ")", r, errno);
}

int Sys::Unlink(const std::string& path) {
  int r = ::unlinkat(dirfd_, path.c_str(), 0);
  return Record("unlink(" + path + ")", r, errno);
}

int Sys::Mknod(const std::string& path, mode_t mode, dev_t dev) {
  int r = ::mknodat(dirfd_, path.c_str(), mode, dev);
  return Record("mknod(" + path + ", " + Octal(mode) + ", " + std::to_string(major(dev)) + ":" +
                    std::to_string(minor(dev)) + ")",
                r, errno);
}

int Sys::Symlink(const std::string& target, const std::string& path) {
  int r = ::symlinkat(target.c_str(), dirfd_, path.c_str());
  return Record("symlink(" + Quote(target) + ", " + path + ")", r, errno);
}

int Sys::Readlink(const std::string& path) {
  std::string buf(8192, '\0');
  ssize_t n = ::readlinkat(dirfd_, path.c_str(), buf.data(), buf.size());
  int err = errno;
  if (n < 0) return Record("readlink(" + path + ")", n, err);
  Note("readlink(" + path + ") = " + DataText(buf.substr(0, n)));
  return static_cast<int>(n);
}

int Sys::Link(const std::string& from, const std::string& to) {
  int r = ::linkat(dirfd_, from.c_str(), dirfd_, to.c_str(), 0);
  return Record("link(" + from + ", " + to + ")", r, errno);
}

int Sys::Rename(const std::string& from, const std::string& to, unsigned flags) {
  int r = ::renameat2(dirfd_, from.c_str(), dirfd_, to.c_str(), flags);
  std::string f = flags == 0                  ? ""
                  : flags == RENAME_NOREPLACE ? ", NOREPLACE"
                  : flags == RENAME_EXCHANGE  ? ", EXCHANGE"
                                              : ", flags=" + std::to_string(flags);
  return Record("rename(" + from + ", " + to + f + ")", r, errno);
}

int Sys::Chmod(const std::string& path, mode_t mode) {
  int r = ::fchmodat(dirfd_, path.c_str(), mode, 0);
  return Record("chmod(" + path + ", " + Octal(mode) + ")", r, errno);
}

int Sys::Chown(const std::string& path, uid_t uid, gid_t gid, bool follow) {
  int r = ::fchownat(dirfd_, path.c_str(), uid, gid, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  return Record(std::string(follow ? "chown(" : "lchown(") + path + ", " +
                    std::to_string(static_cast<int>(uid)) + ", " +
                    std::to_string(static_cast<int>(gid)) + ")",
                r, errno);
}

int Sys::Truncate(const std::string& path, off_t size) {
  // truncate(2) has no *at form: open the path first (O_PATH is not enough).
  int fd = ::openat(dirfd_, path.c_str(), O_WRONLY | O_CLOEXEC);
  int r = fd < 0 ? -1 : ::ftruncate(fd, size);
  int err = errno;
  if (fd >= 0) ::close(fd);
  return Record("truncate(" + path + ", " + std::to_string(size) + ")", r, err);
}

int Sys::Utimens(const std::string& path, const struct timespec times[2], bool follow) {
  int r = ::utimensat(dirfd_, path.c_str(), times, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  auto text = [](const struct timespec& t) -> std::string {
    if (t.tv_nsec == UTIME_NOW) return "NOW";
    if (t.tv_nsec == UTIME_OMIT) return "OMIT";
    return TimeText(t);
  };
  return Record("utimens(" + path + ", " + text(times[0]) + ", " + text(times[1]) + ")", r, errno);
}

int Sys::Access(const std::string& path, int mask) {
  int r = ::faccessat(dirfd_, path.c_str(), mask, 0);
  return Record("access(" + path + ", " + std::to_string(mask) + ")", r, errno);
}

int Sys::Write(int fd, const std::string& data) {
  ssize_t r = ::write(fd, data.data(), data.size());
  return Record("write(" + FdName(fd) + ", " + DataText(data) + ")", r, errno);
}

int Sys::Pwrite(int fd, const std::string& data, off_t off) {
  ssize_t r = ::pwrite(fd, data.data(), data.size(), off);
  return Record("pwrite(" + FdName(fd) + ", " + DataText(data) + ", " + std::to_string(off) + ")",
                r, errno);
}

int Sys::Read(int fd, size_t len) {
  std::string buf(len, '\0');
  ssize_t r = ::read(fd, buf.data(), len);
  int err = errno;
  std::string call = "read(" + FdName(fd) + ", " + std::to_string(len) + ")";
  if (r < 0) return Record(call, r, err);
  Note(call + " = " + DataText(buf.substr(0, r)));
  return static_cast<int>(r);
}

int Sys::Pread(int fd, size_t len, off_t off) {
  std::string buf(len, '\0');
  ssize_t r = ::pread(fd, buf.data(), len, off);
  int err = errno;
  std::string call =
      "pread(" + FdName(fd) + ", " + std::to_string(len) + ", " + std::to_string(off) + ")";
  if (r < 0) return Record(call, r, err);
  Note(call + " = " + DataText(buf.substr(0, r)));
  return static_cast<int>(r);
}

off_t Sys::Lseek(int fd, off_t off, int whence) {
  off_t r = ::lseek(fd, off, whence);
  return Record(
      "lseek(" + FdName(fd) + ", " + std::to_string(off) + ", " + std::to_string(whence) + ")", r,
      errno);
}

int Sys::Ftruncate(int fd, off_t size) {
  int r = ::ftruncate(fd, size);
  return Record("ftruncate(" + FdName(fd) + ", " + std::to_string(size) + ")", r, errno);
}

int Sys::Fallocate(int fd, int mode, off_t off, off_t len) {
  int r = ::fallocate(fd, mode, off, len);
  return Record("fallocate(" + FdName(fd) + ", mode=" + std::to_string(mode) + ", " +
                    std::to_string(off) + ", " + std::to_string(len) + ")",
                r, errno);
}

int Sys::Fsync(int fd) { return Record("fsync(" + FdName(fd) + ")", ::fsync(fd), errno); }

int Sys::Fdatasync(int fd) {
  return Record("fdatasync(" + FdName(fd) + ")", ::fdatasync(fd), errno);
}

int Sys::Fchmod(int fd, mode_t mode) {
  return Record("fchmod(" + FdName(fd) + ", " + Octal(mode) + ")", ::fchmod(fd, mode), errno);
}

int Sys::MmapWrite(const std::string& path, const std::string& data, off_t off, bool sync,
                   const std::function<void()>& while_mapped) {
  std::string call = "mmap_write(" + path + ", " + DataText(data) + ", " + std::to_string(off) +
                     (sync ? ")" : ", no msync)");
  int fd = ::openat(dirfd_, path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Record(call, -1, errno);
  // mmap wants a page-aligned offset.
  off_t start = off & ~static_cast<off_t>(4095);
  size_t len = data.size() + (off - start);
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, start);
  int r = -1, err = errno;
  if (p != MAP_FAILED) {
    std::memcpy(static_cast<char*>(p) + (off - start), data.data(), data.size());
    r = sync ? ::msync(p, len, MS_SYNC) : 0;
    err = errno;
    if (while_mapped) while_mapped();
    ::munmap(p, len);
  }
  ::close(fd);
  return Record(call, r, err);
}

int Sys::Fstat(int fd) {
  struct stat st;
  int r = ::fstat(fd, &st);
  int err = errno;
  if (r < 0) return Record("fstat(" + FdName(fd) + ")", r, err);
  Note("fstat(" + FdName(fd) + ") = " + StatText(st));
  return 0;
}

int Sys::Stat(const std::string& path, bool follow) {
  struct stat st;
  int r = ::fstatat(dirfd_, path.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  int err = errno;
  std::string call = std::string(follow ? "stat(" : "lstat(") + path + ")";
  if (r < 0) return Record(call, r, err);
  Note(call + " = " + StatText(st));
  return 0;
}

int Sys::MarkTimes(const std::string& path, const std::string& label) {
  struct stat st;
  int r = ::fstatat(dirfd_, path.c_str(), &st, AT_SYMLINK_NOFOLLOW);
  Record("mark_times(" + path + ", " + label + ")", r, errno);
  if (r == 0) marks_[label] = st;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return r;
}

int Sys::TimesSince(const std::string& path, const std::string& label) {
  struct stat st;
  int r = ::fstatat(dirfd_, path.c_str(), &st, AT_SYMLINK_NOFOLLOW);
  int err = errno;
  std::string call = "times_since(" + path + ", " + label + ")";
  auto it = marks_.find(label);
  if (r < 0 || it == marks_.end()) return Record(call, r < 0 ? r : -1, r < 0 ? err : ENOENT);
  const struct stat& old = it->second;
  Note(call + " = atime " + Compare(st.st_atim, old.st_atim) + ", mtime " +
       Compare(st.st_mtim, old.st_mtim) + ", ctime " + Compare(st.st_ctim, old.st_ctim));
  return 0;
}

int Sys::ExactTimes(const std::string& path, bool follow) {
  struct stat st;
  int r = ::fstatat(dirfd_, path.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  int err = errno;
  std::string call = "exact_times(" + path + ")";
  if (r < 0) return Record(call, r, err);
  Note(call + " = atime " + TimeText(st.st_atim) + ", mtime " + TimeText(st.st_mtim));
  return 0;
}

int Sys::ReadDir(const std::string& path) {
  std::string call = "readdir(" + path + ")";
  int fd = ::openat(dirfd_, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Record(call, -1, errno);
  DIR* dir = ::fdopendir(fd);
  std::vector<std::string> names;
  std::string ino_check = "matches";  // or "DIFFERS FROM", or "lstat failed (E...) to check"
  while (true) {
    errno = 0;  // readdir leaves errno alone at the end of the directory
    struct dirent* e = ::readdir(dir);
    if (e == nullptr) break;
    std::string name = e->d_name;
    names.push_back(name + ":" + std::to_string(e->d_type));
    if (name == "." || name == "..") continue;  // ".." may be on another mount
    struct stat st;
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      const char* err_name = strerrorname_np(errno);
      ino_check = "lstat failed (" + std::string(err_name ? err_name : "?") + ") to check";
    } else if (st.st_ino != e->d_ino && ino_check == "matches") {
      ino_check = "DIFFERS FROM";
    }
    errno = 0;
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return Record(call, -1, err);
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : " ") + n;
  Note(call + " = [" + text + "] d_ino " + ino_check + " st_ino");
  return static_cast<int>(names.size());
}

int Sys::StatFs(const std::string& path) {
  std::string call = "statfs(" + path + ")";
  int fd = ::openat(dirfd_, path.c_str(), O_PATH | O_CLOEXEC);
  struct statfs sf;
  int r = fd < 0 ? -1 : ::fstatfs(fd, &sf);
  int err = errno;
  if (fd >= 0) ::close(fd);
  if (r < 0) return Record(call, r, err);
  Note(call + " = namelen " + std::to_string(sf.f_namelen) + ", blocks>0 " +
       (sf.f_blocks > 0 ? "yes" : "no") + ", bfree<=blocks " +
       (sf.f_bfree <= sf.f_blocks ? "yes" : "no") + ", bavail<=bfree " +
       (sf.f_bavail <= sf.f_bfree ? "yes" : "no") + ", bsize>0 " + (sf.f_bsize > 0 ? "yes" : "no") +
       ", ffree<=files " + (sf.f_ffree <= sf.f_files ? "yes" : "no"));
  return 0;
}

long long Sys::FreeBlocks(const std::string& path) {
  int fd = ::openat(dirfd_, path.c_str(), O_PATH | O_CLOEXEC);
  struct statfs sf;
  int r = fd < 0 ? -1 : ::fstatfs(fd, &sf);
  if (fd >= 0) ::close(fd);
  return r < 0 ? -1 : static_cast<long long>(sf.f_bfree) * sf.f_bsize;
}

int Sys::SetXattr(const std::string& path, const std::string& name, const std::string& value,
                  int flags, bool follow) {
  // The *xattr calls have no *at form: go through /proc/self/fd.
  std::string full = "/proc/self/fd/" + std::to_string(dirfd_) + "/" + path;
  int r = follow ? ::setxattr(full.c_str(), name.c_str(), value.data(), value.size(), flags)
                 : ::lsetxattr(full.c_str(), name.c_str(), value.data(), value.size(), flags);
  std::string f = flags == XATTR_CREATE ? ", CREATE" : flags == XATTR_REPLACE ? ", REPLACE" : "";
  return Record(std::string(follow ? "setxattr(" : "lsetxattr(") + path + ", " + name + ", " +
                    DataText(value) + f + ")",
                r, errno);
}

int Sys::GetXattr(const std::string& path, const std::string& name, size_t size, bool follow) {
  std::string full = "/proc/self/fd/" + std::to_string(dirfd_) + "/" + path;
  std::string buf(size, '\0');
  ssize_t r = follow ? ::getxattr(full.c_str(), name.c_str(), size ? buf.data() : nullptr, size)
                     : ::lgetxattr(full.c_str(), name.c_str(), size ? buf.data() : nullptr, size);
  int err = errno;
  std::string call = std::string(follow ? "getxattr(" : "lgetxattr(") + path + ", " + name + ", " +
                     std::to_string(size) + ")";
  if (r < 0 || size == 0) return Record(call, r, err);
  Note(call + " = " + DataText(buf.substr(0, r)));
  return static_cast<int>(r);
}

int Sys::ListXattr(const std::string& path, size_t size, bool follow) {
  std::string full = "/proc/self/fd/" + std::to_string(dirfd_) + "/" + path;
  std::string buf(size, '\0');
  ssize_t r = follow ? ::listxattr(full.c_str(), size ? buf.data() : nullptr, size)
                     : ::llistxattr(full.c_str(), size ? buf.data() : nullptr, size);
  int err = errno;
  std::string call =
      std::string(follow ? "listxattr(" : "llistxattr(") + path + ", " + std::to_string(size) + ")";
  if (r < 0 || size == 0) return Record(call, r, err);
  std::vector<std::string> names;
  for (size_t i = 0; i < static_cast<size_t>(r);) {
    std::string n(buf.c_str() + i);
    i += n.size() + 1;
    names.push_back(n);
  }
  // The list's order is the filesystem's own business.
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : " ") + n;
  Note(call + " = [" + text + "]");
  return static_cast<int>(r);
}

int Sys::RemoveXattr(const std::string& path, const std::string& name, bool follow) {
  std::string full = "/proc/self/fd/" + std::to_string(dirfd_) + "/" + path;
  int r = follow ? ::removexattr(full.c_str(), name.c_str())
                 : ::lremovexattr(full.c_str(), name.c_str());
  return Record(std::string(follow ? "removexattr(" : "lremovexattr(") + path + ", " + name + ")",
                r, errno);
}

void Sys::AsOther(const std::string& what, const std::function<void(Sys&)>& step) {
  if (!other_.available || !IsRoot()) {
    Note("as other user: " + what + ": skipped (needs root and --other-user)");
    return;
  }
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    Note("as other user: " + what + ": pipe failed");
    return;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    Note("as other user: " + what + ": fork failed");
    return;
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    std::vector<std::string> lines;
    bool dropped = ::setgroups(other_.groups.size(), other_.groups.data()) == 0 &&
                   ::setresgid(other_.gid, other_.gid, other_.gid) == 0 &&
                   ::setresuid(other_.uid, other_.uid, other_.uid) == 0;
    // A change of uid makes the process non-dumpable, which makes
    // /proc/self/fd (used for the xattr calls) root's: undo that.
    if (dropped) ::prctl(PR_SET_DUMPABLE, 1);
    if (dropped) {
      Sys child(dirfd_, &lines, OtherUser{});
      step(child);
    } else {
      lines.push_back("could not switch to the other user: " + std::string(strerror(errno)));
    }
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::write(pipefd[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += n;
    }
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string in;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof(buf))) > 0) in.append(buf, n);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Note("as other user: " + what);
  size_t start = 0;
  while (start < in.size()) {
    size_t end = in.find('\n', start);
    Note("  [other] " + in.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace poolfs::e2e
