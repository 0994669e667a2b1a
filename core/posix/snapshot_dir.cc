// DatasetTreeFs's snapshot directories; see "Snapshots" in dataset_tree.h.
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "posix/dataset_tree.h"

namespace poolfs::core::posix {

Result<std::string> DatasetTreeFs::DatasetNameOf(uint64_t slot) {
  util::ReadMostlyReader r(&tree_lock_);
  auto it = nodes_.find(slot);
  if (it == nodes_.end())
    return Status(StatusCode::kStale, "dataset slot " + std::to_string(slot) + " is gone");
  return it->second.name;
}

std::optional<uint64_t> DatasetTreeFs::SnapshotOwner(uint64_t slot) {
  util::MutexLock l(&snap_mu_);
  auto it = snaps_.find(slot);
  if (it == snaps_.end()) return std::nullopt;
  return it->second.dataset_slot;
}

Result<Attr> DatasetTreeFs::VirtualAttr(uint64_t ino) {
  const uint64_t slot = SlotOf(ino);
  PosixFs* fs = slots_[slot].load(std::memory_order_acquire);
  if (fs == nullptr)
    return Status(StatusCode::kStale, "inode " + std::to_string(ino) + ": its dataset is gone");
  // The dataset root's owner and times; a read-only directory.
  POOLFS_ASSIGN_OR_RETURN(Attr a, fs->GetAttr(kRootIno));
  a.ino = Out(ino);
  a.generation = 0;
  a.mode = S_IFDIR | 0555;
  a.nlink = 2;
  a.size = 2;
  a.blocks = 0;
  return a;
}

Result<uint64_t> DatasetTreeFs::OpenSnapshot(uint64_t slot, std::string_view name) {
  POOLFS_ASSIGN_OR_RETURN(const std::string dataset, DatasetNameOf(slot));
  const std::string full = dataset + "@" + std::string(name);
  if (name.empty() || name.find_first_of("/@%") != std::string_view::npos)
    return Status::NotFound("no snapshot " + full);
  util::MutexLock l(&mu_);
  if (unmounted_) return Status(StatusCode::kAborted, "filesystem is unmounted");
  {
    util::MutexLock s(&snap_mu_);
    for (const auto& [snap_slot, open] : snaps_)
      if (open.dataset_slot == slot && open.name == name) return snap_slot;
  }
  POOLFS_ASSIGN_OR_RETURN(std::vector<pool::SnapshotFigures> snaps,
                          pool_->ListSnapshots(dataset, /*recursive=*/false));
  uint64_t id = 0;
  for (const pool::SnapshotFigures& f : snaps)
    if (f.name == full) id = f.id;
  if (id == 0) return Status::NotFound("no snapshot " + full);
  if (id >= kSlots)
    return Status::NotSupported("snapshot " + full + " has id " + std::to_string(id) +
                                ": a mount numbers at most " + std::to_string(kSlots - 1) +
                                " datasets and snapshots");
  {
    // Open already under the name it had before a rename.
    util::MutexLock s(&snap_mu_);
    if (auto it = snaps_.find(id); it != snaps_.end()) {
      it->second.name = std::string(name);
      return id;
    }
  }
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> os, pool_->OpenSnapshot(full));
  MountOptions o = opts_;
  o.read_only = true;
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<PosixFs> fs,
                          PosixFs::Open(pool_, os.get(), o, /*exports=*/false));
  PosixFs* raw = fs.get();
  all_.push_back(std::move(fs));
  {
    util::MutexLock s(&snap_mu_);
    snap_sets_.push_back(std::move(os));
    snaps_[id] = {slot, std::string(name)};
  }
  slots_[id].store(raw, std::memory_order_release);
  return id;
}

Result<Attr> DatasetTreeFs::LookupVirtual(const Creds& c, uint64_t parent, std::string_view name) {
  const uint64_t slot = SlotOf(parent);
  const uint64_t local = LocalOf(parent);
  PosixFs* fs = slots_[slot].load(std::memory_order_acquire);
  if (fs == nullptr)
    return Status(StatusCode::kStale, "inode " + std::to_string(parent) + ": its dataset is gone");
  // Whoever may search the dataset's root may search these.
  POOLFS_RETURN_IF_ERROR(fs->Access(c, kRootIno, X_OK));
  if (name == ".") return VirtualAttr(parent);
  if (local == kCtlDirIno) {
    if (name == "..") return InSlot(slot, fs->LookupRoot());
    if (name == kSnapDirName) return VirtualAttr(Global(slot, kSnapDirIno));
    return Status::NotFound("'" + std::string(name) + "' not in directory");
  }
  if (name == "..") return VirtualAttr(Global(slot, kCtlDirIno));
  POOLFS_ASSIGN_OR_RETURN(uint64_t snap_slot, OpenSnapshot(slot, name));
  PosixFs* sfs = slots_[snap_slot].load(std::memory_order_acquire);
  if (sfs == nullptr) return Status::NotFound("'" + std::string(name) + "' not in directory");
  return InSlot(snap_slot, sfs->LookupRoot());
}

