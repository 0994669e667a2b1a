// DatasetTreeFs; see the theory comment in dataset_tree.h.
#include "posix/dataset_tree.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace poolfs::core::posix {

DatasetTreeFs::DatasetTreeFs(std::shared_ptr<pool::Pool> pool, const MountOptions& options)
    : pool_(std::move(pool)), opts_(options), slots_(new std::atomic<PosixFs*>[kSlots]) {
  for (uint64_t i = 0; i < kSlots; i++) slots_[i].store(nullptr, std::memory_order_relaxed);
}

DatasetTreeFs::~DatasetTreeFs() { (void)Unmount(); }

Result<std::unique_ptr<DatasetTreeFs>> DatasetTreeFs::Open(std::unique_ptr<pool::Pool> pool,
                                                           const MountOptions& options) {
  std::shared_ptr<pool::Pool> shared(std::move(pool));
  std::unique_ptr<DatasetTreeFs> fs(new DatasetTreeFs(shared, options));
  // Parents before children: a name sorts after its parent's.
  std::vector<std::pair<std::string, uint64_t>> ids = shared->dataset_ids();
  std::sort(ids.begin(), ids.end());
  const std::string& root = shared->name();
  Status st = Status::Ok();
  for (const auto& [name, id] : ids) {
    if (name != root && !name.starts_with(root + "/")) continue;  // not in the tree
    st = fs->AddDataset(name, id);
    if (!st.ok()) break;
  }
  if (st.ok() && fs->dataset_fs(0) == nullptr)
    st = Status::Corruption("pool '" + root + "' has no root dataset");
  if (!st.ok()) {
    (void)fs->Unmount();
    return st;
  }
  return fs;
}

Status DatasetTreeFs::AddDataset(const std::string& name, uint64_t id) {
  const bool is_root = name == pool_->name();
  uint64_t parent_slot = 0;
  std::string component;
  if (!is_root) {
    if (id == 0 || id >= kSlots)
      return Status::NotSupported("dataset '" + name + "' has id " + std::to_string(id) +
                                  ": a mount numbers at most " + std::to_string(kSlots - 1) +
                                  " datasets");
    const size_t slash = name.rfind('/');
    const std::string parent = name.substr(0, slash);
    component = name.substr(slash + 1);
    util::ReadMostlyReader r(&tree_lock_);
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [&](const auto& n) { return n.second.name == parent; });
    if (it == nodes_.end())
      return Status::Corruption("dataset '" + name + "' has no parent dataset '" + parent + "'");
    parent_slot = it->first;
  }
  const uint64_t slot = is_root ? 0 : id;
  dmu::ObjectSet* os = pool_->dataset(name);
  if (os == nullptr) return Status::NotFound("dataset '" + name + "'");
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<PosixFs> fs,
                          PosixFs::Open(pool_, os, opts_, /*exports=*/false));
  PosixFs* raw = fs.get();
  {
    util::MutexLock l(&mu_);
    all_.push_back(std::move(fs));
  }
  {
    util::ReadMostlyWriter w(&tree_lock_);
    Node& n = nodes_[slot];
    n.name = name;
    n.parent_slot = parent_slot;
    if (!is_root) nodes_[parent_slot].children[component] = slot;
  }
  slots_[slot].store(raw, std::memory_order_release);
  return Status::Ok();
}

Status DatasetTreeFs::Unmount() {
  util::MutexLock l(&mu_);
  if (unmounted_) return unmount_status_;
  unmounted_ = true;
  unmounting_.store(true, std::memory_order_release);
  for (uint64_t i = 0; i < kSlots; i++) slots_[i].store(nullptr, std::memory_order_release);
  Status first = Status::Ok();
  // Children first: each waits for its calls in flight.
  for (auto it = all_.rbegin(); it != all_.rend(); ++it) {
    Status st = (*it)->Unmount();
    if (first.ok() && !st.ok()) first = st;
  }
  Status exported = pool_->Export();
  unmount_status_ = first.ok() ? exported : first;
  return unmount_status_;
}

Result<PosixFs*> DatasetTreeFs::Route(uint64_t ino, uint64_t* local) {
  *local = LocalOf(ino);
  PosixFs* fs = slots_[SlotOf(ino)].load(std::memory_order_acquire);
  if (fs != nullptr) return fs;
  if (unmounting_.load(std::memory_order_acquire))
    return Status(StatusCode::kAborted, "filesystem is unmounted");
  return Status(StatusCode::kStale,
                "inode " + std::to_string(ino) + ": its dataset (slot " +
                    std::to_string(SlotOf(ino)) + ") is not in this mount");
}

uint64_t DatasetTreeFs::ChildAt(uint64_t slot, uint64_t local, std::string_view name) {
  if (local != kRootIno) return 0;
  util::ReadMostlyReader r(&tree_lock_);
  auto it = nodes_.find(slot);
  if (it == nodes_.end() || it->second.children.empty()) return 0;
  auto c = it->second.children.find(name);
  return c == it->second.children.end() ? 0 : c->second;
}

