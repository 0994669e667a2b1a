// Pool: create, import and export a storage pool; its datasets; the sync of
// every txg.
//
// Theory
// ------
// A pool is one or more vdevs (files or block devices) striped together.
// Each vdev's labels hold the pool config and an uberblock ring; the newest
// uberblock points at the MOS (meta object set), whose object 1, the pool
// directory, lists the datasets (each an object set, by root pointer) and
// the MOS objects holding each metaslab's space map.
//
// Sync of txg t (runs on the txg driver thread, TxgManager's callback):
//   1. datasets: the executor opens a batch with one strand per allocator
//      (Executor::BeginSync, the txg boundary, where a new txg.sync_threads
//      takes effect). Every dirty dataset's dnode lists (ObjectSet::SyncTasks:
//      one list per allocator, and a share per allocator of each dnode with
//      many dirty blocks) are posted, each to its allocator's strand as its
//      own task, all datasets at once. A dataset counts its outstanding
//      tasks; the one that finishes last posts that dataset's FinishSync
//      (its metadnode and root block) to its own strand, so a dataset whose
//      lists are done completes while others still sync: there is no
//      barrier across datasets, only the driver's one Wait for the batch.
//      PoolOptions::serial_dataset_sync instead syncs the datasets one
//      after another, each dnode written whole by one task: the sync as
//      OpenZFS had it before parallel dataset sync, kept as a benchmark
//      baseline (poolfs-bench sync);
//   2. the MOS, in passes: first free what the previous txg's late passes
//      deferred (below); then, each pass, append t's allocations and frees
//      to the space maps, store the changed maps in their MOS objects,
//      write the pool directory (new dataset roots, deferred frees), and
//      sync the MOS, until a pass finds nothing dirty. Writing the MOS
//      allocates and frees blocks, which the next pass appends. A block
//      born in t is rewritten in place (one that outgrows its extent moves
//      once, stored uncompressed for the rest of t so that it fits from
//      then on: dmu/block_tree.h); and from the second pass on, the
//      MOS's frees are not handed to the space maps but deferred: listed in
//      the pool directory, still allocated, and freed by the next txg's
//      sync (ZFS's deferred-free bpobj). Without that, a freed block's
//      metaslab gets a new map record, whose block is rewritten elsewhere,
//      freeing a block in a third metaslab, and so on: on a pool whose
//      space maps lie scattered over its metaslabs the chain outlasted any
//      bound. With it, a later pass changes only the maps of the metaslabs
//      it allocated from, whose blocks are then born in t, and a block
//      moves at most once more: a handful of passes
//      (PoolStats::mos_passes_*; `poolfs check` runs a trial sync);
//   3. flush every vdev, write the uberblock of t on every vdev, flush again.
//      t is durable; blocks freed in t are reusable after 2 more txgs.
// A failed sync suspends the pool (TxgManager): nothing half-written is ever
// referenced by an uberblock. So does an operation that fails halfway
// through its changes (its Tx is abandoned, dmu/tx.h): the txg holding them
// never syncs, and the disk keeps the last synced txg for the next import.
//
// Import reads every vdev's labels, checks they form one pool, and opens the
// newest valid uberblock when its MOS, pool directory, space maps and
// dataset roots all read and verify; when they do not, the import fails,
// and a read-only rewind import opens the newest older txg within the
// deferral window whose tree verifies (uberblock_choice.h has the rules). A
// read-write import then rewrites any damaged or stale label copy. The txg
// after the newest uberblock seen anywhere is the first one opened, so a
// txg number is never reused. Each vdev file is locked (flock) for as long
// as the pool is imported: a second process is refused.
//
// Datasets
// --------
// The pool directory holds the dataset tree: each entry has its id (never
// reused), its parent's id (0 for the root dataset, named after the pool),
// its own name component, creation txg and time, root block pointer and
// local properties (dataset_props.h). A full name ("tank/home/alice") is
// derived by walking up, so a rename changes one entry. Every change
// (create, destroy, rename, set, inherit) is made in memory under mu_ with
// a Tx of the open txg t and reaches disk with the directory of t (or of an
// earlier txg still syncing: the in-memory tree is consistent at every
// instant, and a dataset enters a directory only once its root is written);
// the admin calls wait for t to sync (dataset_admin.h).
//
// Destroy marks the dataset (and with `recursive` its descendants) as
// destroyed in t: it leaves the namespace at once, but stays in the
// directories of txgs before t, and t's sync first syncs its last changes
// (a Tx of t may have changed it) and then frees every block its tree
// holds (dmu/objset_walk.h: the root, the metadnode's tree, every object's
// tree), in the same txg that drops its entry: a crash finds it either
// whole or gone with its space. The ObjectSet stays in memory until export
// so that pointers to it stay valid (its later changes never sync).
//
// Space. Each object set keeps its referenced bytes exactly (objset.h: its
// trees count their writes and frees into its SpaceCounter; the totals
// persist in its root block). Per dataset: referenced = its own blocks;
// used = referenced + its children's used, at least its reservation;
// available = the pool's free space less every unused reservation but its
// own and its ancestors', capped by the room left under its own and every
// ancestor's quota. Quota and reservation are checked when set; writes are
// not yet held to them (the POSIX layer reads DatasetProps for that).
//
// Snapshots. A snapshot of a dataset taken in txg t is the dataset's root
// block as t's sync left it (and its referenced bytes): it shares every
// block with the dataset, costs one directory record whatever the
// dataset's size, and is read-only. Every block pointer carries its birth
// txg, so when the dataset stops referencing a block in a later sync, the
// block's birth says whether a snapshot holds it: born after the newest
// snapshot's txg (Dataset::prev_snap), it is freed; otherwise it goes on
// the dataset's deadlist (ZFS's): the dataset's object set routes its
// drops here (SpaceCounter::release), its sync tasks collect them, and the
// MOS sync of the txg appends them to deadlist objects in the MOS. A
// deadlist is kept in buckets by birth: the bucket with key K holds blocks
// born after K up to the next key, the keys being 0 and the txgs of the
// dataset's snapshots. Taking a snapshot hands the dataset's deadlist to
// the snapshot (the blocks that died between the snapshot before and this
// one) and starts an empty one.
//
// Destroying snapshot S (previous P, next N: a later snapshot or the
// dataset), in the sync of its txg: the bucket of N's deadlist keyed by
// P's txg holds exactly the blocks born after P and dead before N, which
// only S held: they are freed, with their objects; S's own deadlist (born
// before P, dead before S) joins N's; and every later deadlist's bucket
// keyed by S's txg joins the one keyed by P's. The cost is that of the
// blocks freed and the buckets moved, not the dataset's size. The figures
// follow from the buckets: a snapshot's `used` (what destroying it frees)
// is that bucket's bytes; a dataset's usedbysnapshots is the bytes of
// every deadlist of it (each block its snapshots alone hold lies on
// exactly one), and its `used` counts them. A dataset with snapshots is not
// destroyed (NotEmpty) until they are.
//
// Each snapshot has a guid (SnapshotEntry::guid): a random nonzero 64-bit
// number chosen when it is taken (getrandom(2)), or one given to
// TakeSnapshots (a received snapshot keeps its sender's, so that an
// incremental stream's base is recognised on another pool), distinct
// among its dataset's snapshots, which is all a stream needs: it names its
// base within one dataset. A rename keeps it; a promote moves it with its
// snapshot (refused when the clone has a snapshot with the same guid). A
// directory from before guids (version 7 and older) is given one per
// snapshot at import, written with the next sync (a read-only import
// keeps them in memory only: they differ from one such import to the
// next).
//
// Rolling a dataset back to its newest snapshot S, in the sync of the
// rollback's txg (after the later snapshots, with -r, are destroyed): the
// blocks born after S are freed by a walk that skips every older subtree
// (S holds those); the deadlist's blocks are S's, so the dataset's again
// (their objects are freed, not they); and the dataset gets a new object
// set over S's root, the old one kept unused until export.
//
// Clones. A clone of snapshot O (of dataset D, taken in txg T) is a new
// dataset whose object set starts at O's root: it shares every block with
// O, and its entry names O as its origin, which cannot be destroyed while
// the clone exists. A block the clone holds that was born at or before T
// is O's: the clone never frees one. Its deadlists take such a block when
// the clone drops it, in the bucket with key 0, and count from T otherwise
// (T is a bucket key of the clone's lineage, as the txg of the snapshot
// before its first one), so the clone's snapshots work as any dataset's
// and the bytes of its bucket 0 are O's, not the clone's: its usedbydataset
// is what it references less the part of O it still shares, and its
// usedbysnapshots leaves bucket 0 out. Destroying a clone frees only the
// blocks born after T (the walk skips the older subtrees) and drops its
// deadlists' objects.
//
// Promoting clone C (origin O of D) swaps the roles, in the sync of its
// txg: O and the snapshots of D before it move to C (the lineage up to O
// becomes C's), C takes D's origin (if D is a clone itself) and D becomes
// a clone of O. The deadlists follow: D's buckets keyed below T (blocks
// born at or before T: now O's) merge into its bucket 0, and C's buckets 0
// (blocks of O's lineage that C dropped) are read and spread over the
// moved snapshots' keys; the moved snapshots' own deadlists stay as they
// are. Nothing else moves, and no block is freed or written but the
// deadlists' pointers.
//
// Receives. A replication stream (send/receive.h) is applied to a hidden
// dataset, a child of the root dataset named "%recv-ID" (a name no user
// can give): out of every name lookup and list, but a dataset like any
// other to the sync, the space figures (its parent's `used`), scrub and
// check. For a full stream it starts empty; FinishReceive then moves it
// to the target's name and takes the received snapshot of it, both in
// one txg. For an incremental stream it is a clone of the target's
// newest snapshot B (its blocks up to B's txg are B's); FinishReceive
// takes the received snapshot of the target and marks the target, and
// the sync of that txg, before it captures the txg's snapshots, gives the
// target the hidden dataset's head (TakeReceivedHeads): the target's own
// head goes as a rollback to B would take it (its blocks born after B
// freed, its deadlist dropped), the hidden dataset's object set becomes
// the target's, the blocks of B's lineage it dropped (its deadlists)
// join the target's deadlist, spread over the target's buckets, and the
// hidden dataset leaves the directory with nothing to free. So the
// target changes in one txg, its snapshot then keeps the received head,
// and a crash before that txg leaves the target as it was and the hidden
// dataset to the next read-write import, which destroys it (a receive is
// not resumed).
//
// Thread safety: dataset() and the object sets are used from any thread;
// Export and the dataset tree changes from one thread at a time (the
// changes also take mu_, so readers see a consistent tree).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dmu/objset.h"
#include "pool/dataset_props.h"
#include "pool/pool_phys.h"
#include "pool/scrub.h"
#include "poolfs/options.h"
#include "poolfs/status.h"
#include "space/allocator.h"
#include "txg/executor.h"
#include "txg/txg_manager.h"
#include "util/mutex.h"
#include "vdev/block_device.h"
#include "vdev/label.h"
#include "zio/zio.h"

