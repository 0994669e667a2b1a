// PosixFs: names — lookup, create, mknod, mkdir, symlink, readlink, link,
// unlink, rmdir, readdir (rename is rename.cc).
#include <sys/stat.h>

#include <algorithm>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {
namespace {

uint64_t Type(uint32_t mode) { return mode & S_IFMT; }

}  // namespace

bool PosixFs::StillNames(Inode& dir, std::string_view name, uint64_t ino) {
  auto v = dir.dir->Lookup(name);
  return v.ok() && v->object == ino;
}

Result<zap::Value> PosixFs::Entry(const Inode& dir, uint64_t parent, std::string_view name) {
  auto v = dir.dir->Lookup(name);
  if (!v.ok() && v.status().IsNotFound())
    return Status::NotFound("'" + std::string(name) + "' not in directory " +
                            std::to_string(parent));
  return v;
}

Result<Attr> PosixFs::Lookup(const Creds& c, uint64_t parent, std::string_view name) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_RETURN_IF_ERROR(CheckName(name));
  InodeRef in;
  if (name == "." || name == "..") {
    // Only the kernel's export operations ask these (a path's "." and ".."
    // never leave the kernel): "." of any inode, to turn a file handle
    // (open_by_handle_at, NFS) back into a file the kernel no longer holds,
    // and ".." of a directory, to connect it to the tree. The kernel asks
    // for a caller who may use the handle whatever the mode bits say, so
    // no search permission is checked. Stale when the inode is gone.
    POOLFS_ASSIGN_OR_RETURN(InodeRef p, Get(parent));
    if (name == ".") {
      in = std::move(p);
    } else if (!p->is_dir()) {
      return Status(StatusCode::kNotADirectory,
                    "inode " + std::to_string(parent) + " is not a directory");
    } else {
      POOLFS_ASSIGN_OR_RETURN(in, Get(p->Snapshot().parent));
    }
  } else {
    POOLFS_ASSIGN_OR_RETURN(InodeRef p, GetDir(parent));
    POOLFS_RETURN_IF_ERROR(CheckAccess(c, p->Snapshot(), X_OK));
    // The entry is read without the directory's op_mu, so by the time its
    // object is loaded the name may be gone, the object freed and its
    // number handed to a new file, perhaps half made (no znode yet). The
    // entry is read again after the load and the lookup starts over if it
    // changed. Once it is confirmed, a removal that frees the object marks
    // this Inode freed, which the check below sees.
    for (;;) {
      POOLFS_ASSIGN_OR_RETURN(zap::Value v, Entry(*p, parent, name));
      auto r = Get(v.object, false);
      if (!StillNames(*p, name, v.object)) continue;
      if (!r.ok()) return r.status();
      in = std::move(*r);
      break;
    }
  }
  ZnodePhys z;
  {
    util::MutexLock l(&in->mu);
    if (in->freed) return Status::NotFound("'" + std::string(name) + "' was just removed");
    table_.AddLookups(in->ino, 1);
    z = in->z;
  }
  return MakeAttr(*in, z);
}

