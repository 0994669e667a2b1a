// Inode and InodeTable: the in-memory side of the files a mount has touched.
//
// An Inode caches one file's decoded znode, its directory zap handle (the
// one Zap through which the directory's entries change, as zap.h asks) and
// the txg of its last change (for Fsync). The table keeps Inodes in a
// util::ObjectCache (64 shards, a mutex each, no table-wide lock), bounded
// by SetLimit, and the kernel's lookup count of every inode it knows apart
// from them (LookupCounts): the kernel may hold millions of inodes (a create
// storm leaves each new file in its cache), which then cost about 12 bytes
// each, not an Inode.
//
// Locks of an Inode:
//   op_mu  serializes changes to the file: held from Tx::Assign to Commit
//          (the dmu's contract). Operations on several inodes take their
//          op_mu in ascending ino order.
//   mu     guards the cached fields below; held briefly, never across I/O
//          or a Tx::Assign, so readers (GetAttr, Lookup's permission check)
//          never wait for a throttled writer.
// Order: rename_mu (PosixFs) → op_mu (by ino) → unlinked_mu (PosixFs) →
// cache shard mutex → mu → lookup-count mutex. Lookup counts change under
// the Inode's mu, so that a count and the freed flag are seen together.
//
// Lifetime: Inodes are shared_ptrs, handed out only under the cache's shard
// lock, so the cache knows exactly when nobody else holds one. It drops an
// Inode when its object is freed (Erase), when the kernel forgets it
// (TryEvict), or when its shard is over the bound and nobody holds it: an
// Inode holds nothing that is not on disk (through the dmu), so it is loaded
// again when next needed. An Inode whose file is unlinked but still known to
// the kernel (nlink 0, not freed) stays, so that the last Forget finds it
// and frees the object. Hence at most one Inode, one op_mu and one Zap exist
// per object at any time, and a load from disk (FindOrLoad) runs under the
// lock of its shard of the table, so no other Inode of the object can change
// it meanwhile.
//
// Thread safety: every InodeTable method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "posix/lookup_counts.h"
#include "posix/znode_phys.h"
#include "util/mutex.h"
#include "util/object_cache.h"
#include "zap/zap.h"

namespace poolfs::core::posix {

struct Inode {
  explicit Inode(uint64_t i) : ino(i) {}

  const uint64_t ino;
  uint64_t generation = 0;        // set before the Inode is shared
  std::unique_ptr<zap::Zap> dir;  // directories; set before the Inode is shared

  // Orders the changes to this inode (and the reads that must see them
  // whole). Operations on several inodes take theirs through a LockSet.
  util::Mutex op_mu;
  // Extended attributes, loaded on first use.
  bool xattrs_loaded GUARDED_BY(op_mu) = false;
  XattrMap xattrs GUARDED_BY(op_mu);

  mutable util::Mutex mu;
  ZnodePhys z GUARDED_BY(mu);
  bool freed GUARDED_BY(mu) = false;  // the object is gone: every call fails with Stale

  std::atomic<uint64_t> last_txg{0};  // the txg of the newest change
  // Bytes written from txg unsynced_since on, not allocated yet (st_blocks
  // counts them beside what the last sync allocated). Written under op_mu.
  std::atomic<uint64_t> unsynced_bytes{0};
  std::atomic<uint64_t> unsynced_since{0};

  bool is_dir() const { return dir != nullptr; }
  ZnodePhys Snapshot() const EXCLUDES(mu) {
    util::MutexLock l(&mu);
    return z;
  }
  // A write of n bytes in txg t, when txg `synced` is the last known synced.
  void NoteUnsynced(uint64_t t, uint64_t n, uint64_t synced) {
    if (unsynced_since.load(std::memory_order_relaxed) <= synced) {
      unsynced_bytes.store(0, std::memory_order_relaxed);
      unsynced_since.store(t, std::memory_order_relaxed);
    }
    unsynced_bytes.fetch_add(n, std::memory_order_relaxed);
  }
  void NoteTxg(uint64_t t) {
    uint64_t cur = last_txg.load(std::memory_order_relaxed);
    while (cur < t && !last_txg.compare_exchange_weak(cur, t)) {
    }
  }
};

using InodeRef = std::shared_ptr<Inode>;

class InodeTable {
 public:
  InodeTable();
  // Keeps about `count` Inodes in memory (those that may go).
  void SetLimit(uint64_t count) { cache_.SetLimit(count); }
  // The Inode of `ino` if it is in memory, else nullptr.
  InodeRef Find(uint64_t ino) { return cache_.Find(ino); }
  // The Inode of `ino`, made by `load()` (a Result<InodeRef>) when absent,
  // under the table's lock for `ino`: load must not call the table.
  template <typename Load>
  Result<InodeRef> FindOrLoad(uint64_t ino, Load load) {
    return cache_.FindOrLoad(ino, std::move(load));
  }
  // Inserts `in`, replacing any Inode of the same ino (a new object).
  void Replace(InodeRef in) {
    const uint64_t ino = in->ino;
    cache_.Replace(ino, std::move(in));
  }
  // Drops `ino` from the table (its object was freed).
  void Erase(uint64_t ino) { cache_.Erase(ino); }
  // Drops `in` if nobody but the table (and the caller's `in`) holds it.
  void TryEvict(const InodeRef& in) { cache_.TryEvict(in->ino, in); }
  // Drops every Inode and lookup count (unmount).
  void Clear();
  uint64_t size() { return cache_.size(); }
  uint64_t evictions() const { return cache_.evictions(); }

  // The kernel's lookup counts (callers hold the Inode's mu, see above).
  void AddLookups(uint64_t ino, uint64_t n) { counts_.Add(ino, n); }
  // Takes n (at most the count) off; returns what is left.
  uint64_t DropLookups(uint64_t ino, uint64_t n) { return counts_.Drop(ino, n); }
  uint64_t Lookups(uint64_t ino) { return counts_.Get(ino); }
  // Inodes with a lookup count above 0.
  uint64_t kernel_inodes() { return counts_.size(); }

 private:
  util::ObjectCache<Inode> cache_;
  LookupCounts counts_;
};

}  // namespace poolfs::core::posix