Status DatasetTreeFs::ReadVirtualDir(uint64_t ino, uint64_t cookie, bool plus,
                                     const std::function<bool(const DirEntry&)>& emit) {
  const uint64_t slot = SlotOf(ino);
  // Each entry, and what it is: the dataset's root, a virtual directory,
  // or a snapshot (its root, in the slot it opens in).
  enum class Kind { kRoot, kVirtual, kSnapshot };
  std::vector<std::pair<DirEntry, Kind>> entries;
  auto add = [&](std::string name, uint64_t entry_ino, Kind kind) {
    DirEntry d;
    d.name = std::move(name);
    d.ino = entry_ino;
    d.type = S_IFDIR;
    entries.emplace_back(std::move(d), kind);
  };
  add(".", ino, Kind::kVirtual);
  if (LocalOf(ino) == kCtlDirIno) {
    add("..", Global(slot, kRootIno), Kind::kRoot);
    add(std::string(kSnapDirName), Global(slot, kSnapDirIno), Kind::kVirtual);
  } else {
    add("..", Global(slot, kCtlDirIno), Kind::kVirtual);
    POOLFS_ASSIGN_OR_RETURN(const std::string dataset, DatasetNameOf(slot));
    POOLFS_ASSIGN_OR_RETURN(std::vector<pool::SnapshotFigures> snaps,
                            pool_->ListSnapshots(dataset, /*recursive=*/false));
    for (const pool::SnapshotFigures& f : snaps)
      if (f.id < kSlots)
        add(f.name.substr(f.name.find('@') + 1), Global(f.id, kRootIno), Kind::kSnapshot);
  }
  for (uint64_t i = cookie; i < entries.size(); i++) {
    auto& [d, kind] = entries[i];
    d.next_cookie = i + 1;
    if (plus) {
      Result<Attr> a = Status::NotFound("");
      if (kind == Kind::kRoot) {
        a = GetAttr(Out(d.ino));
      } else if (kind == Kind::kVirtual) {
        a = VirtualAttr(d.ino);
      } else {
        // Listed with its attributes, a snapshot is opened, as a lookup
        // of it would.
        Result<uint64_t> snap_slot = OpenSnapshot(slot, d.name);
        PosixFs* sfs =
            snap_slot.ok() ? slots_[*snap_slot].load(std::memory_order_acquire) : nullptr;
        if (sfs != nullptr) a = InSlot(*snap_slot, sfs->GetAttr(kRootIno));
      }
      if (!a.ok()) continue;  // gone meanwhile
      d.attr = *a;
    }
    d.ino = Out(d.ino);
    d.attr.ino = d.ino;
    if (!emit(d)) return Status::Ok();
  }
  return Status::Ok();
}

Status DatasetTreeFs::CloseSnapshots(uint64_t slot, const std::set<std::string>& must,
                                     bool all_must) {
  std::vector<std::pair<uint64_t, std::string>> open;
  {
    util::MutexLock s(&snap_mu_);
    for (const auto& [snap_slot, o] : snaps_)
      if (o.dataset_slot == slot) open.emplace_back(snap_slot, o.name);
  }
  if (open.empty()) return Status::Ok();
  std::vector<std::pair<uint64_t, std::string>> names;
  for (const auto& [snap_slot, name] : open) names.emplace_back(Global(slot, kSnapDirIno), name);
  Invalidate(names);
  InvalidateListings({Global(slot, kSnapDirIno)});
  // The kernel forgets what it held below them as it drops the names.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (const auto& [snap_slot, name] : open) {
    const bool required = all_must || must.count(name);
    for (;;) {
      PosixFs* fs = slots_[snap_slot].load(std::memory_order_acquire);
      if (fs == nullptr || !fs->Held()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        if (required)
          return Status::Busy("snapshot @" + name +
                              " is in use: files in it are open or a working directory");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    PosixFs* fs = slots_[snap_slot].load(std::memory_order_acquire);
    if (fs != nullptr && fs->Held()) continue;  // not required: it stays open
    util::MutexLock l(&mu_);
    fs = slots_[snap_slot].exchange(nullptr, std::memory_order_acq_rel);
    if (fs != nullptr) (void)fs->Unmount();
    util::MutexLock s(&snap_mu_);
    snaps_.erase(snap_slot);
  }
  return Status::Ok();
}

void DatasetTreeFs::InvalidateSnapshotNames(const std::vector<std::string>& names) {
  std::vector<std::pair<uint64_t, std::string>> entries;
  std::vector<uint64_t> dirs;
  {
    util::ReadMostlyReader r(&tree_lock_);
    for (const auto& [slot, node] : nodes_) {
      dirs.push_back(Global(slot, kSnapDirIno));
      for (const std::string& n : names) entries.emplace_back(Global(slot, kSnapDirIno), n);
    }
  }
  Invalidate(entries);
  InvalidateListings(dirs);
}

void DatasetTreeFs::InvalidateListings(const std::vector<uint64_t>& dirs) {
  util::MutexLock l(&invalidate_mu_);
  if (invalidate_inode_)
    for (uint64_t ino : dirs) invalidate_inode_(Out(ino));
}

}  // namespace poolfs::core::posix