Result<Attr> PosixFs::MakeNode(const Creds& c, uint64_t parent, std::string_view name,
                               uint32_t mode, uint64_t rdev, std::string_view target,
                               const ExactAttrs* exact) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  POOLFS_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..")
    return Status::AlreadyExists("'" + std::string(name) + "' always exists");
  const bool is_dir = S_ISDIR(mode);
  POOLFS_ASSIGN_OR_RETURN(InodeRef p, GetDir(parent));
  LockSet locks({p.get()});
  ZnodePhys pz = p->Snapshot();
  POOLFS_RETURN_IF_ERROR(CheckDirWrite(c, pz));
  if (is_dir && pz.nlink >= kLinkMax)
    return Status(StatusCode::kTooManyLinks,
                  "directory " + std::to_string(parent) + " has too many subdirectories");
  // No separate existence check: the zap's Add refuses an existing name
  // (and the kernel sends CREATE only after a lookup found nothing), which
  // saves a leaf read on the create path; the object made first is then
  // freed in the same Tx.
  POOLFS_RETURN_IF_ERROR(ReserveSpace(4096 + target.size()));

  ZnodePhys z;
  z.mode = mode;
  z.uid = c.uid;
  z.gid = c.gid;
  if (pz.mode & S_ISGID) {  // BSD group semantics below a setgid directory
    z.gid = pz.gid;
    if (is_dir) z.mode |= S_ISGID;
  }
  if (!is_dir && (z.mode & S_ISGID) && (z.mode & S_IXGRP) && c.uid != 0 && !InGroup(c, z.gid))
    z.mode &= ~S_ISGID;
  z.nlink = is_dir ? 2 : 1;
  z.rdev = rdev;
  z.parent = parent;
  z.atime = z.mtime = z.ctime = z.btime = Now();
  if (exact != nullptr) {
    z.uid = exact->uid;
    z.gid = exact->gid;
    z.mode = (mode & S_IFMT) | (exact->mode & 07777);
    z.atime = z.mtime = z.ctime = z.btime = exact->time;
  }
  if (S_ISLNK(mode)) {
    z.size = target.size();
    // Inline when it fits the bonus buffer (pool format 1's holds 256
    // bytes of target, format 2's 192).
    if (target.size() <= std::min(kMaxInlineTarget, os_->max_bonus() - kZnodeSize))
      z.inline_target = std::string(target);
  }

  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(2048 + target.size()));
  const std::string bonus = EncodeZnode(z);
  InodeRef in;
  ObjectId id;
  Status st;
  if (is_dir) {
    auto zap = zap::Zap::Create(tx, os_, dmu::ObjectType::kDirectory, {}, ZapOpts());
    if (!zap.ok()) return tx.Finish(zap.status());
    id = (*zap)->id();
    in = std::make_shared<Inode>(id.value());
    in->dir = std::move(zap).value();
    st = os_->SetBonus(tx, in->dir->dnode(), kZnodeBonus, bonus);
  } else {
    // The znode goes in with the object: no second lookup of the dnode.
    // A small block to start with: it grows with the file (GrowBlocks).
    auto created = os_->Create(
        tx, dmu::ObjectType::kPlain, os_->StartBlockSize(RecordSize()),
        util::Compression(props_compression_.load(std::memory_order_relaxed)), bonus, kZnodeBonus);
    if (!created.ok()) return tx.Finish(created.status());
    id = *created;
    in = std::make_shared<Inode>(id.value());
  }
  in->generation = tx.txg().value();
  // The Inode is in the table before the name is: from the moment Add
  // puts the name in the zap, a lookup (which reads entries without the
  // directory's op_mu) may reach the object, and must find this Inode
  // rather than load a second one whose op_mu and cached znode would let
  // two changes of the file run at once.
  {
    util::MutexLock l(&in->mu);
    in->z = z;
  }
  table_.Replace(in);
  if (st.ok() && S_ISLNK(mode) && z.inline_target.empty()) {
    st = GrowBlocks(tx, id.value(), target.size());
    if (st.ok()) st = os_->Write(tx, id, 0, target);
  }
  if (st.ok()) st = p->dir->Add(tx, name, zap::Value{id.value(), Type(mode)});
  if (!st.ok()) {
    // Undone in the same Tx: a failed Add leaves no entry, so freeing the
    // new object takes back everything, and the Tx commits no change of
    // the namespace. Only when that free fails is the Tx abandoned.
    {
      util::MutexLock l(&in->mu);
      in->freed = true;
    }
    table_.Erase(id.value());
    if (Status undone = os_->Free(tx, id); !undone.ok()) return tx.Finish(st);
    tx.Commit();
    if (st.code() == StatusCode::kAlreadyExists)
      return Status::AlreadyExists("'" + std::string(name) + "' exists in directory " +
                                   std::to_string(parent));
    return st;
  }
  pz.mtime = pz.ctime = z.ctime;
  if (is_dir) pz.nlink++;
  POOLFS_RETURN_IF_ERROR(tx.Finish(SaveZnode(tx, *p, pz)));
  {
    util::MutexLock l(&in->mu);
    table_.AddLookups(in->ino, 1);
  }
  Note(tx, {p.get(), in.get()});
  {
    const zil::RecordType type = is_dir           ? zil::RecordType::kMkdir
                                 : S_ISLNK(mode)  ? zil::RecordType::kSymlink
                                 : S_ISREG(mode)  ? zil::RecordType::kCreate
                                                  : zil::RecordType::kMknod;
    Log(tx, id.value(), type,
        zil::CreateBody{parent, std::string(name), z.mode, z.uid, z.gid, z.rdev, z.ctime,
                        std::string(target)});
  }
  return MakeAttr(*in, z);
}

