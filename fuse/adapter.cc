// The adapter's shared helpers and the session's init handler.
#include "adapter.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "status_errno.h"

namespace poolfs::fuse {

Creds CredsOf(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  Creds c;
  c.uid = ctx->uid;
  c.gid = ctx->gid;
  c.supplementary_groups = [req]() {
    std::vector<gid_t> groups(64);
    for (;;) {
      const int n = fuse_req_getgroups(req, int(groups.size()), groups.data());
      if (n < 0) return std::vector<uint32_t>{};  // the caller is gone, or no /proc
      if (size_t(n) <= groups.size())
        return std::vector<uint32_t>(groups.begin(), groups.begin() + n);
      groups.resize(size_t(n));
    }
  };
  return c;
}

void FillStat(const Attr& a, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = a.ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_rdev = a.rdev;
  st->st_size = off_t(a.size);
  st->st_blocks = blkcnt_t(a.blocks);
  st->st_blksize = blksize_t(a.blksize);
  st->st_atim = {time_t(a.atime.sec), long(a.atime.nsec)};
  st->st_mtim = {time_t(a.mtime.sec), long(a.mtime.nsec)};
  st->st_ctim = {time_t(a.ctime.sec), long(a.ctime.nsec)};
}

void ReplyEntry(fuse_req_t req, const Attr& a) {
  const Adapter& ad = AdapterOf(req);
  fuse_entry_param e{};
  e.ino = a.ino;
  e.generation = a.generation;
  e.entry_timeout = ad.entry_timeout;
  e.attr_timeout = ad.attr_timeout;
  FillStat(a, &e.attr);
  Filesystem* fs = ad.fs;
  // The caller was interrupted: the kernel never takes the reference.
  if (fuse_reply_entry(req, &e) == -ENOENT) fs->Forget(a.ino, 1);
}

void ReplyStatus(fuse_req_t req, const Status& st, const char* op, uint64_t ino) {
  const int err = StatusToErrno(st);
  if (IsServerError(st)) {
    spdlog::error("fuse {} inode {}: {} (errno {})", op, ino, st.ToString(), err);
  } else if (spdlog::should_log(spdlog::level::debug)) {
    // Asked first: every create's LOOKUP ends here (ENOENT), and the
    // message is a string built for nothing when debug lines are off.
    spdlog::debug("fuse {} inode {}: {}", op, ino, st.ToString());
  }
  fuse_reply_err(req, err);
}

void ReplyOkOr(fuse_req_t req, const Status& st, const char* op, uint64_t ino) {
  if (st.ok()) {
    fuse_reply_err(req, 0);
  } else {
    ReplyStatus(req, st, op, ino);
  }
}

namespace {

// Chooses the kernel features the adapter relies on.
//
// Atomic O_TRUNC: libfuse turns it on by default; Filesystem::Open only
// checks O_TRUNC, so the kernel must send the truncation as a SETATTR: it
// is turned off.
//
// setuid/setgid clearing. The Filesystem clears the bits on write,
// truncate and chown itself (PosixFs::Write, SetAttr). With
// fuse.handle_killpriv (the default) the session tells the kernel so by
// FUSE_HANDLE_KILLPRIV_V2, which libfuse 3.14 cannot ask for: the
// KernelChannel adds it to libfuse's INIT reply (kernel_channel.h). The
// kernel then stops asking for security.capability before every write and
// for the attributes before every chown, and asks for the clearing it
// cannot name as a field (chown(f, -1, -1)) with a SETATTR of nothing
// (SetAttr in attr_ops.cc). Without it, the kernel clears the bits itself
// before a write or truncate with a chmod sent with the writer's
// credentials, which the Filesystem accepts from a caller who may write
// the file when it clears exactly what the write would. FUSE_CAP_HANDLE_KILLPRIV,
// the first version, is asked for as well, but libfuse 3.14 never passes
// it on (https://github.com/libfuse/libfuse/issues/884); nor
// FUSE_PARALLEL_DIROPS (https://github.com/libfuse/libfuse/pull/861).
//
// Opening without a request: when the kernel can (FUSE_CAP_NO_OPEN_SUPPORT,
// Linux 4.19 on), OPEN and CREATE answer ENOSYS (file_ops.cc); and OPENDIR
// (FUSE_CAP_NO_OPENDIR_SUPPORT, Linux 5.1 on; dir_ops.cc).
//
// File handles: the kernel may turn one (open_by_handle_at, an NFS export
// of the mount) into an inode it no longer holds by looking up "." of its
// node id, and connect a directory by looking up ".." (Filesystem::Lookup
// answers both): FUSE_CAP_EXPORT_SUPPORT. Without it such a handle is
// ESTALE once the kernel has forgotten the inode.
//
// Cached pages: the kernel drops a file's pages when it sees its size or
// mtime change in attributes it fetches (FUSE_CAP_AUTO_INVAL_DATA, libfuse's
// default, asked for here because what cache_notifier.h does for direct
// writes relies on it).
void Init(void* userdata, fuse_conn_info* conn) {
  Adapter& ad = *static_cast<Adapter*>(userdata);
  ad.no_open.store((conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) != 0, std::memory_order_relaxed);
  ad.no_opendir.store((conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0,
                      std::memory_order_relaxed);
  conn->want &= ~unsigned(FUSE_CAP_ATOMIC_O_TRUNC);
  if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
  if (conn->capable & FUSE_CAP_EXPORT_SUPPORT) conn->want |= FUSE_CAP_EXPORT_SUPPORT;
  if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV) conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
  if (ad.writeback_cache) {
    if (conn->capable & FUSE_CAP_WRITEBACK_CACHE) {
      conn->want |= FUSE_CAP_WRITEBACK_CACHE;
    } else {
      spdlog::warn("fuse: the kernel offers no writeback cache; fuse.writeback_cache ignored");
    }
  }
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  spdlog::debug("fuse: kernel protocol {}.{}, capable {:#x}, want {:#x}", conn->proto_major,
                conn->proto_minor, conn->capable, conn->want);
}

}  // namespace

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = Init;
  AddLookupOps(ops);
  AddAttrOps(ops);
  AddDirOps(ops);
  AddFileOps(ops);
  AddLinkOps(ops);
  AddXattrOps(ops);
  return ops;
}

}  // namespace poolfs::fuse
