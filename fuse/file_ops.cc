// Regular files and other non-directories: CREATE, MKNOD, OPEN, READ,
// WRITE, RELEASE, FSYNC, FALLOCATE, COPY_FILE_RANGE, LSEEK. There is no
// FLUSH handler (it would cost a round trip per close for nothing: the
// data is already in the open txg) and no per-open state.
//
// Opening without a request. A file needs nothing from an open: the
// kernel checks the mode bits itself (every mount has default_permissions),
// refuses writes on a read-only mount and directories opened for writing,
// sends O_TRUNC as a SETATTR (atomic O_TRUNC is off), and keeps an open
// file's inode in its lookup count, so an unlinked open file lives until
// its last FORGET. So when the kernel can open files on its own
// (Adapter::no_open), OPEN answers ENOSYS, after which the kernel sends no
// OPEN and no RELEASE again; and CREATE answers ENOSYS, after which the
// kernel creates with MKNOD and opens without asking (a CREATE would make
// the kernel send a RELEASE at close). createmany -o then costs LOOKUP +
// MKNOD + the directory's GETATTR (default_permissions refreshes the
// attributes each create invalidates) per file instead of LOOKUP + CREATE
// + RELEASE + GETATTR (counted with the fuse:fuse_request_send tracepoint;
// memfs_ceiling, without default_permissions, sends LOOKUP + CREATE +
// RELEASE): one request less per create.
// scripts/bench-fs.sh --no-io measures the create rate against
// memfs_ceiling's. Older kernels get the requests and the answers below
// (Filesystem::Open's checks, then an empty RELEASE).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapter.h"
#include "cache_notifier.h"