Status DatasetTreeFs::NotAJoin(uint64_t parent, std::string_view name, StatusCode code) {
  const uint64_t child = ChildAt(SlotOf(parent), LocalOf(parent), name);
  if (child == 0) return Status::Ok();
  std::string dataset;
  {
    util::ReadMostlyReader r(&tree_lock_);
    auto it = nodes_.find(child);
    if (it != nodes_.end()) dataset = it->second.name;
  }
  return Status(code, "'" + std::string(name) + "' is dataset " + dataset +
                          " (poolfs dataset rename or destroy changes it)");
}

Result<Attr> DatasetTreeFs::InSlot(uint64_t slot, Result<Attr> a) {
  if (a.ok()) a->ino = Global(slot, a->ino);
  return a;
}

Result<Attr> DatasetTreeFs::Lookup(const Creds& c, uint64_t parent, std::string_view name) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  const uint64_t slot = SlotOf(parent);
  if (const uint64_t child = ChildAt(slot, local, name); child != 0) {
    POOLFS_RETURN_IF_ERROR(fs->Access(c, local, X_OK));
    PosixFs* cfs = slots_[child].load(std::memory_order_acquire);
    if (cfs == nullptr) return Status::NotFound("'" + std::string(name) + "' not in directory");
    return InSlot(child, cfs->LookupRoot());
  }
  return InSlot(slot, fs->Lookup(c, local, name));
}

void DatasetTreeFs::Forget(uint64_t ino, uint64_t nlookup) {
  uint64_t local;
  Result<PosixFs*> fs = Route(ino, &local);
  if (fs.ok()) (*fs)->Forget(local, nlookup);
}

Result<Attr> DatasetTreeFs::GetAttr(uint64_t ino) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return InSlot(SlotOf(ino), fs->GetAttr(local));
}

Result<Attr> DatasetTreeFs::SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return InSlot(SlotOf(ino), fs->SetAttr(c, local, req));
}

Result<Attr> DatasetTreeFs::Create(const Creds& c, uint64_t parent, std::string_view name,
                                   uint32_t mode) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return InSlot(SlotOf(parent), fs->Create(c, local, name, mode));
}

Result<Attr> DatasetTreeFs::Mknod(const Creds& c, uint64_t parent, std::string_view name,
                                  uint32_t mode, uint64_t rdev) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return InSlot(SlotOf(parent), fs->Mknod(c, local, name, mode, rdev));
}

Result<Attr> DatasetTreeFs::Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                                  uint32_t mode) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return InSlot(SlotOf(parent), fs->Mkdir(c, local, name, mode));
}

Result<Attr> DatasetTreeFs::Symlink(const Creds& c, uint64_t parent, std::string_view name,
                                    std::string_view target) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return InSlot(SlotOf(parent), fs->Symlink(c, local, name, target));
}

Result<std::string> DatasetTreeFs::Readlink(uint64_t ino) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Readlink(local);
}

Result<Attr> DatasetTreeFs::Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                                 std::string_view new_name) {
  uint64_t local, parent_local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  POOLFS_RETURN_IF_ERROR(Route(new_parent, &parent_local).status());
  if (SlotOf(ino) != SlotOf(new_parent))
    return Status(StatusCode::kCrossDevice, "a hard link cannot join two datasets");
  POOLFS_RETURN_IF_ERROR(NotAJoin(new_parent, new_name, StatusCode::kAlreadyExists));
  return InSlot(SlotOf(ino), fs->Link(c, local, parent_local, new_name));
}

Status DatasetTreeFs::Unlink(const Creds& c, uint64_t parent, std::string_view name) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kIsADirectory));
  return fs->Unlink(c, local, name);
}

Status DatasetTreeFs::Rmdir(const Creds& c, uint64_t parent, std::string_view name) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kBusy));
  return fs->Rmdir(c, local, name);
}

Status DatasetTreeFs::Rename(const Creds& c, uint64_t parent, std::string_view name,
                             uint64_t new_parent, std::string_view new_name, uint32_t flags) {
  uint64_t local, new_local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(Route(new_parent, &new_local).status());
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kBusy));
  POOLFS_RETURN_IF_ERROR(NotAJoin(new_parent, new_name, StatusCode::kBusy));
  if (SlotOf(parent) != SlotOf(new_parent))
    return Status(StatusCode::kCrossDevice, "a rename cannot move a file to another dataset");
  return fs->Rename(c, local, name, new_local, new_name, flags);
}

Status DatasetTreeFs::Open(const Creds& c, uint64_t ino, int flags) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Open(c, local, flags);
}

Status DatasetTreeFs::Access(const Creds& c, uint64_t ino, int mask) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Access(c, local, mask);
}

Result<size_t> DatasetTreeFs::Read(uint64_t ino, uint64_t off, std::span<char> dst,
                                   uint32_t flags) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Read(local, off, dst, flags);
}

