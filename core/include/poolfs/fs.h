// Filesystem: a mounted pool seen as a POSIX filesystem — the one API the
// FUSE adapter (fuse/) and the daemon (daemon/) use to reach the core.
//
// The implementation lives in core/posix (its theory comment says how files,
// directories and attributes are stored); this header is the contract.
//
// Inodes: an inode number is the object id of the file in the pool's root
// dataset, stable across mounts; the root directory is inode 1
// (FUSE_ROOT_ID). Each inode also has a generation (the txg that created
// it), so an (ino, generation) pair never names two files even when ids are
// reused.
//
// Lookup counts (the kernel's "nlookup"): every call that returns an Attr
// for a name — Lookup, Create, Mknod, Mkdir, Symlink, Link, and ReadDir
// with plus for each entry it emits except "." and ".." — takes one
// reference on the inode; Forget(ino, n) drops n. A file whose link count
// reaches 0 while references remain stays readable and writable until the
// last reference goes, then its object is freed. Such files are recorded on
// disk (the unlinked set), so a crash or a kill leaks nothing: the next
// mount frees them.
//
// Permissions: every call that takes Creds checks POSIX permissions itself
// (owner/group/other mode bits, supplementary groups, the sticky bit, uid 0
// overriding all but execute without any x bit), so the mount is correct
// without the kernel's default_permissions. When MountOptions says the
// kernel checks (`default_permissions`), the mode-bit checks are skipped and
// only the rules the kernel leaves to the filesystem remain (sticky
// directories, chown/chmod ownership, setuid/setgid clearing).
//
// Access times: reads, directory listings and readlink move atime as the
// mount's AtimeMode says (relatime by default, as Linux); see AtimeMode.
//
// Durability: a call returns once its change is in the open txg (memory);
// Fsync and FsyncDir return once the txg holding the inode's last change is
// durable. Unmount syncs everything and exports the pool.
//
// Errors: every failure is a Status whose code the adapter maps to errno
// (NotFound → ENOENT, AlreadyExists → EEXIST, NotEmpty → ENOTEMPTY,
// NotADirectory → ENOTDIR, IsADirectory → EISDIR, PermissionDenied →
// EACCES, NotPermitted → EPERM, NameTooLong → ENAMETOOLONG, NoSpace →
// ENOSPC, NoData → ENODATA, FileTooLarge → EFBIG, TooManyLinks → EMLINK,
// ReadOnly → EROFS, Range → ERANGE, InvalidArgument → EINVAL, NotSupported
// → EOPNOTSUPP, Loop → ELOOP, Stale → ESTALE, Busy → EBUSY, CrossDevice →
// EXDEV, QuotaExceeded → EDQUOT, Corruption and
// IOError → EIO), and whose message says what and where ("object 17 L0
// block 3: checksum mismatch").
//
// Thread safety: every call may be made from any thread at any time between
// Mount and Unmount; calls on one inode are serialized inside (the per-inode
// lock the dmu's contract asks for), calls on different inodes run in
// parallel. Unmount waits for calls in flight and refuses new ones
// (Aborted).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/dataset.h"
#include "poolfs/executor.h"
#include "poolfs/options.h"
#include "poolfs/status.h"

