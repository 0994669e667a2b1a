#include "vdev/file_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "util/check.h"

namespace poolfs::core::vdev {
namespace {

Status OpenError(const std::string& path, int err) {
  if (err == ENOENT) return Status::NotFound(path + " does not exist");
  if (err == EACCES || err == EPERM) {
    return Status(StatusCode::kPermissionDenied, "cannot open " + path + ": " + ErrnoText(err));
  }
  return Status::IOError("cannot open " + path + ": " + ErrnoText(err));
}

// Takes flock(LOCK_EX|LOCK_NB) on fd; Busy naming the holder when it is held.
Status LockExclusive(int fd, const std::string& path) {
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK)
      return Status::IOError("cannot lock " + path + ": " + ErrnoText(errno));
    struct stat st;
    int pid = fstat(fd, &st) == 0 ? FindFlockHolder(st.st_dev, st.st_ino) : 0;
    std::string who = pid == 0          ? "pid unknown"
                      : pid == getpid() ? "pid " + std::to_string(pid) + ", this process"
                                        : "pid " + std::to_string(pid);
    return Status::Busy(path + " is in use by another process (" + who + ")", pid);
  }
  return Status::Ok();
}

void FsyncDirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // best effort: the file itself was fsynced
  fsync(dfd);
  close(dfd);
}

}  // namespace

int FindFlockHolder(uint64_t dev, uint64_t ino) {
  // Lines look like "3: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; lines
  // of waiters have "->" after the number.
  std::ifstream in("/proc/locks");
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%llu", major(dev), minor(dev),
                static_cast<unsigned long long>(ino));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string num, kind, advisory, access, pid, id;
    ls >> num >> kind;
    if (kind != "FLOCK") continue;
    ls >> advisory >> access >> pid >> id;
    if (id == want) return int(std::strtol(pid.c_str(), nullptr, 10));
  }
  return 0;
}

FileDevice::FileDevice(std::string path, int fd, int direct_fd, uint64_t size, uint32_t sector_size,
                       OpenMode mode, bool is_block_device)
    : path_(std::move(path)),
      fd_(fd),
      direct_fd_(direct_fd),
      size_(size),
      sector_size_(sector_size),
      read_only_(mode.read_only),
      is_block_device_(is_block_device),
      writeback_bytes_(mode.read_only ? 0 : mode.writeback_bytes),
      direct_reads_(direct_fd >= 0 && mode.direct_reads),
      direct_writes_(direct_fd >= 0 && mode.direct_writes && !mode.read_only),
      direct_write_min_(mode.direct_write_min_bytes) {}

FileDevice::~FileDevice() {
  if (direct_fd_ >= 0) close(direct_fd_);
  close(fd_);  // also releases the flock
}

