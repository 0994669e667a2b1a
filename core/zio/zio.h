// Zio: the pool's block I/O pipeline.
//
// Theory
// ------
// Every block of the pool is written and read through here, and nothing
// above sees a device offset except inside a BlockPtr.
//
// Write (Write):                         Read (Read):
//   1. all-zero data block -> hole         1. hole -> lsize zero bytes
//   2. compress (or store as is)           2. validate the pointer
//   3. checksum the stored bytes           3. read the psize stored bytes
//   4. allocate asize in txg               4. verify the checksum
//   5. write, zero-padded to asize         5. decompress to lsize
//   6. return the BlockPtr (birth = txg)
//
// Holes. Write returns a hole for an all-zero block when props.type is kData
// or kDnodes and props.level is 0 — no compression, no allocation, no I/O;
// sparse files cost nothing, and neither does a dnode block whose dnodes
// are all free (an object set whose files were all deleted gives its dnode
// blocks back). The hole keeps lsize and birth = txg, fill 0. Other
// metadata (any other type or level) is always stored, even when it is all
// zeros.
//
// Compression rule (util/compress.h): a block is stored compressed only when
// that saves at least 1/8 of lsize; otherwise it is stored as is, with
// compression kOff and psize == lsize. Early abort: a block of at least
// kProbeMinSize bytes is first compressed over its first kProbeSize bytes
// only; when that prefix does not save 1/8, the whole block is stored
// uncompressed without trying the rest. Incompressible data (media,
// encrypted, already compressed) then costs 1/8 of a compression pass; the
// price is that a block whose first 16 KiB do not compress but whose rest
// would is stored uncompressed.
//
// Sizes: asize = psize rounded up to the largest sector (1 << ashift) of any
// vdev, because the allocator chooses the vdev. The stored bytes are
// written zero-padded to asize (uncompressed data is written straight from
// the caller's buffer; only a partial last sector is copied).
//
// Gang blocks. When the allocator has no contiguous extent of asize bytes
// (NoSpace) although the pool may still have the space in smaller runs, the
// write stores the block in pieces instead of failing: children of half the
// size first, halving again whenever one does not fit, down to one sector;
// then a gang header (zio/gang.h) listing them, in one extent of its own.
// The BlockPtr names the header and carries the children's total
// (gang_asize); its checksum covers the stored bytes as for any block, and
// the header has its own. Only when even sector-sized pieces or the header
// cannot be had (or more than kMaxGangChildren would be needed) is the write
// NoSpace. So a pool fragmented by small blocks never fails a txg sync for
// want of one contiguous record; the cost is one more I/O per read of such
// a block and a header read when it is freed. Rewrite rewrites a gang block
// in place only when its new stored bytes fill the same pieces (psize
// rounds up to gang_asize: the MOS sync passes then converge as for other
// blocks); otherwise it returns NoSpace and the caller frees it and writes
// anew.
// Free reads the header to free the children; a header that no longer
// verifies there leaks its children rather than failing the sync (counted
// in gang_leaks(); `poolfs check` reports the leaked extents).
//
// Aggregation. WriteMany runs the pipeline over a batch of blocks and then
// writes the blocks whose extents came out adjacent on a vdev with one
// WriteParts of up to kAggregateBytes (ZFS's vdev queue aggregation, done
// at the source: the sync writes a dnode's dirty blocks in batches, and one
// allocator hands out consecutive extents). ReadMany reads the blocks of a
// batch whose extents lie one after the other with one ReadParts of up to
// kAggregateBytes (a FUSE read of 1 MiB asks for eight blocks of 128 KiB;
// one sync wrote them in a row) and verifies each as Read does. Through
// the mount, aggregated writes went well over half as fast again as one
// block per write, on about two thirds of the CPU time, and gathered reads
// half as fast again as one block per read: each device request costs a
// trip to the hypervisor and an interrupt on a virtual disk
// (vdev::FileDevice).
// scripts/bench-fs.sh's 1 GiB write and read figures measure both paths.
//
// Copies (ditto blocks). A write asks for 1 to 3 copies (WriteProps::copies;
// the pool's format caps it, block_ptr.h): copy 0 comes from the allocator
// as any block, the others from SpaceManager::AllocateCopy (another vdev,
// or far away on the same one), and every copy is written before the write
// returns. A copy that finds no room is left out (the block has fewer
// copies, counted in copy_shortfalls()) rather than fail a sync that could
// still store the block once. A gang block has one copy. Rewrite rewrites
// every copy in place; Free frees them all.
//
// Reads try copy 0 and, when it fails (an I/O error, or bytes that do not
// verify), the next copy, and so on: the first that verifies is returned.
// Each failed copy is counted in checksum_errors of its vdev (I/O errors
// are not), and when a later copy verifies, the failed ones are rewritten
// with its stored bytes at once (self-healing; counted in repairs()), unless
// repairs are off (a read-only import, set_repairs). Only when every copy
// fails does the read fail, with the first copy's error.
//
// Failure: a write that fails frees its allocation again (in the same txg, so
// the space is deferred like any other free) and returns IOError. A read that
// does not verify — checksum mismatch, undecodable compressed bytes, a
// pointer outside the vdev — is Corruption naming the block
// (BlockPtr::ToString) and is counted in checksum_errors(vdev); no byte of it
// is handed up.
//
// Callers: the dmu (dbuf sync writes through WriteMany, reads of cache
// misses through ReadMany), the pool's MOS sync (Rewrite of blocks already
// written in the syncing txg, FlushAll around the uberblock), `poolfs
// check` (Read of
// every block, with no SpaceManager).
//
// Thread safety: Write, WriteMany, Rewrite, Read, Free, FlushAll and the
// statistics may be called concurrently from any number of threads. The
// pipeline keeps no lock of its own: the space manager and the devices are
// thread-safe, the counters are atomics, and each thread has its own scratch
// buffers (thread_local, one per block of a batch, each grown to the largest
// block it has held and kept).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "space/allocator.h"
#include "util/compress.h"
#include "util/mutex.h"
#include "vdev/block_device.h"
#include "zio/block_ptr.h"
#include "zio/block_ref_table.h"

