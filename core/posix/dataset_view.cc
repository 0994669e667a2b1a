// DatasetViewFs; see the theory comment in dataset_view.h.
#include "posix/dataset_view.h"

#include <fcntl.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "posix/dataset_tree.h"

namespace poolfs::core::posix {

// Every call: refused once the view is unmounted; Unmount waits for the
// calls in flight.
#define POOLFS_VIEW_CALL()                  \
  util::ReadMostlyReader call_(&teardown_); \
  ViewOrigin origin_(this);                 \
  if (unmounted_) return Status(StatusCode::kAborted, "the mount on " + opts_.where + " is gone")

thread_local const void* DatasetTreeFs::change_origin_ = nullptr;

// Marks this thread's changes as the view's for the call's length.
class ViewOrigin {
 public:
  explicit ViewOrigin(const DatasetViewFs* view) { DatasetTreeFs::change_origin_ = view; }
  ~ViewOrigin() { DatasetTreeFs::change_origin_ = nullptr; }
  ViewOrigin(const ViewOrigin&) = delete;
  ViewOrigin& operator=(const ViewOrigin&) = delete;
};

Result<std::unique_ptr<Filesystem>> DatasetTreeFs::OpenDatasetView(
    std::string_view dataset, const DatasetViewOptions& options) {
  POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(dataset));
  const std::optional<uint64_t> slot = SlotNamed(dataset);
  if (!slot.has_value())
    return Status::NotFound("pool '" + pool_->name() + "' has no dataset " + std::string(dataset));
  if (*slot == 0 && top_ != 0) {
    // Its root directory would be kRootIno in the tree's numbers and the
    // view's alike (dataset_view.h).
    return Status::NotSupported("the pool's root dataset " + std::string(dataset) +
                                " cannot be mounted beside this mount of one of its datasets");
  }
  auto view = std::make_unique<DatasetViewFs>(this, *slot, options);
  // Registered under mu_, which a destroy holds from its last look at the
  // views until the dataset is out of the tree: either the destroy sees
  // the view (Busy), or the view sees the dataset gone.
  util::MutexLock l(&mu_);
  if (unmounted_) return Status(StatusCode::kAborted, "filesystem is unmounted");
  if (dataset_fs(*slot) == nullptr)
    return Status::NotFound("pool '" + pool_->name() + "' has no dataset " + std::string(dataset));
  if (!notifier_.joinable()) notifier_ = std::thread([this] { RunNotifier(); });
  util::MutexLock v(&views_mu_);
  views_.push_back(view.get());
  has_views_.store(true, std::memory_order_release);
  return std::unique_ptr<Filesystem>(std::move(view));
}

void DatasetTreeFs::SetInodeInvalidator(InodeInvalidator fn) {
  util::MutexLock l(&invalidate_mu_);
  invalidate_inode_ = std::move(fn);
}

void DatasetTreeFs::Queue(uint64_t ino, std::string_view name) {
  if (!has_views_.load(std::memory_order_acquire)) return;
  util::MutexLock l(&changes_mu_);
  if (stop_notifier_) return;
  if (name.empty() && !queued_inodes_.emplace(change_origin_, ino).second) return;
  changes_.push_back({change_origin_, ino, std::string(name)});
  changes_cv_.Signal();
}

void DatasetTreeFs::RunNotifier() {
  for (;;) {
    std::vector<Change> batch;
    {
      util::MutexLock l(&changes_mu_);
      while (changes_.empty() && !stop_notifier_) changes_cv_.Wait(&changes_mu_);
      if (changes_.empty()) return;
      batch.swap(changes_);
      queued_inodes_.clear();
    }
    // views_mu_ keeps the views (RemoveView waits for the batch).
    util::MutexLock v(&views_mu_);
    for (const Change& c : batch) {
      if (c.origin != nullptr) {
        util::MutexLock l(&invalidate_mu_);
        if (c.name.empty()) {
          if (invalidate_inode_) invalidate_inode_(Out(c.ino));
        } else if (invalidate_) {
          invalidate_(Out(c.ino), c.name);
        }
      }
      for (DatasetViewFs* view : views_)
        if (view != c.origin) view->ForgetChange(c.ino, c.name);
    }
  }
}

