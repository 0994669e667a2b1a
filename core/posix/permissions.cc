// PosixFs: POSIX permission checks and name rules.
//
// Mode bits: the owner class if the caller owns the file, else the group
// class if the caller is in the file's group (primary or supplementary,
// fetched only when the primary does not match), else other. Root (uid 0)
// passes every check except execute of a non-directory with no x bit at
// all. When the kernel checks mode bits itself (default_permissions),
// CheckAccess passes everything; ownership rules (chmod, chown, utimes,
// sticky directories) are always ours.
//
// setuid and setgid go as Linux (6.x) clears them: a write, truncate or
// fallocate by a caller other than root clears setuid, and setgid when the
// group may execute or the caller is not in the file's group (setgid
// without group execute stays for members: the mandatory-locking mark); a
// chown of a non-directory clears setuid whoever asks and setgid under the
// same condition, root counting as a member of every group.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {

bool PosixFs::InGroup(const Creds& c, uint32_t gid) const {
  if (c.gid == gid) return true;
  if (!c.supplementary_groups) return false;
  auto groups = c.supplementary_groups();
  return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

Status PosixFs::CheckAccess(const Creds& c, const ZnodePhys& z, int mask) const {
  mask &= R_OK | W_OK | X_OK;
  if (mask == 0 || opts_.kernel_checks_permissions) return Status::Ok();
  if (c.uid == 0) {
    if ((mask & X_OK) && !S_ISDIR(z.mode) && (z.mode & 0111) == 0)
      return Status(StatusCode::kPermissionDenied, "no execute permission for anyone");
    return Status::Ok();
  }
  uint32_t bits;
  if (c.uid == z.uid) {
    bits = (z.mode >> 6) & 7;
  } else if (InGroup(c, z.gid)) {
    bits = (z.mode >> 3) & 7;
  } else {
    bits = z.mode & 7;
  }
  if ((uint32_t(mask) & bits) != uint32_t(mask))
    return Status(StatusCode::kPermissionDenied,
                  "uid " + std::to_string(c.uid) + " lacks " + std::string(mask & R_OK ? "r" : "") +
                      (mask & W_OK ? "w" : "") + (mask & X_OK ? "x" : "") + " permission (mode " +
                      std::to_string(z.mode & 07777) + ", owner " + std::to_string(z.uid) + ")");
  return Status::Ok();
}

Status PosixFs::CheckDirWrite(const Creds& c, const ZnodePhys& dir) const {
  if (dir.nlink == 0) return Status::NotFound("directory was removed");
  return CheckAccess(c, dir, W_OK | X_OK);
}

uint32_t PosixFs::KilledByWrite(const Creds& c, const ZnodePhys& z) const {
  if (!S_ISREG(z.mode) || c.uid == 0) return 0;
  uint32_t bits = z.mode & S_ISUID;
  // Setgid without group execute is kept only for a member of the group
  // (the supplementary groups are read only then).
  if ((z.mode & S_ISGID) && ((z.mode & S_IXGRP) || !InGroup(c, z.gid))) bits |= S_ISGID;
  return bits;
}

uint32_t PosixFs::KilledByChown(const Creds& c, const ZnodePhys& z) const {
  if (S_ISDIR(z.mode)) return 0;
  uint32_t bits = z.mode & S_ISUID;
  if ((z.mode & S_ISGID) && ((z.mode & S_IXGRP) || (c.uid != 0 && !InGroup(c, z.gid))))
    bits |= S_ISGID;
  return bits;
}

Status PosixFs::CheckSticky(const Creds& c, const ZnodePhys& dir, const ZnodePhys& file) const {
  if (!(dir.mode & S_ISVTX) || c.uid == 0 || c.uid == dir.uid || c.uid == file.uid)
    return Status::Ok();
  return Status(StatusCode::kNotPermitted, "sticky directory: uid " + std::to_string(c.uid) +
                                               " owns neither the directory nor the file");
}

Status PosixFs::CheckName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("empty name");
  if (name.size() > kNameMax)
    return Status(StatusCode::kNameTooLong,
                  "name of " + std::to_string(name.size()) + " bytes (at most 255)");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("name holds '/' or NUL");
  return Status::Ok();
}

Status PosixFs::Open(const Creds& c, uint64_t ino, int flags) {
  CallGuard g;
  const int acc = flags & O_ACCMODE;
  const bool writes = acc == O_WRONLY || acc == O_RDWR || (flags & O_TRUNC);
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  const ZnodePhys z = in->Snapshot();
  if (writes && S_ISDIR(z.mode))
    return Status(StatusCode::kIsADirectory,
                  "inode " + std::to_string(ino) + " is a directory: cannot open it for writing");
  if (writes && ReadOnly()) return ReadOnlyError();
  int mask = 0;
  if (acc == O_RDONLY || acc == O_RDWR) mask |= R_OK;
  if (writes) mask |= W_OK;
  return CheckAccess(c, z, mask);
}

Status PosixFs::Access(const Creds& c, uint64_t ino, int mask) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  const ZnodePhys z = in->Snapshot();
  if ((mask & W_OK) && ReadOnly()) return ReadOnlyError();
  return CheckAccess(c, z, mask);
}

}  // namespace poolfs::core::posix