namespace poolfs::core::pool {

struct PoolOptions {
  space::SpaceOptions space;
  txg::TxgOptions txg;
  // Where sync work runs; nullptr: a pool-owned thread pool with one thread
  // per allocator. Must outlive the pool.
  txg::Executor* executor = nullptr;
  // Called after each successful txg sync of an imported pool with the txg,
  // the time its sync took (ns) and the bytes it wrote, on the txg driver
  // thread, in txg order. It must not Hold or WaitSynced (see TxgManager).
  // May be empty.
  std::function<void(Txg, uint64_t, uint64_t)> on_synced;
  // Testing aid (like ZFS's metaslab_force_ganging): every block whose
  // allocated size is above this many bytes is stored as a gang block even
  // when contiguous room exists. 0: gang blocks only when none exists.
  uint64_t force_gang_above = 0;
  // Benchmark baseline only (poolfs-bench sync): datasets sync one after
  // another, waiting for each, and a dnode's blocks are written by one task
  // (no shares), as OpenZFS synced before it made dataset sync parallel.
  // Slower; the on-disk result is the same.
  bool serial_dataset_sync = false;
  // How the vdev files are opened (vdev.*; FileDevice's theory comment).
  VdevOptions vdev;
  // Whether a read that finds a bad copy of a block rewrites it from a good
  // one (zio::Zio's self-healing). Off for a read-only mount, which must
  // write nothing.
  bool repair_reads = true;
  // A read-only import: the vdev files are opened read-only, every change
  // (a Tx's assign) fails with ReadOnly, nothing syncs, reads repair
  // nothing, and damaged labels are left as they are.
  bool read_only = false;
  // A recovery import (uberblock_choice.h): when the newest txg's tree does
  // not verify, open the newest older one that does, within the rewind
  // window. Only with read_only (InvalidArgument otherwise); import_notes()
  // says which txg it chose.
  bool rewind = false;
  // Idle objects kept in memory per dataset; 0: from the cache's bound
  // (object_cache_limit()). Tests set it low to make objects come and go.
  uint64_t object_cache_limit = 0;
  // Memory of written dirty data blocks kept for new ones, at most
  // (dmu::BlockBuffers): a stream of writes then reuses it instead of
  // faulting in fresh pages.
  uint64_t block_buffer_retain_bytes = uint64_t{64} << 20;
  // The cache of synced blocks the datasets read through (arc.*).
  arc::ArcOptions arc;
  // Reads ahead of sequential readers of the datasets' objects (dmu.prefetch_*).
  dmu::ReadAheadOptions read_ahead;
};

struct CreateOptions {
  std::string name = "pool";
  uint32_t ashift = 12;
  bool force = false;  // overwrite a non-empty file or an existing pool
  // The on-disk format: the newest unless an older one is asked for (tests
  // of what a pool made by an older build does).
  uint32_t format_version = vdev::kFormatVersion;
};

// One dataset's figures (Pool::ListDatasets).
struct DatasetFigures {
  uint64_t id = 0;
  std::string name;  // full: "tank/home"
  Txg created;
  int64_t creation_time = 0;
  uint64_t used = 0;
  uint64_t referenced = 0;
  uint64_t available = 0;
  uint64_t objects = 0;
  uint64_t logical = 0;   // logical bytes of its blocks
  uint64_t physical = 0;  // their stored bytes
  double compressratio = 1.0;
  std::string mountpoint;        // "/" for the root, "/home" for tank/home
  uint64_t usedbysnapshots = 0;  // held by its snapshots alone (in `used`)
  // What it references of its own: `referenced`, less for a clone what it
  // still shares with its origin (in `used`).
  uint64_t usedbydataset = 0;
  std::string origin;  // a clone's: "tank/a@s"; else empty
};

// One snapshot's figures (Pool::ListSnapshots).
struct SnapshotFigures {
  uint64_t id = 0;
  std::string name;  // "tank/home@monday"
  Txg txg;
  int64_t creation_time = 0;
  uint64_t used = 0;        // what destroying it would free
  uint64_t referenced = 0;  // its tree's allocated bytes
  uint64_t written = 0;     // of those, written since the snapshot before it
  uint64_t guid = 0;        // see "Snapshots" above: nonzero, distinct in its dataset
};

// One snapshot to take (Pool::TakeSnapshots).
struct SnapshotRequest {
  std::string name;  // "POOL/PATH@NAME"
  // Its guid; 0: a random one. A given one must not be that of another
  // snapshot of the dataset.
  uint64_t guid = 0;
  int64_t creation_time = 0;  // seconds since the epoch; 0: now
};

// A property's effective value and where it comes from.
struct PropertyValue {
  std::string name;
  std::string value;   // as `get` shows it
  std::string source;  // "local", "default", "inherited from X", "-"
};

struct PoolStats {
  Txg imported;  // the txg the import opened
  Txg last_synced;
  Txg open;
  space::SpaceStats space;
  std::vector<uint64_t> checksum_errors;  // per vdev
  // Bad copies rewritten from good ones, and copies writes left out for
  // want of room, since the import (zio.h).
  uint64_t repairs = 0;
  uint64_t copy_shortfalls = 0;
  uint32_t format_version = 0;  // the pool's on-disk format
  std::vector<std::string> datasets;
  uint64_t syncs = 0;
  // Passes of the MOS sync (see above): of the last txg synced, and the
  // most any txg of this import needed.
  uint32_t mos_passes_last = 0;
  uint32_t mos_passes_max = 0;
  // Blocks the last sync's late passes left for the next txg to free.
  uint64_t deferred_frees = 0;
  // The block reference table (zio/block_ref_table.h): blocks shared by
  // clones, and what the clones would have cost as copies.
  zio::BlockRefTable::Stats clones;
  arc::ArcStats arc;  // the cache of an imported pool (zeros otherwise)
  dmu::ReadAheadStats read_ahead;
};

// One txg's sync, as Pool::SyncStats reports it.
struct SyncRecord {
  Txg txg;
  uint64_t duration_ns = 0;     // the sync callback, start to durable
  uint64_t dirty_bytes = 0;     // what the txg's changes dirtied (TxgManager)
  uint64_t bytes_written = 0;   // to the vdevs, by this sync
  uint64_t blocks_written = 0;  // blocks written, by this sync
  uint32_t threads = 0;         // sync threads in effect (Executor::threads)
  uint32_t datasets = 0;        // datasets that synced
  // Per strand (allocator): time its tasks ran, summed.
  std::vector<uint64_t> strand_busy_ns;
};

// The syncs of an imported pool: the last few, and totals since import.
struct PoolSyncStats {
  static constexpr size_t kRecent = 128;
  std::vector<SyncRecord> recent;  // at most kRecent, oldest first
  uint64_t syncs = 0;              // successful syncs since import
  uint64_t sync_ns_total = 0;      // their durations, summed
  // The vdevs' I/O since import (zio): every write and read, sync or not.
  uint64_t bytes_written = 0, blocks_written = 0;
  uint64_t bytes_read = 0, blocks_read = 0;
};

class Pool {
 public:
  // Creates a pool on files (each created sparse with `size` bytes; an
  // existing non-empty file or pool is refused unless options.force) and
  // writes its first txg. The pool is left exported.
  static Status Create(const std::vector<std::string>& paths, uint64_t size,
                       const CreateOptions& options);
  // Imports the pool on `paths` (all its vdevs, any order).
  static Result<std::unique_ptr<Pool>> Import(const std::vector<std::string>& paths,
                                              const PoolOptions& options);

