// Attributes: GETATTR, SETATTR (chmod, chown, truncate, utimes), ACCESS,
// STATFS.
#include <sys/statvfs.h>

#include "adapter.h"
#include "kernel_channel.h"

namespace poolfs::fuse {
namespace {

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  const Adapter& ad = AdapterOf(req);
  Result<Attr> a = ad.fs->GetAttr(ino);
  if (!a.ok()) return ReplyStatus(req, a.status(), "getattr", ino);
  struct stat st;
  FillStat(*a, &st);
  fuse_reply_attr(req, &st, ad.attr_timeout);
}

Timespec ToTimespec(const struct timespec& t) {
  return Timespec{int64_t(t.tv_sec), uint32_t(t.tv_nsec)};
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  const Adapter& ad = AdapterOf(req);
  SetAttrRequest r;
  // libfuse passes a file_info only when the kernel sent FATTR_FH: a
  // truncate through a descriptor (ftruncate, open with O_TRUNC).
  if (fi != nullptr) r.valid |= SetAttrRequest::kOpenFile;
  if (to_set & FUSE_SET_ATTR_MODE) {
    r.valid |= SetAttrRequest::kMode;
    r.mode = attr->st_mode & 07777;
  }
  if (to_set & FUSE_SET_ATTR_UID) {
    r.valid |= SetAttrRequest::kUid;
    r.uid = attr->st_uid;
  }
  if (to_set & FUSE_SET_ATTR_GID) {
    r.valid |= SetAttrRequest::kGid;
    r.gid = attr->st_gid;
  }
  if (to_set & FUSE_SET_ATTR_SIZE) {
    r.valid |= SetAttrRequest::kSize;
    r.size = uint64_t(attr->st_size);
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    r.valid |= SetAttrRequest::kAtimeNow;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    r.valid |= SetAttrRequest::kAtime;
    r.atime = ToTimespec(attr->st_atim);
  }
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    r.valid |= SetAttrRequest::kMtimeNow;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    r.valid |= SetAttrRequest::kMtime;
    r.mtime = ToTimespec(attr->st_mtim);
  }
  if (to_set & FUSE_SET_ATTR_CTIME) {
    r.valid |= SetAttrRequest::kCtime;
    r.ctime = ToTimespec(attr->st_ctim);
  }
  // A change of no field (or of ctime alone, which the kernel sends along
  // with the others when it keeps times itself) from a kernel that leaves
  // clearing privileges to the filesystem is how it asks for that
  // clearing (SetAttrRequest::kClearPrivileges).
  if ((r.valid & ~(SetAttrRequest::kOpenFile | SetAttrRequest::kCtime)) == 0 &&
      KernelLeavesPrivileges(ad))
    r.valid |= SetAttrRequest::kClearPrivileges;
  Result<Attr> a = ad.fs->SetAttr(CredsOf(req), ino, r);
  if (!a.ok()) return ReplyStatus(req, a.status(), "setattr", ino);
  struct stat st;
  FillStat(*a, &st);
  fuse_reply_attr(req, &st, ad.attr_timeout);
}

void Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  ReplyOkOr(req, AdapterOf(req).fs->Access(CredsOf(req), ino, mask), "access", ino);
}

void StatFs(fuse_req_t req, fuse_ino_t ino) {
  Result<FsStats> s = AdapterOf(req).fs->StatFs(ino);
  if (!s.ok()) return ReplyStatus(req, s.status(), "statfs", ino);
  struct statvfs v {};
  v.f_bsize = s->block_size;
  v.f_frsize = s->block_size;
  v.f_blocks = s->blocks;
  v.f_bfree = s->blocks_free;
  v.f_bavail = s->blocks_available;
  v.f_files = s->files;
  v.f_ffree = s->files_free;
  v.f_favail = s->files_free;
  v.f_namemax = s->name_max;
  fuse_reply_statfs(req, &v);
}

}  // namespace

void AddAttrOps(fuse_lowlevel_ops& ops) {
  ops.getattr = GetAttr;
  ops.setattr = SetAttr;
  ops.access = Access;
  ops.statfs = StatFs;
}

}  // namespace poolfs::fuse
