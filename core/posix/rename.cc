// PosixFs: rename(2) and renameat2(2).
//
// The four inodes involved (both parents, the source, the target if any)
// are locked in ino order after an unlocked lookup of both names; the
// names are looked up again under the locks and the whole thing retried if
// either changed meanwhile. Moving a directory to another parent first
// takes rename_mu_, so the walk up the target parent's ".." chain (a
// directory may not move below itself) sees a tree no other rename is
// reshaping. Every rule is checked, and everything the changes read is
// read (the names looked up under the locks bring in both leaves; the
// dnodes are pinned), before the first change; a step that still fails
// after it leaves the rename half done, and its Tx is abandoned (the pool
// suspends) rather than committed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {

Result<bool> PosixFs::IsAncestor(uint64_t ancestor, uint64_t dir) {
  uint64_t cur = dir;
  for (int steps = 0; steps < (1 << 20); steps++) {
    if (cur == ancestor) return true;
    if (cur == kRootIno) return false;
    POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(cur));
    cur = in->Snapshot().parent;
  }
  return Status::Corruption("directory " + std::to_string(dir) + ": '..' chain does not end");
}

Status PosixFs::Rename(const Creds& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                       std::string_view new_name, uint32_t flags) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  if (flags & ~uint32_t(kRenameNoReplace | kRenameExchange))
    return Status::InvalidArgument("unknown rename flags " + std::to_string(flags));
  if ((flags & kRenameNoReplace) && (flags & kRenameExchange))
    return Status::InvalidArgument("RENAME_NOREPLACE with RENAME_EXCHANGE");
  POOLFS_RETURN_IF_ERROR(CheckName(name));
  POOLFS_RETURN_IF_ERROR(CheckName(new_name));
  for (std::string_view n : {name, new_name})
    if (n == "." || n == "..") return Status(StatusCode::kBusy, "cannot rename '.' or '..'");
  POOLFS_ASSIGN_OR_RETURN(InodeRef p1, GetDir(parent));
  POOLFS_ASSIGN_OR_RETURN(InodeRef p2, GetDir(new_parent));
  for (;;) {
    POOLFS_ASSIGN_OR_RETURN(zap::Value sv, Entry(*p1, parent, name));
    auto dv = p2->dir->Lookup(new_name);
    if (!dv.ok() && !dv.status().IsNotFound()) return dv.status();
    // Read without locks, either name may be gone by now and its object's
    // number given to a half-made file: a load that fails for a name that
    // changed starts over (a success is checked under the locks below).
    auto sr = Get(sv.object, false);
    if (!sr.ok()) {
      if (!StillNames(*p1, name, sv.object)) continue;
      return sr.status();
    }
    InodeRef src = std::move(*sr);
    InodeRef dst;
    if (dv.ok()) {
      auto dr = Get(dv->object, false);
      if (!dr.ok()) {
        if (!StillNames(*p2, new_name, dv->object)) continue;
        return dr.status();
      }
      dst = std::move(*dr);
    }
    const bool moves_dir =
        p1 != p2 && (src->is_dir() || (dst && dst->is_dir() && (flags & kRenameExchange)));
    util::MaybeMutexLock rl(&rename_mu_, moves_dir);
    LockSet locks({p1.get(), p2.get(), src.get(), dst.get()});
    auto sv2 = p1->dir->Lookup(name);
    auto dv2 = p2->dir->Lookup(new_name);
    if (!sv2.ok() || sv2->object != sv.object || dv2.ok() != dv.ok() ||
        (dv.ok() && dv2->object != dv->object))
      continue;  // changed before we held the locks
    bool retry = false;
    Status st = RenameLocked(c, *p1, name, *p2, new_name, flags, *src, dst.get(), &retry);
    if (retry) continue;
    return st;
  }
}

