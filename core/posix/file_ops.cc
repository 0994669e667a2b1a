// PosixFs: file contents and attributes — read, write, truncate, setattr,
// fallocate.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {

Status PosixFs::NotRegular(uint64_t ino, uint32_t mode) {
  if (S_ISDIR(mode))
    return Status(StatusCode::kIsADirectory, "inode " + std::to_string(ino) + " is a directory");
  return Status::InvalidArgument("inode " + std::to_string(ino) + " is not a regular file");
}

Status PosixFs::Stale(uint64_t ino) {
  return Status(StatusCode::kStale, "inode " + std::to_string(ino) + " was freed");
}

bool PosixFs::Freed(Inode& in) {
  util::MutexLock l(&in.mu);
  return in.freed;
}

bool AtimeNeedsUpdate(AtimeMode mode, const ZnodePhys& z, Timespec now) {
  switch (mode) {
    case AtimeMode::kNone: return false;
    case AtimeMode::kStrict: return z.atime != now;
    case AtimeMode::kRelatime: break;
  }
  if (z.atime == now) return false;
  if (z.mtime >= z.atime || z.ctime >= z.atime) return true;
  constexpr int64_t kDay = 24 * 60 * 60;
  return now.sec - z.atime.sec > kDay ||
         (now.sec - z.atime.sec == kDay && now.nsec >= z.atime.nsec);
}

bool HidesStaleAtime(AtimeMode mode, const ZnodePhys& before, const ZnodePhys& after) {
  if (mode != AtimeMode::kRelatime || !S_ISREG(after.mode)) return false;
  if (after.mtime != before.mtime || after.size != before.size) return false;
  const bool read_since_change = before.atime > before.mtime && before.atime > before.ctime;
  return read_since_change && after.ctime >= after.atime;
}

void PosixFs::TouchAtime(Inode& in) {
  if (ReadOnly() || Atime() == AtimeMode::kNone) return;
  // The common case (atime already after the last change) costs a snapshot
  // and no lock.
  if (!AtimeNeedsUpdate(Atime(), in.Snapshot(), Now())) return;
  util::MutexLock op(&in.op_mu);
  if (Freed(in)) return;
  ZnodePhys z = in.Snapshot();
  const Timespec now = Now();
  if (!AtimeNeedsUpdate(Atime(), z, now)) return;  // another reader moved it
  dmu::Tx tx(pool_->assigner());
  if (!tx.Assign(1024).ok()) return;
  z.atime = now;
  if (!tx.Finish(SaveZnode(tx, in, z)).ok()) return;
  Note(tx, {&in});
}

Result<size_t> PosixFs::Read(uint64_t ino, uint64_t off, std::span<char> dst, uint32_t flags) {
  return ReadFile(ino, off, dst, flags, nullptr);
}

Status PosixFs::ReadShared(uint64_t ino, uint64_t off, std::span<char> scratch, uint32_t flags,
                           SharedRead* out) {
  auto pieces = std::make_shared<dmu::ReadPieces>();
  POOLFS_RETURN_IF_ERROR(ReadFile(ino, off, scratch, flags, pieces.get()).status());
  out->pieces = std::move(pieces->pieces);
  if (pieces->holds.empty())
    out->hold.reset();
  else
    out->hold = std::move(pieces);  // the cached blocks' holds
  return Status::Ok();
}

Result<size_t> PosixFs::ReadFile(uint64_t ino, uint64_t off, std::span<char> dst, uint32_t flags,
                                 dmu::ReadPieces* shared) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  const ZnodePhys z = in->Snapshot();
  if (!S_ISREG(z.mode)) return NotRegular(ino, z.mode);
  if (dst.empty()) return size_t{0};  // as Linux: a read of 0 bytes is no access
  size_t n = 0;
  if (off < z.size) {
    n = std::min<uint64_t>(dst.size(), z.size - off);
    // What the caller keeps need not be kept twice (arc.cache_whole_reads).
    const bool partial_only =
        (flags & kReadCallerKeeps) && !cache_whole_reads_.load(std::memory_order_relaxed);
    POOLFS_ASSIGN_OR_RETURN(
        size_t got,
        os_->ReadInto(ObjectId(ino), off, dst.first(n),
                      partial_only ? dmu::ReadCaching::kPartial : dmu::ReadCaching::kAll, shared));
    if (got < n) {  // the object ends before the file's size: zeros
      std::memset(dst.data() + got, 0, n - got);
      if (shared != nullptr) shared->pieces.emplace_back(dst.data() + got, n - got);
    }
  }
  TouchAtime(*in);
  return n;
}