namespace poolfs::fuse {
namespace {

void FillOpenFlags(const Adapter& ad, fuse_file_info* fi) {
  fi->keep_cache = ad.keep_cache ? 1 : 0;
  fi->noflush = 1;
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  const Adapter& ad = AdapterOf(req);
  if (ad.no_open.load(std::memory_order_relaxed)) return (void)fuse_reply_err(req, ENOSYS);
  const Creds c = CredsOf(req);
  Result<Attr> a = ad.fs->Create(c, parent, name, mode & 07777);
  // The kernel sends CREATE when it saw no entry; someone may have made
  // one since. Without O_EXCL, open(2) then opens the existing file.
  if (!a.ok() && a.status().code() == StatusCode::kAlreadyExists && !(fi->flags & O_EXCL)) {
    a = ad.fs->Lookup(c, parent, name);
    if (a.ok()) {
      Status st = ad.fs->Open(c, a->ino, fi->flags);
      if (!st.ok()) {
        ad.fs->Forget(a->ino, 1);
        return ReplyStatus(req, st, "create (open existing)", a->ino);
      }
    }
  }
  if (!a.ok()) return ReplyStatus(req, a.status(), "create", parent);
  FillOpenFlags(ad, fi);
  fuse_entry_param e{};
  e.ino = a->ino;
  e.generation = a->generation;
  e.entry_timeout = ad.entry_timeout;
  e.attr_timeout = ad.attr_timeout;
  FillStat(*a, &e.attr);
  Filesystem* fs = ad.fs;
  // The caller was interrupted: the kernel never takes the reference.
  if (fuse_reply_create(req, &e, fi) == -ENOENT) fs->Forget(a->ino, 1);
}

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  Result<Attr> a = AdapterOf(req).fs->Mknod(CredsOf(req), parent, name, mode, rdev);
  if (!a.ok()) return ReplyStatus(req, a.status(), "mknod", parent);
  ReplyEntry(req, *a);
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const Adapter& ad = AdapterOf(req);
  if (ad.no_open.load(std::memory_order_relaxed)) return (void)fuse_reply_err(req, ENOSYS);
  Status st = ad.fs->Open(CredsOf(req), ino, fi->flags);
  if (!st.ok()) return ReplyStatus(req, st, "open", ino);
  FillOpenFlags(ad, fi);
  fuse_reply_open(req, fi);
}

void Release(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

// A READ's reply is sent from where its bytes lie (Filesystem::ReadShared,
// fuse_reply_iov): blocks the core holds in its cache, or read ahead, from
// there; the rest from a page-aligned buffer of the worker thread's, which
// the core fills straight from the pool file. The kernel copies them into
// its page-aligned page cache. Sending the cached blocks where they lie
// saves a copy of each, a noticeable share of the daemon's CPU in a
// sequential read with read ahead. The buffer is page-aligned because
// copies to or from the 16-byte offset of a malloc'd block are much
// slower: a pread into a buffer 16 bytes past a page costs several times
// the system time of one into a page-aligned buffer. Together this takes
// markedly less of the daemon's CPU than building the reply in a string
// (blocks appended, then copied by the kernel). scripts/bench-fs.sh's
// 1 GiB read figure measures this path.
class ReadBuffer {
 public:
  ~ReadBuffer() { std::free(data_); }
  // Room for `size` bytes (0 too), or nullptr when memory ran out.
  char* Get(size_t size) {
    if (data_ != nullptr && size <= capacity_) return data_;
    const size_t capacity = std::max<size_t>(1, (size + kAlign - 1) / kAlign) * kAlign;
    void* p = std::aligned_alloc(kAlign, capacity);
    if (p == nullptr) return nullptr;
    madvise(p, capacity, MADV_HUGEPAGE);  // best effort (arc/buffer_pool.h says why)
    std::free(data_);
    data_ = static_cast<char*>(p);
    capacity_ = capacity;
    return data_;
  }

 private:
  // A huge page's: the disk's DMA fills it much faster (arc/buffer_pool.h).
  static constexpr size_t kAlign = size_t{2} << 20;
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  thread_local ReadBuffer buffer;
  char* dst = buffer.Get(size);
  if (dst == nullptr) return (void)fuse_reply_err(req, ENOMEM);
  // The kernel keeps what it reads in its page cache, unless the file was
  // opened with O_DIRECT (the flags come with every READ).
  const uint32_t flags = (fi->flags & O_DIRECT) ? 0u : uint32_t{kReadCallerKeeps};
  SharedRead got;  // holds the cached blocks the reply is sent from
  Status st =
      AdapterOf(req).fs->ReadShared(ino, uint64_t(off), std::span<char>(dst, size), flags, &got);
  if (!st.ok()) return ReplyStatus(req, st, "read", ino);
  thread_local std::vector<iovec> iov;
  iov.clear();
  for (std::span<const char> p : got.pieces) iov.push_back({const_cast<char*>(p.data()), p.size()});
  fuse_reply_iov(req, iov.data(), int(iov.size()));
}

// An O_DIRECT write (the flags come with every WRITE) may have raced a
// reader that brought the old bytes into the page cache, which the kernel
// does not drop when an asynchronous direct write completes
// (cache_notifier.h): the attributes are dropped before the reply, so the
// next read sees the new mtime and drops the pages, and the range after it.
void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
           fuse_file_info* fi) {
  const Adapter& ad = AdapterOf(req);
  Result<size_t> n = ad.fs->Write(CredsOf(req), ino, uint64_t(off), std::string_view(buf, size));
  if (!n.ok()) return ReplyStatus(req, n.status(), "write", ino);
  const bool direct = (fi->flags & O_DIRECT) && !fi->writepage && ad.notifier != nullptr;
  if (direct) ad.notifier->InvalidateAttributes(ino);
  fuse_reply_write(req, *n);
  if (direct) ad.notifier->Post(ino, off, int64_t(*n), {});
}

void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info*) {
  ReplyOkOr(req, AdapterOf(req).fs->Fsync(ino, datasync != 0), "fsync", ino);
}

void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, fuse_file_info*) {
  uint32_t flags = 0;
  if (mode & FALLOC_FL_KEEP_SIZE) flags |= kFallocKeepSize;
  if (mode & FALLOC_FL_PUNCH_HOLE) flags |= kFallocPunchHole;
  if (mode & FALLOC_FL_ZERO_RANGE) flags |= kFallocZeroRange;
  if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
    fuse_reply_err(req, EOPNOTSUPP);  // collapse, insert, unshare: not offered
    return;
  }
  Status st = AdapterOf(req).fs->Fallocate(CredsOf(req), ino, flags, uint64_t(off), uint64_t(len));
  ReplyOkOr(req, st, "fallocate", ino);
}