namespace poolfs {

inline constexpr uint64_t kRootIno = 1;
inline constexpr size_t kNameMax = 255;

// A point in time: seconds since the epoch (64-bit: dates past 2038 and
// before 1970 work) and nanoseconds (0 .. 999,999,999).
struct Timespec {
  int64_t sec = 0;
  uint32_t nsec = 0;
  auto operator<=>(const Timespec&) const = default;
};

// What stat(2) reports.
struct Attr {
  uint64_t ino = 0;
  uint64_t generation = 0;
  uint32_t mode = 0;  // file type and permission bits, as in st_mode
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t rdev = 0;     // device nodes: the device number (makedev)
  uint64_t size = 0;     // bytes; a symlink's target length; a directory's entry count + 2
  uint64_t blocks = 0;   // 512-byte units allocated (as of the last sync, plus dirty data)
  uint32_t blksize = 0;  // preferred I/O size: the file's record size
  Timespec atime, mtime, ctime, btime;
};

// Who is asking. Supplementary groups are fetched only when a check needs
// them (the FUSE adapter reads them from /proc, which is not free).
struct Creds {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::function<std::vector<uint32_t>()> supplementary_groups;  // may be empty
};

// setattr(2)-style changes; `valid` says which fields to apply.
struct SetAttrRequest {
  enum : uint32_t {
    kMode = 1u << 0,
    kUid = 1u << 1,
    kGid = 1u << 2,
    kSize = 1u << 3,
    kAtime = 1u << 4,     // set atime to `atime`
    kMtime = 1u << 5,     // set mtime to `mtime`
    kAtimeNow = 1u << 6,  // set atime to the current time
    kMtimeNow = 1u << 7,  // set mtime to the current time
    kCtime = 1u << 8,     // set ctime to `ctime`
    // The change comes through a descriptor open for writing (ftruncate,
    // open with O_TRUNC; FUSE's FATTR_FH): the open checked the write
    // permission, so a size change needs none now, as POSIX says.
    kOpenFile = 1u << 9,
    // Clear setuid and setgid as a chown would. A kernel that leaves the
    // clearing to the filesystem (FUSE_HANDLE_KILLPRIV_V2) asks for it
    // with a change of nothing else: chown(f, -1, -1), and before a write
    // or hole punch by a caller without CAP_FSETID.
    kClearPrivileges = 1u << 10,
  };
  uint32_t valid = 0;
  uint32_t mode = 0;  // permission bits only (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  Timespec atime, mtime, ctime;
};

// One directory entry as ReadDir emits it. `next_cookie` resumes after
// this entry; cookies stay valid while entries are added and removed (no
// entry that stays in the directory is skipped or repeated).
struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  uint32_t type = 0;  // the S_IFMT bits of the entry's mode
  uint64_t next_cookie = 0;
  Attr attr;  // filled only when ReadDir was asked for plus
};

// statfs(2).
struct FsStats {
  uint32_t block_size = 0;  // f_bsize and f_frsize
  uint64_t blocks = 0;      // total, in block_size units
  uint64_t blocks_free = 0;
  uint64_t blocks_available = 0;  // free minus the pool's reserve for its own metadata
  uint64_t files = 0;             // objects in use plus objects still creatable
  uint64_t files_free = 0;
  uint32_t name_max = kNameMax;
};

// Renaming flags (renameat2).
enum RenameFlags : uint32_t {
  kRenameNoReplace = 1u << 0,  // RENAME_NOREPLACE
  kRenameExchange = 1u << 1,   // RENAME_EXCHANGE
};

// Xattr flags (setxattr(2)).
enum XattrFlags : uint32_t {
  kXattrCreate = 1u << 0,   // XATTR_CREATE: fail with AlreadyExists if present
  kXattrReplace = 1u << 1,  // XATTR_REPLACE: fail with NoData if absent
};

// Read flags.
enum ReadFlags : uint32_t {
  // The caller keeps what it reads (the kernel's page cache, for a read
  // without O_DIRECT): blocks the read returns whole need not stay in the
  // block cache as well (unless CoreTunables::cache_whole_reads).
  kReadCallerKeeps = 1u << 0,
};

// What Filesystem::ReadShared returns.
struct SharedRead {
  std::vector<std::span<const char>> pieces;
  std::shared_ptr<const void> hold;  // keeps pieces outside the scratch buffer valid
  size_t size() const {
    size_t n = 0;
    for (const auto& p : pieces) n += p.size();
    return n;
  }
};

// Fallocate modes (fallocate(2)).
enum FallocateFlags : uint32_t {
  kFallocKeepSize = 1u << 0,   // FALLOC_FL_KEEP_SIZE
  kFallocPunchHole = 1u << 1,  // FALLOC_FL_PUNCH_HOLE (with kFallocKeepSize)
  kFallocZeroRange = 1u << 2,  // FALLOC_FL_ZERO_RANGE
};