  // The same over devices already open (tests, fault injection), which the
  // caller keeps alive for as long as the pool is imported.
  static Status CreateOnDevices(const std::vector<vdev::BlockDevice*>& devs,
                                const std::vector<std::string>& paths,
                                const CreateOptions& options);
  static Result<std::unique_ptr<Pool>> ImportDevices(const std::vector<vdev::BlockDevice*>& devs,
                                                     const PoolOptions& options);

  ~Pool();

  // Syncs everything dirty, stops the txg driver and closes the vdevs (and
  // their locks). Returns the final sync's status; a suspended pool syncs
  // nothing more and returns why it is suspended. Idempotent.
  Status Export();

  const std::string& name() const { return config_.name; }
  // Dataset names are full ("tank/home"); a single component other than
  // the pool's name is short for a child of the root dataset ("data" is
  // "tank/data"), as the pool's own tests and tools name them.
  //
  // The dataset called `name`, or nullptr.
  dmu::ObjectSet* dataset(std::string_view name) EXCLUDES(mu_);
  // The pool's block I/O, for walks of synced trees (a snapshot's, by
  // send); valid while the pool is open.
  zio::Zio* zio() const { return zio_.get(); }
  // The dataset created with the pool, named after it.
  dmu::ObjectSet* root_dataset() { return dataset(config_.name); }
  // The live dataset with id `id`, or nullptr.
  dmu::ObjectSet* dataset_by_id(uint64_t id) EXCLUDES(mu_);
  // The id of dataset `name`: NotFound, InvalidArgument for a bad name.
  Result<uint64_t> DatasetId(std::string_view name) const EXCLUDES(mu_);
  // Creates a dataset (it reaches disk with the next txg). It belongs to
  // the open txg: a Tx assigned before this returned may be of an earlier
  // one, and cannot change it (ObjectSet::SetFirstTxg).
  Result<dmu::ObjectSet*> CreateDataset(std::string_view name) EXCLUDES(mu_);
  // The same with properties set locally, and with `parents` its missing
  // ancestors first (an existing `name` is then no error). Returns the
  // txg that holds the change. InvalidArgument for a bad name or property
  // (naming it), NotFound for a missing parent, AlreadyExists. All or
  // nothing.
  Result<Txg> CreateDataset(std::string_view name,
                            const std::vector<std::pair<std::string, std::string>>& props,
                            bool parents) EXCLUDES(mu_);
  // Destroys `name` (with `recursive`, its descendants too) and frees its
  // blocks in the sync of the returned txg (see above). InvalidArgument
  // for the root, NotEmpty for children without `recursive`, Busy when the
  // busy check says it or a descendant is in use, NotFound.
  Result<Txg> DestroyDataset(std::string_view name, bool recursive) EXCLUDES(mu_);
  // Renames or moves `from` to `to` within the pool; descendants follow.
  // InvalidArgument (the root, another pool, below itself), NotFound (from,
  // to's parent), AlreadyExists (to).
  Result<Txg> RenameDataset(std::string_view from, std::string_view to) EXCLUDES(mu_);
  // Sets property `prop` locally on `name` (validated: InvalidArgument for
  // an unknown or read-only property or a bad value, naming it; NoSpace
  // for a reservation the pool cannot give).
  Result<Txg> SetProperty(std::string_view name, std::string_view prop, std::string_view value)
      EXCLUDES(mu_);
  // Removes a local setting of `prop`: it inherits (or defaults) again.
  Result<Txg> InheritProperty(std::string_view name, std::string_view prop) EXCLUDES(mu_);
  // The named properties of `name` ({"all"}: every one, in table order).
  Result<std::vector<PropertyValue>> GetProperties(std::string_view name,
                                                   const std::vector<std::string>& props)
      EXCLUDES(mu_);
  // The effective settable properties of dataset `id`: NotFound.
  Result<DatasetProps> EffectiveProps(uint64_t id) const EXCLUDES(mu_);
  // Calls `fn(id, props)` after every change of a dataset's effective
  // properties (a set or inherit on it or an ancestor, a rename that moves
  // it), outside the pool's locks, from the thread making the change.
  // Returns a handle for Unwatch. `fn` may call the pool's readers.
  uint64_t WatchProperties(std::function<void(uint64_t, const DatasetProps&)> fn)
      EXCLUDES(watch_mu_);
  void UnwatchProperties(uint64_t handle) EXCLUDES(watch_mu_);
  // Who says a dataset is in use (the POSIX layer: open files, a mount of
  // it): Destroy returns Busy for a dataset for which it returns true.
  // Called with the pool's lock held: it must not call the pool. nullptr:
  // nothing is busy.
  void SetBusyCheck(std::function<bool(uint64_t id)> busy) EXCLUDES(mu_);
  // Snapshots (see "Snapshots" above). Snapshot takes `names`
  // ("POOL/PATH@NAME"; with `recursive`, each descendant's too) in the
  // returned txg, all or none: AlreadyExists, NotFound, InvalidArgument
  // (a bad name; two of one dataset). DestroySnapshot marks `name`
  // ("DATASET@FIRST%LAST": the snapshots from FIRST to LAST; with
  // `recursive`, those names of every descendant that has them) destroyed
  // in the returned txg, whose sync frees what only they held (Busy for the
  // origin of a clone whose destroy has not synced yet). A snapshot
  // is renamed by RenameDataset ("tank/a@x" to "tank/a@y" or "@y"; it stays
  // with its dataset). ListSnapshots:
  // those of `root` (with `recursive`, of its descendants; empty: the
  // pool), by dataset in ListDatasets order, then oldest first, as of the
  // last sync (a snapshot not yet taken is not listed, nor found by name).
  Result<Txg> Snapshot(const std::vector<std::string>& names, bool recursive) EXCLUDES(mu_);
  // The same for one snapshot per request, each with its guid and creation
  // time given or chosen (Snapshot is this with random guids): all or none,
  // with Snapshot's refusals, and InvalidArgument for a guid that another
  // snapshot of the dataset has (one being taken or destroyed in a txg
  // not yet synced included).
  Result<Txg> TakeSnapshots(const std::vector<SnapshotRequest>& requests) EXCLUDES(mu_);
  Result<Txg> DestroySnapshot(std::string_view name, bool recursive) EXCLUDES(mu_);
  Result<std::vector<SnapshotFigures>> ListSnapshots(std::string_view root, bool recursive) const
      EXCLUDES(mu_);
  // Rolls the dataset of snapshot `name` back to it, in the returned txg:
  // every change since is discarded (the blocks born after the snapshot
  // are freed; those that died since are the dataset's again). The
  // snapshot must be the dataset's newest, unless `destroy_later`, which
  // destroys the later ones in the same txg (InvalidArgument naming them
  // otherwise). Busy when the busy check says the dataset is in use.
  // Once the txg syncs, dataset() gives a new object set (the old one is
  // kept, unused, until export).
  Result<Txg> Rollback(std::string_view name, bool destroy_later) EXCLUDES(mu_);
  // Clones (see "Clones" above). Clone makes dataset `name` (its parent
  // exists) from snapshot `origin`, with `props` set locally, in the
  // returned txg: NotFound, AlreadyExists, InvalidArgument (a bad name or
  // property; another pool). Promote makes clone `name` the owner of its
  // origin and the snapshots before it, and its origin's dataset a clone:
  // InvalidArgument when it is no clone, AlreadyExists when one of the
  // snapshots to move has the name of one of its own, Busy while another
  // change of either is pending.
  Result<Txg> Clone(std::string_view origin, std::string_view name,
                    const std::vector<std::pair<std::string, std::string>>& props) EXCLUDES(mu_);
  Result<Txg> Promote(std::string_view name) EXCLUDES(mu_);
  // Receives (send/receive.h; see "Receives" above). BeginReceive makes
  // the hidden dataset a receive writes into, in the returned txg (with
  // its object set, id, and the properties it writes with): for an
  // incremental stream, a clone of `base` ("POOL/PATH@NAME", the target's
  // newest snapshot), with the target's properties; for a full stream
  // (`base` empty) an empty one, with those of `props_of` (the target's
  // parent). FinishReceive makes what it received appear, in the
  // returned txg: a full stream's hidden dataset becomes `target` (whose
  // parent must exist and which must not: NotFound, AlreadyExists), an
  // incremental's replaces the head of `target` (whose newest snapshot
  // must still be its base, and unless `force` be unchanged since:
  // InvalidArgument; Busy when the busy check says it is in use or
  // another change of it is pending); in either case `snapshot` (the part
  // after the '@', with its guid and creation time) is taken of it in the
  // same txg. AbandonReceive destroys a hidden dataset (a failed receive).
  // A hidden dataset that an import finds (a receive the process did not
  // finish) is destroyed by a read-write import.
  struct ReceiveDataset {
    uint64_t id = 0;
    dmu::ObjectSet* os = nullptr;
    DatasetProps props;
  };
  Result<std::pair<Txg, ReceiveDataset>> BeginReceive(std::string_view base,
                                                      std::string_view props_of) EXCLUDES(mu_);
  Result<Txg> FinishReceive(uint64_t hidden, std::string_view target,
                            const SnapshotRequest& snapshot, bool force) EXCLUDES(mu_);
  Result<Txg> AbandonReceive(uint64_t hidden) EXCLUDES(mu_);
  // Resumable receives (`receive -s`): SaveReceiveState keeps a resume
  // token (send/resume_token.h) and the target's name with hidden dataset
  // `hidden`, in the returned txg; an import then keeps the dataset, the
  // target's receive_resume_token property shows the token (even while
  // the target of a full stream does not exist yet), and FindPartialReceive
  // finds it by the target's name.
  Result<Txg> SaveReceiveState(uint64_t hidden, std::string_view target, std::string_view token)
      EXCLUDES(mu_);
  struct PartialReceive {
    uint64_t id = 0;
    dmu::ObjectSet* os = nullptr;
    std::string token;
  };
  std::optional<PartialReceive> FindPartialReceive(std::string_view target) const EXCLUDES(mu_);
  // A read-only view of snapshot `name`'s object set (its state as of its
  // txg; nothing may change it; not to be used once the snapshot is
  // destroyed). NotFound.
  Result<std::unique_ptr<dmu::ObjectSet>> OpenSnapshot(std::string_view name) EXCLUDES(mu_);