namespace poolfs::core::zio {

// Early abort (see above): blocks of at least kProbeMinSize bytes are probed
// by compressing their first kProbeSize bytes.
inline constexpr size_t kProbeSize = 16 * 1024;
inline constexpr size_t kProbeMinSize = 2 * kProbeSize;

// WriteMany hands adjacent blocks to their device together, up to this many
// bytes at a time (vdev::FileDevice: one direct write of 1 MiB goes much
// faster than eight of 128 KiB, on half the CPU time, and larger writes
// gain nothing more).
inline constexpr uint64_t kAggregateBytes = uint64_t{1} << 20;

// What to write. `type` must not be kNone; level > 0 if and only if type is
// kIndirect; fill as BlockPtr::fill (1 for L0 data; at most lsize/512 for L0
// dnode blocks).
struct WriteProps {
  BlockType type = BlockType::kNone;
  uint8_t level = 0;
  util::Compression compression = util::Compression::kLz4;
  uint64_t fill = 1;
  // Copies to store, 1..kMaxCopies; more than the pool's format holds are
  // cut to what it holds.
  uint8_t copies = 1;
};

// One block of a WriteMany: Write's first two arguments.
struct BlockWrite {
  WriteProps props;
  std::string_view data;
};

// One block of a ReadMany: ReadInto's arguments.
struct BlockRead {
  BlockPtr bp;
  uint8_t* dst;  // room for bp.lsize bytes
};

class Zio {
 public:
  struct Vdev {
    vdev::BlockDevice* dev;  // not owned; outlives the Zio
    uint32_t ashift;         // log2 of its sector size, 9..16
  };

  // `vdevs[i]` is vdev i. `space` (not owned) allocates and frees; it may be
  // null for a read-only pipeline (Write, Rewrite and Free then CHECK-fail).
  // `format`: the pool's on-disk format, which the layers above encode
  // block pointers in (format 2, what new pools get, unless given).
  // CHECKs: at least one vdev, ashifts within 9..16 and equal to the space
  // manager's, one space group per vdev, and every device large enough for a
  // vdev (vdev::kMinVdevSize).
  Zio(std::vector<Vdev> vdevs, space::SpaceManager* space, BpFormat format = BpFormat::kV2);
  ~Zio();
  Zio(const Zio&) = delete;
  Zio& operator=(const Zio&) = delete;

  // The write pipeline (see the top of the file). Returns the new BlockPtr
  // (birth = txg), or a hole for an all-zero L0 data block. Fails with
  // InvalidArgument for bad props, empty data or data above kMaxBlockSize, or
  // txg 0; NoSpace from the allocator; IOError from the device (the
  // allocation is then freed again).
  Result<BlockPtr> Write(const WriteProps& props, std::string_view data, Txg txg, size_t allocator);

