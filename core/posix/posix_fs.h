// PosixFs: poolfs::Filesystem over the root dataset of an imported pool.
// The design (objects, locks, the unlinked set, space, fsync) is the theory
// comment of posix_fs.cc; the byte layout is section 12 of
// core/doc/on-disk-format.md.
//
// Thread safety: as poolfs::Filesystem says — any call from any thread;
// changes to one inode are serialized by its op_mu (inode_table.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dmu/objset.h"
#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "poolfs/fs.h"
#include "posix/diff.h"
#include "posix/inode_table.h"
#include "posix/znode_phys.h"
#include "send/receive.h"
#include "util/read_mostly_lock.h"
#include "zap/zap.h"
#include "zil/intent_log.h"

namespace poolfs::core::posix {

// Fixed objects of a poolfs dataset.
inline constexpr uint64_t kMasterObject = 2;    // kZap: "VERSION", "UNLINKED"
inline constexpr uint64_t kUnlinkedObject = 3;  // kZap: 16 hex digits of ino -> {ino, 0}
inline constexpr uint64_t kFsVersion = 1;
// Largest file: 2^50 bytes (1 PiB), well inside what 128 KiB records and
// six block-tree levels address.
inline constexpr uint64_t kMaxFileSize = uint64_t{1} << 50;
inline constexpr uint32_t kLinkMax = 65000;  // as ext4
inline constexpr uint32_t kRecordSize = 128 * 1024;
inline constexpr size_t kMaxXattrValue = 64 * 1024;
inline constexpr size_t kMaxXattrTotal = 1024 * 1024;  // per file, encoded

// Whether a read at `now` moves the atime of a file whose attributes are
// `z`, under `mode` (Linux's rules: relatime moves it when atime is not
// after mtime or ctime, or is at least 24 hours before now; strictatime
// whenever it differs from now; noatime never).
bool AtimeNeedsUpdate(AtimeMode mode, const ZnodePhys& z, Timespec now);
// Whether a change of a regular file's attributes from `before` to `after`
// leaves relatime's next read to a kernel that will not ask: atime was
// after mtime and ctime (the file was read since its last change), is not
// after ctime now, and neither mtime nor size moved (the kernel drops its
// cached pages itself when it sees those move). See
// Filesystem::SetPageDropper.
bool HidesStaleAtime(AtimeMode mode, const ZnodePhys& before, const ZnodePhys& after);

class PosixFs final : public Filesystem {
 public:
  // Opens the filesystem in `pool`'s root dataset (see Filesystem::Mount);
  // its Unmount exports the pool.
  static Result<std::unique_ptr<PosixFs>> Open(std::unique_ptr<pool::Pool> pool,
                                               const MountOptions& options);
  // Opens the filesystem in dataset `os` of `pool`, giving it a root
  // directory when it has none (a dataset just created). With `exports`,
  // Unmount exports the pool too (it is the pool's only filesystem);
  // otherwise the owner of the other datasets' filesystems does. A failed
  // open of an exporting filesystem exports the pool.
  static Result<std::unique_ptr<PosixFs>> Open(std::shared_ptr<pool::Pool> pool, dmu::ObjectSet* os,
                                               const MountOptions& options, bool exports);
  ~PosixFs() override;

  DatasetAdmin* datasets() override { return &dataset_admin_; }
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
  // copy_file_range within this filesystem (CopyFrom with *this).
  Result<uint64_t> CopyFileRange(const Creds& c, uint64_t ino_in, uint64_t off_in, uint64_t ino_out,
                                 uint64_t off_out, uint64_t len, uint32_t flags) override;
  // copy_file_range from file ino_in of `src` (a filesystem of another
  // dataset of the same pool, or this one) to file ino_out of this one
  // (copy_range.cc has the design; Filesystem::CopyFileRange the contract).
  Result<uint64_t> CopyFrom(const Creds& c, PosixFs& src, uint64_t ino_in, uint64_t off_in,
                            uint64_t ino_out, uint64_t off_out, uint64_t len, uint32_t flags);
  void SetPageDropper(PageDropper fn) override EXCLUDES(drop_mu_);
  Status Fsync(uint64_t ino, bool datasync) override;
  // Under the sync property `always`, waits until every change made so
  // far is durable (the dataset tree calls it after each change); Ok at
  // once otherwise. Under `disabled`, Fsync returns at once.
  Status SyncIfAlways();
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
  Status SetLive(const CoreTunables& t) override;