  // `root` (empty: the root dataset) and with `recursive` its descendants,
  // parents before children, children by name, with their space figures
  // as of the last sync. NotFound, InvalidArgument.
  Result<std::vector<DatasetFigures>> ListDatasets(std::string_view root, bool recursive) const
      EXCLUDES(mu_);
  // Every live dataset's full name, in ListDatasets order.
  std::vector<std::string> datasets() const EXCLUDES(mu_);
  // A read-only view of dataset `name` as its last synced txg left it (its
  // root block then, as a snapshot would keep it; changes not yet synced
  // are not in it). Nothing holds its blocks: once the dataset changes,
  // the blocks it drops may be reused after TXG_DEFER_SIZE txgs, so use it
  // briefly, and expect Corruption if the dataset changed meanwhile.
  // NotFound, InvalidArgument.
  Result<std::unique_ptr<dmu::ObjectSet>> OpenSyncedDataset(std::string_view name) EXCLUDES(mu_);

  dmu::TxAssigner* assigner() { return txgs_.get(); }
  txg::TxgManager& txgs() { return *txgs_; }
  // The cache the datasets read through (imported pools only).
  arc::Arc* cache() { return arc_.get(); }
  // Changes the cache's bound (arc.max_bytes, live; 0: the default) and
  // with it the number of idle objects kept in memory (below).
  void SetCacheBytes(uint64_t max_bytes) EXCLUDES(mu_);
  // Idle objects each dataset keeps in memory (dnodes; the POSIX layer
  // bounds its inodes by the same number): as many as a tenth of the
  // cache's bound holds at kObjectBytes each (ZFS's default dnode share of
  // its ARC), at least 1024; PoolOptions::object_cache_limit when set. No
  // bound without a cache.
  static constexpr uint64_t kObjectBytes = 1536;  // a dnode and an inode, measured
  uint64_t object_cache_limit() const;
  // Decoded directory blocks the POSIX layer keeps beside the cache
  // (zap::LeafCache): as many 8 KiB blocks as a 64th of the cache's bound
  // holds, at least 64; PoolOptions::object_cache_limit when set (tests
  // make both small at once). No bound without a cache.
  static constexpr uint64_t kLeafBytes = 8192;
  uint64_t leaf_cache_limit() const;
  // Returns once txg (0: the open one) is durable.
  Status WaitSynced(Txg txg = Txg(0)) { return txgs_->WaitSynced(txg); }
  // Makes the pool sync one txg (an empty one if nothing else is dirty: it
  // moves the deferred frees and the intent log's state on) and waits for
  // it. A txg nobody held never syncs (txg_manager.h: empty txgs), so it
  // holds one. Not with a Tx held.
  Status SyncOnce();
  PoolStats Stats() const EXCLUDES(mu_);
  // The recent syncs and sync and I/O totals (pool_sync.cc).
  PoolSyncStats SyncStats() const EXCLUDES(sync_stats_mu_);