Result<size_t> PosixFs::Write(const Creds& c, uint64_t ino, uint64_t off, std::string_view data) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  if (in->is_dir()) return NotRegular(ino, S_IFDIR);
  if (off > kMaxFileSize || data.size() > kMaxFileSize - off)
    return Status(StatusCode::kFileTooLarge, "write at " + std::to_string(off) + " of " +
                                                 std::to_string(data.size()) +
                                                 " bytes passes the maximum file size 2^50");
  if (data.empty()) return size_t{0};
  util::MutexLock op(&in->op_mu);
  if (Freed(*in)) return Stale(ino);
  return WriteLocked(c, *in, off, data);
}

Result<size_t> PosixFs::WriteLocked(const Creds& c, Inode& in_ref, uint64_t off,
                                    std::string_view data) {
  Inode* const in = &in_ref;
  const uint64_t ino = in->ino;
  ZnodePhys z = in->Snapshot();
  if (!S_ISREG(z.mode)) return NotRegular(ino, z.mode);
  const uint32_t killed = KilledByWrite(c, z);  // before the Tx: it may read the caller's groups
  POOLFS_RETURN_IF_ERROR(ReserveSpace(data.size()));
  // Held once for both steps: the znode is saved without a second lookup
  // (which could read, and fail, after the data changed).
  POOLFS_ASSIGN_OR_RETURN(dmu::ObjectSet::DnodeRef d, os_->Hold(ObjectId(ino)));
  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(data.size() + 1024));
  Status st = GrowBlocks(tx, *d, off + data.size());
  if (st.ok()) st = os_->Write(tx, *d, off, data);
  if (st.ok()) {
    z.size = std::max(z.size, off + data.size());
    z.mtime = z.ctime = Now();
    z.mode &= ~killed;
    st = SaveZnode(tx, *in, *d, z);
  }
  POOLFS_RETURN_IF_ERROR(tx.Finish(st));
  Note(tx, {in});
  in->NoteUnsynced(tx.txg().value(), data.size(), space_synced_txg_.load());
  // The bytes go into the record at the commit (intent_log.h); a write
  // larger than a record takes several.
  for (uint64_t done = 0; done < data.size(); done += zil::kMaxInlineWrite)
    Log(tx, ino, zil::RecordType::kWrite, zil::WriteBody{off + done, {}},
        uint32_t(std::min<uint64_t>(zil::kMaxInlineWrite, data.size() - done)));
  if (killed != 0) LogAttrs(tx, ino, z, false);
  return data.size();
}

Status PosixFs::GrowBlocks(dmu::Tx& tx, dmu::Dnode& d, uint64_t end) {
  return os_->GrowBlockSize(tx, d, end, RecordSize());
}

Status PosixFs::GrowBlocks(dmu::Tx& tx, uint64_t ino, uint64_t end) {
  return os_->GrowBlockSize(tx, ObjectId(ino), end, RecordSize());
}

Status PosixFs::Truncate(dmu::Tx& tx, Inode& in, ZnodePhys& z, uint64_t size) {
  // Growing first: the truncate then sets the length of an object whose
  // block already holds it (or of one past one block, which keeps its size).
  if (size > z.size) POOLFS_RETURN_IF_ERROR(GrowBlocks(tx, in.ino, size));
  POOLFS_RETURN_IF_ERROR(os_->Truncate(tx, ObjectId(in.ino), size));
  // Nothing left: the file starts again from a small block, as a new one
  // (the change moves no data; older txgs keep their own blocks).
  if (size == 0)
    POOLFS_RETURN_IF_ERROR(
        os_->SetBlockSize(tx, ObjectId(in.ino), os_->StartBlockSize(RecordSize())));
  z.size = size;
  return Status::Ok();
}