Result<Attr> PosixFs::Create(const Creds& c, uint64_t parent, std::string_view name,
                             uint32_t mode) {
  return MakeNode(c, parent, name, S_IFREG | (mode & 07777), 0, {});
}

Result<Attr> PosixFs::Mknod(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode,
                            uint64_t rdev) {
  switch (mode & S_IFMT) {
    case 0: mode |= S_IFREG; [[fallthrough]];
    case S_IFREG:
    case S_IFIFO:
    case S_IFSOCK: rdev = 0; break;
    case S_IFCHR:
    case S_IFBLK:
      if (c.uid != 0) return Status(StatusCode::kNotPermitted, "only root may create device nodes");
      break;
    default: return Status::InvalidArgument("mknod of file type " + std::to_string(mode & S_IFMT));
  }
  return MakeNode(c, parent, name, mode & (S_IFMT | 07777), rdev, {});
}

Result<Attr> PosixFs::Mkdir(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode) {
  return MakeNode(c, parent, name, S_IFDIR | (mode & 07777), 0, {});
}

Result<Attr> PosixFs::Symlink(const Creds& c, uint64_t parent, std::string_view name,
                              std::string_view target) {
  if (target.empty()) return Status::NotFound("empty symlink target");
  if (target.size() > kMaxSymlinkTarget)
    return Status(StatusCode::kNameTooLong,
                  "symlink target of " + std::to_string(target.size()) + " bytes (at most 4095)");
  return MakeNode(c, parent, name, S_IFLNK | 0777, 0, target);
}

Result<std::string> PosixFs::Readlink(uint64_t ino) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  const ZnodePhys z = in->Snapshot();
  if (!S_ISLNK(z.mode))
    return Status::InvalidArgument("inode " + std::to_string(ino) + " is not a symlink");
  std::string t = z.inline_target;
  if (t.empty()) {
    POOLFS_ASSIGN_OR_RETURN(t, os_->Read(ObjectId(ino), 0, z.size));
    if (t.size() != z.size)
      return Status::Corruption("object " + std::to_string(ino) + ": symlink target of " +
                                std::to_string(t.size()) + " bytes, znode says " +
                                std::to_string(z.size));
  }
  TouchAtime(*in);
  return t;
}

Result<Attr> PosixFs::Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                           std::string_view new_name) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  POOLFS_RETURN_IF_ERROR(CheckName(new_name));
  if (new_name == "." || new_name == "..")
    return Status::AlreadyExists("'" + std::string(new_name) + "' always exists");
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  if (in->is_dir())
    return Status(StatusCode::kNotPermitted, "cannot hard-link directory " + std::to_string(ino));
  POOLFS_ASSIGN_OR_RETURN(InodeRef p, GetDir(new_parent));
  LockSet locks({p.get(), in.get()});
  ZnodePhys pz = p->Snapshot();
  ZnodePhys z = in->Snapshot();
  POOLFS_RETURN_IF_ERROR(CheckDirWrite(c, pz));
  if (z.nlink == 0) return Status::NotFound("inode " + std::to_string(ino) + " was removed");
  if (z.nlink >= kLinkMax)
    return Status(StatusCode::kTooManyLinks,
                  "inode " + std::to_string(ino) + " has " + std::to_string(z.nlink) + " links");
  auto existing = p->dir->Lookup(new_name);
  if (existing.ok())
    return Status::AlreadyExists("'" + std::string(new_name) + "' exists in directory " +
                                 std::to_string(new_parent));
  if (!existing.status().IsNotFound()) return existing.status();
  POOLFS_RETURN_IF_ERROR(ReserveSpace(1024));
  Pins pins;  // the file's znode is saved after the name is added
  POOLFS_RETURN_IF_ERROR(Pin({ino}, &pins));
  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(2048));
  Status st = p->dir->Add(tx, new_name, zap::Value{ino, Type(z.mode)});
  if (st.ok()) {
    z.nlink++;
    z.ctime = Now();
    pz.mtime = pz.ctime = z.ctime;
    st = SaveZnode(tx, *in, *pins[0], z);
  }
  if (st.ok()) st = SaveZnode(tx, *p, pz);
  POOLFS_RETURN_IF_ERROR(tx.Finish(st));
  Note(tx, {p.get(), in.get()});
  Log(tx, ino, zil::RecordType::kLink, zil::EntryBody{new_parent, std::string(new_name)});
  {
    util::MutexLock l(&in->mu);
    table_.AddLookups(in->ino, 1);
  }
  return MakeAttr(*in, z);
}