Result<std::unique_ptr<FileDevice>> FileDevice::Open(const std::string& path, OpenMode mode) {
  int fd = open(path.c_str(), (mode.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  auto fail = [fd](Status st) -> Result<std::unique_ptr<FileDevice>> {
    close(fd);
    return st;
  };
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fail(Status::IOError("cannot stat " + path + ": " + ErrnoText(errno)));
  uint64_t size = 0;
  uint32_t sector = 4096;
  bool is_block = S_ISBLK(st.st_mode);
  if (S_ISREG(st.st_mode)) {
    size = uint64_t(st.st_size);
  } else if (is_block) {
    if (ioctl(fd, BLKGETSIZE64, &size) != 0) {
      return fail(Status::IOError("cannot get the size of " + path + ": " + ErrnoText(errno)));
    }
    unsigned int pbs = 0;
    if (ioctl(fd, BLKPBSZGET, &pbs) == 0 && pbs >= 512 && (pbs & (pbs - 1)) == 0) sector = pbs;
  } else {
    return fail(Status::InvalidArgument(path + " is neither a regular file nor a block device"));
  }
  if (mode.exclusive) {
    Status locked = LockExclusive(fd, path);
    if (!locked.ok()) return fail(locked);
  }
  // A second open file description, for direct I/O (the flock stays with
  // fd); refused by file systems without O_DIRECT, which is no error.
  const bool direct = mode.direct_reads || (mode.direct_writes && !mode.read_only);
  const int direct_fd =
      direct ? open(path.c_str(), (mode.read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC) : -1;
  return std::unique_ptr<FileDevice>(
      new FileDevice(path, fd, direct_fd, size, sector, mode, is_block));
}

Status FileDevice::CreateSparse(const std::string& path, uint64_t size, bool force) {
  if (size == 0) return Status::InvalidArgument("cannot create " + path + " with size 0");
  if (size > uint64_t(INT64_MAX)) return Status::InvalidArgument("size too large for " + path);
  bool created = true;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0 && (errno == EISDIR || errno == ELOOP)) {
      return Status::InvalidArgument(path + " exists and is not a regular file");
    }
  }
  if (fd < 0) return OpenError(path, errno);
  auto fail = [&](Status st) {
    close(fd);
    if (created) unlink(path.c_str());
    return st;
  };
  if (!created) {
    struct stat st;
    if (fstat(fd, &st) != 0)
      return fail(Status::IOError("cannot stat " + path + ": " + ErrnoText(errno)));
    if (!S_ISREG(st.st_mode)) {
      return fail(Status::InvalidArgument(path + " exists and is not a regular file"));
    }
    // Never clobber a pool that another process has open, even with force.
    Status locked = LockExclusive(fd, path);
    if (!locked.ok()) return fail(locked);
    if (st.st_size > 0 && !force) {
      return fail(Status::AlreadyExists("refusing to overwrite " + path +
                                        ": it exists and is not empty (" +
                                        std::to_string(st.st_size) + " bytes)"));
    }
    if (st.st_size > 0 && ftruncate(fd, 0) != 0) {
      return fail(Status::IOError("cannot truncate " + path + ": " + ErrnoText(errno)));
    }
  }
  if (ftruncate(fd, off_t(size)) != 0) {
    int err = errno;
    if (err == EFBIG || err == EINVAL) {
      return fail(Status::InvalidArgument("cannot make " + path + " " + std::to_string(size) +
                                          " bytes long: " + ErrnoText(err)));
    }
    return fail(Status::IOError("cannot extend " + path + ": " + ErrnoText(err)));
  }
  if (fsync(fd) != 0)
    return fail(Status::IOError("cannot fsync " + path + ": " + ErrnoText(errno)));
  close(fd);
  if (created) FsyncDirectoryOf(path);
  return Status::Ok();
}

Status FileDevice::Read(uint64_t off, void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(path_, "read", size_, off, len));
  // Aligned: straight from the disk into buf (a short direct read, at the
  // end of a file whose size is not aligned, finishes buffered).
  const bool direct = direct_reads_ && off % kDirectAlign == 0 && len % kDirectAlign == 0 &&
                      reinterpret_cast<uintptr_t>(buf) % kDirectAlign == 0;
  const ReadPart part{buf, len};
  return ReadVector(off, {&part, 1}, len, direct);
}

