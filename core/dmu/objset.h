// ObjectSet: a flat namespace of objects (a dataset, or the pool's MOS),
// stored as the dnodes of its metadnode under one root block.
//
// Theory
// ------
// Object 0, the metadnode, holds every other object's 512-byte dnode in its
// 16 KiB data blocks (object id / 32 is the block). The root block
// (ObjsetPhys) holds the metadnode's dnode and the object counts; its
// pointer is what the pool stores (the uberblock for the MOS, the pool
// directory for a dataset).
//
// Dnodes are loaded on first use into a bounded cache (util::ObjectCache,
// SetDnodeLimit): callers hold a DnodeRef while they use one, and a dnode
// that nobody holds and no unsynced txg has changed (Dnode::Idle) may be
// dropped, to be loaded again from its metadnode slot, which by then holds
// everything it had. Each txg keeps a list of the dnodes it dirtied (plain
// pointers: a dirty dnode stays until SyncDone). A sync of txg t:
//   1. SyncTasks(t, n, first): the dirty dnodes split into n lists by
//      object id (rotated by `first`, so that small sets synced together
//      spread over the strands), a task per list; task i writes its dnodes
//      through allocator i (the executor runs it on allocator i's strand).
//      A dnode with many dirty blocks is written in shares, one task per
//      strand, unless split_large is false (one task writes it whole, the
//      sync as it was before shares: a baseline for benchmarks).
//   2. FinishSync(t): every synced dnode's DnodePhys goes into its slot in
//      the metadnode, the metadnode syncs, and the root block is written.
//   3. SyncDone(t), once t is durable: the dnodes forget t.
// The MOS runs 1–2 several times in one txg (each pass may dirty more, see
// pool.h); blocks born in the same txg are rewritten in place, so passes
// converge.
//
// Object ids come from an ObjectAllocator (object_allocator.h: the exact
// free set, chunks per thread, the backfill policy). Open rebuilds it from
// the metadnode's fill counts: each metadnode block pointer (type dnodes)
// counts the allocated dnodes under it, so full blocks and holes are known
// without reading them; only partly full blocks are read. Ids freed in txg
// f return to the free set when the sync of f starts (every Tx of f has
// committed, so no older txg can get them). The counts in the root block
// are those of the end of the txg it closes. Claim makes an object with an
// id (and generation) of the caller's instead, which the allocator takes
// out of its free set, chunks and pending frees, so no create gets it (a
// receive recreates its sender's objects so).
//
// Space. Every block tree of the set (the metadnode's and each object's)
// counts its block writes and frees into the set's SpaceCounter as it makes
// them, all in sync context; FinishSync stores the totals of the txg in the
// root block (ObjsetPhys::space), so a dataset's referenced bytes are kept
// exactly without a walk. space() is that of the last root written, plus
// the root block itself. A root block of version 1 has no totals: Open
// counts them once by a walk (objset_walk.h), and the next sync stores them;
// when the walk fails on damage, the totals start from zero (inexact, never
// below zero) rather than refuse the set.
//
// Failures. Each open-context change (Create, Free, Write, PutBlock,
// Truncate, Punch, SetBonus, SetBlockSize, GrowBlockSize) is made whole
// or, failing, not at all: it looks up (and may read) everything it needs
// first, and a dnode's changes are all or nothing (dnode.h). Each change
// made is counted in its Tx
// (Tx::Dirtied), so a Tx knows whether it changed anything (dmu/tx.h: a
// Tx that did and then ends without Commit is abandoned). A Create whose
// dnode cannot be loaded gives its id back.
//
// Callers serialize their changes to one object across transactions: a
// change made under a Tx of txg t after another under t+1 would be lost when
// t+1's copy of the block (taken before it) lands. So whoever changes an
// object holds its own lock from Tx::Assign to Commit (the POSIX layer's
// per-file lock; ZFS's range locks): then one object's changes reach txgs
// in the order they were made.
//
// Thread safety: open-context calls are thread-safe; the sync calls are made
// by one thread at a time (tasks of one sync run in parallel).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dmu/dnode.h"
#include "dmu/dnode_phys.h"
#include "dmu/object_allocator.h"
#include "dmu/objset_walk.h"
#include "dmu/shared_block.h"
#include "dmu/tx.h"
#include "poolfs/status.h"
#include "util/mutex.h"
#include "util/object_cache.h"

namespace poolfs::core::dmu {

inline constexpr uint32_t kDefaultBlockSize = 128 * 1024;

// A piece of a sync: writes one list of dirty dnodes through `allocator`.
struct SyncTask {
  size_t allocator = 0;
  std::function<Status()> fn;
};

class ObjectSet {
 public:
  // A new, empty object set; its first FinishSync writes it.
  ObjectSet(zio::Zio* zio, ObjsetType type, std::string name);
  // Opens the object set whose root block is `root`: IOError or Corruption.
  static Result<std::unique_ptr<ObjectSet>> Open(zio::Zio* zio, const zio::BlockPtr& root,
                                                 std::string name);
  ~ObjectSet();

