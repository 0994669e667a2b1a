// PosixFs: mount, unmount, inodes, space, statfs, fsync, forget.
//
// Theory
// ------
// Objects. A filesystem is the root dataset of a pool. Every file is one
// object whose id is its inode number and whose creation txg (the dnode's
// generation) is its generation. Its POSIX attributes are a ZnodePhys in
// the dnode's bonus buffer (znode_phys.h). Regular files keep their bytes
// as the object's data in 128 KiB records; directories are zap objects of
// type kDirectory whose entries map a name to Value{ino, S_IFMT bits}, so
// readdir needs no dnode read; symlinks keep their target in the bonus when
// it fits (256 bytes), else as the object's data. Fixed objects: 1 the root
// directory, 2 the master zap ("VERSION" -> {1, 0}, "UNLINKED" -> {3, 0}),
// 3 the unlinked set. The first mount of a dataset with no objects creates
// the three, in that order, so they get ids 1, 2, 3; a dataset with objects
// but no root is refused (Corruption). Extended attributes live in a plain
// object per file (znode.xattr), one encoded table (xattr.cc).
//
// Changes. Each change takes the op_mu of every inode it changes in ino
// order (a cross-directory rename of a directory first takes rename_mu_,
// so the "not below itself" walk up the ".." chain sees a stable tree),
// then opens a Tx and assigns it with an estimate of the bytes it dirties,
// makes every change, commits, and records the txg on each inode (Fsync
// waits for it). Locks are taken before Assign: a Tx waiting for a lock
// would hold its txg open and could keep the sync that the lock holder's
// throttled Assign waits for from ever quiescing.
//
// Failures. A Tx cannot be rolled back, so a change with several steps
// (rename: add the new name, remove the old one, drop the replaced file,
// save three znodes) must either make them all or none. Everything that can
// fail is done before the first step: the rules are checked, and whatever
// the steps will read is read — the inodes and their directories' zaps are
// loaded, the names looked up (which brings in the zap leaves the steps
// edit), the dnodes of every object the steps save or free held (Pin).
// Each dmu and zap step either makes its whole change or none. A failure
// before the first change therefore returns with nothing changed; each
// change ends with Tx::Finish, which commits on success. A step that still
// fails halfway (a leaf dropped from a small cache and now unreadable)
// leaves a change that must not reach the disk: Finish abandons the Tx, the
// pool suspends (TxgManager), its txg never syncs, every later change fails
// with IOError, and the disk keeps the last synced txg. Where a step can
// be undone in the same Tx, it is (create frees the object it made when
// the name cannot be added) and the Tx commits.
//
// The create path (Lookup of an absent name, then Create) touches only the
// parent's inode (its op_mu, its zap), the object allocator and the new
// dnode, all in memory: no disk I/O (until the zap outgrows what the dmu
// holds dirty or cached) and no filesystem-wide lock; the inode table is
// sharded by ino. The teardown lock that lets Unmount wait for calls in
// flight is util::ReadMostlyLock, striped by thread.
//
// Links and the unlinked set. Directories count links as POSIX does (2 +
// subdirectories). When a file's last link goes: if the kernel holds no
// lookup reference it is freed in the same Tx; otherwise it is recorded in
// the unlinked set in that Tx and freed by the Forget that drops the last
// reference (taking op_mu, so it sees the final link count). Mount frees
// whatever the set still lists (a crash, or an unmount with references
// left), so nothing leaks. A removed directory keeps working for readers
// but refuses new entries (NotFound).
//
// Space. The dmu accepts changes in memory and only the sync allocates, so
// a full pool must be caught before a change: ReserveSpace compares the
// change with the free space of the last synced txg minus a slop (1/32 of
// the pool, at least 1 MiB, as ZFS keeps for its own metadata) and, when
// that margin is thin, minus twice the dirty bytes not yet synced (their
// worst case: each block again in metadata); it refuses with NoSpace rather
// than let a sync fail (which would suspend the pool). A change kept out
// only by that estimate waits for the unsynced txgs to sync and asks again
// (ZFS's retry of a reservation in flight), so a pool fills up to the slop
// whatever the txgs hold. So does a change that fits only once the frees
// of synced txgs come back from their deferral (a file removed from a full
// pool): it makes the syncs that release them rather than fail. Removals and truncations are always
// allowed (they use a little space to free a lot).
//
// Block size. A file starts with one block of the pool's sector size and
// grows it while it has one (GrowBlocks, before each change that makes it
// longer), up to the dataset's recordsize: a small file costs a small block
// on disk, in memory and in its txg's dirty bytes (dmu/dnode.h: block
// size).
//
// Read-only mounts import the pool read-only (PoolOptions::read_only: the
// vdev files opened read-only and locked, every Tx refused, nothing
// synced), and every change is refused here too (ReadOnly, in Enter). A
// dataset without a root directory cannot be mounted read-only (ReadOnly);
// files in the unlinked set stay there for the next read-write mount.
// -o ro,rewind opens an older txg when the newest does not verify
// (MountOptions::rewind).
//
// Timestamps are 64-bit seconds and nanoseconds. atime is set at creation,
// by SetAttr, and by reads (Read, ReadDir, Readlink) as the mount's
// AtimeMode says: relatime by default, so a file read again and again
// after one change costs one atime write (TouchAtime, file_ops.cc: a check
// of the cached znode without a lock, then op_mu and a Tx only when atime
// moves). The kernel does not keep atime for a FUSE mount; it drops its
// cached atime after each READ and READDIR it sends, so stat sees ours.
#include "posix/posix_fs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "dmu/tx.h"
#include "posix/dataset_tree.h"