Result<Attr> PosixFs::SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) {
  using R = SetAttrRequest;
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  util::MutexLock op(&in->op_mu);
  if (Freed(*in)) return Stale(ino);
  ZnodePhys z = in->Snapshot();
  const bool root = c.uid == 0;
  const bool owner = root || c.uid == z.uid;
  auto not_permitted = [&](const char* what) {
    return Status(StatusCode::kNotPermitted, std::string(what) + " of inode " +
                                                 std::to_string(ino) + " by uid " +
                                                 std::to_string(c.uid));
  };
  // Check everything first: a Tx cannot be rolled back.
  //
  // A non-owner's chmod that only clears some of what a write clears
  // (KilledByWrite) is allowed when the caller may write the file: it is
  // how the kernel clears the bits before a write or truncate when it has
  // not left that to the filesystem (FUSE_HANDLE_KILLPRIV_V2 not taken),
  // a chmod sent with the writer's credentials. The FUSE
  // kernel computes it by an older rule (setgid only when group-executable),
  // so it may clear less than the write does; the write clears the rest.
  bool kill_only = false;
  if ((req.valid & R::kMode) && !owner) {
    const uint32_t cleared = (z.mode ^ req.mode) & 07777;
    kill_only = cleared != 0 && (cleared & ~KilledByWrite(c, z)) == 0 &&
                ((req.valid & R::kOpenFile) || CheckAccess(c, z, W_OK).ok());
    if (!kill_only) return not_permitted("chmod");
  }
  if (req.valid & R::kUid) {
    if (!root && !(c.uid == z.uid && req.uid == z.uid)) return not_permitted("chown");
  }
  if (req.valid & R::kGid) {
    if (!root && !(c.uid == z.uid && (req.gid == z.gid || InGroup(c, req.gid))))
      return not_permitted("chgrp");
  }
  if (req.valid & R::kSize) {
    if (!S_ISREG(z.mode)) return NotRegular(ino, z.mode);
    if (req.size > kMaxFileSize)
      return Status(StatusCode::kFileTooLarge,
                    "size " + std::to_string(req.size) + " passes the maximum file size 2^50");
    // ftruncate on a descriptor open for writing is allowed whatever the
    // mode bits say now (POSIX; the open checked them).
    if (!(req.valid & R::kOpenFile)) POOLFS_RETURN_IF_ERROR(CheckAccess(c, z, W_OK));
  }
  // A kernel that keeps times itself (FUSE's writeback cache) sends every
  // time it changes as a value, with ctime (kCtime): its "now" for a
  // writer's truncate or utimens(NOW) then looks like a time set, which it
  // has checked itself (every mount has default_permissions). Such times
  // need what setting them to now does: the owner, or write access (given
  // by a descriptor open for writing).
  if ((req.valid & (R::kAtime | R::kMtime)) && !owner) {
    if (!(req.valid & R::kCtime)) return not_permitted("setting times");
    if (!(req.valid & R::kOpenFile)) POOLFS_RETURN_IF_ERROR(CheckAccess(c, z, W_OK));
  }
  if ((req.valid & (R::kAtimeNow | R::kMtimeNow)) && !owner)
    POOLFS_RETURN_IF_ERROR(CheckAccess(c, z, W_OK));
  Pins pins;  // a truncate comes before the znode is saved
  if (req.valid & R::kSize) POOLFS_RETURN_IF_ERROR(Pin({ino}, &pins));

  // What a chown and a truncate clear is decided by the file as it was
  // (its mode and group before this change), as Linux decides it.
  const uint32_t killed_by_chown =
      (req.valid & (R::kUid | R::kGid | R::kClearPrivileges)) ? KilledByChown(c, z) : 0;
  const uint32_t killed_by_truncate = (req.valid & R::kSize) ? KilledByWrite(c, z) : 0;
  // A chmod by a caller outside the file's group (its group after this
  // change) loses setgid, as on Linux.
  const bool chmod_drops_sgid = (req.valid & R::kMode) && (req.mode & S_ISGID) && !root &&
                                !kill_only && !InGroup(c, (req.valid & R::kGid) ? req.gid : z.gid);

  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(4096));
  const Timespec now = Now();
  if (req.valid & R::kMode) {
    z.mode = (z.mode & S_IFMT) | (req.mode & 07777);
    if (chmod_drops_sgid) z.mode &= ~uint32_t(S_ISGID);
  }
  if (req.valid & (R::kUid | R::kGid)) {
    if (req.valid & R::kUid) z.uid = req.uid;
    if (req.valid & R::kGid) z.gid = req.gid;
  }
  z.mode &= ~killed_by_chown;
  if (req.valid & R::kSize) {
    // The truncate is the one step that may read (the new last block, to
    // zero its tail), and it reads before it changes anything.
    if (Status st = Truncate(tx, *in, z, req.size); !st.ok()) return tx.Finish(st);
    z.mtime = now;
    z.mode &= ~killed_by_truncate;
  }
  if (req.valid & R::kAtime) z.atime = req.atime;
  if (req.valid & R::kAtimeNow) z.atime = now;
  if (req.valid & R::kMtime) z.mtime = req.mtime;
  if (req.valid & R::kMtimeNow) z.mtime = now;
  z.ctime = (req.valid & R::kCtime) ? req.ctime : now;
  POOLFS_RETURN_IF_ERROR(tx.Finish(SaveZnode(tx, *in, z)));
  Note(tx, {in.get()});
  LogAttrs(tx, ino, z, (req.valid & R::kSize) != 0);
  return MakeAttr(*in, z);
}

