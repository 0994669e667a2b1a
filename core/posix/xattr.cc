// PosixFs: extended attributes (user.*, trusted.*, security.*).
//
// A file's xattrs are one encoded table (znode_phys.h) in a plain object
// of their own, named by znode.xattr (0: none, so a GetXattr on a file
// without any answers NoData without a read). The table is loaded into the
// Inode on first use and rewritten whole on each change, under op_mu.
// Access follows Linux: user.* only on regular files and directories, with
// the file's read/write permission (and the sticky-directory rule for
// writes); trusted.* only for root (others see NoData, or NotPermitted when
// writing); security.* readable by all, writable by root. One exception:
// the kernel drops a file's capabilities itself before a write, truncate,
// fallocate or chown (security_inode_killpriv), by removing
// security.capability with the credentials of whoever writes or chowns;
// that removal is allowed to the owner of a non-directory and to a caller
// who may write it (removexattr(2) of it reaches us only from a caller with
// CAP_SETFCAP: the kernel checks that itself).
#include <sys/stat.h>
#include <unistd.h>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {
namespace {

enum class Ns { kUser, kTrusted, kSecurity };

Result<Ns> Namespace(std::string_view name) {
  if (name.size() > kNameMax)
    return Status(StatusCode::kRange, "xattr name of " + std::to_string(name.size()) + " bytes");
  for (auto [prefix, ns] : {std::pair{std::string_view("user."), Ns::kUser},
                            std::pair{std::string_view("trusted."), Ns::kTrusted},
                            std::pair{std::string_view("security."), Ns::kSecurity}}) {
    if (!name.starts_with(prefix)) continue;
    // A known namespace with nothing after it: a bad name, as Linux says.
    if (name.size() == prefix.size())
      return Status::InvalidArgument("xattr name '" + std::string(name) + "' is only a namespace");
    return ns;
  }
  return Status::NotSupported("xattr namespace of '" + std::string(name) + "'");
}

}  // namespace

Status PosixFs::CheckXattrAccess(const Creds& c, const ZnodePhys& z, std::string_view name,
                                 bool write) const {
  POOLFS_ASSIGN_OR_RETURN(Ns ns, Namespace(name));
  const bool root = c.uid == 0;
  switch (ns) {
    case Ns::kTrusted:
      if (root) return Status::Ok();
      if (write) return Status(StatusCode::kNotPermitted, "trusted.* xattrs are root's");
      return Status(StatusCode::kNoData, "no xattr '" + std::string(name) + "'");
    case Ns::kSecurity:
      if (write && !root) return Status(StatusCode::kNotPermitted, "security.* xattrs are root's");
      return Status::Ok();
    case Ns::kUser:
      if (!S_ISREG(z.mode) && !S_ISDIR(z.mode)) {
        if (write) return Status(StatusCode::kNotPermitted, "user.* xattrs on a special file");
        return Status(StatusCode::kNoData, "no xattr '" + std::string(name) + "'");
      }
      if (write && S_ISDIR(z.mode) && (z.mode & S_ISVTX) && !root && c.uid != z.uid)
        return Status(StatusCode::kNotPermitted, "user.* xattrs of a sticky directory");
      return CheckAccess(c, z, write ? W_OK : R_OK);
  }
  return Status::Ok();
}

Status PosixFs::LoadXattrs(Inode& in, const ZnodePhys& z) {
  if (in.xattrs_loaded) return Status::Ok();
  in.xattrs.clear();
  if (z.xattr != 0) {
    POOLFS_ASSIGN_OR_RETURN(std::string bytes, os_->Read(ObjectId(z.xattr), 0, kMaxXattrTotal + 1));
    POOLFS_ASSIGN_OR_RETURN(in.xattrs, DecodeXattrs(bytes, z.xattr));
  }
  in.xattrs_loaded = true;
  return Status::Ok();
}

Status PosixFs::StoreXattrs(dmu::Tx& tx, Inode& in, ZnodePhys& z) {
  if (in.xattrs.empty()) {
    if (z.xattr != 0) POOLFS_RETURN_IF_ERROR(os_->Free(tx, ObjectId(z.xattr)));
    z.xattr = 0;
    return Status::Ok();
  }
  const std::string bytes = EncodeXattrs(in.xattrs);
  if (z.xattr == 0) {
    POOLFS_ASSIGN_OR_RETURN(ObjectId id, os_->Create(tx, dmu::ObjectType::kPlain, 16 * 1024));
    z.xattr = id.value();
    return os_->Write(tx, id, 0, bytes);  // a new object: nothing to read
  }
  // The write first: it is the step that may read (the old last block it
  // writes in part), and it reads before it changes anything. The truncate
  // after it then finds that block dirty and reads nothing.
  POOLFS_RETURN_IF_ERROR(os_->Write(tx, ObjectId(z.xattr), 0, bytes));
  return os_->Truncate(tx, ObjectId(z.xattr), bytes.size());
}