Status FileDevice::Write(uint64_t off, const void* buf, size_t len) {
  if (read_only_) return Status::InvalidArgument("cannot write to " + path_ + ": open read-only");
  POOLFS_RETURN_IF_ERROR(CheckRange(path_, "write", size_, off, len));
  auto* p = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  if (direct_writes_ && len >= direct_write_min_ && off % kDirectAlign == 0 &&
      len % kDirectAlign == 0 && !direct_refused_.load(std::memory_order_relaxed)) {
    POOLFS_RETURN_IF_ERROR(WriteDirect(off, p, len, &done));
  }
  const size_t direct_done = done;
  while (done < len) {
    ssize_t n = pwrite(fd_, p + done, len - done, off_t(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return DeviceIoError(path_, "write", off, len, errno);
    }
    if (n == 0) return DeviceIoError(path_, "write", off, len, 0, done);
    done += size_t(n);
  }
  if (len > direct_done) NoteWritten(len - direct_done);
  return Status::Ok();
}

Status FileDevice::FillHoles(uint64_t off, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(path_, "fill", size_, off, len));
  if (read_only_) return Status::InvalidArgument("cannot fill " + path_ + ": open read-only");
  if (is_block_device_) return Status::Ok();  // no holes
  const uint64_t end = off + len;
  std::vector<uint8_t> zeros;
  uint64_t at = off;
  while (at < end) {
    const off_t hole = lseek(fd_, off_t(at), SEEK_HOLE);
    if (hole < 0) {
      if (errno == ENXIO) break;  // past the end of the file: no hole
      return DeviceIoError(path_, "seek for a hole", at, end - at, errno);
    }
    if (uint64_t(hole) >= end) break;
    off_t data = lseek(fd_, hole, SEEK_DATA);
    if (data < 0) {
      if (errno != ENXIO) return DeviceIoError(path_, "seek for data", uint64_t(hole), 0, errno);
      data = off_t(end);  // a hole to the end of the file
    }
    const uint64_t hole_end = std::min<uint64_t>(uint64_t(data), end);
    for (uint64_t w = uint64_t(hole); w < hole_end;) {
      const size_t n = size_t(std::min<uint64_t>(hole_end - w, 1 << 20));
      if (zeros.size() < n) zeros.assign(n, 0);
      POOLFS_RETURN_IF_ERROR(Write(w, zeros.data(), n));
      w += n;
    }
    at = hole_end;
  }
  return Status::Ok();
}

Status FileDevice::WriteParts(uint64_t off, std::span<const WritePart> parts) {
  size_t len = 0;
  for (const WritePart& part : parts) len += part.len;
  if (parts.size() < 2 || !direct_writes_ || len < direct_write_min_ ||
      off % kDirectAlign != 0 || len % kDirectAlign != 0 ||
      direct_refused_.load(std::memory_order_relaxed)) {
    return BlockDevice::WriteParts(off, parts);
  }
  if (read_only_) return Status::InvalidArgument("cannot write to " + path_ + ": open read-only");
  POOLFS_RETURN_IF_ERROR(CheckRange(path_, "write", size_, off, len));
  // Fill the bounce buffer and write it, a whole buffer at a time (so every
  // write but the last is kBounceBytes long, and the last one is aligned
  // as the whole range is). Write takes the aligned buffer as it is.
  uint8_t* bounce = BounceBuffer();
  size_t filled = 0;
  for (const WritePart& part : parts) {
    auto* p = static_cast<const uint8_t*>(part.data);
    for (size_t at = 0; at < part.len;) {
      const size_t n = std::min(part.len - at, kBounceBytes - filled);
      std::memcpy(bounce + filled, p + at, n);
      filled += n;
      at += n;
      if (filled == kBounceBytes) {
        POOLFS_RETURN_IF_ERROR(Write(off, bounce, filled));
        off += filled;
        filled = 0;
      }
    }
  }
  if (filled > 0) return Write(off, bounce, filled);
  return Status::Ok();
}

Status FileDevice::ReadParts(uint64_t off, std::span<const ReadPart> parts) {
  size_t len = 0;
  bool parts_aligned = true;
  for (const ReadPart& part : parts) {
    len += part.len;
    parts_aligned &=
        part.len % kDirectAlign == 0 && reinterpret_cast<uintptr_t>(part.data) % kDirectAlign == 0;
  }
  if (parts.size() < 2 || parts.size() > size_t(IOV_MAX)) return BlockDevice::ReadParts(off, parts);
  POOLFS_RETURN_IF_ERROR(CheckRange(path_, "read", size_, off, len));
  const bool direct = direct_reads_ && off % kDirectAlign == 0 && len % kDirectAlign == 0;
  if (direct && !parts_aligned && len <= kBounceBytes) {
    uint8_t* bounce = BounceBuffer();
    POOLFS_RETURN_IF_ERROR(Read(off, bounce, len));  // aligned: Read goes direct
    for (const ReadPart& part : parts) {
      std::memcpy(part.data, bounce, part.len);
      bounce += part.len;
    }
    return Status::Ok();
  }
  return ReadVector(off, parts, len, direct && parts_aligned);
}