namespace poolfs {

Result<std::unique_ptr<Filesystem>> Filesystem::Mount(const std::vector<std::string>& vdev_paths,
                                                      const MountOptions& options) {
  // The pool's layers take their option structs as they are (poolfs/options.h).
  const CoreTunables& tunables = options.tunables;
  core::pool::PoolOptions po;
  po.txg = tunables.txg;
  po.space = tunables.space;
  po.vdev = tunables.vdev;
  po.arc = tunables.arc;
  po.read_ahead = tunables.read_ahead;
  po.executor = options.executor;
  po.repair_reads = !options.read_only;
  po.read_only = options.read_only;
  po.rewind = options.rewind;
  if (options.on_txg_synced) {
    po.on_synced = [cb = options.on_txg_synced](Txg t, uint64_t ns, uint64_t bytes) {
      cb(t.value(), ns, bytes);
    };
  }
  POOLFS_RETURN_IF_ERROR(core::txg::ValidateTxgOptions(po.txg));
  POOLFS_ASSIGN_OR_RETURN(auto pool, core::pool::Pool::Import(vdev_paths, po));
  POOLFS_ASSIGN_OR_RETURN(auto fs, core::posix::DatasetTreeFs::Open(std::move(pool), options));
  return std::unique_ptr<Filesystem>(std::move(fs));
}

Status Filesystem::Read(uint64_t ino, uint64_t off, size_t len, std::string* out, uint32_t flags) {
  out->resize(len);
  Result<size_t> n = Read(ino, off, std::span<char>(*out), flags);
  out->resize(n.ok() ? *n : 0);
  return n.status();
}

}  // namespace poolfs