// When reading a file (Read), listing a directory (ReadDir) or reading a
// symlink (Readlink) moves its atime: the mount's -o relatime, strictatime
// or noatime, with Linux's meaning. Each move is an attribute change in a
// Tx like any other.
enum class AtimeMode : uint8_t {
  // Linux's default: only when atime is not after mtime or ctime (the first
  // read after a change), or is 24 hours old or more. At most one atime
  // write per read-after-write, plus one a day.
  kRelatime,
  // Every read whose time differs from atime. Through FUSE that is every
  // read the kernel sends: reads its page cache serves never reach poolfs.
  kStrict,
  kNone,  // never: atime changes only by SetAttr
};

// What a mount takes: its own settings, and the core tunables.
struct MountOptions {
  bool read_only = false;
  // A recovery mount (-o ro,rewind; needs read_only, InvalidArgument
  // otherwise): when the newest txg's tree does not verify, the pool opens
  // at the newest older txg (within two of the newest) whose tree does.
  // FsStatus::import_notes says which.
  bool rewind = false;
  // The dataset whose tree the mount shows at its root ("tank/home"): empty
  // for the pool's root dataset, and so the whole pool.
  std::string dataset;
  // The kernel checks mode bits too (the mount has default_permissions):
  // the core then skips its own mode-bit checks. The daemon leaves this
  // false (the core keeps its checks) although its mounts always ask the
  // kernel to check as well.
  bool kernel_checks_permissions = false;
  AtimeMode atime = AtimeMode::kRelatime;
  // Every core tunable (poolfs/options.h, where their defaults live; the
  // daemon fills them from its config, see config/tunables.h).
  CoreTunables tunables;
  // Where sync work runs (one strand per allocator); nullptr: a thread pool
  // the core owns. Must outlive the Filesystem.
  Executor* executor = nullptr;
  // Called after each successful txg sync with (txg, time the sync took in
  // ns, bytes the sync wrote to the vdevs), in txg order, from the txg
  // driver thread: it must return quickly and must not call back into the
  // Filesystem (a call that waits for a sync would wait for itself). May be
  // empty. The daemon logs one debug line per sync with it.
  std::function<void(uint64_t, uint64_t, uint64_t)> on_txg_synced;
};

// The pool's scrub (Filesystem::StartScrub): how far the running one has
// got, or what the last one found. The pool keeps it: it is there after a
// remount, and a scrub running at unmount goes on at the next mount.
struct ScrubStatus {
  enum class State : uint8_t {
    kNone,  // no scrub has run on this pool
    kRunning,
    kFinished,  // it walked the whole pool
    kStopped,   // StopScrub ended it early
  };
  State state = State::kNone;
  int64_t start_time = 0;  // seconds since the epoch
  int64_t end_time = 0;    // finished or stopped; 0 while running
  // Stored bytes read (every copy of every block) of `total`, the stored
  // bytes of the pool when it started. Blocks written since the scrub
  // began are not read (their checksums are new), so a busy pool's scrub
  // may end short of total.
  uint64_t examined = 0;
  uint64_t total = 0;
  uint64_t rate = 0;      // bytes per second: examined over the time it has run
  uint64_t blocks = 0;    // blocks read and verified
  uint64_t repaired = 0;  // bad copies rewritten from a good copy
  uint64_t errors = 0;    // blocks none of whose copies verifies: data lost
  // The first errors (up to 32; `errors` counts them all), each named as
  // `zpool status -v` names them: "tank/home:/docs/a.txt" (the dataset and
  // one path of the file, from the dataset's root), "tank/home:<object
  // 0x2a>" when no path leads to the object (not a file, or unlinked), and
  // "<metadata>:<object 0x1f>" for the pool's own metadata (the MOS).
  struct Error {
    std::string where;
    uint64_t dataset_id = 0;  // 0: the pool's metadata
    uint64_t object = 0;      // 0: the dataset's dnode blocks or root block
    uint64_t blkid = 0;       // the first level-0 block it covers
    uint32_t level = 0;       // 0: a data block; 255: the dataset's root block
  };
  std::vector<Error> error_list;
};

