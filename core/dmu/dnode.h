// Dnode: one object in memory — its attributes, its dirty data per txg, and
// its block tree.
//
// Theory
// ------
// Open context changes an object under a Tx in txg t; sync context writes
// txg t while t+1 (and t+2) take new changes. So the dnode keeps, per
// unsynced txg (a ring of 4 slots, as txg numbers mod 4):
//   - the dirty data blocks of that txg (whole blocks of the object's block
//     size, copied on first write from the newest older version);
//   - the block ranges freed in that txg (truncate, punch, object free),
//     applied before that txg's dirty blocks when it syncs;
//   - the attributes (type, length, bonus, ...) as they stood when the txg
//     last changed them.
// `live_` is the newest state, what open context reads. A read of block b
// takes the newest of: a dirty copy, a freed range (zeros), the block tree.
// A txg's dirty blocks never change once the txg has closed (later txgs copy
// them), so its sync writes them without holding the dnode's lock.
//
// Open-context changes are all or nothing: a change that needs old block
// contents (a partial block write, the zeroed tail of a truncate or punch)
// reads them all before it changes anything, so a failed read (IOError, a
// checksum mismatch) leaves the dnode as it was. The layers above rely on
// it to tell a failed step from a half-done one (dmu::Tx).
//
// Block size. An object's data blocks are all of its block size, but the
// block size may change while the object's data fits in block 0 (its
// length is at most the block size, before and after: SetBlockSize). A
// plain file starts with a small block and grows it as it grows, up to its
// dataset's recordsize (GrowBlockSize), so that a small file costs a small
// block on disk, in memory and in a txg's dirty bytes. The change keeps
// every txg's data and dnode in agreement:
//   - it is an attribute like the others: txg t's slot records the size t
//     ends with, and t's sync writes it in t's DnodePhys;
//   - block 0 moves to the new size in t's slot at once (copied from its
//     newest older version: an older slot's copy, or the tree, read before
//     anything changes), unless it reads as zeros. So every version of
//     block 0 that open context can find from t on has the new size (t's
//     copy, or a free that hides the older ones), while an older txg still
//     to sync keeps its own copies at the size its slot records, and writes
//     them before t's sync replaces them;
//   - free ranges are applied in the order they were made, before the
//     slot's dirty blocks: those made before the change are in old-size
//     block ids and apply to a tree of old-size blocks; those made after it
//     free block 0 (which holds all the data at either size) or lie past
//     it, where the earlier frees have left no block of either size.
// At the end of each txg's sync the tree's stored data blocks are of the
// size its DnodePhys records (a hole's lsize may be an older size: holes
// are zeros of any size).
//
// Sync of txg t (Sync): apply t's frees to the tree, write t's dirty blocks
// (zio), put their pointers in the tree, write the dirty indirect blocks,
// then drop what was written from the slot and return the DnodePhys for
// the metadnode. The tree is updated before the dirty copies are dropped, so
// a concurrent reader finds one or the other.
//
// Locks: mu_ guards attributes and slots; tree_mu_ guards the block tree.
// Order: mu_ before tree_mu_ (a write that must read an old block holds
// both); sync takes them one at a time. mu_ is a reader-writer lock: Read
// holds it shared across its disk reads, so the reads of one file (the
// kernel's readahead sends several at once) reach the disk together, and
// no change of the file comes between a read's lookup of a block pointer
// and its read of the block (a block's space is freed only after a change
// replaced or dropped it).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "arc/arc.h"
#include "dmu/block_buffers.h"
#include "dmu/block_tree.h"
#include "dmu/dnode_phys.h"
#include "dmu/read_ahead.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "util/mutex.h"