  // Scrub (scrub.h): starts one over the whole pool (AlreadyExists while
  // one runs; ReadOnly on a read-only import), stops it (NotFound when none
  // runs), and its state, which the pool directory keeps across imports (a
  // scrub running at export resumes at the next import).
  Status StartScrub();
  Status StopScrub();
  ScrubPhys ScrubStatus() const;
  // Rounds of the running scrub since it started or resumed (tests).
  uint64_t scrub_rounds() const;
  // The txg of the uberblock this import opened: the pool's state as it
  // was found on disk (after a crash, the txg it fell back to). Txg(0) for
  // a pool being created.
  Txg imported_txg() const { return imported_txg_; }
  // The intent log's storage (the zil layer owns what it holds). Each vdev
  // has a log area of vdev::kLogAreaSize bytes (vdev_layout.h), outside
  // the metaslabs; these write, read and flush one, at offsets within it,
  // outside any txg. WriteLogArea: ReadOnly on a read-only import,
  // InvalidArgument for a vdev or range outside the pool's areas.
  uint32_t vdev_count() const { return uint32_t(devs_.size()); }
  uint64_t guid() const { return pool_guid_; }
  Status WriteLogArea(uint32_t vdev, uint64_t off, std::span<const uint8_t> bytes);
  Status ReadLogArea(uint32_t vdev, uint64_t off, std::span<uint8_t> bytes) const;
  Status FlushLogArea(uint32_t vdev);
  // The data blocks an intent log's indirect write records name: written
  // early, in an open txg, by dmu::Dnode::WriteEarly, anywhere in the
  // pool. A pointer in the pool's format (zio::BlockPtrSize bytes); the
  // block such a pointer names, read and verified (Corruption when the
  // pointer does not decode or the block fails its checksum, the message
  // starting with `where`); and every vdev's writes made durable.
  std::string EncodeLogBlockPtr(const zio::BlockPtr& bp) const;
  Result<std::string> ReadLogBlock(std::string_view encoded, std::string_view where);
  Status FlushLogBlocks();
  // Makes the log area's storage exist (BlockDevice::FillHoles), so that
  // log writes overwrite it (nothing to do on a read-only import).
  Status PrepareLogArea(uint32_t vdev);
  // The log's state in the uberblock this import opened (empty: no log
  // block was needed).
  const LogState& imported_log() const { return imported_log_; }
  // Gives each txg's uberblock its log state: `state(t)` is called in the
  // sync of t after t's blocks are written and before its uberblock, and
  // `durable(t)` (may be empty) once that uberblock is on disk, both on the
  // txg driver thread; neither may wait for a sync. Until one is set,
  // every uberblock keeps the imported state, so that an import which does
  // not replay the log (a tool, a read-only mount) leaves it for one that
  // does.
  void SetLogStateSource(std::function<LogState(Txg)> state,
                         std::function<void(Txg)> durable = nullptr) EXCLUDES(log_mu_);
  // What the import did beyond opening the newest txg, one line each, for
  // the log: the rewind's choice ("rewound to txg N (the newest, txg M, does
  // not verify: ...)"), labels it rewrote.
  const std::vector<std::string>& import_notes() const { return import_notes_; }