// What `poolfs status` shows of a mounted pool.
struct FsStatus {
  std::string pool;
  std::string state;  // "online", "suspended: <why>"
  uint64_t imported_txg = 0;
  // What the import did beyond opening the newest txg, a line each: a
  // rewind's choice ("rewound to txg N (the newest, txg M, does not verify:
  // ...)"), label copies it rewrote.
  std::vector<std::string> import_notes;
  // The intent log (fsync's): commits that wrote log blocks and those that
  // waited for a txg sync instead, what they wrote, their time, and the
  // records replayed at this import. `indirect` of the records are writes
  // whose `indirect_bytes` went to their place in the pool at the commit
  // (the log names the block) instead of into the log.
  struct LogStatus {
    bool enabled = false;  // off on a read-only mount
    uint64_t commits = 0;
    uint64_t commits_synced = 0;
    uint64_t blocks = 0;
    uint64_t records = 0;
    uint64_t bytes = 0;
    uint64_t commit_ns_total = 0;
    uint64_t commit_ns_max = 0;
    uint64_t replayed = 0;
    uint64_t indirect = 0;
    uint64_t indirect_bytes = 0;
    uint64_t replayed_indirect = 0;  // indirect writes among the records to replay
  } log;
  uint64_t last_synced_txg = 0;
  uint64_t open_txg = 0;
  uint64_t syncs = 0;
  // Passes the MOS sync of the last txg took, and the most any txg of this
  // mount took (a handful; more would mean the sync is close to its bound).
  uint32_t mos_passes_last = 0;
  uint32_t mos_passes_max = 0;
  uint64_t space_total = 0;
  uint64_t space_allocated = 0;
  uint64_t space_free = 0;
  // Freed in the last txgs, free again once they have synced (allocated +
  // free + deferred = total).
  uint64_t space_deferred = 0;
  // Block cloning (copy_file_range): blocks shared by more than one file,
  // as of the last sync, and the bytes the extra references would take as
  // copies (ZFS's bcloneused and bclonesaved).
  uint64_t cloned_blocks = 0;
  uint64_t clone_saved_bytes = 0;
  uint64_t checksum_errors = 0;  // all vdevs
  // Bad copies of blocks rewritten from good ones since the mount, and
  // copies writes left out for want of room.
  uint64_t repaired_copies = 0;
  uint64_t copy_shortfalls = 0;
  uint32_t format_version = 0;  // the pool's on-disk format
  std::vector<std::string> datasets;
  // The datasets with their space as of the last sync (a mount of a pool's
  // tree fills it; empty otherwise).
  std::vector<DatasetInfo> dataset_space;
  uint64_t objects = 0;           // live objects in the root dataset
  uint64_t unlinked_pending = 0;  // unlinked files still referenced
  // Object allocation in the root dataset since the mount (see
  // dmu.metadnode_backfill).
  std::string backfill;  // the mode in effect
  uint64_t objects_allocated = 0;
  uint64_t objects_freed = 0;
  uint64_t objects_reused = 0;     // allocated below the high-water mark
  uint64_t failed_holds = 0;       // probes that met a taken dnode (legacy only)
  uint64_t object_high_water = 0;  // one past the highest object id in use
  double density = 1;              // objects / (highest object id + 1)
  uint64_t dnode_blocks_in_use = 0;
  // The block cache (arc.*) since the mount.
  uint64_t arc_max_bytes = 0;  // its bound in effect
  uint64_t arc_bytes = 0;      // cached data now (MRU + MFU)
  uint64_t arc_mru_bytes = 0, arc_mfu_bytes = 0;
  uint64_t arc_mru_ghost_bytes = 0, arc_mfu_ghost_bytes = 0;
  uint64_t arc_hits = 0, arc_misses = 0;
  uint64_t arc_evictions = 0;
  uint64_t arc_sublist_lock_misses = 0;  // the evictor's try-locks that failed
  uint32_t arc_sublists = 0;
  // Blocks read whole for a caller that keeps them, outside the cache
  // (arc.cache_whole_reads off).
  uint64_t arc_read_once = 0;
  // Blocks read ahead of sequential readers (dmu.prefetch_*) since the
  // mount: asked for, taken ready by a read, taken by a read that waited
  // for the disk, never taken (dropped, failed).
  uint64_t prefetch_requested = 0, prefetch_hits = 0, prefetch_waits = 0;
  uint64_t prefetch_dropped = 0, prefetch_failed = 0;
  // Objects in memory (bounded by a tenth of arc.max_bytes) and the
  // kernel's references.
  uint64_t object_cache_limit = 0;  // dnodes, and inodes, kept when idle
  uint64_t cached_dnodes = 0, dnode_evictions = 0;
  uint64_t cached_inodes = 0, inode_evictions = 0;
  uint64_t kernel_inodes = 0;  // inodes the kernel holds lookups on
  // Decoded directory leaves (zap::LeafCache, a 64th of arc.max_bytes).
  uint64_t cached_leaves = 0, leaf_cache_limit = 0;
  uint64_t leaf_hits = 0, leaf_misses = 0;
  // The last txg syncs, oldest first (up to 128; `poolfs status` shows the
  // last 5, `poolfs iostat` takes the maximum of those in its interval).
  struct SyncInfo {
    uint64_t txg = 0;
    uint64_t duration_ns = 0;
    uint64_t dirty_bytes = 0;              // the txg's dirty data
    uint64_t bytes_written = 0;            // by the sync, to the vdevs
    uint64_t blocks_written = 0;           // by the sync
    uint32_t threads = 0;                  // sync threads in effect
    uint32_t datasets = 0;                 // datasets synced
    std::vector<uint64_t> strand_busy_ns;  // per strand (allocator): time its tasks ran
  };
  std::vector<SyncInfo> recent_syncs;
  // Totals since the mount (cumulative; `poolfs iostat` differences them):
  // time spent syncing, and every vdev write and read.
  uint64_t sync_ns_total = 0;
  uint64_t bytes_written = 0, blocks_written = 0;
  uint64_t bytes_read = 0, blocks_read = 0;
  ScrubStatus scrub;  // the pool's scrub, running or last run
};