// copy_file_range(2) between two files of the mount, which the core may
// answer by sharing whole blocks instead of copying them
// (Filesystem::CopyFileRange). The kernel has already checked the two
// files (open modes, O_APPEND, ranges within one file, the source's end),
// written back both ranges' dirty pages, and it drops the destination's
// cached pages of the range and its attributes once the reply comes.
//
// NotSupported reaches the kernel as EOPNOTSUPP (status_errno.cc), on
// purpose not ENOSYS. Either way the kernel then copies this request
// itself, through READs and WRITEs, and the caller sees a success. But
// ENOSYS also makes the kernel send no COPY_FILE_RANGE again for the
// life of the mount (fuse_conn's no_copy_file_range): a filesystem that
// declines one call (fs.h lets any call answer NotSupported) would lose
// block cloning for every later copy. EOPNOTSUPP costs one round trip per
// call where the filesystem never clones, and keeps cloning wherever it
// can. EXDEV would make the kernel copy too, but means something else.
//
// The reply's count is 32 bits wide (fuse_write_out), so a longer request
// is cut to kMaxCopy, a power of two: the core copies fewer bytes, as
// copy_file_range may, the caller asks again for the rest, and a cut at a
// multiple of every block size leaves the next call's offsets as aligned
// in their blocks as this one's, so its blocks are still shared.
void CopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info*,
                   fuse_ino_t ino_out, off_t off_out, fuse_file_info*, size_t len, int flags) {
  constexpr size_t kMaxCopy = size_t{1} << 31;
  if (off_in < 0 || off_out < 0) return (void)fuse_reply_err(req, EINVAL);
  Result<uint64_t> n =
      AdapterOf(req).fs->CopyFileRange(CredsOf(req), ino_in, uint64_t(off_in), ino_out,
                                       uint64_t(off_out), std::min(len, kMaxCopy), uint32_t(flags));
  if (!n.ok()) return ReplyStatus(req, n.status(), "copy_file_range", ino_out);
  fuse_reply_write(req, size_t(*n));
}

// SEEK_DATA and SEEK_HOLE. The kernel asks without writing back the
// file's dirty pages first (a writeback-cache mount's writes, any mount's
// writes through a shared mapping), so an answer from the pool alone could
// call a hole what those pages fill, and a copy that skips holes (cp,
// tar --sparse) would lose them. So the file's pages from `off` on are
// dropped first, which writes the dirty ones back (the kernel launders
// them, waiting for the WRITEs), and the answer comes after that, on the
// notifier's thread. SEEK_SET, SEEK_CUR and SEEK_END never reach here.
void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info*) {
  const Adapter& ad = AdapterOf(req);
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return (void)fuse_reply_err(req, EINVAL);
  if (off < 0) return (void)fuse_reply_err(req, ENXIO);
  auto answer = [req, ino, off, whence, &ad] {
    Result<uint64_t> at = ad.fs->Seek(ino, uint64_t(off), whence == SEEK_HOLE);
    if (at.ok()) return (void)fuse_reply_lseek(req, off_t(*at));
    // A filesystem without it: ENOSYS, after which the kernel answers
    // every lseek itself (the whole file as data).
    if (at.status().code() == StatusCode::kNotSupported) return (void)fuse_reply_err(req, ENOSYS);
    ReplyStatus(req, at.status(), "lseek", ino);
  };
  if (ad.notifier == nullptr) return answer();
  ad.notifier->Post(ino, off, 0, std::move(answer));
}

}  // namespace

void AddFileOps(fuse_lowlevel_ops& ops) {
  ops.create = Create;
  ops.mknod = Mknod;
  ops.open = Open;
  ops.release = Release;
  ops.read = Read;
  ops.write = Write;
  ops.fsync = Fsync;
  ops.fallocate = Fallocate;
  ops.copy_file_range = CopyFileRange;
  ops.lseek = Lseek;
}

}  // namespace poolfs::fuse