Status PosixFs::RenameLocked(const Creds& c, Inode& p1, std::string_view name, Inode& p2,
                             std::string_view new_name, uint32_t flags, Inode& src, Inode* dst,
                             bool* retry) {
  {
    util::MutexLock l(&src.mu);
    if (src.freed) {
      *retry = true;
      return Status::Ok();
    }
  }
  const bool exchange = flags & kRenameExchange;
  const bool same_parent = &p1 == &p2;
  ZnodePhys pz1 = p1.Snapshot();
  ZnodePhys pz2_own = p2.Snapshot();
  ZnodePhys& pz2 = same_parent ? pz1 : pz2_own;
  ZnodePhys sz = src.Snapshot();
  ZnodePhys dz = dst ? dst->Snapshot() : ZnodePhys{};
  POOLFS_RETURN_IF_ERROR(CheckDirWrite(c, pz1));
  if (!same_parent) POOLFS_RETURN_IF_ERROR(CheckDirWrite(c, pz2));
  if (dst && (flags & kRenameNoReplace))
    return Status::AlreadyExists("'" + std::string(new_name) + "' exists");
  if (!dst && exchange)
    return Status::NotFound("'" + std::string(new_name) + "' does not exist to exchange with");
  POOLFS_RETURN_IF_ERROR(CheckSticky(c, pz1, sz));
  if (dst) POOLFS_RETURN_IF_ERROR(CheckSticky(c, pz2, dz));
  if (dst == &src) return Status::Ok();  // two links of one file: nothing to do
  if (src.ino == kRootIno || (dst && dst->ino == kRootIno))
    return Status::Busy("cannot rename the root directory");
  const bool src_dir = src.is_dir();
  const bool dst_dir = dst && dst->is_dir();
  if (dst && !exchange) {
    if (src_dir && !dst_dir)
      return Status(StatusCode::kNotADirectory,
                    "cannot replace non-directory '" + std::string(new_name) + "' by a directory");
    if (!src_dir && dst_dir)
      return Status(StatusCode::kIsADirectory,
                    "cannot replace directory '" + std::string(new_name) + "' by a non-directory");
    if (dst_dir && dst->dir->Count() != 0)
      return Status(StatusCode::kNotEmpty,
                    "directory '" + std::string(new_name) + "' is not empty");
  }
  if (!same_parent) {
    if (src_dir) {
      rename_mu_.AssertHeld();  // Rename takes it when a directory changes parents
      POOLFS_ASSIGN_OR_RETURN(bool below, IsAncestor(src.ino, p2.ino));
      if (below)
        return Status::InvalidArgument("cannot move directory " + std::to_string(src.ino) +
                                       " below itself");
      POOLFS_RETURN_IF_ERROR(CheckAccess(c, sz, W_OK));  // its ".." changes
    }
    if (exchange && dst_dir) {
      rename_mu_.AssertHeld();
      POOLFS_ASSIGN_OR_RETURN(bool below, IsAncestor(dst->ino, p1.ino));
      if (below)
        return Status::InvalidArgument("cannot move directory " + std::to_string(dst->ino) +
                                       " below itself");
      POOLFS_RETURN_IF_ERROR(CheckAccess(c, dz, W_OK));
    }
  }
  // Link counts of the parents: each gains or loses the ".." of a moved
  // directory.
  int d1 = 0, d2 = 0;
  if (!same_parent) {
    if (exchange) {
      d1 = int(dst_dir) - int(src_dir);
      d2 = -d1;
    } else {
      d1 = -int(src_dir);
      d2 = int(src_dir) - int(dst_dir);
    }
  } else if (!exchange && dst_dir) {
    d1 = -1;  // the replaced directory's ".."
  }
  if (d2 > 0 && pz2.nlink >= kLinkMax)
    return Status(StatusCode::kTooManyLinks,
                  "directory " + std::to_string(p2.ino) + " has too many subdirectories");
  if (d1 > 0 && pz1.nlink >= kLinkMax)
    return Status(StatusCode::kTooManyLinks,
                  "directory " + std::to_string(p1.ino) + " has too many subdirectories");
  const bool drops_last = dst && !exchange && (dst_dir || dz.nlink <= 1);
  util::MaybeMutexLock ul(&unlinked_mu_, drops_last);
  POOLFS_RETURN_IF_ERROR(ReserveSpace(1024));
  Pins pins;
  POOLFS_RETURN_IF_ERROR(Pin({src.ino}, &pins));
  if (dst && exchange) POOLFS_RETURN_IF_ERROR(Pin({dst->ino}, &pins));
  if (dst && !exchange) POOLFS_RETURN_IF_ERROR(PrepareDropLink(*dst, dz, dst_dir, &pins));

  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(8192));
  const Timespec now = Now();
  const uint64_t stype = sz.mode & S_IFMT;
  auto steps = [&]() -> Status {
    if (exchange) {
      POOLFS_RETURN_IF_ERROR(p1.dir->Update(tx, name, zap::Value{dst->ino, dz.mode & S_IFMT}));
      POOLFS_RETURN_IF_ERROR(p2.dir->Update(tx, new_name, zap::Value{src.ino, stype}));
      // Every file's parent is the directory that last named it (a
      // directory's "..", any other file's way back to a path).
      sz.parent = p2.ino;
      dz.parent = p1.ino;
      dz.ctime = now;
      POOLFS_RETURN_IF_ERROR(SaveZnode(tx, *dst, dz));
    } else {
      if (dst) {
        POOLFS_RETURN_IF_ERROR(p2.dir->Update(tx, new_name, zap::Value{src.ino, stype}));
      } else {
        POOLFS_RETURN_IF_ERROR(p2.dir->Add(tx, new_name, zap::Value{src.ino, stype}));
      }
      POOLFS_RETURN_IF_ERROR(p1.dir->Remove(tx, name));
      sz.parent = p2.ino;
      if (dst) POOLFS_RETURN_IF_ERROR(DropLink(tx, *dst, dz, dst_dir));
    }
    sz.ctime = now;
    POOLFS_RETURN_IF_ERROR(SaveZnode(tx, src, sz));
    pz1.nlink += d1;
    pz1.mtime = pz1.ctime = now;
    if (!same_parent) {
      pz2.nlink += d2;
      pz2.mtime = pz2.ctime = now;
      POOLFS_RETURN_IF_ERROR(SaveZnode(tx, p2, pz2));
    }
    return SaveZnode(tx, p1, pz1);
  };
  POOLFS_RETURN_IF_ERROR(tx.Finish(steps()));
  Note(tx, {&p1, &p2, &src, dst});
  Log(tx, src.ino, zil::RecordType::kRename,
      zil::RenameBody{p1.ino, std::string(name), p2.ino, std::string(new_name),
                      exchange ? zil::kRenameExchange : 0u});
  return Status::Ok();
}

}  // namespace poolfs::core::posix