// A second filesystem over a mounted pool (Filesystem::OpenDatasetView).
struct DatasetViewOptions {
  bool read_only = false;  // every change through the view fails with ReadOnly
  std::string where;       // where it is mounted ("/home/a/docs"), for messages
};

class Filesystem {
 public:
  // Imports the pool on `vdev_paths` and opens its root dataset as a
  // filesystem (a pool whose root dataset has no root directory yet gets
  // one: `poolfs create` leaves an empty dataset). Frees the files left in
  // the unlinked set. Fails as the pool's import does (Busy when another
  // process has it, Corruption for a file that is not a pool, NotSupported
  // for another format version) and with ReadOnly when a read-only mount
  // would have to write.
  static Result<std::unique_ptr<Filesystem>> Mount(const std::vector<std::string>& vdev_paths,
                                                   const MountOptions& options);
  virtual ~Filesystem() = default;

  // Waits for calls in flight, syncs everything and exports the pool; later
  // calls fail with Aborted. Idempotent; the destructor unmounts too.
  virtual Status Unmount() = 0;

  // The datasets of the mounted pool (create, destroy, list, properties),
  // valid until Unmount, changed live (a dataset created appears in the
  // mount at once); nullptr where there are none (a test's fake).
  virtual DatasetAdmin* datasets() = 0;