  // The pool's scrub (posix/scrub.cc).
  Status StartScrub() override;
  Status StopScrub() override;
  // One path of object `object` from the dataset's root ("/dir/file"):
  // its znode's parent, then the entry of that directory that names it,
  // and so on up to the root (a file with several links gets one of its
  // names). NotFound when none leads there (not a file, unlinked, a name
  // removed meanwhile); Aborted after Unmount.
  Result<std::string> PathOf(uint64_t object);
  // The pool's scrub as GetStatus shows it, each error named
  // (ScrubStatus::Error::where) with `path(dataset_id, object)`: a path in
  // that dataset, or an error when there is none (the object is named by
  // its number then). GetStatus names the errors of this dataset only.
  using PathFinder = std::function<Result<std::string>(uint64_t dataset_id, uint64_t object)>;
  ScrubStatus DescribeScrub(const PathFinder& path);

  // The pool's intent log (zil/intent_log.h), this filesystem being
  // dataset `dataset` in it: every change is recorded there, and Fsync
  // commits it instead of waiting for the txg. Without one (nullptr, the
  // default) Fsync waits for the txg. Set before calls arrive.
  void SetIntentLog(zil::IntentLog* log, uint64_t dataset);
  // Applies record `r` of the log's replay (replay.cc), as root, with the
  // times and owners the record gives: `ids` maps the objects the log
  // names to the ones the replay made (a create makes a new one). Sets
  // *txg to the txg of its last change. A create, link, removal or rename
  // is one change; the others set absolute values, so applying one again
  // after a crash is harmless.
  Status Replay(const zil::LogRecord& r, std::map<uint64_t, uint64_t>* ids, Txg* txg);

  // The root directory's attributes, taking one lookup reference on it, as
  // Lookup of a name does: how a parent dataset's mount reaches it.
  Result<Attr> LookupRoot();
  // The dataset's properties the calls follow (readonly, atime, recordsize
  // and compression of new files, quota): set at open and after every
  // change (DatasetTreeFs watches the pool). `name` is the dataset's full
  // name now. `quota_bound`: it or an ancestor has a quota (EDQUOT past
  // it); `reserved_elsewhere`: another dataset holds a reservation (ENOSPC
  // past what is left). Either way writes are held to the room the pool's
  // figures give (DatasetFigures::available).
  void SetProps(const pool::DatasetProps& props, const std::string& name, bool quota_bound,
                bool reserved_elsewhere) EXCLUDES(props_mu_);

  // Whether the kernel holds a lookup on any file here but the root.
  bool InUse() { return table_.kernel_inodes() > (table_.Lookups(kRootIno) > 0 ? 1 : 0); }
  // Whether it holds one on any file here, the root included (a working
  // directory there).
  bool Held() { return table_.kernel_inodes() > 0; }
  // The dataset's snapdir property: .poolfs listed in its root.
  bool snapdir_visible() const { return props_snapdir_visible_.load(std::memory_order_relaxed); }

  // For tests: inodes in memory, and the lookup count of one (0 if absent).
  uint64_t cached_inodes() { return table_.size(); }
  uint64_t lookups(uint64_t ino);

 private:
  // Holds the teardown lock shared for a call (see Enter). Taken in Enter
  // and released here, on the same thread: a hand-off the analysis cannot
  // follow.
  struct CallGuard {
    util::ReadMostlyLock* lock = nullptr;
    ~CallGuard() NO_THREAD_SAFETY_ANALYSIS {
      if (lock) lock->ReadUnlock();
    }
  };
  // The op_mu of several inodes, taken in ino order, released in reverse.
  class LockSet {
   public:
    // Which locks a LockSet holds is known only at run time, so the
    // analysis does not follow it; what op_mu guards (xattrs) is reached
    // only under a MutexLock of the one inode.
    explicit LockSet(std::vector<Inode*> inodes) NO_THREAD_SAFETY_ANALYSIS;
    ~LockSet() NO_THREAD_SAFETY_ANALYSIS;
    LockSet(const LockSet&) = delete;
    LockSet& operator=(const LockSet&) = delete;

   private:
    std::vector<Inode*> inodes_;
  };

  PosixFs(std::shared_ptr<pool::Pool> pool, dmu::ObjectSet* os, const MountOptions& options,
          bool exports);
  Status Init();
  Status CreateRoot();
  Status FreeUnlinkedSet() EXCLUDES(unlinked_mu_);
  // Frees up to 256 of `entries` from entries[*next] on, in tx.
  Status FreeUnlinkedBatch(dmu::Tx& tx, const std::vector<zap::Entry>& entries, size_t* next)
      REQUIRES(unlinked_mu_);

