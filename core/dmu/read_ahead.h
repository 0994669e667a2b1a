// ReadAhead: blocks read from disk before a sequential reader asks for them.
//
// Theory
// ------
// The kernel sends a file's reads as READs of up to 1 MiB, one or two in
// flight; without help each waits for its own disk read, and the disk idles
// while the daemon verifies and replies. A dnode whose reads follow one
// another (Dnode's stream: each starts where the last ones ended, give or
// take one read) asks for the blocks past them: a distance that starts at
// kMinDistanceBytes and doubles with each such read up to
// `distance_bytes` (ZFS's zfetch; dmu.prefetch_distance_bytes). Request takes
// their pointers; `threads` threads read them (ReadMany: adjacent blocks in
// one device read) into the cache's buffers and keep them, by name and
// checksum, until a read takes them (Take). They do not enter the cache: a
// streaming reader's kernel keeps what it reads, and what the cache keeps
// is for readers that come back.
//
// No lock of the dnode is held while a block is read ahead, so its space
// may be freed and reused meanwhile. That is safe: the read is verified
// against the pointer it was given (a mismatch is dropped without counting
// a checksum error: zio::ReadUse::kSpeculative), and Take hands a block only
// to a read whose pointer names the same block with the same checksum.
//
// A read that finds its block still queued takes the block back and reads
// it itself (no wait behind the queue); one that finds it being read waits
// for that read. A block read ahead that no read takes (the reader
// stopped, or seeks) waits until newer ones need its room: at most
// kStreams streams' worth (max_bytes_) are queued, in flight or
// waiting, the oldest waiting ones dropped first; a request beyond that is
// refused (counted).
//
// The defaults (dmu.prefetch_threads = 8, dmu.prefetch_distance_bytes =
// 32 MiB). A virtual disk serves O_DIRECT reads of 1 MiB much faster with
// several MiB in flight than with one or two reads at a time, and through
// a mount 8 threads reading up to 32 MiB ahead went faster, and more
// steadily, than 4 threads and 16 MiB. With vdev.direct_reads the blocks
// come into buffers that are used again (the cache's BufferPool, huge
// pages: see arc/buffer_pool.h), where a buffered read fills fresh page
// cache pages of the pool file, each faulted in and cleared, which is
// dear on a virtual machine that reports free pages to its host.
// scripts/bench-fs.sh's read figure (1 GiB through the mount, caches
// dropped, against a plain file on the same disk) measures this path.
//
// Thread safety: every public member may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "arc/arc.h"
#include "util/mutex.h"
#include "zio/block_ptr.h"
#include "zio/zio.h"

namespace poolfs::core::dmu {

// The cache's name for the block `bp` points to (Dnode::CacheKey).
inline arc::BlockKey BlockKeyOf(const zio::BlockPtr& bp) {
  return {VdevId(bp.dva.vdev), VdevOffset(bp.dva.offset), bp.birth};
}

// The dmu.prefetch_* tunables (poolfs/options.h holds them and their
// defaults).
using ReadAheadOptions = ::poolfs::ReadAheadOptions;

struct ReadAheadStats {
  uint64_t requested = 0;  // blocks asked for
  uint64_t read = 0;       // of those, read and verified
  uint64_t hits = 0;       // taken by a read, ready
  uint64_t waits = 0;      // taken by a read that waited for the disk
  uint64_t reclaimed = 0;  // taken back, still queued, by the read that needed them
  uint64_t dropped = 0;    // read but never taken (room for newer ones)
  uint64_t failed = 0;     // reads that failed (I/O, checksum, freed space)
  uint64_t refused = 0;    // not requested: no room
  uint64_t bytes = 0;      // queued, in flight or waiting now
};

class ReadAhead {
 public:
  // How far a stream reads ahead at first.
  static constexpr uint64_t kMinDistanceBytes = uint64_t{2} << 20;
  // Room for this many streams at the full distance.
  static constexpr uint64_t kStreams = 4;

  // Reads into buffers of `cache`, which outlives this.
  ReadAhead(arc::Arc* cache, const ReadAheadOptions& options);
  ~ReadAhead();
  // Stops the threads (a read in flight finishes first) and drops every
  // block; Request and Take then do nothing. Before the devices close.
  void Stop() EXCLUDES(mu_);
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  uint64_t distance_bytes() const { return options_.distance_bytes; }

  // Reads these blocks ahead through `zio` (which outlives this): data
  // blocks on disk, not holes, not gangs, in file order. Blocks already
  // requested are skipped; those past the room are refused.
  void Request(zio::Zio* zio, std::span<const zio::BlockPtr> bps) EXCLUDES(mu_);

  // The block `bp` names, when it was read ahead: waits while it is being
  // read; empty when it was not requested, is still queued (taken back:
  // the caller reads it), or its read failed.
  arc::ArcData Take(const zio::BlockPtr& bp) EXCLUDES(mu_);

  ReadAheadStats Stats() const EXCLUDES(mu_);

 private:
  enum class State : uint8_t { kQueued, kReading, kReady };
  struct Entry {
    util::Checksum128 checksum;
    uint32_t size = 0;
    State state = State::kQueued;
    uint64_t seq = 0;  // request order: the oldest waiting one is dropped first
    arc::ArcData data;
  };
  struct KeyHash {
    size_t operator()(const arc::BlockKey& k) const { return size_t(k.Hash()); }
  };
  struct Job {
    zio::Zio* zio = nullptr;
    std::vector<zio::BlockPtr> bps;
  };

  void Worker() EXCLUDES(mu_);
  // Reads one job's blocks that are still queued.
  void RunJob(Job job) EXCLUDES(mu_);
  using EntryMap = std::unordered_map<arc::BlockKey, Entry, KeyHash>;

  // The entry of `key` when it is still the one requested as `seq` (not
  // taken, dropped or failed since, and not requested again), else end().
  EntryMap::iterator Current(const arc::BlockKey& key, uint64_t seq) REQUIRES(mu_);
  // Drops waiting blocks, oldest first, until `bytes` more fit; false when
  // they do not.
  bool MakeRoom(uint64_t bytes) REQUIRES(mu_);
  void Erase(EntryMap::iterator it) REQUIRES(mu_);

  arc::Arc* const cache_;
  const ReadAheadOptions options_;
  const uint64_t max_bytes_;
  const bool enabled_;

  mutable util::Mutex mu_;
  util::CondVar work_cv_;   // a job queued, or stopping
  util::CondVar ready_cv_;  // a block read (or failed)
  bool stopping_ GUARDED_BY(mu_) = false;
  std::deque<Job> jobs_ GUARDED_BY(mu_);
  EntryMap entries_ GUARDED_BY(mu_);
  // Keys in request order with their seq (stale ones skipped).
  std::deque<std::pair<arc::BlockKey, uint64_t>> order_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;
  ReadAheadStats stats_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace poolfs::core::dmu