  // Names: NotFound, NotADirectory (the parent), NameTooLong (> 255
  // bytes), InvalidArgument (empty, '/', or NUL in it), PermissionDenied
  // (search permission on the parent). "." of any inode is itself and ".."
  // of a directory its parent, without a permission check (how the kernel
  // turns a file handle back into a file); Stale when the inode is gone.
  virtual Result<Attr> Lookup(const Creds& c, uint64_t parent, std::string_view name) = 0;
  virtual void Forget(uint64_t ino, uint64_t nlookup) = 0;
  virtual Result<Attr> GetAttr(uint64_t ino) = 0;
  // Applies `req`: chmod (owner or root; clears setgid for a non-member;
  // a caller who may write a regular file may also clear some of what a
  // write by it would clear, which is the chmod the kernel sends before a
  // write or truncate when the adapter cannot take FUSE_CAP_HANDLE_KILLPRIV),
  // chown (root; the owner may change the group to one of its groups;
  // clears setuid on a non-directory, and setgid when group-executable or
  // when the caller, not root, is outside the file's group, as Linux does),
  // truncate (write permission, unless through a descriptor open for
  // writing: kOpenFile), utimes (owner, or write permission for "now").
  // Updates ctime. Returns the new attributes.
  virtual Result<Attr> SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) = 0;

  // Creates a regular file (mode's permission bits, already umasked).
  // AlreadyExists when the name exists (the adapter maps O_EXCL; FUSE
  // sends CREATE only when the kernel saw no entry).
  virtual Result<Attr> Create(const Creds& c, uint64_t parent, std::string_view name,
                              uint32_t mode) = 0;
  // Regular files, fifos, sockets, character and block devices (root only
  // for devices, as Linux: NotPermitted otherwise). mode includes S_IFMT.
  virtual Result<Attr> Mknod(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode,
                             uint64_t rdev) = 0;
  virtual Result<Attr> Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                             uint32_t mode) = 0;
  virtual Result<Attr> Symlink(const Creds& c, uint64_t parent, std::string_view name,
                               std::string_view target) = 0;
  // The target; moves the symlink's atime as Read moves a file's.
  virtual Result<std::string> Readlink(uint64_t ino) = 0;
  // Hard link: NotPermitted for a directory, TooManyLinks past the limit.
  virtual Result<Attr> Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                            std::string_view new_name) = 0;
  virtual Status Unlink(const Creds& c, uint64_t parent, std::string_view name) = 0;
  virtual Status Rmdir(const Creds& c, uint64_t parent, std::string_view name) = 0;
  // rename(2) and renameat2(2) (flags: RenameFlags), with POSIX's rules:
  // a directory replaces only an empty directory, a non-directory only a
  // non-directory, a directory is not moved below itself (InvalidArgument),
  // renaming a name onto a hard link of the same file does nothing.
  virtual Status Rename(const Creds& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                        std::string_view new_name, uint32_t flags) = 0;

  // Checks that `c` may open `ino` with open(2) `flags` (O_ACCMODE,
  // O_TRUNC); IsADirectory for writing a directory.
  virtual Status Open(const Creds& c, uint64_t ino, int flags) = 0;
  // access(2): mask of R_OK, W_OK, X_OK (F_OK: 0).
  virtual Status Access(const Creds& c, uint64_t ino, int mask) = 0;
  // Reads up to dst.size() bytes at `off` into `dst` and returns how many
  // (short at the end of the file). Then moves atime as the mount's
  // AtimeMode says (not on a read-only mount; a failure to store it, such
  // as a suspended pool, does not fail the read, as on Linux). `flags`:
  // ReadFlags. Whole blocks of a kReadCallerKeeps read go from the disk
  // straight into `dst`: a page-aligned `dst` makes that copy, and the
  // caller's own, several times faster (file_ops.cc in fuse/ has figures).
  virtual Result<size_t> Read(uint64_t ino, uint64_t off, std::span<char> dst,
                              uint32_t flags = 0) = 0;
  // The same into `out`, resized to what was read (sized to `len` first).
  Status Read(uint64_t ino, uint64_t off, size_t len, std::string* out, uint32_t flags = 0);
  // Read for a caller that sends the bytes on (a FUSE reply) instead of
  // keeping them: blocks the core holds in its cache are not copied into
  // `scratch` but returned where they lie. The bytes read are
  // out->pieces in order: of scratch (room for the whole read, as Read's
  // dst) or of the core's memory, valid while `out` lives. This default
  // reads into scratch (one piece).
  virtual Status ReadShared(uint64_t ino, uint64_t off, std::span<char> scratch, uint32_t flags,
                            SharedRead* out) {
    Result<size_t> n = Read(ino, off, scratch, flags);
    if (!n.ok()) return n.status();
    out->pieces.assign(1, scratch.first(*n));
    out->hold.reset();
    return Status::Ok();
  }
  // Writes `data` at `off` (the caller resolves O_APPEND); clears setuid and
  // setgid as Linux does for a write by a non-root caller (setgid without
  // group execute only when the caller is outside the file's group; so do
  // a truncate and every Fallocate); updates mtime and
  // ctime. Returns the bytes written. FileTooLarge past the maximum size,
  // NoSpace when the pool is full.
  virtual Result<size_t> Write(const Creds& c, uint64_t ino, uint64_t off,
                               std::string_view data) = 0;
  // Punches a hole (kFallocPunchHole | kFallocKeepSize). Preallocation
  // (no flags, kFallocKeepSize, kFallocZeroRange) is NotSupported: on
  // copy-on-write, space set aside now cannot keep a later write into the
  // range from failing with NoSpace.
  virtual Status Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                           uint64_t len) = 0;
  // copy_file_range(2): copies up to `len` bytes of regular file `ino_in`
  // from `off_in` to regular file `ino_out` at `off_out` (any two files of
  // the filesystem, in any two of its pool's datasets), and returns the
  // bytes copied: fewer at the end of ino_in (0 at or past it), or when a
  // later part failed after an earlier one was done. Whole blocks are
  // shared, not copied (block cloning: the pool's block reference table),
  // where the two offsets lie alike in their blocks and the files' block
  // sizes agree (or ino_out's data fits one block, which then takes
  // ino_in's size); the partial blocks at the edges, blocks changed since
  // the last sync and everything else are copied. mtime and ctime of
  // ino_out move and a non-root caller clears its setuid and setgid bits,
  // as a write. `flags` must be 0 (InvalidArgument); so must the ranges
  // not overlap within one file. NotSupported where the filesystem cannot
  // (the kernel then copies through read and write).
  virtual Result<uint64_t> CopyFileRange(const Creds& c, uint64_t ino_in, uint64_t off_in,
                                         uint64_t ino_out, uint64_t off_out, uint64_t len,
                                         uint32_t flags) {
    (void)c, (void)ino_in, (void)off_in, (void)ino_out, (void)off_out, (void)len, (void)flags;
    return Status::NotSupported("copy_file_range");
  }
  // Returns once ino's changes so far are durable.
  virtual Status Fsync(uint64_t ino, bool datasync) = 0;
  // lseek(2)'s SEEK_DATA (`hole` false) and SEEK_HOLE (`hole` true) on a
  // regular file: the first offset at or after `off` in data, or in a hole
  // (the end of the file is one). Data is what the file's blocks hold,
  // changes not yet synced included, a block at a time (a block of zeros
  // that was written counts as data). NoSuchOffset when `off` is at or
  // past the end, or no data follows it.
  virtual Result<uint64_t> Seek(uint64_t ino, uint64_t off, bool hole) {
    (void)ino, (void)off, (void)hole;
    return Status::NotSupported("SEEK_DATA and SEEK_HOLE");
  }

  // Lists `ino` from `cookie` (0: the start; "." and ".." come first),
  // calling `emit` for each entry until it returns false (the caller's
  // buffer is full: that entry was not taken) or the directory ends. With
  // `plus`, entries carry attributes and each taken one (except "." and
  // "..") takes a lookup reference. Moves the directory's atime as Read
  // moves a file's.
  virtual Status ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                         const std::function<bool(const DirEntry&)>& emit) = 0;

  // Extended attributes in the user.*, trusted.* (root only) and
  // security.* namespaces; others NotSupported. Names up to 255 bytes,
  // values up to 64 KiB (Range beyond, as Linux's XATTR_SIZE_MAX).
  virtual Result<std::string> GetXattr(const Creds& c, uint64_t ino, std::string_view name) = 0;
  virtual Status SetXattr(const Creds& c, uint64_t ino, std::string_view name,
                          std::string_view value, uint32_t flags) = 0;
  // The names the caller may see (trusted.* only for root).
  virtual Result<std::vector<std::string>> ListXattr(const Creds& c, uint64_t ino) = 0;
  virtual Status RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) = 0;

  // statfs(2) on a path whose inode is `ino`: the figures of its dataset
  // (with a quota on it or an ancestor, the room under that quota).
  virtual Result<FsStats> StatFs(uint64_t ino) = 0;
  virtual FsStatus GetStatus() = 0;
  // Puts `t` into effect at once: the tunables that apply live (all of
  // t.txg, t.objects, t.arc.max_bytes, t.cache_whole_reads). Every other
  // field must equal the value the mount was made with (they apply at the
  // next mount only). Returns OK once applied; InvalidArgument, changing
  // nothing, when t.txg is out of range (ValidateTxgOptions's message) or a
  // field that applies at mount only differs (naming it); Aborted after
  // Unmount.
  virtual Status SetLive(const CoreTunables& t) = 0;

  // Starts a scrub of the whole pool (every dataset, whichever this mount
  // shows): a thread reads every copy of every block in the background,
  // behind the mount's own I/O, rewrites each bad copy from a good one and
  // lists the blocks that have none (GetStatus().scrub). Returns once it
  // has started. AlreadyExists while one runs, ReadOnly on a read-only
  // mount (a scrub repairs what it finds), NotSupported where there is no
  // pool (this default).
  virtual Status StartScrub() {
    return Status::NotSupported("this filesystem has no pool to scrub");
  }
  // Stops the running scrub; its state becomes stopped, with what it found
  // so far. NotFound when none runs.
  virtual Status StopScrub() {
    return Status::NotSupported("this filesystem has no pool to scrub");
  }

  // Tells the kernel to forget a name it may cache (`name` in directory
  // `parent`, a negative entry too). The FUSE adapter sets it once the
  // mount is up and clears it (an empty function) before the mount goes;
  // the filesystem calls it, from any thread but never from inside one of
  // its calls, when a dataset appears, moves or goes. Ignored by default.
  using EntryInvalidator = std::function<void(uint64_t parent, std::string_view name)>;
  virtual void SetEntryInvalidator(EntryInvalidator fn) { (void)fn; }
  // Tells the kernel to drop what it caches of file `ino`: its attributes
  // and its data. Set and cleared as the EntryInvalidator, and called as it
  // is (from any thread, never from inside one of the filesystem's calls),
  // when a file changes through another mount of the same files
  // (OpenDatasetView). Ignored by default.
  using InodeInvalidator = std::function<void(uint64_t ino)>;
  virtual void SetInodeInvalidator(InodeInvalidator fn) { (void)fn; }
  // Asks the kernel to drop the pages it caches of file `ino` soon, so that
  // the next read reaches the filesystem. The kernel never moves a FUSE
  // file's atime itself and serves cached reads without a request; it
  // drops the pages on its own only when it sees mtime or size move. So
  // after a change that moves only ctime (chmod, chown, utimens, an xattr,
  // a link) of a file read since its last change, the filesystem calls
  // this for relatime's next read to move atime. Set and cleared as the
  // EntryInvalidator, but called from inside the filesystem's calls: it
  // must only queue the work. Ignored by default.
  using PageDropper = std::function<void(uint64_t ino)>;
  virtual void SetPageDropper(PageDropper fn) { (void)fn; }

  // Opens a second filesystem over this mount's pool (for a second FUSE
  // mount in the same process) that shows dataset `dataset`'s tree at its
  // root, as a mount with MountOptions::dataset does. It shares this
  // mount's files (their inodes, locks and caches: a change through either
  // is seen at once by both), inode numbers included; what one mount
  // changes, the other's kernel is told to forget (its invalidators), and
  // the names this mount's datasets change are invalidated in both. While
  // it is open, destroying `dataset` or an ancestor is Busy (it holds the root of a
  // mount); a rename moves it along. Its Unmount ends the view alone (it
  // drops the lookups its kernel still holds; no sync, no export); it must
  // be destroyed before this Filesystem, and its calls fail (Aborted) once
  // this one is unmounted. NotFound for no such dataset; NotSupported where
  // there are no datasets (this default).
  virtual Result<std::unique_ptr<Filesystem>> OpenDatasetView(std::string_view dataset,
                                                              const DatasetViewOptions& options) {
    (void)options;
    return Status::NotSupported("this filesystem has no datasets to mount (" +
                                std::string(dataset) + ")");
  }
};

}  // namespace poolfs