 private:
  struct Dataset {
    DatasetEntry entry;
    std::unique_ptr<dmu::ObjectSet> os;
    // The txg that destroys it (0: live): out of the namespace, still in
    // the directories of earlier txgs.
    Txg destroyed;
    // The txg of its newest snapshot (0: none; the sync thread changes
    // it, between dataset syncs): a block born at or before it that the
    // dataset stops referencing goes to `dying` (its sync tasks add at
    // once), then to its deadlist, instead of being freed.
    std::atomic<uint64_t> prev_snap{0};
    util::Mutex dying_mu;
    std::vector<zio::BlockPtr> dying GUARDED_BY(dying_mu);
    Deadlist deadlist;  // under the pool's mu_
    // A rollback asked for (Rollback): its txg (0: none) and the snapshot.
    Txg rollback;
    uint64_t rollback_to = 0;
    // A promote asked for (Promote): its txg (0: none).
    Txg promote;
    // A received head to take (FinishReceive): its txg (0: none) and the
    // hidden dataset that holds it.
    Txg receive;
    uint64_t receive_from = 0;
  };
  // A receive's dataset (BeginReceive): out of every name lookup and list.
  static bool Hidden(const Dataset& ds) { return IsReceiveName(ds.entry.name); }
  struct Snap {
    SnapshotEntry entry;  // root a hole until the sync of entry.txg takes it
    Txg destroyed;        // 0: live
    // Its share of what its dataset dropped before it was taken, not yet
    // in a deadlist bucket (the sync of its txg stores them).
    std::vector<zio::BlockPtr> pending;
  };
  Pool() = default;
  // What a 1/fraction share of the cache's bound holds of items of
  // item_bytes, at least `floor`; PoolOptions::object_cache_limit when set;
  // no bound without a cache.
  uint64_t CacheShare(uint64_t fraction, uint64_t item_bytes, uint64_t floor) const;
  static Result<std::unique_ptr<Pool>> Open(std::vector<vdev::BlockDevice*> devs,
                                            std::vector<std::unique_ptr<vdev::BlockDevice>> owned,
                                            const PoolOptions& options);
  // Builds space_ and zio_ for the vdevs (from scratch: before each import
  // attempt).
  void BuildIo();
  // InvalidArgument for a rewind without read_only.
  static Status CheckImportOptions(const PoolOptions& options);
  // Tries to open the pool at `ub`; `strict` (a rewind) also refuses a
  // dataset with damaged dnode blocks (uberblock_choice.h).
  Status OpenAt(const vdev::Uberblock& ub, bool strict) EXCLUDES(mu_);
  Status SyncTxg(Txg t) EXCLUDES(mu_);
  // Step 1 of the sync (above); adds each task's run time to busy_ns[its
  // strand] and counts the datasets synced in *datasets.
  Status SyncDatasets(Txg t, std::vector<std::atomic<uint64_t>>& busy_ns, uint32_t* datasets)
      EXCLUDES(mu_);
  Status StoreSpaceMap(dmu::Tx& tx, const space::Metaslab& ms) EXCLUDES(mu_);
  Status WriteDirectory(dmu::Tx& tx) REQUIRES(mu_);
  // Stores the block reference table when it changed (its object made on
  // first use): the 16 KiB blocks whose bytes differ from what was stored.
  Status StoreRefTable(dmu::Tx& tx) EXCLUDES(mu_);
  // Whether the directory of txg t lists `ds`: its root is written and it
  // is not destroyed by t.
  static bool InDirectory(const Dataset& ds, Txg t);
  // Frees the blocks of the datasets destroyed in tx's txg (their last
  // changes synced) and forgets them (pool_datasets.cc).
  Status FreeDestroyed(dmu::Tx& tx) EXCLUDES(mu_);
  // Snapshots (pool_snapshots.cc). Snapshot and TakeSnapshots: the
  // snapshots `requests` name, with `recursive` those of every descendant
  // too (only with random guids).
  Result<Txg> AddSnapshots(const std::vector<SnapshotRequest>& requests, bool recursive)
      EXCLUDES(mu_);
  // A random guid that no snapshot of dataset `dataset` has.
  uint64_t NewGuid(uint64_t dataset) const REQUIRES(mu_);
  // In the sync of t, after the datasets: CaptureSnapshots makes the
  // snapshots of t; StoreDeadlists puts every dropped block in its
  // deadlist bucket; DestroySnapshots frees what the snapshots destroyed in
  // t alone held and merges their deadlists.
  Status CaptureSnapshots(Txg t) EXCLUDES(mu_);
  Status StoreDeadlists(dmu::Tx& tx) EXCLUDES(mu_);
  Status DestroySnapshots(dmu::Tx& tx) EXCLUDES(mu_);
  // Then rolls back the datasets whose rollback is of t (after the later
  // snapshots went), and promotes the clones whose promote is of t.
  Status RollBack(dmu::Tx& tx) EXCLUDES(mu_);
  // The sync's part of FinishReceive for an incremental stream, before
  // the snapshots of the txg are captured (pool_receive.cc).
  Status TakeReceivedHeads(dmu::Tx& tx) EXCLUDES(mu_);
  // The hidden dataset that keeps a resumable receive into `full`.
  Dataset* PartialReceiveInto(std::string_view full) const REQUIRES(mu_);
  // Import's: destroys the hidden datasets of unfinished receives that
  // keep no resume state.
  Status DropUnfinishedReceives() EXCLUDES(mu_);
  // A new snapshot `name` of `ds` in txg t (AddSnapshots' last step, once
  // every check passed).
  void NewSnap(Dataset* ds, std::string name, Txg t, uint64_t guid, int64_t creation_time)
      REQUIRES(mu_);
  // The checks AddSnapshots makes of snapshot `name` (after the '@') of
  // `ds` in txg t with `guid` (0: a new one).
  Status CanSnapshot(const Dataset& ds, std::string_view name, Txg t, uint64_t guid) const
      REQUIRES(mu_);
  Status PromoteClones(dmu::Tx& tx) EXCLUDES(mu_);
  // The txg of the origin of `ds` (0: it is no clone): the key its
  // deadlists count from, after 0.
  uint64_t BaseTxg(const Dataset& ds) const REQUIRES(mu_);
  // The bucket keys of dataset `id`'s deadlists after 0, ascending: its
  // base and the txgs of its snapshots (doomed ones too).
  std::vector<uint64_t> BucketKeys(uint64_t id) const REQUIRES(mu_);
  // The full names of the live clones of snapshot `snap`, sorted.
  std::vector<std::string> ClonesOf(uint64_t snap) const REQUIRES(mu_);
  // Ok unless snapshot `s` has clones: NotEmpty naming the live ones, Busy
  // for one being destroyed (`what`: what is refused).
  Status NoClones(const Snap& s, const std::string& what) const REQUIRES(mu_);
  // Busy when a promote of `ds`, or of a clone of one of its snapshots, is
  // pending: `what` is what is refused.
  Status NotPromoting(const Dataset& ds, const std::string& what) const REQUIRES(mu_);
  // Reads the block pointers of deadlist bucket `b` (`what`: for errors).
  Result<std::vector<zio::BlockPtr>> ReadBucket(const DeadBucket& b, const std::string& what)
      REQUIRES(mu_);
  // Makes `os` the object set of `ds`: it takes its dirty buffers from the
  // pool's, reads through the cache, keeps the pool's share of idle
  // dnodes, and routes the blocks it drops (SpaceCounter::release) to
  // their frees or deadlists.
  void Adopt(Dataset* ds, std::unique_ptr<dmu::ObjectSet> os);
  // Adds `blocks` to deadlist `dl` of dataset `dataset`, in buckets by the
  // txgs of its snapshots.
  Status AddToDeadlist(dmu::Tx& tx, uint64_t dataset, std::vector<zio::BlockPtr> blocks,
                       Deadlist* dl) REQUIRES(mu_);
  // The snapshots of dataset `id` already taken (their txg's sync made
  // them), oldest first: the live ones, and with `with_doomed` those
  // destroyed in a txg whose sync has not destroyed them yet, which the
  // deadlists still count (bucket keys, neighbours, space).
  std::vector<Snap*> SnapshotsOf(uint64_t id, bool with_doomed = false) const REQUIRES(mu_);
  // Whether the directory of txg t lists snapshot `s`.
  static bool InDirectory(const Snap& s, Txg t);
  // "tank/a@s": the live snapshot; NotFound, InvalidArgument.
  Result<Snap*> ResolveSnapshot(std::string_view name) const REQUIRES(mu_);
  // The same, or for "tank/a@first%last" the snapshots from first to last
  // (an empty end: the oldest, the newest), oldest first.
  Result<std::vector<Snap*>> ResolveRange(std::string_view name) const REQUIRES(mu_);
  // Bytes `ds` holds that were written since its snapshot `snap`: NotFound.
  Result<uint64_t> WrittenSince(const Dataset& ds, std::string_view snap) const REQUIRES(mu_);
  Result<Txg> RenameSnapshot(std::string_view from, std::string_view to) EXCLUDES(mu_);
  // GetProperties of snapshot `name`: name, type, creation, createtxg,
  // guid, used, referenced, written, clones ({"all"}: each).
  Result<std::vector<PropertyValue>> SnapshotProperties(std::string_view name,
                                                        const std::vector<std::string>& props) const
      REQUIRES(mu_);
  // The figures of snapshots[i] of `ds` (`snaps`: SnapshotsOf it).
  SnapshotFigures FiguresOf(const Dataset& ds, const std::vector<Snap*>& snaps, size_t i) const
      REQUIRES(mu_);
  // Loads the snapshots and deadlists of the directory just read (import).
  Status LoadSnapshots() REQUIRES(mu_);
  // What snapshots hold of dataset `id` that it no longer references.
  uint64_t UsedBySnapshots(uint64_t id) const REQUIRES(mu_);