namespace poolfs::core::posix {

PosixFs::PosixFs(std::shared_ptr<pool::Pool> pool, dmu::ObjectSet* os, const MountOptions& options,
                 bool exports)
    : pool_(std::move(pool)), os_(os), exports_(exports), opts_(options) {}

PosixFs::~PosixFs() { (void)Unmount(); }

Result<std::unique_ptr<PosixFs>> PosixFs::Open(std::unique_ptr<pool::Pool> pool,
                                               const MountOptions& options) {
  std::shared_ptr<pool::Pool> shared(std::move(pool));
  dmu::ObjectSet* root = shared->root_dataset();
  if (root == nullptr) {
    (void)shared->Export();
    return Status::Corruption("pool '" + shared->name() + "' has no root dataset");
  }
  return Open(std::move(shared), root, options, /*exports=*/true);
}

Result<std::unique_ptr<PosixFs>> PosixFs::Open(std::shared_ptr<pool::Pool> pool, dmu::ObjectSet* os,
                                               const MountOptions& options, bool exports) {
  std::unique_ptr<PosixFs> fs(new PosixFs(std::move(pool), os, options, exports));
  Status st = fs->Init();
  if (!st.ok()) {
    fs->table_.Clear();
    fs->unlinked_.reset();
    if (fs->exports_) (void)fs->pool_->Export();
    fs->unmounted_ = true;
    return st;
  }
  return fs;
}

Status PosixFs::Init() {
  os_->SetBackfill(opts_.tunables.objects.backfill);
  os_->SetAllocChunk(opts_.tunables.objects.chunk);
  FollowCacheBound();
  cache_whole_reads_.store(opts_.tunables.cache_whole_reads, std::memory_order_relaxed);
  dirty_max_bytes_.store(opts_.tunables.txg.dirty_max_bytes, std::memory_order_relaxed);
  auto root = os_->Stat(ObjectId(kRootIno));
  if (!root.ok() && root.status().IsNotFound()) {
    if (os_->next_object() != 1)
      return Status::Corruption("dataset '" + os_->name() +
                                "' holds objects but no root directory (object 1)");
    if (opts_.read_only)
      return Status(StatusCode::kReadOnly, "dataset '" + os_->name() +
                                               "' has no root directory yet and the mount "
                                               "is read-only");
    POOLFS_RETURN_IF_ERROR(CreateRoot());
  } else if (!root.ok()) {
    return root.status();
  }
  POOLFS_ASSIGN_OR_RETURN(auto master, zap::Zap::Open(os_, ObjectId(kMasterObject), ZapOpts()));
  auto version = master->Lookup("VERSION");
  if (!version.ok()) return version.status().WithContext("master object 2");
  if (version->object != kFsVersion)
    return Status::NotSupported("filesystem version " + std::to_string(version->object) +
                                " (this build reads version " + std::to_string(kFsVersion) + ")");
  auto unlinked = master->Lookup("UNLINKED");
  if (!unlinked.ok()) return unlinked.status().WithContext("master object 2");
  POOLFS_ASSIGN_OR_RETURN(unlinked_, zap::Zap::Open(os_, ObjectId(unlinked->object), ZapOpts()));
  POOLFS_ASSIGN_OR_RETURN(InodeRef r, Get(kRootIno));
  if (!r->is_dir()) return Status::Corruption("object 1 (the root) is not a directory");
  auto stats = pool_->Stats();
  space_free_ = stats.space.free;
  space_capacity_ = stats.space.capacity;
  space_deferred_ = stats.space.deferred;
  space_synced_txg_ = stats.last_synced.value();
  return FreeUnlinkedSet();
}

Status PosixFs::CreateRoot() {
  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(64 * 1024));
  ZnodePhys z;
  z.mode = S_IFDIR | 0755;
  z.uid = getuid();
  z.gid = getgid();
  z.nlink = 2;
  z.parent = kRootIno;
  z.atime = z.mtime = z.ctime = z.btime = Now();
  auto make = [&]() -> Status {
    POOLFS_ASSIGN_OR_RETURN(auto root,
                            zap::Zap::Create(tx, os_, dmu::ObjectType::kDirectory, {}, ZapOpts()));
    POOLFS_ASSIGN_OR_RETURN(auto master,
                            zap::Zap::Create(tx, os_, dmu::ObjectType::kZap, {}, ZapOpts()));
    POOLFS_ASSIGN_OR_RETURN(auto unlinked,
                            zap::Zap::Create(tx, os_, dmu::ObjectType::kZap, {}, ZapOpts()));
    if (root->id().value() != kRootIno || master->id().value() != kMasterObject ||
        unlinked->id().value() != kUnlinkedObject)
      return Status::Corruption("dataset '" + os_->name() + "': new root objects got ids " +
                                std::to_string(root->id().value()) + ", " +
                                std::to_string(master->id().value()) + ", " +
                                std::to_string(unlinked->id().value()) + " (expected 1, 2, 3)");
    POOLFS_RETURN_IF_ERROR(os_->SetBonus(tx, root->id(), kZnodeBonus, EncodeZnode(z)));
    POOLFS_RETURN_IF_ERROR(master->Add(tx, "VERSION", zap::Value{kFsVersion, 0}));
    return master->Add(tx, "UNLINKED", zap::Value{kUnlinkedObject, 0});
  };
  return tx.Finish(make());
}

