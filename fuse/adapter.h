// The FUSE adapter's internals: what every family of operations shares.
//
// Each family lives in its own file (lookup_ops.cc, attr_ops.cc,
// dir_ops.cc, file_ops.cc, link_ops.cc, xattr_ops.cc) and registers its
// handlers into the fuse_lowlevel_ops table through Add<Family>Ops. A
// handler reads its Adapter from the request, builds the caller's Creds,
// calls the Filesystem once and replies: with the result, or with the
// errno of the Status (ReplyStatus, the only caller of StatusToErrno).
//
// Thread safety: an Adapter is immutable once the session starts (Init,
// which the kernel answers before it sends anything else, sets no_open and
// no_opendir);
// handlers run on any FUSE worker thread at once (the Filesystem
// serializes calls on one inode itself).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>

#include "poolfs/fs.h"

namespace poolfs::fuse {

class CacheNotifier;
class KernelChannel;

// What the handlers need: the filesystem and the reply timeouts.
struct Adapter {
  Filesystem* fs = nullptr;
  double entry_timeout = 0;     // seconds the kernel may cache a name
  double attr_timeout = 0;      // seconds the kernel may cache attributes
  double negative_timeout = 0;  // seconds it may cache "no such name"
  bool writeback_cache = false;
  bool keep_cache = true;  // page cache survives an open (only we change data)
  // Drops what the kernel caches of a file's data (cache_notifier.h); set
  // before the mount, like every field here but no_open.
  CacheNotifier* notifier = nullptr;
  // Reads and writes the device when the session asks the kernel for more
  // than libfuse can (kernel_channel.h); null otherwise.
  KernelChannel* channel = nullptr;
  // The kernel opens files without asking (FUSE_CAP_NO_OPEN_SUPPORT):
  // OPEN and CREATE answer ENOSYS once, after which the kernel sends
  // neither, nor RELEASE (file_ops.cc says why). Set by Init.
  std::atomic<bool> no_open{false};
  // Likewise for directories (FUSE_CAP_NO_OPENDIR_SUPPORT, Linux 5.1 on):
  // OPENDIR answers ENOSYS once, then neither it nor RELEASEDIR comes
  // (dir_ops.cc). Set by Init.
  std::atomic<bool> no_opendir{false};
};

// The Adapter the session was created with.
inline const Adapter& AdapterOf(fuse_req_t req) {
  return *static_cast<const Adapter*>(fuse_req_userdata(req));
}

// The caller's uid and gid, and its supplementary groups on demand (read
// through fuse_req_getgroups only when a permission check needs them).
// The result must not outlive the request.
Creds CredsOf(fuse_req_t req);

// Fills `st` from `a`.
void FillStat(const Attr& a, struct stat* st);

// Replies to a request that returned an Attr for a name (lookup, create,
// mknod, mkdir, symlink, link).
void ReplyEntry(fuse_req_t req, const Attr& a);

// Replies with the errno of `st` (which must not be OK). Server errors
// (EIO-class) are logged with `op` and `ino` at error level, the others
// at debug level.
void ReplyStatus(fuse_req_t req, const Status& st, const char* op, uint64_t ino);

// Replies 0 for OK, else as ReplyStatus.
void ReplyOkOr(fuse_req_t req, const Status& st, const char* op, uint64_t ino);

// Each family adds its handlers to `ops`.
void AddLookupOps(fuse_lowlevel_ops& ops);
void AddAttrOps(fuse_lowlevel_ops& ops);
void AddDirOps(fuse_lowlevel_ops& ops);
void AddFileOps(fuse_lowlevel_ops& ops);
void AddLinkOps(fuse_lowlevel_ops& ops);
void AddXattrOps(fuse_lowlevel_ops& ops);

// The whole table: init plus every family.
fuse_lowlevel_ops MakeOps();

}  // namespace poolfs::fuse