  // The tree (pool_datasets.cc). Resolve: the live dataset `name` names;
  // NotFound naming the first missing component, InvalidArgument.
  Result<Dataset*> Resolve(std::string_view name) const REQUIRES(mu_);
  Dataset* Find(uint64_t id) const REQUIRES(mu_);
  std::string FullName(const Dataset& ds) const REQUIRES(mu_);
  std::vector<Dataset*> Children(uint64_t id) const REQUIRES(mu_);  // by name
  // `ds` and its descendants, parents before children, children by name.
  void Subtree(Dataset* ds, std::vector<Dataset*>* out) const REQUIRES(mu_);
  // Properties to set locally, parsed (canonical values): InvalidArgument
  // naming a bad one or one given twice.
  Result<std::map<std::string, std::string, std::less<>>> ParseLocal(
      const std::vector<std::pair<std::string, std::string>>& props) const;
  // NoSpace (`what` says what is refused) when `local` sets a reservation
  // larger than what a new child of `parent` has available.
  Status ReservationFits(const std::map<std::string, std::string, std::less<>>& local,
                         const Dataset& parent, const std::string& what) const REQUIRES(mu_);
  // The full name `name` stands for (expands the single-component form).
  std::string Expand(std::string_view name) const;
  // A new dataset object under `parent`, in `t`, unlisted, over `os` (an
  // empty object set, or a clone's over its origin's root); no Tx of a txg
  // before `t` may change it.
  std::unique_ptr<Dataset> NewDataset(uint64_t parent, std::string component, Txg t,
                                      std::unique_ptr<dmu::ObjectSet> os) REQUIRES(mu_);
  // The effective value of settable property `def` for `ds`, and its source.
  std::pair<std::string, std::string> Effective(const Dataset& ds, const PropertyDef& def) const
      REQUIRES(mu_);
  DatasetProps PropsOf(const Dataset& ds) const REQUIRES(mu_);
  // Every live dataset's figures, by id.
  std::map<uint64_t, DatasetFigures> Figures() const REQUIRES(mu_);
  // Applies the new properties of every dataset in `changed` (the copies
  // its blocks get) and notifies the watchers.
  void NotifyProps(const std::vector<std::pair<uint64_t, DatasetProps>>& changed)
      EXCLUDES(watch_mu_, mu_);
  // InvalidArgument when the pool's format cannot hold what a property asks
  // (copies above 1 in format 1).
  Status CheckFormatHolds(const PropertyDef& def, std::string_view value) const;
  // The effective properties of `ds` and its descendants.
  std::vector<std::pair<uint64_t, DatasetProps>> SubtreeProps(Dataset* ds) const REQUIRES(mu_);
  Status WriteUberblocks(Txg t, const zio::BlockPtr& mos_root) EXCLUDES(log_mu_);
  // InvalidArgument unless [off, off + len) lies in the log area of `vdev`.
  Status CheckLogRange(uint32_t vdev, uint64_t off, uint64_t len) const;
  // Stores the scrub's state with the next txg (Scrub's save hook).
  void SaveScrub(const ScrubPhys& state) EXCLUDES(mu_);