  const std::string& name() const { return name_; }
  ObjsetType type() const { return type_; }
  // The longest bonus an object here holds (the pool format's, dnode_phys.h).
  size_t max_bonus() const { return MaxBonus(zio_->format()); }
  // The txg the object set was created in (0: an older one). Set once,
  // before the set is used. A Tx of an earlier txg cannot change it: that
  // txg syncs without it, so the change would be lost. Changes under such a
  // Tx fail with InvalidArgument: a Tx assigned after the set was created
  // is never one.
  void SetFirstTxg(Txg t) { first_txg_ = t.value(); }
  Txg first_txg() const { return Txg(first_txg_); }

  // Creates an object in tx's txg, with `bonus` of `bonus_type`. NoSpace
  // when object ids run out.
  Result<ObjectId> Create(Tx& tx, ObjectType type, uint32_t block_size = kDefaultBlockSize,
                          util::Compression compression = util::Compression::kLz4,
                          std::string_view bonus = {}, uint8_t bonus_type = 0);
  // Creates object `id` itself (a received object keeps its sender's id and
  // generation), in tx's txg, with its generation (ObjectInfo::generation,
  // normally the creating txg) set to `generation`; otherwise as Create.
  // The allocator hands `id` to no create from then on, in every backfill
  // mode (object_allocator.h, "Claims"); an id freed in tx's txg (or
  // before) may be claimed again at once: a new object, with its own
  // generation. InvalidArgument for id 0 or past kMaxObjectId, a type or
  // block size Create refuses, or a bonus too large; AlreadyExists when
  // the id is in use; Busy when it was freed in a txg after tx's.
  Status Claim(Tx& tx, ObjectId id, ObjectType type, uint32_t block_size,
               util::Compression compression, Txg generation, std::string_view bonus = {},
               uint8_t bonus_type = 0);
  // Frees an object and all its blocks. NotFound if it is not allocated.
  Status Free(Tx& tx, ObjectId id);
  Status Write(Tx& tx, ObjectId id, uint64_t off, std::string_view data);
  // Reads up to len bytes at off, stopping at the object's length.
  Result<std::string> Read(ObjectId id, uint64_t off, uint64_t len,
                           ReadCaching caching = ReadCaching::kAll);
  // The same into `dst` (up to dst.size() bytes); returns how many. With
  // `shared`: Dnode::ReadInto's pieces.
  Result<size_t> ReadInto(ObjectId id, uint64_t off, std::span<char> dst,
                          ReadCaching caching = ReadCaching::kAll, ReadPieces* shared = nullptr);

