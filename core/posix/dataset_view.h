// DatasetViewFs: a second filesystem over a mounted pool's dataset tree,
// showing one dataset's tree at its root (Filesystem::OpenDatasetView), for
// a second FUSE mount served by the same process: `poolfs mount POOL/PATH
// MNT` while POOL is mounted.
//
// Theory
// ------
// A view owns no files. Every call goes to the DatasetTreeFs it was opened
// from, which routes it to the dataset's PosixFs as it routes the tree
// mount's own calls, so both mounts share one PosixFs per dataset: one
// inode table, one op_mu per inode, one cache. Two filesystems over one
// object set would each lock its own inodes and corrupt each other.
//
// Inode numbers. The view shows the tree's numbers (slot << 48 | object),
// except that its root is kRootIno, as the kernel wants, and the tree's own
// root is kRootIno in the tree's calls: each call's numbers are moved from
// the view's space to the tree's and back (ToTree, FromTree). A view of the
// root dataset beside a tree mount of another dataset is refused: the
// root dataset's root directory would be kRootIno in both spaces.
//
// Lookups. The view's kernel takes lookup references in the tree's
// filesystems like the tree mount's kernel does. The kernel sends no
// FORGET when a mount goes, so the view counts the references its kernel
// holds, and Unmount drops the rest: a dataset whose view went is not kept
// busy by it. The view's root is never looked up by its kernel.
//
// Busy and renames. The tree keeps its open views: destroying a view's
// dataset or an ancestor is Busy, as destroying the tree mount's own root
// is. A rename keeps the view on its dataset (it holds the dataset's slot,
// not its name). Names the tree invalidates (datasets created, renamed,
// destroyed) are invalidated in the view's kernel too.
//
// Coherence. Each kernel caches names, attributes and pages of what it
// saw; a change through one mount goes through that mount's kernel alone.
// So every change that succeeds through the tree (DatasetTreeFs::Changed
// and Named: its writes, attribute and xattr changes, and names created,
// linked, removed or renamed) is queued, with the mount it came through
// (the view sets DatasetTreeFs::change_origin_ around its calls), and the
// tree's notifier thread tells every other mount's kernel to forget it:
// the name (and its directory), or the file's attributes and pages. The
// kernel's invalidation may wait for the locks of a request in flight, so
// it never runs on a FUSE worker; the worker only queues. An open file of
// one mount sees another's write once the notifier has run (it does not
// wait for it), as with close-to-open coherence; nothing is queued while
// no view is open.
//
// Thread safety: as poolfs::Filesystem. The lookup counts are behind a
// mutex; Unmount waits for calls in flight (a ReadMostlyLock) and refuses
// later ones (Aborted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "poolfs/fs.h"
#include "util/mutex.h"
#include "util/read_mostly_lock.h"

namespace poolfs::core::posix {

class DatasetTreeFs;

class DatasetViewFs final : public Filesystem {
 public:
  // The view of the dataset in `slot` of `tree` (which must outlive it);
  // registers it with the tree. Use DatasetTreeFs::OpenDatasetView.
  DatasetViewFs(DatasetTreeFs* tree, uint64_t slot, const DatasetViewOptions& options);
  ~DatasetViewFs() override;

  uint64_t slot() const { return slot_; }
  const std::string& where() const { return opts_.where; }
  // Forwards a name the tree invalidates (`parent` in the tree's global
  // numbers) to the view's kernel.
  void InvalidateFromTree(uint64_t parent, std::string_view name) EXCLUDES(invalidate_mu_);
  // Forwards a change made through another mount to the view's kernel:
  // name `name` in `ino`, or file `ino` itself when `name` is empty (`ino`
  // in the tree's global numbers).
  void ForgetChange(uint64_t ino, std::string_view name) EXCLUDES(invalidate_mu_);

  Status Unmount() override;
  DatasetAdmin* datasets() override;
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
  Status ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                 const std::function<bool(const DirEntry&)>& emit) override;
  Result<std::string> GetXattr(const Creds& c, uint64_t ino, std::string_view name) override;
  Status SetXattr(const Creds& c, uint64_t ino, std::string_view name, std::string_view value,
                  uint32_t flags) override;
  Result<std::vector<std::string>> ListXattr(const Creds& c, uint64_t ino) override;
  Status RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) override;
  Result<FsStats> StatFs(uint64_t ino) override;
  FsStatus GetStatus() override;
  // The pool's tunables are the tree mount's: a view refuses (NotSupported).
  Status SetLive(const CoreTunables& t) override;
  void SetEntryInvalidator(EntryInvalidator fn) override EXCLUDES(invalidate_mu_);
  void SetInodeInvalidator(InodeInvalidator fn) override EXCLUDES(invalidate_mu_);

  // For tests: the lookup references the view's kernel holds.
  uint64_t held_lookups() EXCLUDES(counts_mu_);

 private:
  uint64_t ToTree(uint64_t ino) const;
  uint64_t FromTree(uint64_t ino) const;
  // The tree's answer, in the view's numbers, counting the lookup
  // reference it carries.
  Result<Attr> Counted(Result<Attr> a) EXCLUDES(counts_mu_);
  Status Writable() const;

  DatasetTreeFs* const tree_;
  const uint64_t slot_;
  const DatasetViewOptions opts_;
  const uint64_t root_;       // the view's root in the tree's global numbers
  const uint64_t tree_root_;  // what the tree calls kRootIno, in its global numbers

  util::ReadMostlyLock teardown_;
  bool unmounted_ GUARDED_BY(teardown_) = false;

  util::Mutex counts_mu_;
  // Lookup references the view's kernel holds, by the tree's number.
  std::unordered_map<uint64_t, uint64_t> counts_ GUARDED_BY(counts_mu_);

  util::Mutex invalidate_mu_;
  EntryInvalidator invalidate_ GUARDED_BY(invalidate_mu_);
  InodeInvalidator invalidate_inode_ GUARDED_BY(invalidate_mu_);
};

}  // namespace poolfs::core::posix