  // Writes the blocks as that many Writes would and returns their pointers
  // in the same order, but hands blocks whose extents came out adjacent on
  // a vdev (consecutive allocations from one allocator usually do) to the
  // device in one WriteParts of up to kAggregateBytes. Fails as Write would
  // for any of them; no block of the batch is left allocated then (those
  // already written are freed again). The caller bounds the batch: each of
  // its blocks keeps a scratch buffer of the calling thread busy until the
  // end (grown to the block's size and kept).
  Result<std::vector<BlockPtr>> WriteMany(std::span<const BlockWrite> blocks, Txg txg,
                                          size_t allocator);

  // Writes `data` at the DVA of `old` without allocating: the MOS sync passes
  // rewrite blocks written earlier in the same txg until they converge.
  // CHECKs that old is not a hole and old.birth == txg. Same compression rule
  // as Write; never returns a hole. Returns the new BlockPtr (old's DVA, new
  // sizes, checksum and props). Writes round_up(psize, sector) bytes; the rest
  // of the old extent keeps its bytes, which nothing reads. Fails with NoSpace
  // when the stored bytes no longer fit old.dva.size (the caller then frees
  // `old` and calls Write), InvalidArgument as Write, IOError from the
  // device (the old block's content is then undefined).
  Result<BlockPtr> Rewrite(const BlockPtr& old, const WriteProps& props, std::string_view data,
                           Txg txg);

  // The read pipeline. Returns exactly bp.lsize bytes (a hole: zeros).
  // Corruption naming the block when the pointer is invalid or outside its
  // vdev, the checksum does not match, or the compressed bytes do not decode
  // to lsize bytes (counted in checksum_errors); IOError from the device.
  Result<std::string> Read(const BlockPtr& bp);
  // Read of the block that `encoded` names: a pointer in this pipeline's
  // format (BlockPtrSize(format()) bytes), as the intent log stores one.
  // Corruption when it is not one, or as Read; every failure's message
  // starts with `where`.
  Result<std::string> ReadEncoded(std::string_view encoded, std::string_view where);
  // The block's stored bytes, bp.psize of them, compressed as
  // bp.compression says (a send -c stream carries them so), after every
  // check Read makes (the checksum, and that they decode to lsize bytes).
  // InvalidArgument for a hole.
  Result<std::string> ReadStored(const BlockPtr& bp);
  // The same into `dst`, which has room for bp.lsize bytes (its contents are
  // unspecified on failure). An uncompressed block is read straight into
  // dst: given a buffer aligned to vdev::FileDevice::kDirectAlign (the
  // ARC's are) and a vdev reading with O_DIRECT, the disk's DMA fills it.
  Status ReadInto(const BlockPtr& bp, uint8_t* dst);
  // Reads the blocks as that many ReadIntos would, but those whose extents
  // lie one after the other on a vdev (the blocks of a file that one sync
  // wrote usually do) with one ReadParts of up to kAggregateBytes. Blocks
  // stored uncompressed that fill their extent go straight to dst (as
  // ReadInto's), the others through the calling thread's scratch buffers.
  // Fails as ReadInto would for any of them (the first failure; every
  // dst then holds anything); IOError of a run names its first block.
  // A speculative read (dmu::ReadAhead's) does not count a block that fails
  // its checksum in checksum_errors: nothing asked for that block yet, and
  // its space may have been freed and reused since its pointer was taken
  // (the read that does ask finds and counts a real one). It takes no gang
  // blocks (InvalidArgument).
  enum class ReadUse : uint8_t { kDemand, kSpeculative };
  Status ReadMany(std::span<const BlockRead> blocks, ReadUse use = ReadUse::kDemand);