std::string PosixFs::UnlinkedKey(uint64_t ino) {
  static const char kHex[] = "0123456789abcdef";
  std::string k(16, '0');
  for (int i = 15; i >= 0; i--, ino >>= 4) k[i] = kHex[ino & 15];
  return k;
}

Status PosixFs::FreeUnlinkedSet() {
  util::MutexLock ul(&unlinked_mu_);
  POOLFS_ASSIGN_OR_RETURN(auto entries, unlinked_->Iterate(0, size_t(1) << 40));
  if (entries.empty()) return Status::Ok();
  // A read-only mount leaves them for the next read-write one: they have
  // no name, so nothing it shows depends on them.
  if (opts_.read_only) return Status::Ok();
  // Each entry's free and removal is a whole change (an entry whose object
  // is already free is just removed, so a crash between the two is fine),
  // but a batch that fails midway is abandoned like any other change: the
  // mount fails, and nothing of the batch reaches the disk.
  for (size_t i = 0; i < entries.size();) {
    dmu::Tx tx(pool_->assigner());
    POOLFS_RETURN_IF_ERROR(tx.Assign(64 * 1024));
    POOLFS_RETURN_IF_ERROR(tx.Finish(FreeUnlinkedBatch(tx, entries, &i)));
  }
  return Status::Ok();
}

Status PosixFs::FreeUnlinkedBatch(dmu::Tx& tx, const std::vector<zap::Entry>& entries,
                                  size_t* next) {
  for (size_t n = 0; n < 256 && *next < entries.size(); n++, ++*next) {
    const zap::Entry& e = entries[*next];
    const uint64_t ino = e.value.object;
    uint64_t xattr = 0;
    auto info = os_->Stat(ObjectId(ino));
    if (info.ok()) {
      auto z = DecodeZnode(info->bonus, ino);
      if (z.ok()) xattr = z->xattr;
      POOLFS_RETURN_IF_ERROR(FreeObject(tx, ino, xattr));
    } else if (!info.status().IsNotFound()) {
      return info.status();
    }
    POOLFS_RETURN_IF_ERROR(unlinked_->Remove(tx, e.name));
  }
  return Status::Ok();
}

Status PosixFs::FreeObject(dmu::Tx& tx, uint64_t ino, uint64_t xattr_object) {
  if (xattr_object != 0) {
    Status st = os_->Free(tx, ObjectId(xattr_object));
    if (!st.ok() && !st.IsNotFound()) return st;
  }
  return os_->Free(tx, ObjectId(ino));
}

Status PosixFs::Unmount() {
  util::MutexLock l(&unmount_mu_);
  if (unmounted_.exchange(true)) return unmount_status_;
  // Wait for calls in flight; later ones see unmounted_ and leave.
  teardown_.WriteLock();
  teardown_.WriteUnlock();
  table_.Clear();
  unlinked_.reset();
  if (log_ != nullptr) log_->RemoveReader(log_dataset_);
  unmount_status_ = exports_ ? pool_->Export() : Status::Ok();
  return unmount_status_;
}

Status PosixFs::Enter(CallGuard* g, bool change) {
  teardown_.ReadLock();
  if (unmounted_.load(std::memory_order_acquire)) {
    teardown_.ReadUnlock();
    return Status(StatusCode::kAborted, "filesystem is unmounted");
  }
  g->lock = &teardown_;
  if (change && ReadOnly()) return ReadOnlyError();
  return Status::Ok();
}

Status PosixFs::ReadOnlyError() const {
  if (opts_.read_only) return Status(StatusCode::kReadOnly, "filesystem is mounted read-only");
  return Status(StatusCode::kReadOnly, "dataset " + os_->name() + " is read-only (readonly=on)");
}

AtimeMode PosixFs::Atime() const {
  if (opts_.atime != AtimeMode::kRelatime) return opts_.atime;
  switch (pool::AtimeMode(props_atime_.load(std::memory_order_relaxed))) {
    case pool::AtimeMode::kOn: return AtimeMode::kStrict;
    case pool::AtimeMode::kOff: return AtimeMode::kNone;
    case pool::AtimeMode::kRelatime: return AtimeMode::kRelatime;
  }
  return AtimeMode::kRelatime;
}