namespace poolfs::core::dmu {

// What a caller may know about an object.
struct ObjectInfo {
  ObjectId id;
  ObjectType type = ObjectType::kNone;
  uint32_t block_size = 0;
  uint64_t length = 0;
  uint64_t generation = 0;
  uint64_t used = 0;  // allocated bytes as of the last sync
  uint8_t bonus_type = 0;
  std::string bonus;
};

// Which of the blocks a read misses in the block cache it leaves there.
enum class ReadCaching : uint8_t {
  kAll,
  // Only blocks the read returns part of. A block it returns whole is read
  // from disk straight into the caller's buffer: for callers that keep
  // what they read themselves (the kernel's page cache), so that streaming
  // a file neither grows the cache with a second copy of it nor pushes
  // other blocks out, and its bytes are copied once less.
  kPartial,
};

// A read's bytes left where they lie (ReadInto's `shared`): pieces, in
// order, of the caller's buffer or of blocks held in the cache, which stay
// valid while `holds` lives. For a caller that sends the bytes on (a FUSE
// reply) instead of keeping them: a cached block is not copied first.
struct ReadPieces {
  std::vector<std::span<const char>> pieces;
  std::vector<arc::ArcHandle> holds;
};

class Dnode {
 public:
  static constexpr int kTxgSlots = 4;
  // Read finds at most this many blocks before it copies them out (and
  // reads at most zio::kAggregateBytes of them from disk at a time).
  static constexpr size_t kReadWindowBlocks = 64;

  // An object loaded from (or, when free, to be created in) its slot.
  Dnode(zio::Zio* zio, ObjectId id, const DnodePhys& phys);
  ~Dnode();
  Dnode(const Dnode&) = delete;
  Dnode& operator=(const Dnode&) = delete;

  ObjectId id() const { return id_; }

