// Inode and InodeTable: the in-memory side of the files a mount has touched.
//
// An Inode caches one file's decoded znode, its directory zap handle (the
// one Zap through which the directory's entries change, as zap.h asks), its
// kernel lookup count and the txg of its last change (for Fsync). The table
// maps inode numbers to Inodes in 64 shards picked by ino, each with its own
// mutex held only to find, insert or erase: there is no table-wide lock.
//
// Locks of an Inode:
//   op_mu  serializes changes to the file: held from Tx::Assign to Commit
//          (the dmu's contract). Operations on several inodes take their
//          op_mu in ascending ino order.
//   mu     guards the cached fields below; held briefly, never across I/O
//          or a Tx::Assign, so readers (GetAttr, Lookup's permission check)
//          never wait for a throttled writer.
// Order: rename_mu (PosixFs) → op_mu (by ino) → unlinked_mu (PosixFs) →
// shard mutex → mu (nothing is called on the table while holding mu).
//
// Lifetime: Inodes are shared_ptrs; the table drops one when it is freed
// (Erase) or when its lookup count reaches zero and nobody else holds it
// (TryEvict, which checks use_count under the shard lock: a new reference
// is only ever taken under that lock, so the check is exact). Hence at most
// one Inode, one op_mu and one Zap exist per object at any time.
//
// Thread safety: every InodeTable method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "posix/znode_phys.h"
#include "util/mutex.h"
#include "zap/zap.h"

namespace poolfs::core::posix {

struct Inode {
  explicit Inode(uint64_t i) : ino(i) {}

  const uint64_t ino;
  uint64_t generation = 0;        // set before the Inode is shared
  std::unique_ptr<zap::Zap> dir;  // directories; set before the Inode is shared

  std::mutex op_mu;
  // Extended attributes, loaded on first use (guarded by op_mu).
  bool xattrs_loaded = false;
  XattrMap xattrs;

  mutable util::Mutex mu;
  ZnodePhys z GUARDED_BY(mu);
  uint64_t lookups GUARDED_BY(mu) = 0;
  bool freed GUARDED_BY(mu) = false;  // the object is gone: every call fails with Stale

  std::atomic<uint64_t> last_txg{0};  // the txg of the newest change

  bool is_dir() const { return dir != nullptr; }
  ZnodePhys Snapshot() const EXCLUDES(mu) {
    util::MutexLock l(&mu);
    return z;
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
  // The Inode of `ino` if it is in memory, else nullptr.
  InodeRef Find(uint64_t ino);
  // Inserts `in` unless its ino is present; returns the Inode now in the
  // table (the existing one when present).
  InodeRef InsertIfAbsent(InodeRef in);
  // Inserts `in`, replacing any Inode of the same ino (a new object).
  void Replace(InodeRef in);
  // Drops `ino` from the table (its object was freed).
  void Erase(uint64_t ino);
  // Drops `in` if nobody but the table (and the caller's `in`) holds it.
  void TryEvict(InodeRef& in);
  // Drops every Inode (unmount).
  void Clear();
  uint64_t size();

 private:
  static constexpr size_t kShards = 64;
  struct Shard {
    util::Mutex mu;
    std::unordered_map<uint64_t, InodeRef> map GUARDED_BY(mu);
  };
  Shard& ShardOf(uint64_t ino) { return shards_[(ino * 0x9e3779b97f4a7c15ull) >> 58]; }
  std::array<Shard, kShards> shards_;
};

}  // namespace poolfs::core::posix