void PosixFs::SetProps(const pool::DatasetProps& props, const std::string& name, bool quota_bound,
                       bool reserved_elsewhere) {
  props_readonly_.store(props.readonly, std::memory_order_relaxed);
  props_atime_.store(uint8_t(props.atime), std::memory_order_relaxed);
  props_recordsize_.store(props.recordsize, std::memory_order_relaxed);
  props_compression_.store(uint8_t(props.compression), std::memory_order_relaxed);
  props_copies_.store(uint8_t(props.copies), std::memory_order_relaxed);
  props_sync_.store(uint8_t(props.sync), std::memory_order_relaxed);
  props_snapdir_visible_.store(props.snapdir_visible, std::memory_order_relaxed);
  {
    util::MutexLock l(&props_mu_);
    dataset_name_ = name;
  }
  quota_bound_.store(quota_bound, std::memory_order_relaxed);
  const bool bound = quota_bound || reserved_elsewhere;
  const bool was = figures_bound_.exchange(bound);
  if (bound && !was) {
    // Take the figures now, not at the next sync.
    util::MutexLock l(&space_mu_);
    RefreshQuota();
  }
}

Result<InodeRef> PosixFs::Load(uint64_t ino) {
  auto info = os_->Stat(ObjectId(ino));
  if (!info.ok()) return info.status();
  if (info->bonus_type != kZnodeBonus)
    return Status::Corruption("object " + std::to_string(ino) + " is not a file (bonus type " +
                              std::to_string(info->bonus_type) + ")");
  POOLFS_ASSIGN_OR_RETURN(ZnodePhys z, DecodeZnode(info->bonus, ino));
  const bool is_dir = (z.mode & S_IFMT) == S_IFDIR;
  if (is_dir != (info->type == dmu::ObjectType::kDirectory))
    return Status::Corruption("object " + std::to_string(ino) + ": znode type " +
                              std::to_string(z.mode & S_IFMT) + " on a " +
                              std::string(dmu::ObjectTypeName(info->type)) + " object");
  auto in = std::make_shared<Inode>(ino);
  in->generation = info->generation;
  // An inode evicted and loaded again may have changes not yet synced: its
  // Fsync waits for the newest change of any inode (conservative).
  in->last_txg = newest_txg_.load();
  if (is_dir) {
    POOLFS_ASSIGN_OR_RETURN(in->dir, zap::Zap::Open(os_, ObjectId(ino), ZapOpts()));
  }
  {
    util::MutexLock l(&in->mu);
    in->z = std::move(z);
  }
  return in;
}

Result<InodeRef> PosixFs::Get(uint64_t ino, bool stale) {
  // Loaded under the table's lock for this number, so that no other Inode
  // of it can appear meanwhile: one that changed the file after the load
  // read it would leave the load stale (an old link count, an old handle
  // of a directory's entries), and a directory's changes edit its zap
  // blocks in place, which a second Zap opening it would read torn.
  auto r = table_.FindOrLoad(ino, [&] { return Load(ino); });
  if (r.ok()) {
    util::MutexLock l(&(*r)->mu);
    if (!(*r)->freed) return *r;
  } else if (!r.status().IsNotFound()) {
    return r.status();
  }
  std::string what = "inode " + std::to_string(ino) + " does not exist";
  return stale ? Status(StatusCode::kStale, what) : Status::NotFound(what);
}

Result<InodeRef> PosixFs::GetDir(uint64_t ino) {
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  if (!in->is_dir())
    return Status(StatusCode::kNotADirectory,
                  "inode " + std::to_string(ino) + " is not a directory");
  return in;
}

Attr PosixFs::MakeAttr(const Inode& in) { return MakeAttr(in, in.Snapshot()); }

