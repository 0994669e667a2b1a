// Name lookup and the kernel's lookup references: LOOKUP, FORGET,
// BATCH_FORGET. A name that does not exist is answered with an entry of
// inode 0, which the kernel caches as negative for negative_timeout.
#include "adapter.h"

namespace poolfs::fuse {
namespace {

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  const Adapter& ad = AdapterOf(req);
  Result<Attr> a = ad.fs->Lookup(CredsOf(req), parent, name);
  if (a.ok()) return ReplyEntry(req, *a);
  if (a.status().IsNotFound() && ad.negative_timeout > 0) {
    fuse_entry_param e{};
    e.ino = 0;
    e.entry_timeout = ad.negative_timeout;
    fuse_reply_entry(req, &e);
    return;
  }
  ReplyStatus(req, a.status(), "lookup", parent);
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  AdapterOf(req).fs->Forget(ino, nlookup);
  fuse_reply_none(req);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  Filesystem* fs = AdapterOf(req).fs;
  for (size_t i = 0; i < count; i++) fs->Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

}  // namespace

void AddLookupOps(fuse_lowlevel_ops& ops) {
  ops.lookup = Lookup;
  ops.forget = Forget;
  ops.forget_multi = ForgetMulti;
}

}  // namespace poolfs::fuse
