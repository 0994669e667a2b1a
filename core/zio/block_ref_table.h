// BlockRefTable: the pool's block reference table (ZFS's BRT), which lets
// several block pointers name one stored data block.
//
// Theory
// ------
// Block cloning (copy_file_range) makes a file's block pointer a copy of
// another file's: same extent, same bytes, no write. The extent is then
// referenced twice, and a free of either pointer must not give the space
// back. The table counts, per shared extent, the references beyond the
// first: an extent with no entry has one. A free (Zio::Free) of a data
// block whose extent has an entry takes one from it (the entry goes at
// zero) and leaves the space allocated; only the free of the last
// reference frees it. The table lives outside the block pointers, so that
// a clone changes only the destination's tree, never the source's, and a
// block keeps its place in every snapshot that holds it.
//
// Keys: (vdev, offset) of a block's first copy. Only level-0 data blocks
// (BlockType::kData) are ever cloned, so only their frees ask the table.
//
// When a count changes. A clone is made in open context in txg t, but
// frees of t happen in t's sync, from many threads, and in any order: a
// file cloned and then overwritten in t frees the source block in t's sync
// while the clone's reference joins the tree in the same sync. So a clone
// registers its reference at once, as pending in t (AddPending), and t's
// sync applies t's pending references (ApplyPending) before it frees
// anything. A reference dropped before its txg synced (the clone's block
// overwritten or freed again in t) leaves with CancelPending.
//
// A free in an earlier txg u < t of a block with a pending reference of t
// (the source was a snapshot destroyed in u, say) must not free the space
// either: Release answers kDefer, and the pool puts the block on its
// deferred frees, freed in u+1's sync, after u+1's references are applied
// (and deferred again while a later txg still holds a pending one). If t
// never syncs (a crash), the deferred free frees it at the next import's
// first sync.
//
// On disk (section 9.4 of core/doc/on-disk-format.md): a MOS object holding
// the entries in ascending (vdev, offset) order, 32 bytes each: u64
// offset, u32 vdev, u32 reserved (zero), u64 references beyond the first
// (>= 1), u64 allocated bytes of the block (every copy; > 0, a multiple of
// 512). Encode and Decode are the format; Decode refuses any damage it can
// see with Corruption naming the entry.
//
// Thread safety: every member function may be called from any thread (one
// mutex); the counts are cheap to ask for when the table is empty (an
// atomic flag, no lock).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "util/mutex.h"
#include "zio/block_ptr.h"

namespace poolfs::core::zio {

class BlockRefTable {
 public:
  // (vdev, offset) of a block's first copy.
  using Key = std::pair<uint32_t, uint64_t>;
  struct Entry {
    uint64_t refs = 0;       // references beyond the first, >= 1
    uint64_t allocated = 0;  // the block's allocated bytes, every copy
    bool operator==(const Entry&) const = default;
  };
  using Entries = std::map<Key, Entry>;
  static constexpr size_t kEntrySize = 32;

  BlockRefTable() = default;
  BlockRefTable(const BlockRefTable&) = delete;
  BlockRefTable& operator=(const BlockRefTable&) = delete;

  // Whether `bp` is a block a clone may share: a stored, non-gang, level-0
  // data block.
  static bool Clonable(const BlockPtr& bp) {
    return !bp.IsHole() && !bp.IsGang() && bp.level == 0 && bp.type == BlockType::kData;
  }
  static Key KeyOf(const BlockPtr& bp) { return {bp.dva.vdev, bp.dva.offset}; }

  // Import: the table as the pool's directory names it (Decode's).
  void Load(Entries entries) EXCLUDES(mu_);

  // Open context, txg t: a new reference to `bp` (Clonable) joins in t.
  void AddPending(Txg t, const BlockPtr& bp) EXCLUDES(mu_);
  // Open context, txg t: a reference AddPending added in t leaves before
  // t's sync (its pointer never reaches a tree).
  void CancelPending(Txg t, const BlockPtr& bp) EXCLUDES(mu_);
  // Sync of t, before its first free: t's pending references join the
  // counts.
  void ApplyPending(Txg t) EXCLUDES(mu_);

  enum class Release : uint8_t {
    kFree,   // the last reference: free the space
    kKept,   // another reference remains: the count went down by one
    kDefer,  // a clone of a later txg, not yet synced, references it
  };
  // A free of `bp` in txg t (sync context): what to do with its space.
  Release Drop(const BlockPtr& bp, Txg t) EXCLUDES(mu_);

  // The entries now, and whether they changed since the last TakeDirty.
  Entries Snapshot() const EXCLUDES(mu_);
  bool TakeDirty() EXCLUDES(mu_);
  // Entries and the bytes clones saved (sum of refs x allocated).
  struct Stats {
    uint64_t entries = 0;
    uint64_t saved_bytes = 0;   // what the extra references would have cost
    uint64_t pending = 0;       // references not yet applied
  };
  Stats stats() const EXCLUDES(mu_);

  // The on-disk form (see the top of the file).
  static std::string Encode(const Entries& entries);
  // `vdevs`: the pool's vdev count. Corruption "block reference table entry
  // N: ..." for a length that is not a multiple of 32, entries out of
  // order or repeated, a count of zero, a nonzero reserved field, a vdev
  // the pool lacks, an offset or size not a multiple of 512.
  static Result<Entries> Decode(std::string_view bytes, uint32_t vdevs);

 private:
  static constexpr size_t kSlots = 4;  // as the dnode's txg ring
  struct Pending {
    uint64_t txg = 0;
    std::map<Key, std::pair<int64_t, uint64_t>> refs;  // count, allocated
  };
  mutable util::Mutex mu_;
  Entries entries_ GUARDED_BY(mu_);
  std::array<Pending, kSlots> pending_ GUARDED_BY(mu_);
  bool dirty_ GUARDED_BY(mu_) = false;
  // Whether anything is counted or pending: frees skip the lock when not.
  std::atomic<bool> any_{false};
  void NoteAny() REQUIRES(mu_);
};

}  // namespace poolfs::core::zio