  // Starts a call: Aborted after Unmount, ReadOnly for a change on a
  // read-only mount.
  Status Enter(CallGuard* g, bool change) NO_THREAD_SAFETY_ANALYSIS;
  // The Inode of `ino`, loaded if need be: NotFound (Stale when `stale`)
  // for a free object, Corruption for one that is not a file.
  Result<InodeRef> Get(uint64_t ino, bool stale = true);
  // The file an intent log record of txg `txg` names, at its commit:
  // NotFound when it was removed since (its object freed, or its number
  // taken by a file created after that txg, perhaps still being created).
  Result<InodeRef> LogSubject(uint64_t object, uint64_t txg);
  // For the log's commit: runs fn(n) under the file's op_mu, n being how
  // many of the `len` bytes at `off` that a record of txg `txg` wrote the
  // file still holds (0: none: truncated since, or not a regular file), so
  // that the size and the bytes fn takes are of one moment (a truncate
  // between them would leave zeros nobody wrote). NotFound when the file
  // was removed since (LogSubject).
  Status WithLoggedBytes(uint64_t object, uint64_t off, uint64_t len, uint64_t txg,
                         const std::function<Status(uint64_t n)>& fn);
  Result<InodeRef> Load(uint64_t ino);
  // A directory's Inode: NotADirectory otherwise.
  Result<InodeRef> GetDir(uint64_t ino);
  // Read, and ReadShared when `shared` is given (the pieces of dst and of
  // cached blocks the read leaves there).
  Result<size_t> ReadFile(uint64_t ino, uint64_t off, std::span<char> dst, uint32_t flags,
                          dmu::ReadPieces* shared);
  Attr MakeAttr(const Inode& in) EXCLUDES(in.mu);
  Attr MakeAttr(const Inode& in, const ZnodePhys& z);
  // Writes `z` as `in`'s znode in tx, then caches it: through a
  // directory's zap's dnode, else through the dnode of `in`'s id (looked
  // up: pin it first when other changes come before, see Pin) or `d`.
  Status SaveZnode(dmu::Tx& tx, Inode& in, const ZnodePhys& z);
  Status SaveZnode(dmu::Tx& tx, Inode& in, dmu::Dnode& d, const ZnodePhys& z);
  // Caches `z` as in's znode; calls the PageDropper when HidesStaleAtime.
  void CacheZnode(Inode& in, const ZnodePhys& z) EXCLUDES(drop_mu_);
  // Dnodes held for the length of one change.
  using Pins = std::vector<dmu::ObjectSet::DnodeRef>;
  // Holds the dnodes of `objects` (0s skipped) in *pins. Called before a
  // change's Tx: a dnode looked up by id may have to be read, and a read
  // that fails after the change's first step would leave it half done
  // (dmu/tx.h); held, it stays in memory, and the change's lookups by id
  // find it without a read. The dmu's errors (NotFound for a free object).
  Status Pin(std::initializer_list<uint64_t> objects, Pins* pins);
  // After the changes of a Tx: every touched inode remembers its txg, and
  // the thread too (ThreadLastTxg: how Replay learns a change's txg).
  void Note(const dmu::Tx& tx, std::initializer_list<Inode*> inodes);
  static uint64_t& ThreadLastTxg();

  // Permissions (permissions.cc).
  bool InGroup(const Creds& c, uint32_t gid) const;
  // PermissionDenied unless `c` may access `z` for mask (R_OK|W_OK|X_OK).
  Status CheckAccess(const Creds& c, const ZnodePhys& z, int mask) const;
  // NotPermitted when the sticky bit of `dir` keeps `c` from removing or
  // renaming `file`.
  Status CheckSticky(const Creds& c, const ZnodePhys& dir, const ZnodePhys& file) const;
  // Changing entries of `dir`: write and search permission, not deleted.
  Status CheckDirWrite(const Creds& c, const ZnodePhys& dir) const;
  // The setuid and setgid bits of `z` that a write, truncate or fallocate
  // by `c` clears (Linux's setattr_should_drop_suidgid): on a regular file,
  // setuid, and setgid when the group may execute or `c` is outside the
  // file's group; nothing for root (CAP_FSETID).
  uint32_t KilledByWrite(const Creds& c, const ZnodePhys& z) const;
  // Those a chown by `c` clears (Linux's chown_common): on anything but a
  // directory, setuid whoever asks, and setgid when the group may execute
  // or `c` (not root) is outside the file's group before the change.
  uint32_t KilledByChown(const Creds& c, const ZnodePhys& z) const;
  static Status CheckName(std::string_view name);