  // A hold on an allocated object's dnode. While held the dnode stays in
  // memory, and the calls below that take it skip the lookup by id (ZFS's
  // "by dnode" calls): for an owner that reads and writes one object
  // often, such as a directory's zap. NotFound for a free object.
  using DnodeRef = std::shared_ptr<Dnode>;
  Result<DnodeRef> Hold(ObjectId id) { return GetAllocated(id); }
  Status Write(Tx& tx, Dnode& d, uint64_t off, std::string_view data);
  // Makes `block` tx's txg's dirty copy of block blkid of d, shared, not
  // copied (shared_block.h: the owner then changes it in place until the
  // txg closes; putting it again in that txg is free). Open context only.
  // NotFound for a free object; InvalidArgument for a block that is not
  // the object's block size.
  Status PutBlock(Tx& tx, Dnode& d, uint64_t blkid, SharedBlock& block);
  // Block cloning (zio/block_ref_table.h): ShareBlocks takes the pointers
  // of data blocks [first, end) of `src`, an object of this set or of
  // another set of the same pool, for a clone in tx's txg (Dnode::
  // ShareBlocks: nullopt for a block to copy instead); PutClones makes
  // them blocks of `dst`, an object of this set, from block `first` on,
  // with a length of at least `length` (Dnode::PutClones). What
  // ShareBlocks returned and PutClones did not take goes back with
  // Dnode::CancelShared before the Tx finishes.
  Status ShareBlocks(Tx& tx, Dnode& src, uint64_t first, uint64_t end,
                     std::vector<std::optional<zio::BlockPtr>>* out);
  Status PutClones(Tx& tx, Dnode& dst, uint64_t first, std::span<const zio::BlockPtr> bps,
                   uint64_t length);
  Result<std::string> Read(Dnode& d, uint64_t off, uint64_t len,
                           ReadCaching caching = ReadCaching::kAll);
  Status Truncate(Tx& tx, ObjectId id, uint64_t length);
  Status Punch(Tx& tx, ObjectId id, uint64_t off, uint64_t len);
  // Dnode::Seek of object `id`.
  Result<uint64_t> Seek(ObjectId id, uint64_t off, uint64_t end, bool hole);
  Status SetBonus(Tx& tx, ObjectId id, uint8_t bonus_type, std::string_view bonus);
  // The same by dnode (NotFound for a free object).
  Status SetBonus(Tx& tx, Dnode& d, uint8_t bonus_type, std::string_view bonus);
  // Block size (Dnode's theory comment). SetBlockSize changes an object's
  // block size while its data fits in block 0 at both sizes
  // (InvalidArgument otherwise, or for a size that is not a power of two
  // from 512 B to 1 MiB). GrowBlockSize, before a change that makes the
  // object reach byte `end`, grows the block of an object that has at most
  // one to the smallest power of two that holds `end` bytes, or to
  // `max_block_size` (a power of two) when `end` is past it; an object past
  // one block, or whose block is at least `max_block_size`, keeps its
  // size. Each may read block 0 (and fail, changing nothing). Neither
  // counts a change in tx when the size stays.
  Status SetBlockSize(Tx& tx, ObjectId id, uint32_t block_size);
  Status GrowBlockSize(Tx& tx, ObjectId id, uint64_t end, uint32_t max_block_size);
  Status GrowBlockSize(Tx& tx, Dnode& d, uint64_t end, uint32_t max_block_size);
  // The block size a new object that grows (GrowBlockSize) starts with:
  // the pool's sector size (a smaller block takes a whole sector on disk
  // all the same), at most `max_block_size`.
  uint32_t StartBlockSize(uint32_t max_block_size) const;
  // NotFound for a free object.
  Result<ObjectInfo> Stat(ObjectId id);
  // The pointer to data block `blkid` of an object as of the last sync (a
  // hole when there is none); for tools and tests.
  Result<zio::BlockPtr> BlockPointer(ObjectId id, uint64_t blkid);
  // The objects whose dnodes differ between `older`, an earlier state of
  // this set (a snapshot of it, taken in txg `older_txg`), and this one, as
  // of both sets' last synced root blocks (objset_walk.h, WalkChangedDnodes:
  // only the metadnode blocks born after older_txg are read). Both must be
  // of one pool.
  Status ChangedDnodes(const ObjectSet& older, Txg older_txg, const ChangedDnodeFn& fn,
                       DnodeDiffStats* stats = nullptr) const;

  // Sync context (see the theory comment).
  bool Dirty(Txg t) const EXCLUDES(dirty_mu_);
  std::vector<SyncTask> SyncTasks(Txg t, size_t strands, size_t first_strand = 0,
                                  bool split_large = true) EXCLUDES(dirty_mu_);
  Result<zio::BlockPtr> FinishSync(Txg t, size_t allocator) EXCLUDES(dirty_mu_);
  void SyncDone(Txg t) EXCLUDES(dirty_mu_);

  // The root block as last written (a hole before the first sync).
  zio::BlockPtr root() const EXCLUDES(dirty_mu_);
  // One past the highest object id in use (1 when there is none).
  uint64_t next_object() const;
  uint64_t live_objects() const;
  // The blocks of the set as of the last root block written: its totals
  // (ObjsetPhys::space) with the root block added. Zeros before the first
  // sync.
  ObjsetSpace space() const EXCLUDES(dirty_mu_);

  // Where the blocks the set stops referencing go (SpaceCounter::release):
  // `release` instead of zio::Free. Set before the set changes.
  void SetRelease(std::function<Status(const zio::BlockPtr&, Txg)> release) {
    space_.release = std::move(release);
  }

  // Object allocation policy (dmu.metadnode_backfill, dmu.alloc_chunk;
  // both live) and its statistics (see object_allocator.h).
  void SetBackfill(BackfillMode mode) { alloc_.SetMode(mode); }
  void SetAllocChunk(uint32_t chunk) { alloc_.SetChunk(chunk); }
  ObjectAllocStats AllocStats() const { return alloc_.Stats(); }
  // Dnode blocks Open could not read or found at odds with their pointers
  // (their ids count as taken; a rewind import refuses such a tree).
  uint64_t damaged_dnode_blocks() const { return damaged_dnode_blocks_; }