Status FileDevice::ReadVector(uint64_t off, std::span<const ReadPart> parts, size_t len,
                              bool direct) {
  std::vector<iovec> iov(parts.size());
  for (size_t i = 0; i < parts.size(); i++) iov[i] = {parts[i].data, parts[i].len};
  if (direct) direct_reads_done_.fetch_add(1, std::memory_order_relaxed);
  size_t done = 0, first = 0;  // iov[first] is the first part not filled yet
  while (done < len) {
    const bool aligned = direct && done % kDirectAlign == 0;
    ssize_t n = preadv(aligned ? direct_fd_ : fd_, iov.data() + first, int(iov.size() - first),
                       off_t(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && aligned) {  // an alignment the device refuses: read buffered
        direct = false;
        continue;
      }
      return DeviceIoError(path_, "read", off, len, errno);
    }
    if (n == 0) return DeviceIoError(path_, "read", off, len, 0, done);  // the file shrank
    done += size_t(n);
    for (size_t left = size_t(n); left > 0;) {  // skip what this preadv filled
      const size_t used = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + used;
      iov[first].iov_len -= used;
      left -= used;
      if (iov[first].iov_len == 0) first++;
    }
    while (first < iov.size() && iov[first].iov_len == 0) first++;
  }
  return Status::Ok();
}

Status FileDevice::WriteDirect(uint64_t off, const uint8_t* p, size_t len, size_t* done) {
  const bool aligned = reinterpret_cast<uintptr_t>(p) % kDirectAlign == 0;
  // Stops early, leaving the rest to the buffered loop, where a direct
  // write cannot go on: refused (EINVAL: an alignment the file system does
  // not take), or cut short off a sector boundary.
  while (*done < len && *done % kDirectAlign == 0) {
    size_t n = len - *done;
    const uint8_t* from = p + *done;
    if (!aligned) {
      n = std::min(n, kBounceBytes);
      uint8_t* bounce = BounceBuffer();
      std::memcpy(bounce, from, n);
      from = bounce;
    }
    ssize_t w = pwrite(direct_fd_, from, n, off_t(off + *done));
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL) {
        if (*done == 0) direct_refused_.store(true, std::memory_order_relaxed);
        break;
      }
      return DeviceIoError(path_, "write", off, len, errno);
    }
    if (w == 0) return DeviceIoError(path_, "write", off, len, 0, *done);
    *done += size_t(w);
  }
  if (*done > 0) direct_writes_done_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

uint8_t* FileDevice::BounceBuffer() {
  struct Free {
    void operator()(uint8_t* b) const { std::free(b); }
  };
  thread_local std::unique_ptr<uint8_t, Free> buf(
      static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, kBounceBytes)));
  POOLFS_CHECK(buf != nullptr);
  return buf.get();
}

void FileDevice::NoteWritten(uint64_t len) {
  if (writeback_bytes_ == 0) return;
  if (unstarted_bytes_.fetch_add(len, std::memory_order_relaxed) + len < writeback_bytes_) return;
  // One of the writers that see the threshold crossed starts the writeback.
  if (unstarted_bytes_.exchange(0, std::memory_order_relaxed) < writeback_bytes_) return;
  // The whole file: whatever other threads wrote meanwhile goes too. A
  // failure is left to Flush to report (this only starts I/O early).
  (void)sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
  writebacks_started_.fetch_add(1, std::memory_order_relaxed);
}

Status FileDevice::Flush() {
  if (read_only_) return Status::Ok();
  while (fdatasync(fd_) != 0) {
    if (errno == EINTR) continue;
    return Status::IOError("flush (fdatasync) of " + path_ + " failed: " + ErrnoText(errno));
  }
  return Status::Ok();
}

}  // namespace poolfs::core::vdev