  // NoSpace unless about `bytes` more can be stored (posix_fs.cc);
  // QuotaExceeded past the dataset's quota room. May wait for the unsynced
  // txgs to sync when only their estimated cost keeps the change out: it
  // must be called without a Tx (as Tx::Assign).
  Status ReserveSpace(uint64_t bytes) EXCLUDES(space_mu_);
  // Takes the free space (and quota room) of the last synced txg, when it
  // is newer than the figures held, and drops the removal charges of the
  // txgs synced since.
  void RefreshSpaceLocked() REQUIRES(space_mu_) EXCLUDES(removal_mu_);
  // RefreshSpaceLocked when the figures are due for it (at most every
  // 10 ms), by whichever caller gets space_mu_ first; the others go on with
  // the figures held. Before each reservation.
  void MaybeRefreshSpace() EXCLUDES(space_mu_, removal_mu_);
  // Before a removal (unlink, rmdir): when the pool is nearly full, makes
  // sure the sync can write what the removal rewrites (dnode blocks, a
  // directory leaf, each in its copies) before its frees come back. It may
  // use the slop, which is kept for this; it waits for syncs when the
  // removals and writes in flight leave too little (their frees return two
  // txgs after they sync). NoSpace only when even that does not make room.
  // Called without a Tx, as ReserveSpace.
  Status ReserveRemoval() EXCLUDES(space_mu_, removal_mu_);
  // The removal charges of the unsynced txgs.
  uint64_t RemovalsCharged() EXCLUDES(removal_mu_);
  // The quota room as of the last sync (RefreshQuota: under space_mu_),
  // and the charges of txgs up to the one synced then dropped.
  void RefreshQuota() REQUIRES(space_mu_) EXCLUDES(props_mu_, quota_mu_);
  // A change may be made: not a read-only mount or dataset.
  bool ReadOnly() const {
    return opts_.read_only || props_readonly_.load(std::memory_order_relaxed);
  }
  Status ReadOnlyError() const;
  // For the calls on a file's contents (file_ops.cc, copy_range.cc):
  // IsADirectory or InvalidArgument for what is not a regular file, Stale
  // for a file freed since it was looked up, and whether it was.
  static Status NotRegular(uint64_t ino, uint32_t mode);
  static Status Stale(uint64_t ino);
  static bool Freed(Inode& in) EXCLUDES(in.mu);
  // How reads move atime: the mount's -o strictatime or noatime when given,
  // else the dataset's atime property.
  AtimeMode Atime() const;

  // PathOf inside a call (the caller has entered).
  Result<std::string> FindPath(uint64_t object);