Status PosixFs::PrepareDropLink(Inode& in, const ZnodePhys& z, bool dir, Pins* pins) {
  const bool last = dir || z.nlink <= 1;
  POOLFS_RETURN_IF_ERROR(Pin({in.ino, last ? z.xattr : 0}, pins));
  if (!last) return Status::Ok();
  // The file may go to the unlinked set: bring in the leaf its entry would
  // be added to.
  unlinked_mu_.AssertHeld();
  auto v = unlinked_->Lookup(UnlinkedKey(in.ino));
  return v.ok() || v.status().IsNotFound() ? Status::Ok() : v.status();
}

Status PosixFs::DropLink(dmu::Tx& tx, Inode& in, ZnodePhys& z, bool dir) {
  z.ctime = Now();
  z.nlink = dir ? 0 : z.nlink - 1;
  if (z.nlink > 0) return SaveZnode(tx, in, z);
  uint64_t lookups;
  {
    util::MutexLock l(&in.mu);
    lookups = table_.Lookups(in.ino);
  }
  if (lookups == 0) {
    POOLFS_RETURN_IF_ERROR(FreeObject(tx, in.ino, z.xattr));
    {
      util::MutexLock l(&in.mu);
      in.z = z;
      in.freed = true;
    }
    table_.Erase(in.ino);
    return Status::Ok();
  }
  unlinked_mu_.AssertHeld();
  POOLFS_RETURN_IF_ERROR(unlinked_->Add(tx, UnlinkedKey(in.ino), zap::Value{in.ino, 0}));
  return SaveZnode(tx, in, z);
}

Status PosixFs::RemoveName(const Creds& c, uint64_t parent, std::string_view name, bool dir) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  POOLFS_RETURN_IF_ERROR(CheckName(name));
  if (name == ".")
    return dir ? Status::InvalidArgument("cannot remove '.'")
               : Status(StatusCode::kIsADirectory, "'.' is a directory");
  if (name == "..")
    return dir ? Status(StatusCode::kNotEmpty, "cannot remove '..'")
               : Status(StatusCode::kIsADirectory, "'..' is a directory");
  POOLFS_ASSIGN_OR_RETURN(InodeRef p, GetDir(parent));
  for (;;) {
    POOLFS_ASSIGN_OR_RETURN(zap::Value v, Entry(*p, parent, name));
    auto r = Get(v.object, false);
    if (!r.ok()) {
      // The name may have gone and its object's number been reused (see
      // Lookup): start over.
      if (!StillNames(*p, name, v.object)) continue;
      return r.status();
    }
    InodeRef child = std::move(*r);
    LockSet locks({p.get(), child.get()});
    auto again = p->dir->Lookup(name);
    if (!again.ok() || again->object != v.object) continue;  // changed meanwhile
    {
      util::MutexLock l(&child->mu);
      if (child->freed) continue;
    }
    ZnodePhys pz = p->Snapshot();
    ZnodePhys z = child->Snapshot();
    POOLFS_RETURN_IF_ERROR(CheckDirWrite(c, pz));
    POOLFS_RETURN_IF_ERROR(CheckSticky(c, pz, z));
    if (dir) {
      if (!child->is_dir())
        return Status(StatusCode::kNotADirectory, "'" + std::string(name) + "' is not a directory");
      if (child->ino == kRootIno) return Status::Busy("cannot remove the root directory");
      if (child->dir->Count() != 0)
        return Status(StatusCode::kNotEmpty, "directory '" + std::string(name) + "' is not empty");
    } else if (child->is_dir()) {
      return Status(StatusCode::kIsADirectory, "'" + std::string(name) + "' is a directory");
    }
    // Dropping the last link may add the file to the unlinked set.
    util::MaybeMutexLock ul(&unlinked_mu_, dir || z.nlink <= 1);
    Pins pins;
    POOLFS_RETURN_IF_ERROR(PrepareDropLink(*child, z, dir, &pins));
    POOLFS_RETURN_IF_ERROR(ReserveRemoval());
    dmu::Tx tx(pool_->assigner());
    POOLFS_RETURN_IF_ERROR(tx.Assign(4096));
    Status st = p->dir->Remove(tx, name);
    if (st.ok()) {
      pz.mtime = pz.ctime = Now();
      if (dir) pz.nlink--;
      st = SaveZnode(tx, *p, pz);
    }
    if (st.ok()) st = DropLink(tx, *child, z, dir);
    POOLFS_RETURN_IF_ERROR(tx.Finish(st));
    Note(tx, {p.get(), child.get()});
    Log(tx, child->ino, dir ? zil::RecordType::kRmdir : zil::RecordType::kUnlink,
        zil::EntryBody{parent, std::string(name)});
    return Status::Ok();
  }
}