Attr PosixFs::MakeAttr(const Inode& in, const ZnodePhys& z) {
  Attr a;
  a.ino = in.ino;
  a.generation = in.generation;
  a.mode = z.mode;
  a.nlink = z.nlink;
  a.uid = z.uid;
  a.gid = z.gid;
  a.rdev = z.rdev;
  a.atime = z.atime;
  a.mtime = z.mtime;
  a.ctime = z.ctime;
  a.btime = z.btime;
  a.blksize = 4096;
  switch (z.mode & S_IFMT) {
    case S_IFDIR:
      a.size = in.dir->Count() + 2;
      a.blocks = (a.size * 64 + 511) / 512;
      break;
    case S_IFREG: {
      a.size = z.size;
      a.blksize = kRecordSize;
      uint64_t used = 0;
      if (z.size != 0) {
        auto info = os_->Stat(ObjectId(in.ino));
        if (info.ok()) used = info->used;
      }
      // Allocated bytes as of the last sync, and the bytes written since
      // (not allocated yet): an estimate until the next sync, never the
      // size of what was never written. Against the txg manager's last
      // synced txg, not space_synced_txg_: that one may lag a sync (until
      // the next reservation), and the bytes would then count twice.
      uint64_t pending = 0;
      const uint64_t since = in.unsynced_since.load(std::memory_order_relaxed);
      if (since > pool_->txgs().last_synced().value())
        pending = in.unsynced_bytes.load(std::memory_order_relaxed);
      a.blocks = (used + pending + 511) / 512;
      break;
    }
    default: a.size = z.size; a.blocks = 0;
  }
  return a;
}

Status PosixFs::SaveZnode(dmu::Tx& tx, Inode& in, const ZnodePhys& z) {
  // A directory's zap holds its dnode: no lookup by id (every create
  // saves its directory's znode).
  const std::string bonus = EncodeZnode(z);
  POOLFS_RETURN_IF_ERROR(in.dir ? os_->SetBonus(tx, in.dir->dnode(), kZnodeBonus, bonus)
                                : os_->SetBonus(tx, ObjectId(in.ino), kZnodeBonus, bonus));
  CacheZnode(in, z);
  return Status::Ok();
}

Status PosixFs::SaveZnode(dmu::Tx& tx, Inode& in, dmu::Dnode& d, const ZnodePhys& z) {
  POOLFS_RETURN_IF_ERROR(os_->SetBonus(tx, d, kZnodeBonus, EncodeZnode(z)));
  CacheZnode(in, z);
  return Status::Ok();
}

void PosixFs::CacheZnode(Inode& in, const ZnodePhys& z) {
  ZnodePhys before;
  {
    util::MutexLock l(&in.mu);
    before = in.z;
    in.z = z;
  }
  if (!HidesStaleAtime(Atime(), before, z)) return;
  util::MutexLock l(&drop_mu_);
  if (drop_pages_) drop_pages_(in.ino);
}

void PosixFs::SetPageDropper(PageDropper fn) {
  util::MutexLock l(&drop_mu_);
  drop_pages_ = std::move(fn);
}

Status PosixFs::Pin(std::initializer_list<uint64_t> objects, Pins* pins) {
  for (uint64_t object : objects) {
    if (object == 0) continue;
    POOLFS_ASSIGN_OR_RETURN(dmu::ObjectSet::DnodeRef d, os_->Hold(ObjectId(object)));
    pins->push_back(std::move(d));
  }
  return Status::Ok();
}

uint64_t& PosixFs::ThreadLastTxg() {
  thread_local uint64_t txg = 0;
  return txg;
}

void PosixFs::Note(const dmu::Tx& tx, std::initializer_list<Inode*> inodes) {
  const uint64_t t = tx.txg().value();
  ThreadLastTxg() = t;
  for (Inode* in : inodes)
    if (in) in->NoteTxg(t);
  uint64_t cur = newest_txg_.load(std::memory_order_relaxed);
  while (cur < t && !newest_txg_.compare_exchange_weak(cur, t)) {
  }
}

PosixFs::LockSet::LockSet(std::vector<Inode*> inodes) : inodes_(std::move(inodes)) {
  std::erase(inodes_, nullptr);
  std::sort(inodes_.begin(), inodes_.end(), [](Inode* a, Inode* b) { return a->ino < b->ino; });
  inodes_.erase(std::unique(inodes_.begin(), inodes_.end()), inodes_.end());
  for (Inode* in : inodes_) in->op_mu.Lock();
}

PosixFs::LockSet::~LockSet() {
  for (auto it = inodes_.rbegin(); it != inodes_.rend(); ++it) (*it)->op_mu.Unlock();
}

Result<Attr> PosixFs::GetAttr(uint64_t ino) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(ino));
  return MakeAttr(*in);
}

uint64_t PosixFs::lookups(uint64_t ino) { return table_.Lookups(ino); }