  // Names (names.cc).
  // Whether `dir`'s entry `name` names `ino` now (read without dir's
  // op_mu): how a lookup made without the lock confirms what it loaded.
  bool StillNames(Inode& dir, std::string_view name, uint64_t ino);
  // `dir`'s entry `name` (dir is directory `parent`): NotFound "'name' not
  // in directory parent" when there is none, or the zap's failure.
  static Result<zap::Value> Entry(const Inode& dir, uint64_t parent, std::string_view name);
  // `exact` (a replay): the owner, mode and times the new file gets, and
  // the parent's mtime and ctime, instead of the caller's and now.
  struct ExactAttrs {
    uint32_t uid = 0, gid = 0, mode = 0;
    Timespec time;
  };
  Result<Attr> MakeNode(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode,
                        uint64_t rdev, std::string_view target, const ExactAttrs* exact = nullptr);
  // Records `z`, the attributes of `object` after a change in tx, as a
  // setattr (with its size when `size`).
  void LogAttrs(const dmu::Tx& tx, uint64_t object, const ZnodePhys& z, bool size);
  // Records a change of `object` made in tx in the intent log, if any.
  void Log(const dmu::Tx& tx, uint64_t object, zil::RecordType type, zil::RecordBody body,
           uint32_t write_length = 0);
  Status RemoveName(const Creds& c, uint64_t parent, std::string_view name, bool dir);
  // What DropLink(in, z, dir) will read, read before its Tx: pins `in`'s
  // dnode and, when the last link goes, its xattr object and the unlinked
  // set's leaf for it. Requires what DropLink requires (unlinked_mu_ is
  // checked where the last link goes: callers take it only then).
  Status PrepareDropLink(Inode& in, const ZnodePhys& z, bool dir, Pins* pins);
  // Drops one link of `in` (whose z is `z`, updated) in tx: at zero links,
  // frees it now when nobody holds a lookup, else puts it in the unlinked
  // set. Requires in.op_mu, and unlinked_mu_ when z.nlink may reach zero.
  Status DropLink(dmu::Tx& tx, Inode& in, ZnodePhys& z, bool dir);
  // Frees the object `ino` and its xattr object in tx.
  Status FreeObject(dmu::Tx& tx, uint64_t ino, uint64_t xattr_object);
  static std::string UnlinkedKey(uint64_t ino);
  Status RenameLocked(const Creds& c, Inode& p1, std::string_view name, Inode& p2,
                      std::string_view new_name, uint32_t flags, Inode& src, Inode* dst,
                      bool* retry);
  // Whether `ancestor` is `dir` or one of its ancestors. rename_mu_ keeps
  // the ".." chain it walks from changing.
  Result<bool> IsAncestor(uint64_t ancestor, uint64_t dir) REQUIRES(rename_mu_);
  // Sets the file's size in tx. A file that grows first grows its block
  // (GrowBlocks); one cut to nothing starts again from the smallest block.
  Status Truncate(dmu::Tx& tx, Inode& in, ZnodePhys& z, uint64_t size);
  // Before a change that makes file `ino` reach byte `end`: the file's
  // block grows while it has one (dmu GrowBlockSize), up to the dataset's
  // recordsize. A file starts with one small block (StartBlockSize), so a
  // small file costs a small block; once it needs a second block its
  // blocks are of the recordsize of that moment. May read block 0 (and
  // fail, changing nothing).
  Status GrowBlocks(dmu::Tx& tx, dmu::Dnode& d, uint64_t end);
  // Write with in.op_mu held by the caller (and in not freed).
  Result<size_t> WriteLocked(const Creds& c, Inode& in, uint64_t off, std::string_view data);
  // CopyFrom's copy through the write path: n bytes of file ino_in of
  // `src` at off_in + *done to `out` at off_out + *done, in pieces of 1
  // MiB, *done advancing with each.
  Status CopyBytes(const Creds& c, PosixFs& src, uint64_t ino_in, uint64_t off_in, Inode& out,
                   uint64_t off_out, uint64_t n, uint64_t* done);
  // A step of CopyFrom: blocks [first, first + n) of `din` (file `in` of
  // `src`) shared with `dout` (file `out`) in one Tx, those the source
  // changed since the last sync copied (their space reserved first);
  // adds the range's bytes they hold to *done.
  Status CloneBlocks(const Creds& c, PosixFs& src, Inode& in, dmu::Dnode& din, Inode& out,
                     dmu::Dnode& dout, uint64_t first, uint64_t n, uint64_t off_in,
                     uint64_t off_out, uint64_t len, uint64_t* done);
  // One try of CloneBlocks' Tx. With `reserve`, a try that finds blocks to
  // copy changes nothing, sets *reserve to their bytes and returns false
  // (the caller reserves the space and tries again without it).
  Result<bool> CloneBlocksOnce(const Creds& c, PosixFs& src, Inode& in, dmu::Dnode& din, Inode& out,
                               dmu::Dnode& dout, uint64_t first, uint64_t n, uint64_t off_in,
                               uint64_t off_out, uint64_t len, uint64_t* reserve, uint64_t* done);
  Status GrowBlocks(dmu::Tx& tx, uint64_t ino, uint64_t end);
  uint32_t RecordSize() const { return props_recordsize_.load(std::memory_order_relaxed); }
  // After a read of `in` (file data, a directory listing, a symlink):
  // moves its atime to now when the mount's AtimeMode asks for it, in a Tx
  // of its own. Nothing on a read-only mount. Failures are ignored (a read
  // does not fail because its atime could not be stored). Takes in.op_mu
  // only when atime moves, so it must be called without it.
  void TouchAtime(Inode& in);
  // Bounds the inode table and leaves_ by the pool's shares of the cache's
  // bound (at mount, and when arc.max_bytes changes).
  void FollowCacheBound();
  // How every zap here is opened and created: with leaves_.
  zap::ZapOptions ZapOpts() {
    zap::ZapOptions o;
    o.leaf_cache = &leaves_;
    return o;
  }

  // Xattrs (xattr.cc).
  Status LoadXattrs(Inode& in, const ZnodePhys& z) REQUIRES(in.op_mu);
  Status StoreXattrs(dmu::Tx& tx, Inode& in, ZnodePhys& z) REQUIRES(in.op_mu);
  Status CheckXattrAccess(const Creds& c, const ZnodePhys& z, std::string_view name,
                          bool write) const;