  // Open context. Each returns the bytes newly dirtied through *dirtied,
  // and each that fails has changed nothing (see the theory comment).
  // Makes a free dnode a new object in txg t, of generation `generation`
  // (the txg that created it: t, or for a received object its sender's).
  void Allocate(Txg t, Txg generation, ObjectType type, uint32_t block_size,
                util::Compression compression, std::string_view bonus, uint8_t bonus_type = 0)
      EXCLUDES(mu_);
  // Frees the object in txg t: all its blocks, and the slot.
  void Free(Txg t) EXCLUDES(mu_);
  // For the intent log (ZFS's dmu_sync): writes txg t's dirty copy of data
  // block `blkid` to a place of its own now, through `allocator`, and
  // returns its pointer (birth t). t's sync puts that pointer in the tree
  // instead of writing the block again, unless t changed the block after
  // this: a change takes a copy of its own (the copy written is shared
  // from here on), and t's sync then writes that copy as usual and frees
  // the early one. The caller holds t open for the whole call (a hold of
  // the open txg t), so that t's sync has not begun. A block written early
  // already and unchanged since: its pointer, nothing written. NotFound
  // when t holds no copy of the block (it synced, was freed, or t never
  // wrote it); NotSupported for a metadnode or a copy an owner shares
  // (PutBlock); the write's errors (nothing is left allocated then).
  Result<zio::BlockPtr> WriteEarly(Txg t, uint64_t blkid, size_t allocator) EXCLUDES(mu_);
  Status Write(Txg t, uint64_t off, std::string_view data, uint64_t* dirtied) EXCLUDES(mu_);
  // Block cloning, source side (zio/block_ref_table.h): for each data
  // block of [first, end), its pointer as the last sync left it, shared
  // with a clone of txg t, or nullopt when an unsynced txg changed the
  // block (a dirty copy, a free, a clone not yet synced: the caller copies
  // its bytes instead) or it cannot be shared (a gang block). Each stored
  // pointer returned is registered as a pending reference of t
  // (BlockRefTable::AddPending) while the tree's lock is held, so no free
  // can come between; the caller hands it to PutClones or gives it back
  // with CancelShared. NotSupported without a reference table; NotFound
  // for a free object; a failed read of an indirect block (nothing stays
  // registered then). The dnode must be of an object set whose blocks
  // something holds: a live dataset's, or a snapshot's not yet destroyed
  // (a read-only view of a synced state the dataset has moved on from may
  // name blocks that are free by now; the mount closes a snapshot's files
  // before its destroy).
  Status ShareBlocks(Txg t, uint64_t first, uint64_t end,
                     std::vector<std::optional<zio::BlockPtr>>* out) EXCLUDES(mu_, tree_mu_);
  // Gives back what ShareBlocks registered in t and no PutClones took.
  void CancelShared(Txg t, std::span<const std::optional<zio::BlockPtr>> shared);
  // Block cloning, destination side: data blocks [first, first +
  // bps.size()) become bps (ShareBlocks' pointers of an object of the same
  // block size; a hole frees the block) in txg t, and the length becomes
  // at least `length`. Reads see them at once; t's sync puts them in the
  // tree born in t, after t's earlier frees. A later change of such a
  // block in t (a write, a free) drops its pending reference. Cannot fail
  // once the checks pass: InvalidArgument for a pointer of another size,
  // NotFound for a free object.
  Status PutClones(Txg t, uint64_t first, std::span<const zio::BlockPtr> bps, uint64_t length,
                   uint64_t* dirtied) EXCLUDES(mu_);
  // Makes `block` (exactly one block) txg t's dirty copy of block blkid,
  // without copying it: the caller may change it in place until t closes
  // (shared_block.h has the rule). Extends the length to cover the block.
  // Nothing to do when it already is t's copy.
  Status PutBlock(Txg t, uint64_t blkid, std::shared_ptr<std::string> block, uint64_t* dirtied)
      EXCLUDES(mu_);
  // Reads up to `len` bytes at `off`, stopping at the object's length.
  Result<std::string> Read(uint64_t off, uint64_t len, ReadCaching caching = ReadCaching::kAll)
      EXCLUDES(mu_);
  // The same into `dst` (up to dst.size() bytes); returns how many. With
  // `shared`, the bytes of blocks held in the cache stay there (pieces of
  // them in shared->pieces, beside pieces of dst for the rest); dirty
  // blocks, which a write may change once the read returns, are copied.
  Result<size_t> ReadInto(uint64_t off, std::span<char> dst,
                          ReadCaching caching = ReadCaching::kAll, ReadPieces* shared = nullptr)
      EXCLUDES(mu_);
  // Sets the length; blocks wholly past it are freed, the tail of the last
  // one zeroed.
  Status Truncate(Txg t, uint64_t length, uint64_t* dirtied) EXCLUDES(mu_);
  // Zeroes [off, off+len) (freeing whole blocks); the length is unchanged.
  Status Punch(Txg t, uint64_t off, uint64_t len, uint64_t* dirtied) EXCLUDES(mu_);
  Status SetBonus(Txg t, uint8_t bonus_type, std::string_view bonus) EXCLUDES(mu_);
  // Makes the object's block size `block_size` from txg t on (see the
  // theory comment). Returns whether it changed. InvalidArgument when the
  // object's data does not fit in block 0 at both sizes (its length is
  // past the smaller); a failed read of block 0 changes nothing.
  Result<bool> SetBlockSize(Txg t, uint32_t block_size, uint64_t* dirtied) EXCLUDES(mu_);
  // Before a change that makes the object reach byte `end`: while its data
  // fits in block 0 and its block size is below `max_block_size`, grows the
  // block size to the smallest power of two that holds `end` bytes, or to
  // `max_block_size` when `end` needs more than one such block. An object
  // past one block keeps its block size, as does one whose block is
  // already at least `max_block_size`. Returns whether it changed.
  Result<bool> GrowBlockSize(Txg t, uint64_t end, uint32_t max_block_size, uint64_t* dirtied)
      EXCLUDES(mu_);
  ObjectInfo Info() const EXCLUDES(mu_);
  // lseek's SEEK_DATA (hole false) and SEEK_HOLE (hole true) over the
  // newest changes: the first byte at or after `off`, and before `end`, of
  // a data block or of a hole, else `end`. A block is data when a dirty
  // copy or the block tree holds it, even one that reads as zeros; a block
  // that a free of an unsynced txg covers is a hole. Holes in the tree are
  // skipped a subtree at a time.
  Result<uint64_t> Seek(uint64_t off, uint64_t end, bool hole) EXCLUDES(mu_, tree_mu_);
  // The pointer to data block `blkid` as of the last sync (a hole when
  // there is none).
  Result<zio::BlockPtr> BlockPointer(uint64_t blkid) EXCLUDES(tree_mu_);
  // The next data block at or after `from` that is not a hole, as of the
  // last sync (BlockTree::Next: holes are skipped a subtree at a time).
  BlockTree::NextBlock NextBlock(uint64_t from, BlockTree::Walk* walk) EXCLUDES(tree_mu_);
  // Where the tree's block writes and frees are counted (BlockTree). Set by
  // the owner before first use.
  void SetSpaceCounter(SpaceCounter* counter) EXCLUDES(tree_mu_) {
    util::MutexLock l(&tree_mu_);
    tree_.set_counter(counter);
  }
  // How many copies its blocks are written with (nullptr: one). Set by the
  // owner before first use.
  void SetCopyPolicy(const CopyPolicy* copies) EXCLUDES(tree_mu_) {
    util::MutexLock l(&tree_mu_);
    copies_ = copies;
    tree_.set_copy_policy(copies);
  }
  bool IsFree() const EXCLUDES(mu_);
  // True when no unsynced txg has changed this dnode (everything it holds
  // is in its metadnode slot and the block tree on disk), so that its
  // owner may drop it. False as well when another thread holds its lock.
  bool Idle() const EXCLUDES(mu_);

