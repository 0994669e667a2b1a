// Extended attributes: SETXATTR, GETXATTR, LISTXATTR, REMOVEXATTR. A
// request of size 0 asks only for the size; a buffer too small is ERANGE.
#include <sys/xattr.h>

#include <string>
#include <string_view>

#include "adapter.h"

namespace poolfs::fuse {
namespace {

// Replies with `value`'s size (size 0), the value, or ERANGE.
void ReplySized(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (value.size() > size) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  uint32_t f = 0;
  if (flags & XATTR_CREATE) f |= kXattrCreate;
  if (flags & XATTR_REPLACE) f |= kXattrReplace;
  Status st =
      AdapterOf(req).fs->SetXattr(CredsOf(req), ino, name, std::string_view(value, size), f);
  ReplyOkOr(req, st, "setxattr", ino);
}

void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Result<std::string> v = AdapterOf(req).fs->GetXattr(CredsOf(req), ino, name);
  if (!v.ok()) return ReplyStatus(req, v.status(), "getxattr", ino);
  ReplySized(req, *v, size);
}

void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Result<std::vector<std::string>> names = AdapterOf(req).fs->ListXattr(CredsOf(req), ino);
  if (!names.ok()) return ReplyStatus(req, names.status(), "listxattr", ino);
  std::string joined;
  for (const std::string& n : *names) {
    joined += n;
    joined += '\0';
  }
  ReplySized(req, joined, size);
}

void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  ReplyOkOr(req, AdapterOf(req).fs->RemoveXattr(CredsOf(req), ino, name), "removexattr", ino);
}

}  // namespace

void AddXattrOps(fuse_lowlevel_ops& ops) {
  ops.setxattr = SetXattr;
  ops.getxattr = GetXattr;
  ops.listxattr = ListXattr;
  ops.removexattr = RemoveXattr;
}

}  // namespace poolfs::fuse