Result<std::string> PosixFs::GetXattr(const Creds& c, uint64_t ino, std::string_view name) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  ZnodePhys z = in->Snapshot();
  POOLFS_RETURN_IF_ERROR(CheckXattrAccess(c, z, name, false));
  auto none = [&] { return Status(StatusCode::kNoData, "no xattr '" + std::string(name) + "'"); };
  if (z.xattr == 0) return none();
  util::MutexLock op(&in->op_mu);
  z = in->Snapshot();
  POOLFS_RETURN_IF_ERROR(LoadXattrs(*in, z));
  auto it = in->xattrs.find(name);
  if (it == in->xattrs.end()) return none();
  return it->second;
}

Status PosixFs::SetXattr(const Creds& c, uint64_t ino, std::string_view name,
                         std::string_view value, uint32_t flags) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  if (value.size() > kMaxXattrValue)
    return Status(StatusCode::kRange,
                  "xattr value of " + std::to_string(value.size()) + " bytes (at most 64 KiB)");
  if ((flags & kXattrCreate) && (flags & kXattrReplace))
    return Status::InvalidArgument("XATTR_CREATE with XATTR_REPLACE");
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  util::MutexLock op(&in->op_mu);
  ZnodePhys z = in->Snapshot();
  POOLFS_RETURN_IF_ERROR(CheckXattrAccess(c, z, name, true));
  POOLFS_RETURN_IF_ERROR(LoadXattrs(*in, z));
  auto it = in->xattrs.find(name);
  if (it != in->xattrs.end() && (flags & kXattrCreate))
    return Status::AlreadyExists("xattr '" + std::string(name) + "' exists");
  if (it == in->xattrs.end() && (flags & kXattrReplace))
    return Status(StatusCode::kNoData, "no xattr '" + std::string(name) + "' to replace");
  size_t total = EncodeXattrs(in->xattrs).size() + 6 + name.size() + value.size();
  if (it != in->xattrs.end()) total -= 6 + name.size() + it->second.size();
  if (total > kMaxXattrTotal)
    return Status::NoSpace("xattrs of inode " + std::to_string(ino) + " would take " +
                           std::to_string(total) + " bytes (at most 1 MiB)");
  POOLFS_RETURN_IF_ERROR(ReserveSpace(total));
  Pins pins;  // the table's object and the file's znode, changed one after the other
  POOLFS_RETURN_IF_ERROR(Pin({ino, z.xattr}, &pins));
  XattrMap before = in->xattrs;
  in->xattrs[std::string(name)] = std::string(value);
  dmu::Tx tx(pool_->assigner());
  Status st = tx.Assign(total + 4096);
  if (st.ok()) st = StoreXattrs(tx, *in, z);
  if (st.ok()) {
    z.ctime = Now();
    st = SaveZnode(tx, *in, *pins[0], z);
  }
  st = tx.Finish(st);
  if (!st.ok()) {
    in->xattrs = std::move(before);
    in->xattrs_loaded = false;  // reread what the object holds now
    return st;
  }
  Note(tx, {in.get()});
  Log(tx, ino, zil::RecordType::kSetxattr,
      zil::SetxattrBody{std::string(name), std::string(value), 0});
  return Status::Ok();
}

Result<std::vector<std::string>> PosixFs::ListXattr(const Creds& c, uint64_t ino) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  std::vector<std::string> names;
  ZnodePhys z = in->Snapshot();
  if (z.xattr == 0) return names;
  util::MutexLock op(&in->op_mu);
  z = in->Snapshot();
  POOLFS_RETURN_IF_ERROR(LoadXattrs(*in, z));
  for (const auto& [name, value] : in->xattrs)
    if (c.uid == 0 || !name.starts_with("trusted.")) names.push_back(name);
  return names;
}

Status PosixFs::RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  util::MutexLock op(&in->op_mu);
  ZnodePhys z = in->Snapshot();
  // What the write or chown of a caller other than root drops (see above).
  const bool drops_capabilities =
      name == "security.capability" && !S_ISDIR(z.mode) &&
      (c.uid == z.uid || (S_ISREG(z.mode) && CheckAccess(c, z, W_OK).ok()));
  if (!drops_capabilities) POOLFS_RETURN_IF_ERROR(CheckXattrAccess(c, z, name, true));
  POOLFS_RETURN_IF_ERROR(LoadXattrs(*in, z));
  auto it = in->xattrs.find(name);
  if (it == in->xattrs.end())
    return Status(StatusCode::kNoData, "no xattr '" + std::string(name) + "'");
  Pins pins;
  POOLFS_RETURN_IF_ERROR(Pin({ino, z.xattr}, &pins));
  XattrMap before = in->xattrs;
  in->xattrs.erase(it);
  dmu::Tx tx(pool_->assigner());
  Status st = tx.Assign(4096);
  if (st.ok()) st = StoreXattrs(tx, *in, z);
  if (st.ok()) {
    z.ctime = Now();
    st = SaveZnode(tx, *in, *pins[0], z);
  }
  st = tx.Finish(st);
  if (!st.ok()) {
    in->xattrs = std::move(before);
    in->xattrs_loaded = false;
    return st;
  }
  Note(tx, {in.get()});
  Log(tx, ino, zil::RecordType::kRemovexattr, zil::RemovexattrBody{std::string(name)});
  return Status::Ok();
}

}  // namespace poolfs::core::posix