  // Reads copy `copy` of bp alone and verifies it (no other copy is tried,
  // nothing is repaired): OK, or the Corruption (counted in checksum_errors)
  // or I/O error of that copy. CHECKs that bp is stored and copy <
  // bp.copies().
  Status VerifyCopy(const BlockPtr& bp, int copy);
  // For `poolfs check` and scrub, which look at every copy: reads each copy
  // of bp once and verifies it. Returns the block (lsize bytes) from the
  // first copy that verifies, or that copy's error when none does; `bad`
  // gets every copy that failed (copy number and error). Nothing is
  // repaired. A hole: lsize zeros.
  struct CopyError {
    int copy;
    Status status;
  };
  Result<std::string> ReadEveryCopy(const BlockPtr& bp, std::vector<CopyError>* bad);
  // Rewrites copy `copy` of bp with the stored bytes of another copy that
  // verifies (scrub's repair of a copy VerifyCopy found bad): OK once it is
  // written, Corruption when no other copy verifies. Counted in repairs().
  // CHECKs that repairs are on.
  Status RepairCopy(const BlockPtr& bp, int copy);

  // Frees the block's space in txg (a hole: nothing), every copy.
  // Corruption from the space layer for a double free or an extent it does
  // not know, and for an invalid pointer.
  Status Free(const BlockPtr& bp, Txg txg);

  // From its second pass on, the MOS sync (Pool::SyncTxg) hands its frees
  // to the next txg instead of the space maps, as ZFS's deferred-free list
  // does: a free there would change another metaslab's space map, whose
  // rewrite frees a block in yet another, so that passes chain across the
  // pool's metaslabs instead of converging. While `sink` is set, Free of a
  // block in `txg` validates the pointer and appends it to *sink instead of
  // freeing it; frees in other txgs go on as before. nullptr stops it. The
  // caller owns *sink and reads it only while no Free of `txg` runs.
  void DeferFrees(Txg txg, std::vector<BlockPtr>* sink);

  // The pool's block reference table (block_ref_table.h; nullptr: none,
  // every free frees). Set before the first Free. A Free of a data block
  // the table counts leaves its space allocated; one a clone of a later,
  // unsynced txg references is held back for TakeHeldFrees.
  void set_ref_table(BlockRefTable* table) { ref_table_ = table; }
  BlockRefTable* ref_table() const { return ref_table_; }
  // The frees held back since the last call, for the pool's deferred frees
  // (freed in the next txg's sync).
  std::vector<BlockPtr> TakeHeldFrees() EXCLUDES(defer_mu_);

  // The children of gang block `bp`, read from its header and checked: each
  // lies in its vdev's allocatable area, and their sizes add up to
  // bp.gang_asize with every child but the last full (Corruption otherwise,
  // counted in checksum_errors; IOError from the device).
  Result<std::vector<space::Dva>> GangChildren(const BlockPtr& bp);

  // Flushes every vdev (a barrier: every write that returned before is
  // durable when this returns OK). Tries them all; returns the first error.
  Status FlushAll();

  // Reads of vdev `vdev` that failed verification since construction.
  uint64_t checksum_errors(uint32_t vdev) const;
  // Device bytes written (asize, or the padded length of a Rewrite) and read.
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  // Blocks written (each Write/Rewrite of a block, a gang's pieces one each)
  // and blocks read (each read of a stored block or gang header).
  uint64_t blocks_written() const { return blocks_written_.load(std::memory_order_relaxed); }
  uint64_t blocks_read() const { return blocks_read_.load(std::memory_order_relaxed); }
  // Testing aid: blocks whose asize is above `bytes` are stored as gang
  // blocks even when contiguous room exists (0, the default: never). Set
  // before the first write.
  void set_force_gang_above(uint64_t bytes) { force_gang_above_ = bytes; }

  // Gang blocks written, and gang blocks freed whose header no longer
  // verified (their children leaked), since construction.
  uint64_t gang_writes() const { return gang_writes_.load(std::memory_order_relaxed); }
  uint64_t gang_leaks() const { return gang_leaks_.load(std::memory_order_relaxed); }
  // Copies rewritten from a good one (reads and RepairCopy), and copies a
  // write left out for want of room, since construction.
  uint64_t repairs() const { return repairs_.load(std::memory_order_relaxed); }
  uint64_t copy_shortfalls() const { return copy_shortfalls_.load(std::memory_order_relaxed); }
  // Whether a read that finds a bad copy rewrites it (on by default; off
  // for a read-only import, which writes nothing). Set before use.
  void set_repairs(bool on) { repairs_on_ = on && space_ != nullptr; }
  bool repairs_on() const { return repairs_on_; }

  BpFormat format() const { return format_; }
  size_t vdev_count() const { return vdevs_.size(); }
  vdev::BlockDevice& device(uint32_t vdev);
  uint32_t ashift(uint32_t vdev) const;
  // The allocation unit: the largest sector of any vdev (every asize is a
  // multiple of it).
  uint32_t sector_size() const { return uint32_t{1} << max_ashift_; }

