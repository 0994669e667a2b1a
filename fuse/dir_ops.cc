// Directories: MKDIR, RMDIR, OPENDIR, READDIR, READDIRPLUS, RELEASEDIR,
// FSYNCDIR. A directory handle holds nothing: READDIR's offset is the
// Filesystem's cookie, which stays valid while entries change. So, as for
// files (file_ops.cc), a kernel that can open directories on its own
// (Adapter::no_opendir; it checks the read permission itself, every mount
// has default_permissions) gets ENOSYS for OPENDIR once, and then sends
// neither OPENDIR nor RELEASEDIR: two requests less per directory a
// program opens (find, rm -r, ls, an fsync of a directory).
#include <cerrno>
#include <string>

#include "adapter.h"

namespace poolfs::fuse {
namespace {

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  Result<Attr> a = AdapterOf(req).fs->Mkdir(CredsOf(req), parent, name, mode & 07777);
  if (!a.ok()) return ReplyStatus(req, a.status(), "mkdir", parent);
  ReplyEntry(req, *a);
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyOkOr(req, AdapterOf(req).fs->Rmdir(CredsOf(req), parent, name), "rmdir", parent);
}

void OpenDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  if (AdapterOf(req).no_opendir.load(std::memory_order_relaxed))
    return (void)fuse_reply_err(req, ENOSYS);
  fuse_reply_open(req, fi);
}

void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

// Fills a reply buffer of `size` bytes from `cookie` on, with or without
// attributes, and sends it.
void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t cookie, bool plus) {
  const Adapter& ad = AdapterOf(req);
  std::string buf(size, '\0');
  size_t used = 0;
  auto emit = [&](const DirEntry& d) {
    char* at = buf.data() + used;
    const size_t room = size - used;
    size_t need;
    if (plus) {
      fuse_entry_param e{};
      e.ino = d.ino;
      e.generation = d.attr.generation;
      e.entry_timeout = ad.entry_timeout;
      e.attr_timeout = ad.attr_timeout;
      FillStat(d.attr, &e.attr);
      need = fuse_add_direntry_plus(req, at, room, d.name.c_str(), &e, off_t(d.next_cookie));
    } else {
      struct stat st {};
      st.st_ino = d.ino;
      st.st_mode = d.type;
      need = fuse_add_direntry(req, at, room, d.name.c_str(), &st, off_t(d.next_cookie));
    }
    if (need > room) return false;  // not added: the next call resumes here
    used += need;
    return true;
  };
  Status st = ad.fs->ReadDir(CredsOf(req), ino, uint64_t(cookie), plus, emit);
  // Entries already taken (plus: with their lookup references) must reach
  // the kernel, so a failure after the first entry still sends them.
  if (!st.ok() && used == 0) return ReplyStatus(req, st, plus ? "readdirplus" : "readdir", ino);
  fuse_reply_buf(req, buf.data(), used);
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, false);
}

void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, true);
}

void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info*) {
  ReplyOkOr(req, AdapterOf(req).fs->Fsync(ino, datasync != 0), "fsyncdir", ino);
}

}  // namespace

void AddDirOps(fuse_lowlevel_ops& ops) {
  ops.mkdir = Mkdir;
  ops.rmdir = Rmdir;
  ops.opendir = OpenDir;
  ops.releasedir = ReleaseDir;
  ops.readdir = ReadDir;
  ops.readdirplus = ReadDirPlus;
  ops.fsyncdir = FsyncDir;
}

}  // namespace poolfs::fuse