void PosixFs::Forget(uint64_t ino, uint64_t nlookup) {
  CallGuard g;
  if (!Enter(&g, false).ok()) return;
  if (table_.DropLookups(ino, nlookup) != 0) return;
  // Not in memory: the table dropped it while its link count was not 0,
  // and only an Inode in memory can lose its last link (one unlinked but
  // known to the kernel stays), so there is nothing to free.
  InodeRef in = table_.Find(ino);
  if (!in) return;
  {
    util::MutexLock l(&in->mu);
    if (in->freed) return;
  }
  if (opts_.read_only) {
    table_.TryEvict(in);
    return;
  }
  // The last reference: an unlinked file goes now. op_mu makes the link
  // count final (an Unlink in progress has committed or not started).
  util::MutexLock op(&in->op_mu);
  ZnodePhys z;
  {
    util::MutexLock l(&in->mu);
    if (table_.Lookups(ino) != 0 || in->freed) return;  // looked up again meanwhile
    z = in->z;
  }
  if (z.nlink != 0) {
    table_.TryEvict(in);
    return;
  }
  util::MutexLock ul(&unlinked_mu_);
  // Whatever fails here leaves the file in the unlinked set, which the next
  // mount frees; the reads come first (Pin; the lookup brings in the
  // set's leaf), so that a failure is most likely no change at all.
  Pins pins;
  if (!Pin({ino, z.xattr}, &pins).ok()) return;
  if (auto v = unlinked_->Lookup(UnlinkedKey(ino)); !v.ok() && !v.status().IsNotFound()) return;
  dmu::Tx tx(pool_->assigner());
  if (!tx.Assign(4096).ok()) return;  // the pool is suspended: the next mount frees it
  if (Status st = FreeObject(tx, ino, z.xattr); !st.ok()) {
    (void)tx.Abandon(st);
    return;
  }
  // A freed object whose entry stays in the set is a state the mount
  // handles (it drops the entry): a removal that failed with no change is
  // let go; one that failed halfway through the set's zap is not.
  const uint64_t before = tx.changes();
  if (Status st = unlinked_->Remove(tx, UnlinkedKey(ino)); !st.ok() && tx.changes() != before) {
    (void)tx.Abandon(st);
    return;
  }
  tx.Commit();
  {
    util::MutexLock l(&in->mu);
    in->freed = true;
  }
  Note(tx, {in.get()});
  table_.Erase(ino);
}

Result<Attr> PosixFs::LookupRoot() {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, Get(kRootIno));
  const Attr a = MakeAttr(*in);
  util::MutexLock l(&in->mu);
  table_.AddLookups(kRootIno, 1);
  return a;
}

void PosixFs::SetIntentLog(zil::IntentLog* log, uint64_t dataset) {
  log_ = log;
  log_dataset_ = dataset;
  if (log == nullptr) return;
  // A write's bytes for its record, read at the commit: as the file holds
  // them then, up to its size (a hole reads as zeros), without moving atime.
  auto read = [this](uint64_t object, uint64_t off, uint64_t len,
                     uint64_t txg) -> Result<std::string> {
    std::string data;
    POOLFS_RETURN_IF_ERROR(WithLoggedBytes(object, off, len, txg, [&](uint64_t n) -> Status {
      if (n == 0) return Status::Ok();
      POOLFS_ASSIGN_OR_RETURN(data, os_->Read(ObjectId(object), off, n));
      data.resize(n, '\0');
      return Status::Ok();
    }));
    return data;
  };
  // A large write's block, written to its place at the commit, the record
  // naming it (IntentLog::SetIndirectWriteBytes): when the bytes lie in
  // one block and the record's txg is still the open one, held open
  // meanwhile so that its sync finds the block written.
  auto early = [this](uint64_t object, uint64_t off, uint64_t len,
                      uint64_t txg) -> Result<zil::EarlyBlock> {
    zil::EarlyBlock out;
    POOLFS_RETURN_IF_ERROR(WithLoggedBytes(object, off, len, txg, [&](uint64_t n) -> Status {
      out.length = n;
      if (n == 0) return Status::Ok();
      POOLFS_ASSIGN_OR_RETURN(dmu::ObjectSet::DnodeRef d, os_->Hold(ObjectId(object)));
      const uint64_t bs = d->Info().block_size;
      if (bs == 0 || off / bs != (off + n - 1) / bs) return Status::Ok();
      // Holds after op_mu, as a write does (its Tx), so neither waits for
      // the other's.
      Result<Txg> held = pool_->txgs().Hold(0);
      if (!held.ok()) return Status::Ok();
      if (held->value() == txg) {
        Result<zio::BlockPtr> bp = d->WriteEarly(*held, off / bs, 0);
        if (bp.ok()) out.block_ptr = pool_->EncodeLogBlockPtr(*bp);
      }
      pool_->txgs().Release(*held, 0);
      return Status::Ok();
    }));
    return out;
  };
  log->SetReader(dataset, std::move(read), std::move(early));
}