void DatasetTreeFs::StopNotifier() {
  {
    util::MutexLock l(&changes_mu_);
    stop_notifier_ = true;
    changes_cv_.Signal();
  }
  if (notifier_.joinable()) notifier_.join();
}

void DatasetTreeFs::RemoveView(DatasetViewFs* view) {
  util::MutexLock l(&views_mu_);
  views_.erase(std::remove(views_.begin(), views_.end(), view), views_.end());
  has_views_.store(!views_.empty(), std::memory_order_release);
}

std::optional<std::pair<std::string, std::string>> DatasetTreeFs::ViewIn(
    const std::vector<uint64_t>& slots) {
  util::MutexLock l(&views_mu_);
  for (DatasetViewFs* view : views_) {
    if (std::find(slots.begin(), slots.end(), view->slot()) == slots.end()) continue;
    util::ReadMostlyReader r(&tree_lock_);
    auto it = nodes_.find(view->slot());
    return std::pair(it == nodes_.end() ? std::string("?") : it->second.name, view->where());
  }
  return std::nullopt;
}

DatasetViewFs::DatasetViewFs(DatasetTreeFs* tree, uint64_t slot, const DatasetViewOptions& options)
    : tree_(tree),
      slot_(slot),
      opts_(options),
      root_(DatasetTreeFs::Global(slot, kRootIno)),
      tree_root_(DatasetTreeFs::Global(tree->top_, kRootIno)) {}

DatasetViewFs::~DatasetViewFs() { (void)Unmount(); }

uint64_t DatasetViewFs::ToTree(uint64_t ino) const {
  const uint64_t global = ino == kRootIno ? root_ : ino;
  return global == tree_root_ ? kRootIno : global;
}

uint64_t DatasetViewFs::FromTree(uint64_t ino) const {
  const uint64_t global = ino == kRootIno ? tree_root_ : ino;
  return global == root_ ? kRootIno : global;
}

Result<Attr> DatasetViewFs::Counted(Result<Attr> a) {
  if (!a.ok()) return a;
  {
    util::MutexLock l(&counts_mu_);
    counts_[a->ino]++;
  }
  a->ino = FromTree(a->ino);
  return a;
}

Status DatasetViewFs::Writable() const {
  if (!opts_.read_only) return Status::Ok();
  return Status(StatusCode::kReadOnly, "the mount on " + opts_.where + " is read-only");
}

Status DatasetViewFs::Unmount() {
  {
    util::ReadMostlyWriter w(&teardown_);
    if (unmounted_) return Status::Ok();
    unmounted_ = true;
  }
  // The kernel sends no FORGET when a mount goes: drop what it held.
  std::unordered_map<uint64_t, uint64_t> held;
  {
    util::MutexLock l(&counts_mu_);
    held.swap(counts_);
  }
  for (const auto& [ino, n] : held) tree_->Forget(ino, n);
  tree_->RemoveView(this);
  return Status::Ok();
}

uint64_t DatasetViewFs::held_lookups() {
  util::MutexLock l(&counts_mu_);
  uint64_t n = 0;
  for (const auto& [ino, count] : counts_) n += count;
  return n;
}

void DatasetViewFs::SetEntryInvalidator(EntryInvalidator fn) {
  util::MutexLock l(&invalidate_mu_);
  invalidate_ = std::move(fn);
}

void DatasetViewFs::SetInodeInvalidator(InodeInvalidator fn) {
  util::MutexLock l(&invalidate_mu_);
  invalidate_inode_ = std::move(fn);
}

void DatasetViewFs::ForgetChange(uint64_t ino, std::string_view name) {
  const uint64_t k = ino == root_ ? kRootIno : ino;
  util::MutexLock l(&invalidate_mu_);
  if (!name.empty()) {
    if (invalidate_) invalidate_(k, name);
  } else if (invalidate_inode_) {
    invalidate_inode_(k);
  }
}

