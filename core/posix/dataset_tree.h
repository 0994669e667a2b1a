// DatasetTreeFs: one mount of a pool showing its whole dataset tree, each
// dataset a PosixFs of its own, joined where ZFS mounts a child by default:
// dataset POOL/A/B appears as the directory B in the root directory of
// POOL/A.
//
// Theory
// ------
// Inode numbers. A dataset's files have their object ids as inode numbers
// inside it; the mount shows (slot << 48) | id, where the root dataset's
// slot is 0 (so a pool with one dataset numbers its files as before) and
// every other dataset's slot is its dataset id, which the pool never
// reuses: numbers are unique across the mount and the same at every mount.
// Object ids stay below 2^48 (dmu::kMaxObjectId); slots below 2^16, which
// bounds a pool to 65,535 datasets created in its life (a create past that
// is refused). A call is routed by its inode's slot to that dataset's
// PosixFs; a slot with no dataset (destroyed) answers Stale.
//
// The joins. A child's name in its parent's root directory is not an entry
// of that directory: Lookup and ReadDir of a dataset root add the child
// datasets (after the real entries, with cookies above any the directory
// gives, 2^62 + 16 + slot, so a listing resumes across them), and a real
// entry of the same name is hidden while the dataset exists, as a mount
// hides what lies under it. Creating that name gives AlreadyExists,
// removing or renaming it Busy (it is a mount point); rename and link
// between datasets CrossDevice (EXDEV). The ".." of a child's root is its
// parent's root.
//
// Thread safety: as poolfs::Filesystem. The routing table (slots_) is read
// without locks (one atomic pointer per slot); a PosixFs stays allocated
// until the mount is destroyed, even after its dataset goes, so a call
// that read its pointer just before finds it unmounted (Aborted).
// The tree of names is read-mostly (tree_lock_).
//
// Live changes. datasets() is the pool's DatasetAdmin, wrapped: after a
// create, rename or destroy the tree follows the pool (Refresh), and the
// kernel is told to drop the names that changed (the invalidator the FUSE
// adapter gives, SetEntryInvalidator), negative entries included. A
// destroy first asks the kernel to drop its cached names below the
// dataset, waits up to 2 s for the forgets, and is Busy while files of the
// dataset or its descendants are still held (open, a working directory);
// otherwise it takes them out of the tree and unmounts their filesystems
// before the pool destroys them, so nothing can write to a dataset that is
// going.
//
// Snapshots (snapshot_dir.cc). Every dataset's root directory has a
// hidden ".poolfs" directory (not listed; reachable by name, as ZFS's
// ".zfs" with snapdir=hidden) holding "snapshot", which lists the
// dataset's snapshots as the pool has them now. Both are read-only and
// have inode numbers of their own in the dataset's slot (kCtlDirIno,
// kSnapDirIno: object ids never reached). Looking up a snapshot there
// opens it read-only (Pool::OpenSnapshot, a PosixFs with read_only) in the
// slot of the snapshot's id, which no dataset has (ids are never reused):
// its files are read as the snapshot keeps them, any change is ReadOnly.
// A snapshot taken or destroyed through the admin is invalidated in the
// kernel's cache, so it appears and goes at once; one open in the mount is
// closed before its destroy (Busy while the kernel holds files of it).
//
// Views. OpenDatasetView opens a second filesystem over the tree
// (DatasetViewFs, dataset_view.h) for a second mount of one dataset: its
// calls come here, so both mounts share each dataset's PosixFs. The tree
// keeps its open views: a destroy of a view's dataset or an ancestor is
// Busy, as one of this mount's own root is, and the names the tree
// invalidates reach the views' kernels too (in their numbers).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pool/pool.h"
#include "poolfs/fs.h"
#include "posix/dataset_view.h"
#include "posix/posix_fs.h"
#include "util/mutex.h"
#include "util/read_mostly_lock.h"