Status PosixFs::WithLoggedBytes(uint64_t object, uint64_t off, uint64_t len, uint64_t txg,
                                const std::function<Status(uint64_t n)>& fn) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, LogSubject(object, txg));
  util::MutexLock op(&in->op_mu);
  {
    util::MutexLock l(&in->mu);
    if (in->freed) return Status::NotFound("inode " + std::to_string(object) + " was removed");
  }
  const ZnodePhys z = in->Snapshot();
  return fn(!S_ISREG(z.mode) || off >= z.size ? 0 : std::min(len, z.size - off));
}

Result<InodeRef> PosixFs::LogSubject(uint64_t object, uint64_t txg) {
  auto removed = [&] {
    return Status::NotFound("object " + std::to_string(object) + " was removed after txg " +
                            std::to_string(txg));
  };
  // A freed object's number comes back only in a txg after its free, which
  // is at or after the record's: a file of a later generation is another.
  Result<InodeRef> in = Get(object, false);
  if (in.ok()) {
    if ((*in)->generation > txg) return removed();
    return in;
  }
  Result<dmu::ObjectInfo> info = os_->Stat(ObjectId(object));
  if (info.status().IsNotFound() || (info.ok() && info->generation > txg)) return removed();
  return in.status();
}

void PosixFs::Log(const dmu::Tx& tx, uint64_t object, zil::RecordType type, zil::RecordBody body,
                  uint32_t write_length) {
  if (log_ == nullptr) return;
  log_->Add(log_dataset_, zil::LogRecord{type, tx.txg().value(), 0, object, std::move(body)},
            write_length);
}

void PosixFs::LogAttrs(const dmu::Tx& tx, uint64_t object, const ZnodePhys& z, bool size) {
  if (log_ == nullptr) return;
  zil::SetattrBody b;
  b.mask = zil::kSetMode | zil::kSetUid | zil::kSetGid | zil::kSetAtime | zil::kSetMtime |
           zil::kSetCtime | (size ? zil::kSetSize : 0);
  b.mode = z.mode & 07777;
  b.uid = z.uid;
  b.gid = z.gid;
  b.size = size ? z.size : 0;
  b.atime = z.atime;
  b.mtime = z.mtime;
  b.ctime = z.ctime;
  Log(tx, object, zil::RecordType::kSetattr, std::move(b));
}

Status PosixFs::Fsync(uint64_t ino, bool /*datasync*/) {
  CallGuard g;
  POOLFS_RETURN_IF_ERROR(Enter(&g, false));
  if (pool::SyncMode(props_sync_.load(std::memory_order_relaxed)) == pool::SyncMode::kDisabled)
    return Status::Ok();
  // Every change made so far is in the log or in a synced txg when the
  // commit returns (the log takes every dataset's records at once).
  if (log_ != nullptr && log_->started()) return log_->Commit();
  InodeRef in = table_.Find(ino);
  uint64_t t = in ? in->last_txg.load() : newest_txg_.load();
  if (t == 0) return Status::Ok();
  return pool_->WaitSynced(Txg(t));
}

Status PosixFs::SyncIfAlways() {
  if (pool::SyncMode(props_sync_.load(std::memory_order_relaxed)) != pool::SyncMode::kAlways)
    return Status::Ok();
  if (log_ != nullptr && log_->started()) return log_->Commit();
  const uint64_t t = newest_txg_.load();
  return t == 0 ? Status::Ok() : pool_->WaitSynced(Txg(t));
}

}  // namespace poolfs::core::posix