void DatasetViewFs::InvalidateFromTree(uint64_t parent, std::string_view name) {
  util::MutexLock l(&invalidate_mu_);
  if (invalidate_) invalidate_(parent == root_ ? kRootIno : parent, name);
}

DatasetAdmin* DatasetViewFs::datasets() { return tree_->datasets(); }

Result<Attr> DatasetViewFs::Lookup(const Creds& c, uint64_t parent, std::string_view name) {
  POOLFS_VIEW_CALL();
  if (parent == kRootIno && name == "..") {
    // The mount's root is its own parent (the tree would answer with the
    // parent dataset's root, outside this mount).
    PosixFs* fs = tree_->slots_[slot_].load(std::memory_order_acquire);
    if (fs == nullptr)
      return Status(StatusCode::kStale, "the dataset of " + opts_.where + " is gone");
    Result<Attr> a = fs->LookupRoot();
    if (a.ok()) a->ino = ToTree(kRootIno);
    return Counted(std::move(a));
  }
  return Counted(tree_->Lookup(c, ToTree(parent), name));
}

void DatasetViewFs::Forget(uint64_t ino, uint64_t nlookup) {
  util::ReadMostlyReader call(&teardown_);
  if (unmounted_) return;
  const uint64_t t = ToTree(ino);
  {
    util::MutexLock l(&counts_mu_);
    auto it = counts_.find(t);
    if (it != counts_.end()) {
      it->second -= std::min(it->second, nlookup);
      if (it->second == 0) counts_.erase(it);
    }
  }
  tree_->Forget(t, nlookup);
}

Result<Attr> DatasetViewFs::GetAttr(uint64_t ino) {
  POOLFS_VIEW_CALL();
  Result<Attr> a = tree_->GetAttr(ToTree(ino));
  if (a.ok()) a->ino = FromTree(a->ino);
  return a;
}

Result<Attr> DatasetViewFs::SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  Result<Attr> a = tree_->SetAttr(c, ToTree(ino), req);
  if (a.ok()) a->ino = FromTree(a->ino);
  return a;
}

Result<Attr> DatasetViewFs::Create(const Creds& c, uint64_t parent, std::string_view name,
                                   uint32_t mode) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return Counted(tree_->Create(c, ToTree(parent), name, mode));
}

Result<Attr> DatasetViewFs::Mknod(const Creds& c, uint64_t parent, std::string_view name,
                                  uint32_t mode, uint64_t rdev) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return Counted(tree_->Mknod(c, ToTree(parent), name, mode, rdev));
}

Result<Attr> DatasetViewFs::Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                                  uint32_t mode) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return Counted(tree_->Mkdir(c, ToTree(parent), name, mode));
}

Result<Attr> DatasetViewFs::Symlink(const Creds& c, uint64_t parent, std::string_view name,
                                    std::string_view target) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return Counted(tree_->Symlink(c, ToTree(parent), name, target));
}

Result<std::string> DatasetViewFs::Readlink(uint64_t ino) {
  POOLFS_VIEW_CALL();
  return tree_->Readlink(ToTree(ino));
}

Result<Attr> DatasetViewFs::Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                                 std::string_view new_name) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return Counted(tree_->Link(c, ToTree(ino), ToTree(new_parent), new_name));
}

Status DatasetViewFs::Unlink(const Creds& c, uint64_t parent, std::string_view name) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Unlink(c, ToTree(parent), name);
}

Status DatasetViewFs::Rmdir(const Creds& c, uint64_t parent, std::string_view name) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Rmdir(c, ToTree(parent), name);
}

Status DatasetViewFs::Rename(const Creds& c, uint64_t parent, std::string_view name,
                             uint64_t new_parent, std::string_view new_name, uint32_t flags) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Rename(c, ToTree(parent), name, ToTree(new_parent), new_name, flags);
}