namespace poolfs::core::posix {

class ViewOrigin;

class DatasetTreeFs final : public Filesystem {
 public:
  static constexpr int kSlotShift = 48;
  static constexpr uint64_t kLocalMask = (uint64_t{1} << kSlotShift) - 1;
  static constexpr uint64_t kSlots = uint64_t{1} << 16;
  // Cookies of the child datasets in a listing of their parent's root.
  static constexpr uint64_t kChildCookieBase = (uint64_t{1} << 62) + 16;

  // Opens a PosixFs for every dataset of `pool` under its root dataset.
  // Fails as PosixFs::Open does; the pool is exported again then.
  static Result<std::unique_ptr<DatasetTreeFs>> Open(std::unique_ptr<pool::Pool> pool,
                                                     const MountOptions& options);
  ~DatasetTreeFs() override;

  // The inode number in the mount of object `local` of the dataset in
  // `slot`, and back.
  static uint64_t Global(uint64_t slot, uint64_t local) { return (slot << kSlotShift) | local; }
  static uint64_t SlotOf(uint64_t ino) { return ino >> kSlotShift; }
  static uint64_t LocalOf(uint64_t ino) { return ino & kLocalMask; }

  Status Unmount() override;
  Result<Attr> Lookup(const Creds& c, uint64_t parent, std::string_view name) override;
  void Forget(uint64_t ino, uint64_t nlookup) override;
  Result<Attr> GetAttr(uint64_t ino) override;
  Result<Attr> SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) override;
  Result<Attr> Create(const Creds& c, uint64_t parent, std::string_view name,
                      uint32_t mode) override;
  Result<Attr> Mknod(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode,
                     uint64_t rdev) override;
  Result<Attr> Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                     uint32_t mode) override;
  Result<Attr> Symlink(const Creds& c, uint64_t parent, std::string_view name,
                       std::string_view target) override;
  Result<std::string> Readlink(uint64_t ino) override;
  Result<Attr> Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                    std::string_view new_name) override;
  Status Unlink(const Creds& c, uint64_t parent, std::string_view name) override;
  Status Rmdir(const Creds& c, uint64_t parent, std::string_view name) override;
  Status Rename(const Creds& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, uint32_t flags) override;
  Status Open(const Creds& c, uint64_t ino, int flags) override;
  Status Access(const Creds& c, uint64_t ino, int mask) override;
  using Filesystem::Read;
  Result<size_t> Read(uint64_t ino, uint64_t off, std::span<char> dst, uint32_t flags = 0) override;
  Status ReadShared(uint64_t ino, uint64_t off, std::span<char> scratch, uint32_t flags,
                    SharedRead* out) override;
  Result<size_t> Write(const Creds& c, uint64_t ino, uint64_t off, std::string_view data) override;
  Status Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                   uint64_t len) override;
  Status Fsync(uint64_t ino, bool datasync) override;
  Result<uint64_t> Seek(uint64_t ino, uint64_t off, bool hole) override;
  // Between any two datasets of the mount: the destination's filesystem
  // copies from the source's (PosixFs::CopyFrom).
  Result<uint64_t> CopyFileRange(const Creds& c, uint64_t ino_in, uint64_t off_in,
                                 uint64_t ino_out, uint64_t off_out, uint64_t len,
                                 uint32_t flags) override;
  Status ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                 const std::function<bool(const DirEntry&)>& emit) override;
  Result<std::string> GetXattr(const Creds& c, uint64_t ino, std::string_view name) override;
  Status SetXattr(const Creds& c, uint64_t ino, std::string_view name, std::string_view value,
                  uint32_t flags) override;
  Result<std::vector<std::string>> ListXattr(const Creds& c, uint64_t ino) override;
  Status RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) override;
  Result<FsStats> StatFs(uint64_t ino) override;
  FsStatus GetStatus() override;
  Status SetLive(const CoreTunables& t) override;
  Status StartScrub() override;
  Status StopScrub() override;
  DatasetAdmin* datasets() override;
  void SetEntryInvalidator(EntryInvalidator fn) override EXCLUDES(invalidate_mu_);
  void SetInodeInvalidator(InodeInvalidator fn) override EXCLUDES(invalidate_mu_);
  // Each dataset's filesystem calls it with its own inode numbers, turned
  // into the mount's here.
  void SetPageDropper(PageDropper fn) override EXCLUDES(drop_mu_);
  // A DatasetViewFs of dataset `dataset` (dataset_view.h), registered
  // here so that destroying it is Busy and its kernel's names are
  // invalidated with this mount's. NotFound for no such dataset,
  // NotSupported for the root dataset when this mount shows another one.
  Result<std::unique_ptr<Filesystem>> OpenDatasetView(std::string_view dataset,
                                                      const DatasetViewOptions& options) override
      EXCLUDES(mu_, views_mu_, tree_lock_);

  // The local inode numbers of a dataset's ".poolfs" and
  // ".poolfs/snapshot" directories (see above).
  static constexpr uint64_t kCtlDirIno = kLocalMask - 1;
  static constexpr uint64_t kSnapDirIno = kLocalMask - 2;
  static constexpr std::string_view kCtlDirName = ".poolfs";
  static constexpr std::string_view kSnapDirName = "snapshot";
  static bool IsVirtual(uint64_t ino) {
    return LocalOf(ino) == kCtlDirIno || LocalOf(ino) == kSnapDirIno;
  }

  // For tests: the filesystem of the dataset in `slot` (nullptr: none).
  PosixFs* dataset_fs(uint64_t slot) { return slots_[slot].load(std::memory_order_acquire); }

 private:
  class Admin;
  friend class DatasetViewFs;
  friend class ViewOrigin;  // sets change_origin_ (dataset_view.cc)
  struct Node {
    std::string name;  // the dataset's full name
    uint64_t parent_slot = 0;
    std::map<std::string, uint64_t, std::less<>> children;  // name component -> slot
  };

  DatasetTreeFs(std::shared_ptr<pool::Pool> pool, const MountOptions& options);
  // Opens the filesystem of dataset `name` (`id`) and joins it to its
  // parent, which is open already.
  Status AddDataset(const std::string& name, uint64_t id) REQUIRES(mu_) EXCLUDES(tree_lock_);
  // Brings the tree in line with the pool's datasets (see above) and
  // invalidates the names that changed.
  Status Refresh() EXCLUDES(mu_, tree_lock_);
  // Takes `slot` and its descendants out of the tree and unmounts their
  // filesystems (a destroy is coming); their joins are returned in
  // *dropped (parent's root inode, name).
  void Detach(uint64_t slot, std::vector<std::pair<uint64_t, std::string>>* dropped) REQUIRES(mu_)
      EXCLUDES(tree_lock_);
  // The slot of dataset `name`, or nullopt.
  std::optional<uint64_t> SlotNamed(std::string_view name) EXCLUDES(tree_lock_);
  // `slot` and its descendants.
  std::vector<uint64_t> Subtree(uint64_t slot) EXCLUDES(tree_lock_);
  // Whether the kernel holds a file of any of `slots` other than its root.
  bool InUse(const std::vector<uint64_t>& slots);
  void Invalidate(const std::vector<std::pair<uint64_t, std::string>>& names)
      EXCLUDES(invalidate_mu_, views_mu_);
  // A change that succeeded through one of the mounts of the tree's files
  // (this one, or a view: ChangeOrigin), to be forgotten by the others'
  // kernels (dataset_view.h, "Coherence"): file `ino` (global), or name
  // `name` in directory `parent` and the directory. They pass `r` through.
  template <typename R>
  R Changed(uint64_t ino, R r) {
    if (!r.ok()) return r;
    Queue(ino, {});
    if (Status st = SyncIfAlways(ino); !st.ok()) return R(st);
    return r;
  }
  template <typename R>
  R Named(uint64_t parent, std::string_view name, R r) {
    if (!r.ok()) return r;
    Queue(parent, name);
    Queue(parent, {});
    if (Status st = SyncIfAlways(parent); !st.ok()) return R(st);
    return r;
  }
  // PosixFs::SyncIfAlways of the dataset of `ino` (global).
  Status SyncIfAlways(uint64_t ino);
  // Nothing while no view is open.
  void Queue(uint64_t ino, std::string_view name) EXCLUDES(changes_mu_);
  // The notifier thread: tells the mounts other than a change's origin.
  void RunNotifier() EXCLUDES(changes_mu_, views_mu_, invalidate_mu_);
  void StopNotifier() REQUIRES(mu_) EXCLUDES(changes_mu_);
  // The view whose call this thread is in (set by the view around its
  // calls into the tree); nullptr: this mount's own calls.
  static thread_local const void* change_origin_;
  // A view goes (its Unmount).
  void RemoveView(DatasetViewFs* view) EXCLUDES(views_mu_);
  // The dataset and mount point of an open view whose root is one of
  // `slots`, or nullopt.
  std::optional<std::pair<std::string, std::string>> ViewIn(const std::vector<uint64_t>& slots)
      EXCLUDES(views_mu_, tree_lock_);
  uint64_t SlotFor(uint64_t id) const { return id == root_id_ ? 0 : id; }
  uint64_t IdFor(uint64_t slot) const { return slot == 0 ? root_id_ : slot; }
  // The tree's names and parents and every dataset's effective
  // properties, read once.
  struct PropsView {
    std::map<uint64_t, std::pair<std::string, uint64_t>> nodes;  // slot -> (name, parent slot)
    std::map<uint64_t, pool::DatasetProps> props;                // by slot
  };
  PropsView ViewProps() EXCLUDES(tree_lock_);
  // Gives `fs`, the dataset in `slot`, its effective properties, its name,
  // whether a quota bounds it (its own or an ancestor's) and whether
  // another dataset holds a reservation.
  static void Apply(const PropsView& v, uint64_t slot, PosixFs* fs);
  // The same for every open dataset.
  void ApplyAll() EXCLUDES(tree_lock_);
  // The filesystem of `ino`'s dataset and the inode inside it: Stale when
  // the dataset is gone.
  Result<PosixFs*> Route(uint64_t ino, uint64_t* local);
  // The slot of the child dataset `name` of directory `local` of the
  // dataset in `slot` (only a root directory has them), or 0.
  uint64_t ChildAt(uint64_t slot, uint64_t local, std::string_view name) EXCLUDES(tree_lock_);
  // Replays the intent log `log` (opened first thing after the import,
  // IntentLog::Open) into the datasets and starts it (intent_log.h); the
  // datasets record into it from then on.
  Status OpenLog(std::unique_ptr<zil::IntentLog> log) EXCLUDES(tree_lock_);
  // Snapshot browsing (snapshot_dir.cc). The attributes of a virtual
  // directory `ino` (global); Lookup in one; its listing; the slot of a
  // snapshot of the dataset in `slot`, opened if need be (NotFound,
  // NotSupported past the slots); whether `slot` holds a snapshot, and
  // the dataset slot it belongs to.
  Result<Attr> VirtualAttr(uint64_t ino);
  Result<Attr> LookupVirtual(const Creds& c, uint64_t parent, std::string_view name);
  Status ReadVirtualDir(uint64_t ino, uint64_t cookie, bool plus,
                        const std::function<bool(const DirEntry&)>& emit);
  Result<uint64_t> OpenSnapshot(uint64_t slot, std::string_view name) EXCLUDES(mu_, snap_mu_);
  std::optional<uint64_t> SnapshotOwner(uint64_t slot) EXCLUDES(snap_mu_);
  // The full name of the dataset in `slot`: Stale when it is gone.
  Result<std::string> DatasetNameOf(uint64_t slot) EXCLUDES(tree_lock_);
  // Closes the open snapshots of the dataset in `slot` (all, or those
  // named) that the kernel no longer holds after being asked to drop them;
  // Busy naming one it still holds among `must` (all when `must` is
  // empty and `all_must` is set).
  Status CloseSnapshots(uint64_t slot, const std::set<std::string>& must, bool all_must)
      EXCLUDES(mu_, snap_mu_);
  // Asks the kernel to drop `names` in the snapshot directory of every
  // dataset in the tree (a snapshot taken: no stale negative entry).
  void InvalidateSnapshotNames(const std::vector<std::string>& names) EXCLUDES(tree_lock_);
  // Asks the kernel to drop what it caches of directories `dirs` (global):
  // their attributes and listings.
  void InvalidateListings(const std::vector<uint64_t>& dirs) EXCLUDES(invalidate_mu_);
  // Ok unless `name` in `parent` is a child dataset (then `code`, saying so).
  Status NotAJoin(uint64_t parent, std::string_view name, StatusCode code) EXCLUDES(tree_lock_);
  Result<Attr> InSlot(uint64_t slot, Result<Attr> a) const;
  // The mount's inode numbers and the tree's: they differ only for the
  // root of a mount of one dataset's subtree (top_ != 0), which the kernel
  // calls kRootIno.
  uint64_t In(uint64_t ino) const { return ino == kRootIno ? Global(top_, kRootIno) : ino; }
  uint64_t Out(uint64_t ino) const { return ino == Global(top_, kRootIno) ? kRootIno : ino; }

  std::shared_ptr<pool::Pool> pool_;
  const MountOptions opts_;
  uint64_t root_id_ = 0;      // the root dataset's id (slot 0)
  uint64_t top_ = 0;          // the slot of the dataset at the mount's root
  uint64_t props_watch_ = 0;  // Pool::WatchProperties handle (0: none)
  std::unique_ptr<Admin> admin_;
  util::Mutex invalidate_mu_;
  EntryInvalidator invalidate_ GUARDED_BY(invalidate_mu_);
  InodeInvalidator invalidate_inode_ GUARDED_BY(invalidate_mu_);
  util::Mutex drop_mu_;  // not invalidate_mu_: dropping pages only queues
  PageDropper drop_pages_ GUARDED_BY(drop_mu_);
  // The open views (OpenDatasetView); each removes itself when unmounted.
  util::Mutex views_mu_;
  std::vector<DatasetViewFs*> views_ GUARDED_BY(views_mu_);
  std::atomic<bool> has_views_{false};
  // Changes for the notifier thread (started with the first view, stopped
  // by Unmount); an inode waits there at most once per origin.
  struct Change {
    const void* origin;  // a view, or nullptr for this mount
    uint64_t ino;        // global
    std::string name;    // empty: the file itself
  };
  util::Mutex changes_mu_;
  util::CondVar changes_cv_;
  std::vector<Change> changes_ GUARDED_BY(changes_mu_);
  std::set<std::pair<const void*, uint64_t>> queued_inodes_ GUARDED_BY(changes_mu_);
  bool stop_notifier_ GUARDED_BY(changes_mu_) = false;
  std::thread notifier_ GUARDED_BY(mu_);
  std::unique_ptr<std::atomic<PosixFs*>[]> slots_;
  std::atomic<bool> unmounting_{false};
  // The pool's intent log (none on a read-only mount); before all_, whose
  // filesystems record into it, so that it outlives them.
  std::unique_ptr<zil::IntentLog> log_;
  std::vector<std::string> log_notes_;  // what its replay said (import notes)

  // The open snapshots (OpenSnapshot), by slot: their dataset's slot and
  // name; their object sets live as long as the mount, after the
  // filesystems over them (all_, below).
  struct OpenSnap {
    uint64_t dataset_slot = 0;
    std::string name;
  };
  util::Mutex snap_mu_;  // after mu_
  std::map<uint64_t, OpenSnap> snaps_ GUARDED_BY(snap_mu_);
  std::vector<std::unique_ptr<dmu::ObjectSet>> snap_sets_ GUARDED_BY(snap_mu_);

  util::Mutex mu_;                                             // membership changes; unmount
  std::vector<std::unique_ptr<PosixFs>> all_ GUARDED_BY(mu_);  // every one opened, kept
  bool unmounted_ GUARDED_BY(mu_) = false;
  Status unmount_status_ GUARDED_BY(mu_);

  util::ReadMostlyLock tree_lock_;
  std::map<uint64_t, Node> nodes_ GUARDED_BY(tree_lock_);  // by slot
};

}  // namespace poolfs::core::posix
