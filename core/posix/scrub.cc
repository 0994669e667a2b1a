// The pool's scrub as a mount shows it: starting and stopping it, and
// naming what it found. The scrub itself is the pool's (core/pool/scrub.h);
// it records each block it could not read by (dataset, object, block), and
// here that becomes what a user can act on: a file's path.
//
// Paths. A znode keeps its parent directory (znode_phys.h), so a path is
// found upward: the object's parent, the entry of the parent's zap whose
// value is the object (the zap is keyed by name, so the entry is found by
// listing it), then the parent's parent, up to the root. A file with
// several links keeps the parent of one of them, and that name is the one
// given. Nothing is locked across the walk: a rename meanwhile may leave
// no entry naming the object, and the object is then named by its number,
// as `zpool status -v` does.
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "posix/posix_fs.h"

namespace poolfs::core::posix {

namespace {

// "<object 0x2a>".
std::string ScrubObjectName(uint64_t object) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "<object 0x%llx>", static_cast<unsigned long long>(object));
  return buf;
}

// Deeper than any path a directory tree can hold (PATH_MAX / 2 components):
// a loop of parents in a damaged pool ends here.
constexpr int kMaxPathDepth = 2048;

}  // namespace

Status PosixFs::StartScrub() {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  if (opts_.read_only)
    return Status(StatusCode::kReadOnly, "the mount of pool '" + pool_->name() +
                                             "' is read-only: a scrub repairs what it finds");
  Status st = pool_->StartScrub();
  if (st.code() == StatusCode::kAlreadyExists)
    return Status::AlreadyExists("a scrub of pool '" + pool_->name() + "' is already running");
  return st;
}

Status PosixFs::StopScrub() {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  Status st = pool_->StopScrub();
  if (st.IsNotFound())
    return Status::NotFound("no scrub of pool '" + pool_->name() + "' is running");
  return st;
}

Result<std::string> PosixFs::PathOf(uint64_t object) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  return FindPath(object);
}

Result<std::string> PosixFs::FindPath(uint64_t object) {
  std::vector<std::string> names;  // from the object up
  uint64_t ino = object;
  for (int depth = 0; ino != kRootIno; depth++) {
    if (depth >= kMaxPathDepth)
      return Status::NotFound("object " + std::to_string(object) + ": no path to the root");
    POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino, /*stale=*/false));
    const ZnodePhys z = in->Snapshot();
    if (z.nlink == 0) return Status::NotFound("object " + std::to_string(object) + " is unlinked");
    POOLFS_ASSIGN_OR_RETURN(InodeRef dir, Get(z.parent, /*stale=*/false));
    if (!dir->is_dir())
      return Status::NotFound("object " + std::to_string(object) + ": parent " +
                              std::to_string(z.parent) + " is not a directory");
    // The entry whose value is `ino`: the zap is keyed by name, so list it.
    std::string name;
    uint64_t cookie = 0;
    for (bool found = false; !found;) {
      constexpr size_t kBatch = 256;
      POOLFS_ASSIGN_OR_RETURN(std::vector<zap::Entry> entries, dir->dir->Iterate(cookie, kBatch));
      for (const zap::Entry& e : entries) {
        cookie = e.cookie;
        if (e.value.object == ino) {
          name = e.name;
          found = true;
          break;
        }
      }
      if (!found && entries.size() < kBatch)
        return Status::NotFound("object " + std::to_string(ino) + " is not in directory " +
                                std::to_string(z.parent));
    }
    names.push_back(std::move(name));
    ino = z.parent;
  }
  if (names.empty()) return std::string("/");
  std::string path;
  for (auto it = names.rbegin(); it != names.rend(); ++it) path += "/" + *it;
  return path;
}

ScrubStatus PosixFs::DescribeScrub(const PathFinder& path) {
  const pool::ScrubPhys phys = pool_->ScrubStatus();
  ScrubStatus s;
  switch (phys.state) {
    case pool::ScrubPhys::State::kNone: s.state = ScrubStatus::State::kNone; break;
    case pool::ScrubPhys::State::kRunning: s.state = ScrubStatus::State::kRunning; break;
    case pool::ScrubPhys::State::kFinished: s.state = ScrubStatus::State::kFinished; break;
    case pool::ScrubPhys::State::kStopped: s.state = ScrubStatus::State::kStopped; break;
  }
  s.start_time = phys.start_time;
  s.end_time = phys.end_time;
  s.examined = phys.examined;
  s.total = phys.total;
  s.blocks = phys.blocks;
  s.repaired = phys.repaired;
  s.errors = phys.errors;
  if (s.state != ScrubStatus::State::kNone) {
    const int64_t until = s.end_time > 0 ? s.end_time : int64_t(std::time(nullptr));
    const int64_t took = until - s.start_time;
    s.rate = took > 0 ? s.examined / uint64_t(took) : s.examined;
  }
  if (phys.error_list.empty()) return s;
  std::map<uint64_t, std::string> names;  // dataset id -> full name
  if (auto list = pool_->ListDatasets("", /*recursive=*/true); list.ok())
    for (const pool::DatasetFigures& d : *list) names[d.id] = d.name;
  for (const pool::ScrubError& e : phys.error_list) {
    ScrubStatus::Error out;
    out.dataset_id = e.objset;
    out.object = e.object;
    out.blkid = e.blkid;
    out.level = e.level;
    if (e.objset == 0) {
      out.where = "<metadata>:" + ScrubObjectName(e.object);
    } else {
      auto it = names.find(e.objset);
      const std::string dataset =
          it != names.end() ? it->second : "<dataset " + std::to_string(e.objset) + ">";
      Result<std::string> p = e.object != 0 && path ? path(e.objset, e.object)
                                                    : Result<std::string>(Status::NotFound(""));
      out.where = dataset + ":" + (p.ok() ? *p : ScrubObjectName(e.object));
    }
    s.error_list.push_back(std::move(out));
  }
  return s;
}

}  // namespace poolfs::core::posix