Status DatasetViewFs::Open(const Creds& c, uint64_t ino, int flags) {
  POOLFS_VIEW_CALL();
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0) POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Open(c, ToTree(ino), flags);
}

Status DatasetViewFs::Access(const Creds& c, uint64_t ino, int mask) {
  POOLFS_VIEW_CALL();
  if ((mask & W_OK) != 0) POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Access(c, ToTree(ino), mask);
}

Result<size_t> DatasetViewFs::Read(uint64_t ino, uint64_t off, std::span<char> dst,
                                   uint32_t flags) {
  POOLFS_VIEW_CALL();
  return tree_->Read(ToTree(ino), off, dst, flags);
}

Status DatasetViewFs::ReadShared(uint64_t ino, uint64_t off, std::span<char> scratch,
                                 uint32_t flags, SharedRead* out) {
  POOLFS_VIEW_CALL();
  return tree_->ReadShared(ToTree(ino), off, scratch, flags, out);
}

Result<size_t> DatasetViewFs::Write(const Creds& c, uint64_t ino, uint64_t off,
                                    std::string_view data) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Write(c, ToTree(ino), off, data);
}

Status DatasetViewFs::Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                                uint64_t len) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->Fallocate(c, ToTree(ino), flags, off, len);
}

Result<uint64_t> DatasetViewFs::Seek(uint64_t ino, uint64_t off, bool hole) {
  POOLFS_VIEW_CALL();
  return tree_->Seek(ToTree(ino), off, hole);
}

Status DatasetViewFs::Fsync(uint64_t ino, bool datasync) {
  POOLFS_VIEW_CALL();
  return tree_->Fsync(ToTree(ino), datasync);
}

Status DatasetViewFs::ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                              const std::function<bool(const DirEntry&)>& emit) {
  POOLFS_VIEW_CALL();
  return tree_->ReadDir(c, ToTree(ino), cookie, plus, [&](const DirEntry& e) {
    DirEntry v = e;
    const bool dots = e.name == "." || e.name == "..";
    if (e.name == ".." && ino == kRootIno) {
      v.ino = kRootIno;  // the mount's root is its own parent, as any mount's is
    } else {
      v.ino = FromTree(e.ino);
    }
    if (plus) v.attr.ino = v.ino;
    if (!emit(v)) return false;
    if (plus && !dots) {  // the taken entry carries a lookup reference
      util::MutexLock l(&counts_mu_);
      counts_[e.ino]++;
    }
    return true;
  });
}

Result<std::string> DatasetViewFs::GetXattr(const Creds& c, uint64_t ino, std::string_view name) {
  POOLFS_VIEW_CALL();
  return tree_->GetXattr(c, ToTree(ino), name);
}

Status DatasetViewFs::SetXattr(const Creds& c, uint64_t ino, std::string_view name,
                               std::string_view value, uint32_t flags) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->SetXattr(c, ToTree(ino), name, value, flags);
}

Result<std::vector<std::string>> DatasetViewFs::ListXattr(const Creds& c, uint64_t ino) {
  POOLFS_VIEW_CALL();
  return tree_->ListXattr(c, ToTree(ino));
}

Status DatasetViewFs::RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) {
  POOLFS_VIEW_CALL();
  POOLFS_RETURN_IF_ERROR(Writable());
  return tree_->RemoveXattr(c, ToTree(ino), name);
}

Result<FsStats> DatasetViewFs::StatFs(uint64_t ino) {
  POOLFS_VIEW_CALL();
  return tree_->StatFs(ToTree(ino));
}

FsStatus DatasetViewFs::GetStatus() { return tree_->GetStatus(); }

Status DatasetViewFs::SetLive(const CoreTunables&) {
  return Status::NotSupported("the mount on " + opts_.where +
                              " shows one dataset of a mounted pool: tune the pool's own mount");
}

#undef POOLFS_VIEW_CALL

}  // namespace poolfs::core::posix