Result<uint64_t> PosixFs::Seek(uint64_t ino, uint64_t off, bool hole) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  const ZnodePhys z = in->Snapshot();
  if (!S_ISREG(z.mode)) return NotRegular(ino, z.mode);
  auto past = [&] {
    return Status(StatusCode::kNoSuchOffset, "inode " + std::to_string(ino) + ": no " +
                                                 (hole ? "hole" : "data") + " at or after " +
                                                 std::to_string(off) + " (size " +
                                                 std::to_string(z.size) + ")");
  };
  if (off >= z.size) return past();
  POOLFS_ASSIGN_OR_RETURN(uint64_t at, os_->Seek(ObjectId(ino), off, z.size, hole));
  if (!hole && at >= z.size) return past();
  return at;
}

Status PosixFs::Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                          uint64_t len) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, true));
  const uint32_t known = kFallocKeepSize | kFallocPunchHole | kFallocZeroRange;
  if (flags & ~known) return Status::NotSupported("fallocate mode " + std::to_string(flags));
  if ((flags & kFallocPunchHole) && (!(flags & kFallocKeepSize) || (flags & kFallocZeroRange)))
    return Status::InvalidArgument("punching a hole needs KEEP_SIZE (and not ZERO_RANGE)");
  if (len == 0) return Status::InvalidArgument("fallocate of 0 bytes");
  // Copy-on-write writes every block to a new place, so space set aside
  // now could not keep a later write into the range from failing with
  // ENOSPC, which is what preallocation promises: refuse it rather than
  // succeed without reserving (glibc's posix_fallocate then writes the
  // range itself). Only punching a hole is offered.
  if (!(flags & kFallocPunchHole))
    return Status::NotSupported(
        "fallocate: preallocation (mode 0, KEEP_SIZE, ZERO_RANGE) is not offered on a "
        "copy-on-write pool; only punching holes is");
  if (off > kMaxFileSize || len > kMaxFileSize - off)
    return Status(StatusCode::kFileTooLarge, "fallocate past the maximum file size 2^50");
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  util::MutexLock op(&in->op_mu);
  if (Freed(*in)) return Stale(ino);
  ZnodePhys z = in->Snapshot();
  if (!S_ISREG(z.mode)) return NotRegular(ino, z.mode);
  // Punching clears setuid and setgid as a write does (Linux's
  // file_modified in vfs_fallocate's filesystems).
  const uint32_t killed = KilledByWrite(c, z);
  Pins pins;  // the znode is saved after the data changed
  POOLFS_RETURN_IF_ERROR(Pin({ino}, &pins));
  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(4096));
  auto steps = [&]() -> Status {
    if (off < z.size) POOLFS_RETURN_IF_ERROR(os_->Punch(tx, ObjectId(ino), off, len));
    const Timespec now = Now();
    z.mtime = now;
    z.ctime = now;
    z.mode &= ~killed;
    return SaveZnode(tx, *in, *pins[0], z);
  };
  POOLFS_RETURN_IF_ERROR(tx.Finish(steps()));
  Note(tx, {in.get()});
  if (off < z.size) Log(tx, ino, zil::RecordType::kPunch, zil::PunchBody{off, len});
  LogAttrs(tx, ino, z, false);
  return Status::Ok();
}

}  // namespace poolfs::core::posix
