// PosixFs: applying the intent log's records at import (zil/intent_log.h).
#include <sys/stat.h>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {
namespace {

// The object a record names, as the replay knows it: one a replayed create
// made, or the one of that number the pool had.
uint64_t Mapped(const std::map<uint64_t, uint64_t>& ids, uint64_t object) {
  auto it = ids.find(object);
  return it == ids.end() ? object : it->second;
}

}  // namespace

Status PosixFs::Replay(const zil::LogRecord& r, std::map<uint64_t, uint64_t>* ids, Txg* txg) {
  using zil::RecordType;
  const Creds root{0, 0, {}};
  const std::string what = std::string(zil::RecordTypeName(r.type)) + " record " +
                           std::to_string(r.seq) + " (object " + std::to_string(r.object) + ")";
  ThreadLastTxg() = 0;
  Status st = Status::Ok();
  switch (r.type) {
    case RecordType::kCreate:
    case RecordType::kMkdir:
    case RecordType::kMknod:
    case RecordType::kSymlink: {
      const auto& b = std::get<zil::CreateBody>(r.body);
      const ExactAttrs exact{b.uid, b.gid, b.mode, b.time};
      Result<Attr> a = MakeNode(root, Mapped(*ids, b.parent), b.name, b.mode, b.rdev, b.target,
                                &exact);
      if (!a.ok()) {
        st = a.status();
        break;
      }
      (*ids)[r.object] = a->ino;
      Forget(a->ino, 1);
      break;
    }
    case RecordType::kLink: {
      const auto& b = std::get<zil::EntryBody>(r.body);
      Result<Attr> a = Link(root, Mapped(*ids, r.object), Mapped(*ids, b.parent), b.name);
      if (a.ok()) Forget(a->ino, 1);
      st = a.status();
      break;
    }
    case RecordType::kUnlink:
    case RecordType::kRmdir: {
      const auto& b = std::get<zil::EntryBody>(r.body);
      st = RemoveName(root, Mapped(*ids, b.parent), b.name, r.type == RecordType::kRmdir);
      break;
    }
    case RecordType::kRename: {
      const auto& b = std::get<zil::RenameBody>(r.body);
      st = Rename(root, Mapped(*ids, b.src_parent), b.src_name, Mapped(*ids, b.dst_parent),
                  b.dst_name, (b.flags & zil::kRenameExchange) ? uint32_t(kRenameExchange) : 0u);
      break;
    }
    case RecordType::kSetattr: {
      // Owner first (a chown clears setuid), then the mode and the times,
      // exactly as the record has them.
      const auto& b = std::get<zil::SetattrBody>(r.body);
      const uint64_t ino = Mapped(*ids, r.object);
      SetAttrRequest owner;
      if (b.mask & zil::kSetUid) owner.valid |= SetAttrRequest::kUid, owner.uid = b.uid;
      if (b.mask & zil::kSetGid) owner.valid |= SetAttrRequest::kGid, owner.gid = b.gid;
      if (b.mask & zil::kSetSize) owner.valid |= SetAttrRequest::kSize, owner.size = b.size;
      if (owner.valid != 0) st = SetAttr(root, ino, owner).status();
      if (!st.ok()) break;
      SetAttrRequest rest;
      rest.valid = SetAttrRequest::kCtime;
      rest.ctime = b.ctime;
      if (b.mask & zil::kSetMode) rest.valid |= SetAttrRequest::kMode, rest.mode = b.mode;
      if (b.mask & zil::kSetAtime) rest.valid |= SetAttrRequest::kAtime, rest.atime = b.atime;
      if (b.mask & zil::kSetMtime) rest.valid |= SetAttrRequest::kMtime, rest.mtime = b.mtime;
      st = SetAttr(root, ino, rest).status();
      break;
    }
    case RecordType::kWrite: {
      const auto& b = std::get<zil::WriteBody>(r.body);
      st = Write(root, Mapped(*ids, r.object), b.offset, b.data).status();
      break;
    }
    case RecordType::kPunch: {
      const auto& b = std::get<zil::PunchBody>(r.body);
      st = Fallocate(root, Mapped(*ids, r.object), kFallocPunchHole | kFallocKeepSize, b.offset,
                     b.length);
      break;
    }
    case RecordType::kTruncate: {
      SetAttrRequest req;
      req.valid = SetAttrRequest::kSize;
      req.size = std::get<zil::TruncateBody>(r.body).size;
      st = SetAttr(root, Mapped(*ids, r.object), req).status();
      break;
    }
    case RecordType::kSetxattr: {
      const auto& b = std::get<zil::SetxattrBody>(r.body);
      st = SetXattr(root, Mapped(*ids, r.object), b.name, b.value, 0);
      break;
    }
    case RecordType::kRemovexattr: {
      st = RemoveXattr(root, Mapped(*ids, r.object), std::get<zil::RemovexattrBody>(r.body).name);
      // Applied before a crash cut the replay short: nothing left to remove.
      if (st.code() == StatusCode::kNoData) st = Status::Ok();
      break;
    }
    case RecordType::kWriteIndirect:
      // IntentLog::Open reads their blocks and hands them over as kWrite.
      st = Status::InvalidArgument("an indirect write whose block was not read");
      break;
  }
  *txg = Txg(ThreadLastTxg());
  return st.WithContext(what);
}

}  // namespace poolfs::core::posix