  // Sync context. True when txg t changed this dnode and it is not yet
  // written.
  bool DirtyIn(Txg t) const EXCLUDES(mu_);
  // The number of blocks txg t dirtied that are not yet written.
  size_t DirtyBlocks(Txg t) const EXCLUDES(mu_);
  // Writes txg t's changes through `allocator` and returns the dnode as it
  // stands at the end of t: SyncBegin, SyncBlocks of every block, SyncEnd
  // (or, when t changed no block, just the dnode, under one lock).
  Result<DnodePhys> Sync(Txg t, size_t allocator) EXCLUDES(mu_, tree_mu_);

  // The same in steps, so that several allocators can write the blocks of
  // one large dnode at once: SyncBegin (once; applies t's frees), then
  // SyncBlocks over disjoint ranges of plan.blocks, from any threads at
  // once, then SyncEnd (once, after every range is written: writes the
  // indirect blocks through `allocator`).
  struct Attrs {
    ObjectType type = ObjectType::kNone;
    uint8_t compression = 0;
    uint8_t bonus_type = 0;
    uint32_t block_size = 0;
    uint64_t length = 0;
    uint64_t generation = 0;
    std::string bonus;
  };
  struct SyncPlan {
    Attrs attrs;
    std::vector<std::pair<uint64_t, std::shared_ptr<std::string>>> blocks;  // by block id
    size_t frees = 0;  // free ranges applied by SyncBegin
    // Blocks of `blocks` written already (WriteEarly), by block id.
    std::map<uint64_t, zio::BlockPtr> early;
    // Blocks cloned in t, put in the tree by SyncBegin.
    std::vector<std::pair<uint64_t, zio::BlockPtr>> clones;
  };
  Result<SyncPlan> SyncBegin(Txg t) EXCLUDES(mu_, tree_mu_);
  // Writes plan.blocks[first, end).
  Status SyncBlocks(Txg t, const SyncPlan& plan, size_t first, size_t end, size_t allocator)
      EXCLUDES(tree_mu_);
  Result<DnodePhys> SyncEnd(Txg t, const SyncPlan& plan, size_t allocator) EXCLUDES(mu_, tree_mu_);
  // Forgets txg t's slot (after the txg is durable).
  void SyncDone(Txg t) EXCLUDES(mu_);

