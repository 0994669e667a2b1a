// Names that point at existing inodes, and their removal: SYMLINK,
// READLINK, LINK, UNLINK, RENAME.
#include <linux/fs.h>
#include <cstdio>  // RENAME_NOREPLACE, RENAME_EXCHANGE

#include "adapter.h"

namespace poolfs::fuse {
namespace {

void Symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  Result<Attr> a = AdapterOf(req).fs->Symlink(CredsOf(req), parent, name, target);
  if (!a.ok()) return ReplyStatus(req, a.status(), "symlink", parent);
  ReplyEntry(req, *a);
}

void Readlink(fuse_req_t req, fuse_ino_t ino) {
  Result<std::string> t = AdapterOf(req).fs->Readlink(ino);
  if (!t.ok()) return ReplyStatus(req, t.status(), "readlink", ino);
  fuse_reply_readlink(req, t->c_str());
}

void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name) {
  Result<Attr> a = AdapterOf(req).fs->Link(CredsOf(req), ino, new_parent, new_name);
  if (!a.ok()) return ReplyStatus(req, a.status(), "link", ino);
  ReplyEntry(req, *a);
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyOkOr(req, AdapterOf(req).fs->Unlink(CredsOf(req), parent, name), "unlink", parent);
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
            const char* new_name, unsigned int flags) {
  uint32_t f = 0;
  if (flags & RENAME_NOREPLACE) f |= kRenameNoReplace;
  if (flags & RENAME_EXCHANGE) f |= kRenameExchange;
  if (flags & ~unsigned(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
    fuse_reply_err(req, EINVAL);  // RENAME_WHITEOUT: for overlay filesystems only
    return;
  }
  Status st = AdapterOf(req).fs->Rename(CredsOf(req), parent, name, new_parent, new_name, f);
  ReplyOkOr(req, st, "rename", parent);
}

}  // namespace

void AddLinkOps(fuse_lowlevel_ops& ops) {
  ops.symlink = Symlink;
  ops.readlink = Readlink;
  ops.link = Link;
  ops.unlink = Unlink;
  ops.rename = Rename;
}

}  // namespace poolfs::fuse