  std::shared_ptr<pool::Pool> pool_;
  // After pool_, which it uses.
  pool::PoolDatasetAdmin dataset_admin_{
      pool_.get(),
      [](pool::Pool& p, std::string_view from, std::string_view to) {
        return DiffDatasets(p, from, to);
      },
      send::Replicator()};
  dmu::ObjectSet* const os_;
  const bool exports_;  // Unmount exports pool_
  MountOptions opts_;
  // Decoded leaves of every zap below (they must outlive the Zaps, held
  // by table_'s inodes and unlinked_); bounded by Pool::leaf_cache_limit.
  zap::LeafCache leaves_{64};
  InodeTable table_;
  util::Mutex rename_mu_;  // cross-directory directory renames
  // Orders the changes to the unlinked set: between PrepareDropLink
  // bringing in the leaf an entry goes to and DropLink adding it, no other
  // change may split that leaf (the Add would then read, and could fail,
  // halfway through its Tx).
  util::Mutex unlinked_mu_;
  std::unique_ptr<zap::Zap> unlinked_ PT_GUARDED_BY(unlinked_mu_);
  std::atomic<uint64_t> newest_txg_{0};  // newest change of any inode (Fsync fallback)
  zil::IntentLog* log_ = nullptr;        // SetIntentLog
  uint64_t log_dataset_ = 0;
  // The live tunables the calls read (opts_.tunables keeps the mount's).
  std::atomic<bool> cache_whole_reads_{false};  // CoreTunables::cache_whole_reads
  std::atomic<uint64_t> dirty_max_bytes_{0};    // TxgOptions::dirty_max_bytes (ReserveSpace)

  // Space: free bytes as of the last sync seen (ReserveSpace).
  util::Mutex space_mu_;
  std::atomic<uint64_t> space_refresh_at_{0};  // steady-clock ns
  std::atomic<uint64_t> space_synced_txg_{~uint64_t{0}};
  std::atomic<uint64_t> space_free_{0};
  std::atomic<uint64_t> space_capacity_{0};
  // Freed by synced txgs, free once their deferral ends (two more syncs).
  std::atomic<uint64_t> space_deferred_{0};

  // The dataset's properties (SetProps).
  std::atomic<bool> props_readonly_{false};
  std::atomic<uint8_t> props_atime_{uint8_t(pool::AtimeMode::kRelatime)};
  std::atomic<uint32_t> props_recordsize_{kRecordSize};
  std::atomic<uint8_t> props_compression_{uint8_t(util::Compression::kLz4)};
  std::atomic<uint8_t> props_copies_{1};
  std::atomic<uint8_t> props_sync_{uint8_t(pool::SyncMode::kStandard)};
  std::atomic<bool> props_snapdir_visible_{false};
  std::atomic<bool> quota_bound_{false};
  std::atomic<bool> figures_bound_{false};  // quota_bound_ or a reservation elsewhere
  std::atomic<uint64_t> quota_room_{0};     // available at the last sync seen
  std::atomic<uint64_t> quota_referenced_{0};
  // What changes have asked for since, by the txg they may land in (the
  // txg after the one open when they asked: a change counts until that txg
  // has synced, never less long). The room left is quota_room_ less their
  // sum.
  util::Mutex quota_mu_;
  std::map<uint64_t, uint64_t> quota_charges_ GUARDED_BY(quota_mu_);
  uint64_t QuotaCharged() EXCLUDES(quota_mu_);
  // What admitted removals may rewrite, by the txg they may land in (as
  // quota_charges_), while the pool is nearly full (ReserveRemoval).
  util::Mutex drop_mu_;
  PageDropper drop_pages_ GUARDED_BY(drop_mu_);
  util::Mutex removal_mu_;
  std::map<uint64_t, uint64_t> removal_charges_ GUARDED_BY(removal_mu_);
  util::Mutex props_mu_;
  std::string dataset_name_ GUARDED_BY(props_mu_);

  // Teardown: each call holds it shared (its thread's stripe); Unmount takes
  // it exclusively once, to wait for the calls in flight.
  util::ReadMostlyLock teardown_;
  std::atomic<bool> unmounted_{false};
  util::Mutex unmount_mu_;
  Status unmount_status_ GUARDED_BY(unmount_mu_);
};

}  // namespace poolfs::core::posix