  // Set by the owner: called (with mu_ held) the first time a txg dirties
  // this dnode, or dirties it again after a sync pass wrote it.
  std::function<void(Dnode*, Txg)> on_dirty;
  // Set by the owner before first use: where dirty copies get their memory
  // (nullptr: malloc's).
  BlockBuffers* block_buffers = nullptr;
  // Set by the owner before first use: the cache of synced blocks that reads
  // go through (nullptr: every read goes to the disk).
  arc::Arc* cache = nullptr;
  // Set by the owner before first use, with `cache`: where ReadInto asks
  // for the blocks ahead of a sequential reader (nullptr: it does not).
  ReadAhead* read_ahead = nullptr;

  // The cache's name for the block `bp` points to.
  static arc::BlockKey CacheKey(const zio::BlockPtr& bp);

 private:
  struct Slot {
    uint64_t txg = 0;     // 0: unused
    bool queued = false;  // on the owner's dirty list for txg
    Attrs attrs;
    std::map<uint64_t, std::shared_ptr<std::string>> blocks;
    std::vector<std::pair<uint64_t, uint64_t>> frees;  // [first, end) block ranges
    // Blocks written early (WriteEarly): the copy written, and where.
    std::map<uint64_t, std::pair<std::shared_ptr<std::string>, zio::BlockPtr>> early;
    // Written early, then replaced by a newer early write: freed at t's sync.
    std::vector<zio::BlockPtr> early_stale;
    // Blocks cloned in t (PutClones): the shared pointer, as the source
    // had it. A block is in at most one of `blocks` and `clones`.
    std::map<uint64_t, zio::BlockPtr> clones;
  };
  // Drops t's clone of block blkid, if any (a change of t replaces it).
  void DropClone(Slot& s, uint64_t blkid) REQUIRES(mu_);
  // A block's bytes as Content finds them: a dirty copy, a block held in
  // the cache, a block read without a cache, or zeros (data() == nullptr).
  struct BlockRef {
    std::shared_ptr<const std::string> bytes;
    arc::ArcHandle cached;
    const char* data() const {
      if (cached) return reinterpret_cast<const char*>(cached.data());
      return bytes ? bytes->data() : nullptr;
    }
  };
  // A block Locate left to the disk: its pointer, whether the read leaves
  // it in the cache, and which BlockRef gets it.
  struct Miss {
    zio::BlockPtr bp;
    bool keep;
    size_t index;
  };
  // The unsynced txgs up to `t`, newest first, in (*order)[0, returned).
  size_t SlotsNewestFirst(uint64_t t, std::array<const Slot*, kTxgSlots>* order) const
      REQUIRES_SHARED(mu_);
  // A block's newest content before txg `t`'s own copy, as far as memory
  // has it: true with *ref set (a dirty copy, zeros, a cached block), or
  // false with its pointer in *bp when it must be read from disk.
  // With `peek`, only whether the block must come from disk: a cached one
  // is found but not held (*ref stays empty) and counts as no cache hit.
  Result<bool> Locate(uint64_t blkid, uint64_t t, BlockRef* ref, zio::BlockPtr* bp,
                      bool peek = false) REQUIRES_SHARED(mu_) EXCLUDES(tree_mu_);
  // Reads the blocks Locate left to the disk together (zio ReadMany) into
  // refs[miss.index], through the cache (into it when miss.keep), and with
  // them the blocks of `in_place` straight to their destinations.
  Status ReadBlocks(std::span<const Miss> misses, std::span<BlockRef> refs,
                    std::span<const zio::BlockRead> in_place = {}) REQUIRES_SHARED(mu_);
  // The reads of the object as one sequential reader would make them
  // (ReadAhead's theory): where the last ones ended and how far ahead of
  // that blocks are asked for. Made by the first ReadInto with read_ahead.
  struct Stream {
    util::Mutex mu;
    bool started GUARDED_BY(mu) = false;
    uint64_t start GUARDED_BY(mu) = 0;     // first block
    uint64_t next GUARDED_BY(mu) = 0;      // end of the farthest read, in blocks
    uint64_t ahead GUARDED_BY(mu) = 0;     // end of the blocks asked for
    uint64_t distance GUARDED_BY(mu) = 0;  // blocks ahead of next; 0: not yet a stream
  };
  // ReadInto's read of n bytes at off goes into the stream; when it follows
  // it, asks read_ahead for the blocks on disk up to the distance.
  void ReadAheadOf(uint64_t off, uint64_t n) REQUIRES_SHARED(mu_) EXCLUDES(tree_mu_);
  // ReadInto with mu_ held: dst.size() bytes at `off`, all within the
  // object's length.
  Status ReadLocked(uint64_t off, std::span<char> dst, ReadCaching caching,
                    ReadPieces* shared = nullptr) REQUIRES_SHARED(mu_);
  // Locate, then the read when the block is only on disk (into the cache
  // unless `keep` is false).
  Result<BlockRef> Content(uint64_t blkid, uint64_t t, bool keep = true) REQUIRES_SHARED(mu_)
      EXCLUDES(tree_mu_);
  // Txg t's slot, made on first use.
  Slot& SlotFor(Txg t) REQUIRES(mu_);
  // Txg t's slot, or nullptr when t has not changed this dnode (or synced).
  Slot* SlotOf(Txg t) const REQUIRES_SHARED(mu_);
  void Touch(Slot& s) REQUIRES(mu_);
  // What a partial change of block blkid in txg t starts from, read now,
  // before anything changes: the newest older version, or nullopt when t
  // already has its own copy (the change edits that).
  using Base = std::optional<BlockRef>;
  Result<Base> ReadBase(Txg t, uint64_t blkid) REQUIRES(mu_) EXCLUDES(tree_mu_);
  // Txg t's copy of block blkid, made on first use from `whole` (the whole
  // new contents) or, when null, from *base (ReadBase's, read under the
  // same hold of mu_). Cannot fail.
  std::string* DirtyBlock(Txg t, uint64_t blkid, const char* whole, const Base* base,
                          uint64_t* dirtied) REQUIRES(mu_);
  void FreeBlocks(Txg t, uint64_t first, uint64_t end) REQUIRES(mu_);
  // SetBlockSize with mu_ held.
  Result<bool> ResizeLocked(Txg t, uint32_t block_size, uint64_t* dirtied) REQUIRES(mu_)
      EXCLUDES(tree_mu_);
  // Zeroing [off, off + len) in two steps: ReadZeroBases reads the bases
  // of the blocks it touches (appending them to *bases, by block id), then
  // ZeroBlocks, which cannot fail, zeroes it from them.
  using Bases = std::vector<std::pair<uint64_t, Base>>;
  Status ReadZeroBases(Txg t, uint64_t off, uint64_t len, Bases* bases) REQUIRES(mu_)
      EXCLUDES(tree_mu_);
  void ZeroBlocks(Txg t, uint64_t off, uint64_t len, const Bases& bases, uint64_t* dirtied)
      REQUIRES(mu_);
  // Both, for one range.
  Status ZeroRange(Txg t, uint64_t off, uint64_t len, uint64_t* dirtied) REQUIRES(mu_)
      EXCLUDES(tree_mu_);
  std::string Name() const { return "object " + std::to_string(id_.value()); }
  // How t's sync writes the data blocks of an object with `attrs`.
  zio::WriteProps DataProps(const Attrs& attrs) const;
  // The attribute fields of a DnodePhys (a copy of `attrs` is made only
  // when the caller passes an lvalue).
  static void SetAttrs(Attrs attrs, DnodePhys* phys);

  zio::Zio* const zio_;
  const ObjectId id_;

  mutable util::SharedMutex mu_;
  Attrs live_ GUARDED_BY(mu_);
  // Made when a txg first changes the dnode, dropped by SyncDone: most
  // dnodes in memory are clean, and a slot is most of a dnode's size.
  std::array<std::unique_ptr<Slot>, kTxgSlots> slots_ GUARDED_BY(mu_);

  mutable util::Mutex tree_mu_;
  BlockTree tree_ GUARDED_BY(tree_mu_);
  const CopyPolicy* copies_ = nullptr;  // set before first use

  std::atomic<Stream*> stream_{nullptr};  // owned
};

}  // namespace poolfs::core::dmu