 private:
  struct VdevState;
  struct Stored;

  // Compresses (or not) `data` into a Stored and checksums it; compressed
  // bytes go to the calling thread's scratch buffer number `slot`.
  Stored Prepare(const WriteProps& props, std::string_view data, size_t slot);
  // Writes the stored bytes at off, zero-padded to `len` bytes.
  Status WriteStored(VdevState& v, uint64_t off, uint64_t len, const Stored& s);
  // The pointer to `s` stored at dva (a gang: its header, with gang_asize
  // bytes of children); CHECK-fails, naming `what`, unless it is valid.
  static BlockPtr StoredPointer(const space::Dva& dva, uint64_t gang_asize, const WriteProps& props,
                                uint32_t lsize, const Stored& s, Txg txg, const char* what);
  // Rewrite of a gang block: into its own pieces, or NoSpace.
  Result<BlockPtr> RewriteGang(const BlockPtr& old, const WriteProps& props, uint32_t lsize,
                               const Stored& s, Txg txg);
  // Writes n bytes at off, zero-padded to len (a multiple of the largest
  // sector); only a partial last sector is copied.
  Status WritePadded(VdevState& v, uint64_t off, const uint8_t* bytes, uint64_t n, uint64_t len);
  // Stores `s` as a gang block (see the top of the file); `why` is the
  // allocator's NoSpace for the whole block.
  Result<BlockPtr> WriteGang(const WriteProps& props, uint32_t lsize, const Stored& s, Txg txg,
                             size_t allocator, const Status& why);
  // Checks that the extent lies in the allocatable area of an existing
  // vdev; Corruption saying why otherwise (the caller names the block).
  Status CheckExtent(const space::Dva& extent) const;
  // Corruption for a failed verification of copy `copy` of bp; counts it
  // on that copy's vdev.
  Status VerifyFailed(const BlockPtr& bp, int copy, const std::string& what);
  // ReadInto's pipeline for a pointer already validated, not a hole: the
  // copies from `first_copy` on, in turn (the copies before it already
  // failed; they are repaired too when a later one verifies).
  Status ReadValid(const BlockPtr& bp, uint8_t* dst, ReadUse use = ReadUse::kDemand,
                   int first_copy = 0);
  // Reads copy `copy` into `stored` (room for psize) and verifies it into
  // dst, as Verify.
  Status ReadCopy(const BlockPtr& bp, int copy, uint8_t* stored, uint8_t* dst, ReadUse use);
  // Writes `stored` (bp's psize stored bytes, which verified) over copy
  // `copy`, zero-padded to its extent; counts a repair.
  Status WriteCopy(const BlockPtr& bp, int copy, const uint8_t* stored);
  // The end of the read pipeline: counts the read, verifies `stored` (the
  // block's psize stored bytes, read from copy `copy`) and decodes it into
  // dst (a copy when uncompressed and stored != dst).
  Status Verify(const BlockPtr& bp, const uint8_t* stored, uint8_t* dst,
                ReadUse use = ReadUse::kDemand, int copy = 0);

  std::vector<std::unique_ptr<VdevState>> vdevs_;
  space::SpaceManager* const space_;
  BlockRefTable* ref_table_ = nullptr;
  const BpFormat format_;
  uint32_t max_ashift_ = 0;
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> blocks_written_{0};
  std::atomic<uint64_t> blocks_read_{0};
  uint64_t force_gang_above_ = 0;
  std::atomic<uint64_t> gang_writes_{0};
  std::atomic<uint64_t> gang_leaks_{0};
  std::atomic<uint64_t> repairs_{0};
  std::atomic<uint64_t> copy_shortfalls_{0};
  bool repairs_on_ = false;
  // DeferFrees: set while a sink takes the frees of defer_txg_.
  std::atomic<bool> deferring_{false};
  util::Mutex defer_mu_;
  Txg defer_txg_ GUARDED_BY(defer_mu_);
  std::vector<BlockPtr>* defer_sink_ GUARDED_BY(defer_mu_) = nullptr;
  std::vector<BlockPtr> held_frees_ GUARDED_BY(defer_mu_);  // BlockRefTable::Release::kDefer
};

}  // namespace poolfs::core::zio