Status DatasetTreeFs::ReadShared(uint64_t ino, uint64_t off, std::span<char> scratch,
                                 uint32_t flags, SharedRead* out) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->ReadShared(local, off, scratch, flags, out);
}

Result<size_t> DatasetTreeFs::Write(const Creds& c, uint64_t ino, uint64_t off,
                                    std::string_view data) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Write(c, local, off, data);
}

Status DatasetTreeFs::Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                                uint64_t len) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Fallocate(c, local, flags, off, len);
}

Status DatasetTreeFs::Fsync(uint64_t ino, bool datasync) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Fsync(local, datasync);
}

Status DatasetTreeFs::ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                              const std::function<bool(const DirEntry&)>& emit) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  const uint64_t slot = SlotOf(ino);
  // What joins this directory: its child datasets (a root only), and for a
  // child's root, the parent's root as "..".
  std::map<std::string, uint64_t, std::less<>> children;
  uint64_t parent_slot = slot;
  if (local == kRootIno) {
    util::ReadMostlyReader r(&tree_lock_);
    auto it = nodes_.find(slot);
    if (it != nodes_.end()) {
      children = it->second.children;
      parent_slot = it->second.parent_slot;
    }
  }
  bool full = false;
  if (cookie < kChildCookieBase) {
    POOLFS_RETURN_IF_ERROR(fs->ReadDir(c, local, cookie, plus, [&](const DirEntry& e) {
      if (e.name != "." && e.name != ".." && children.contains(e.name))
        return true;  // hidden by the dataset of that name
      DirEntry g = e;
      g.ino = Global(slot, e.ino);
      g.attr.ino = Global(slot, e.attr.ino);
      if (e.name == ".." && local == kRootIno && parent_slot != slot) {
        g.ino = Global(parent_slot, kRootIno);
        if (plus) {
          PosixFs* pfs = slots_[parent_slot].load(std::memory_order_acquire);
          Result<Attr> pa = pfs != nullptr ? pfs->GetAttr(kRootIno) : Result<Attr>(Attr{});
          if (pa.ok()) g.attr = *pa;
          g.attr.ino = g.ino;
        }
      }
      if (!emit(g)) {
        full = true;
        return false;
      }
      return true;
    }));
    if (full) return Status::Ok();
    cookie = kChildCookieBase;
  }
  // The child datasets, by slot (their cookies' order).
  std::vector<std::pair<uint64_t, std::string>> by_slot;
  for (const auto& [name, s] : children) by_slot.emplace_back(s, name);
  std::sort(by_slot.begin(), by_slot.end());
  for (const auto& [s, name] : by_slot) {
    if (kChildCookieBase + s < cookie) continue;
    PosixFs* cfs = slots_[s].load(std::memory_order_acquire);
    if (cfs == nullptr) continue;
    DirEntry d;
    d.name = name;
    d.ino = Global(s, kRootIno);
    d.type = S_IFDIR;
    d.next_cookie = kChildCookieBase + s + 1;
    if (plus) {
      Result<Attr> a = cfs->GetAttr(kRootIno);
      if (!a.ok()) continue;
      d.attr = *a;
      d.attr.ino = d.ino;
    }
    if (!emit(d)) return Status::Ok();
    if (plus) (void)cfs->LookupRoot();  // the reference the taken entry carries
  }
  return Status::Ok();
}

Result<std::string> DatasetTreeFs::GetXattr(const Creds& c, uint64_t ino, std::string_view name) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->GetXattr(c, local, name);
}

Status DatasetTreeFs::SetXattr(const Creds& c, uint64_t ino, std::string_view name,
                               std::string_view value, uint32_t flags) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->SetXattr(c, local, name, value, flags);
}

Result<std::vector<std::string>> DatasetTreeFs::ListXattr(const Creds& c, uint64_t ino) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->ListXattr(c, local);
}

Status DatasetTreeFs::RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->RemoveXattr(c, local, name);
}

Result<FsStats> DatasetTreeFs::StatFs() {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(kRootIno, &local));
  return fs->StatFs();
}

FsStatus DatasetTreeFs::GetStatus() {
  uint64_t local;
  Result<PosixFs*> fs = Route(kRootIno, &local);
  if (fs.ok()) return (*fs)->GetStatus();
  FsStatus s;
  s.pool = pool_->name();
  s.state = "unmounted";
  return s;
}

Status DatasetTreeFs::SetLive(const CoreTunables& t) {
  std::vector<PosixFs*> open;
  {
    util::MutexLock l(&mu_);
    if (unmounted_) return Status(StatusCode::kAborted, "filesystem is unmounted");
    for (uint64_t i = 0; i < kSlots; i++)
      if (PosixFs* fs = slots_[i].load(std::memory_order_acquire)) open.push_back(fs);
  }
  // Each applies the pool-wide tunables again (the same values) and its
  // dataset's own; the first refuses a bad set before any applies it.
  for (PosixFs* fs : open) POOLFS_RETURN_IF_ERROR(fs->SetLive(t));
  return Status::Ok();
}

}  // namespace poolfs::core::posix