  PoolConfig config_;
  std::vector<vdev::BlockDevice*> devs_;
  std::vector<std::unique_ptr<vdev::BlockDevice>> owned_devs_;
  std::vector<vdev::LabelHeader> labels_;
  std::vector<vdev::VdevLayout> layouts_;
  // The pool's on-disk format (its labels'): how its block pointers are
  // encoded, and the version its uberblocks carry.
  uint32_t format_version_ = vdev::kFormatVersion;
  uint64_t pool_guid_ = 0;
  uint64_t guid_sum_ = 0;
  PoolOptions options_;
  std::unique_ptr<txg::Executor> owned_executor_;
  txg::Executor* executor_ = nullptr;
  std::unique_ptr<space::SpaceManager> space_;
  // Before the pipeline, which asks it at every free of a data block.
  std::unique_ptr<zio::BlockRefTable> ref_table_;
  std::unique_ptr<zio::Zio> zio_;
  // Before the object sets, which take their dirty buffers from the first
  // and read through the second.
  std::unique_ptr<dmu::BlockBuffers> block_buffers_;
  std::unique_ptr<arc::Arc> arc_;
  // After the cache (its buffers) and the pipeline it reads through, before
  // the object sets whose dnodes ask it.
  std::unique_ptr<dmu::ReadAhead> read_ahead_;
  std::unique_ptr<dmu::ObjectSet> mos_;
  std::unique_ptr<txg::TxgManager> txgs_;
  std::unique_ptr<Scrub> scrub_;  // after txgs_, which its saves use
  bool exported_ = false;
  Txg imported_txg_;
  std::vector<std::string> import_notes_;  // import_notes()
  LogState imported_log_;                  // imported_log()
  mutable util::Mutex log_mu_;
  std::function<LogState(Txg)> log_state_ GUARDED_BY(log_mu_);
  std::function<void(Txg)> log_durable_ GUARDED_BY(log_mu_);
  std::atomic<uint32_t> mos_passes_last_{0};
  std::atomic<uint32_t> mos_passes_max_{0};
  // What SyncStats reports; written by the driver after each sync.
  mutable util::Mutex sync_stats_mu_;
  std::deque<SyncRecord> recent_syncs_ GUARDED_BY(sync_stats_mu_);
  uint64_t sync_count_ GUARDED_BY(sync_stats_mu_) = 0;
  uint64_t sync_ns_total_ GUARDED_BY(sync_stats_mu_) = 0;

  mutable util::Mutex mu_;
  PoolDirectory dir_ GUARDED_BY(mu_);         // dataset roots as of the last sync
  SyncedRoots synced_roots_ GUARDED_BY(mu_);  // the last synced txg's tree (scrub)
  // Every dataset by id: the live ones and those destroyed in a txg not yet
  // synced.
  std::map<uint64_t, std::unique_ptr<Dataset>> datasets_ GUARDED_BY(mu_);
  // Destroyed datasets whose blocks are freed (see above).
  std::vector<std::unique_ptr<Dataset>> destroyed_ GUARDED_BY(mu_);
  // Every snapshot by id: the live ones, those of a txg not yet synced and
  // those destroyed in one not yet synced.
  std::map<uint64_t, std::unique_ptr<Snap>> snapshots_ GUARDED_BY(mu_);
  // Object sets a rollback replaced (with its txg, for their SyncDone):
  // pointers to them stay valid until export.
  std::vector<std::pair<Txg, std::unique_ptr<dmu::ObjectSet>>> rolled_back_ GUARDED_BY(mu_);
  std::function<bool(uint64_t)> busy_ GUARDED_BY(mu_);
  mutable util::Mutex watch_mu_;  // after mu_, never both
  std::map<uint64_t, std::function<void(uint64_t, const DatasetProps&)>> watchers_
      GUARDED_BY(watch_mu_);
  uint64_t next_watcher_ GUARDED_BY(watch_mu_) = 1;
  // Per metaslab (vdev, index): its MOS object and what was last stored.
  struct StoredMap {
    uint64_t object = 0;
    uint64_t generation = 0;
    uint64_t frozen = 0;
    uint64_t length = 0;
  };
  std::map<std::pair<uint32_t, uint64_t>, StoredMap> maps_ GUARDED_BY(mu_);
  bool dir_dirty_ GUARDED_BY(mu_) = false;
  std::string ref_table_stored_;  // its encoding as last stored (sync thread only)
};

}  // namespace poolfs::core::pool