  // Where the dirty copies of this set's data blocks get their memory. Set
  // once, before the set is used; must outlive it (nullptr: malloc's).
  void UseBlockBuffers(BlockBuffers* buffers) { block_buffers_ = buffers; }
  // The cache this set's reads go through (its data, directory and dnode
  // blocks), and what reads ahead of its objects' sequential readers
  // (ReadInto; the metadnode's are not). Set once, before the set is used;
  // both must outlive it (nullptr: reads go to the disk; no read ahead).
  void UseCache(arc::Arc* cache, ReadAhead* read_ahead = nullptr) {
    cache_ = cache;
    read_ahead_ = cache != nullptr ? read_ahead : nullptr;
    metadnode_->cache = cache;
  }
  // How many copies of a data block new writes store (the dataset's
  // `copies` property, 1..3; metadata gets one more: copy_policy.h). Live.
  void SetCopies(uint8_t n) { copies_.SetDataCopies(n); }
  const CopyPolicy& copy_policy() const { return copies_; }
  // Idle dnodes kept in memory: about `count` (live; no bound until set).
  void SetDnodeLimit(uint64_t count) { dnodes_.SetLimit(count); }
  uint64_t cached_dnodes() { return dnodes_.size(); }
  uint64_t dnode_evictions() const { return dnodes_.evictions(); }

 private:
  struct TxgLists {
    uint64_t txg = 0;
    std::vector<Dnode*> dirty;                            // waiting for a sync task
    std::vector<Dnode*> synced;                           // written in this txg, for SyncDone
    std::vector<std::pair<uint64_t, DnodePhys>> results;  // for FinishSync
    int64_t live_delta = 0;
    uint64_t high_water = 0;
  };

  // The dnode of `id`, loaded from the metadnode if need be.
  Result<DnodeRef> Get(ObjectId id);
  Result<DnodeRef> GetAllocated(ObjectId id);
  // Ok when `tx` may change this set (see SetFirstTxg).
  Status Admit(const Tx& tx) const;
  // InvalidArgument unless a new object may have these (Create, Claim).
  Status CheckNewObject(ObjectType type, uint32_t block_size, std::string_view bonus) const;
  // Makes `id`, just taken from the allocator, a new object in tx's txg;
  // gives the id back when its dnode cannot be loaded.
  Status Install(Tx& tx, uint64_t id, Txg generation, ObjectType type, uint32_t block_size,
                 util::Compression compression, std::string_view bonus, uint8_t bonus_type);
  TxgLists& ListsFor(uint64_t t) REQUIRES(dirty_mu_);
  void OnDirty(Dnode* d, Txg t) EXCLUDES(dirty_mu_);
  DnodeRef NewDnode(ObjectId id, const DnodePhys& phys);

  zio::Zio* const zio_;
  const ObjsetType type_;
  const std::string name_;
  SpaceCounter space_;  // before the dnodes that count into it
  CopyPolicy copies_;   // likewise
  std::unique_ptr<Dnode> metadnode_;
  BlockBuffers* block_buffers_ = nullptr;  // written before use only
  arc::Arc* cache_ = nullptr;              // written before use only
  ReadAhead* read_ahead_ = nullptr;        // written before use only
  uint64_t first_txg_ = 0;                 // written before use only
  // Open could not count a version 1 root's totals (a damaged tree): they
  // started from zero and may not be exact (written before use only).
  bool space_inexact_ = false;
  util::ObjectCache<Dnode> dnodes_{[](Dnode& d) { return d.Idle(); }};

  // Builds alloc_ from the metadnode (Open).
  Status LoadAllocator(uint64_t next_object);
  // The legacy search (BackfillMode::kLegacy); see objset.cc.
  Result<uint64_t> LegacyAllocate() EXCLUDES(legacy_mu_);
  // The first id at or after `from` in a dnode block that the synced fill
  // counts show at most a quarter full (a hole counts as empty).
  Result<uint64_t> SyncedSparseBlock(uint64_t from);

  ObjectAllocator alloc_;
  util::Mutex legacy_mu_;  // the old allocator's one lock (os_obj_lock)
  uint64_t legacy_next_ GUARDED_BY(legacy_mu_) = 1;
  uint64_t damaged_dnode_blocks_ = 0;  // unreadable at Open (their ids count as taken)

  mutable util::Mutex dirty_mu_;
  std::array<TxgLists, Dnode::kTxgSlots> lists_ GUARDED_BY(dirty_mu_);
  zio::BlockPtr root_ GUARDED_BY(dirty_mu_);
  DnodePhys metadnode_phys_ GUARDED_BY(dirty_mu_);
  uint64_t synced_next_object_ GUARDED_BY(dirty_mu_) = 1;
  uint64_t synced_live_ GUARDED_BY(dirty_mu_) = 0;
  ObjsetSpace synced_space_ GUARDED_BY(dirty_mu_);  // of root_, root_ excluded
};

}  // namespace poolfs::core::dmu