Status PosixFs::Unlink(const Creds& c, uint64_t parent, std::string_view name) {
  return RemoveName(c, parent, name, false);
}

Status PosixFs::Rmdir(const Creds& c, uint64_t parent, std::string_view name) {
  return RemoveName(c, parent, name, true);
}

Status PosixFs::ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                        const std::function<bool(const DirEntry&)>& emit) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef p, GetDir(ino));
  const ZnodePhys pz = p->Snapshot();
  POOLFS_RETURN_IF_ERROR(CheckAccess(c, pz, R_OK));
  // Listing is an access however far it gets, as Linux's getdents.
  struct TouchOnReturn {
    PosixFs* fs;
    Inode* dir;
    ~TouchOnReturn() { fs->TouchAtime(*dir); }
  } touch{this, p.get()};
  DirEntry d;
  if (cookie == 0) {
    d.name = ".";
    d.ino = ino;
    d.type = S_IFDIR;
    d.next_cookie = 1;
    if (plus) d.attr = MakeAttr(*p, pz);
    if (!emit(d)) return Status::Ok();
    cookie = 1;
  }
  if (cookie == 1) {
    d.name = "..";
    d.ino = pz.parent;
    d.type = S_IFDIR;
    d.next_cookie = 2;
    if (plus) {
      auto pp = Get(pz.parent);
      if (pp.ok()) d.attr = MakeAttr(**pp);
    }
    if (!emit(d)) return Status::Ok();
    cookie = 2;
  }
  constexpr size_t kBatch = 128;
  uint64_t zc = cookie - 2;
  for (;;) {
    POOLFS_ASSIGN_OR_RETURN(auto entries, p->dir->Iterate(zc, kBatch));
    for (const zap::Entry& e : entries) {
      zc = e.cookie;
      d.name = e.name;
      d.ino = e.value.object;
      d.type = uint32_t(e.value.attrs);
      d.next_cookie = e.cookie + 2;
      InodeRef child;
      if (plus) {
        // Removed since the iteration read it, perhaps with its number
        // given to a new file already (see Lookup): left out.
        auto r = Get(d.ino, false);
        if (!StillNames(*p, d.name, d.ino)) continue;
        if (!r.ok()) {
          if (r.status().IsNotFound()) continue;
          return r.status();
        }
        child = *r;
        d.attr = MakeAttr(*child);
      }
      if (!emit(d)) return Status::Ok();
      if (plus) {
        util::MutexLock l(&child->mu);
        table_.AddLookups(child->ino, 1);
      }
    }
    if (entries.size() < kBatch) return Status::Ok();
  }
}

}  // namespace poolfs::core::posix
